"""A mechanism named alone runs on its natural default data.

``dpstream mechanism=svt_tm`` names no data, and the default data (a Zipf stream) is of a kind the sparse vector
mechanisms cannot read. When the user names a mechanism but neither ``data=`` nor an experiment, the mechanism gets
the overrides its config lists as ``natural_data``, else the first data option of a kind it reads (one that needs no
file), with data keys its ``data_max`` bounds set to the bound (``punctual_hh``: ``data.universe`` = its
``universe_size``). A data option the user names is never changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from dpstream.harness.config import CONF_DIR, data_kinds, data_options, load_option, options


def _typed(args: list[str]) -> dict[str, str]:
    return dict(a.split("=", 1) for a in args if "=" in a and not a.startswith(("-", "+", "~")))


def _default_data(conf_dir: Path) -> str:
    for entry in OmegaConf.to_container(OmegaConf.load(conf_dir / "config.yaml"))["defaults"]:  # type: ignore[index]
        if isinstance(entry, dict) and "data" in entry:
            return str(entry["data"])
    raise ValueError(f"{conf_dir / 'config.yaml'} chooses no default data")


def needs_file(data: dict[str, Any]) -> bool:
    """Whether a data option reads a file the user must name (its ``path`` is unset)."""
    return "path" in data and not data["path"]


def natural_data(args: list[str], conf_dir: Path = CONF_DIR) -> list[str]:
    """The overrides that give a mechanism named alone its natural data (empty when the user chose, or it fits)."""
    typed = _typed(args)
    mech = typed.get("mechanism")
    if not mech or "data" in typed or typed.get("experiment", "null") != "null" or "-m" in args \
            or "--multirun" in args or mech not in options(conf_dir, "mechanism"):
        return []
    spec = load_option(conf_dir, "mechanism", mech)
    if spec.get("natural_data"):  # the mechanism's own choice (e.g. a smaller universe its algorithm needs)
        return [o for o in spec["natural_data"] if o.split("=", 1)[0] not in typed]
    every = data_options(conf_dir)
    name = _default_data(conf_dir)
    extra = []
    if every[name].get("kind") not in data_kinds(spec):
        fit = [stem for stem, d in every.items() if d.get("kind") in data_kinds(spec) and not needs_file(d)]
        if not fit:
            return []
        name = fit[0]
        extra.append(f"data={name}")
    for data_key, mech_key in (spec.get("data_max") or {}).items():
        bound = typed.get(f"mechanism.{mech_key}", spec.get(mech_key))
        value = every[name].get(data_key)
        if f"data.{data_key}" not in typed and bound is not None and value is not None and value > float(bound):
            extra.append(f"data.{data_key}={bound}")
    return extra
