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

from dpstream.harness.config import as_mapping, data_kinds, data_options
from dpstream.registry import CONF_DIR, ConfDirs, load_option, options


def _typed(args: list[str]) -> dict[str, str]:
    return dict(a.split("=", 1) for a in args if "=" in a and not a.startswith(("-", "+", "~")))


def _default_data(conf_dirs: ConfDirs) -> str:
    conf_dir = conf_dirs if isinstance(conf_dirs, Path) else conf_dirs[0]  # the package's config comes first
    config = as_mapping(OmegaConf.to_container(OmegaConf.load(conf_dir / "config.yaml")), "config.yaml")
    for entry in config["defaults"]:
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


def _data_keys(spec: dict[str, Any], blocks: tuple[str, ...] = ("grid", "zip")) -> set[str]:
    """The data parameters (``data.<key>``) an experiment sets in ``blocks`` (by default: the ones it sweeps)."""
    keys: set[str] = set()
    for block in blocks:
        keys |= {k.split(".", 1)[1] for k in (spec.get(block) or {}) if k.startswith("data.")}
    return keys


def _stem(data: dict[str, Any], every: dict[str, dict[str, Any]]) -> str:
    return next((stem for stem, d in every.items() if d.get("name") == data.get("name")), str(data.get("name")))


def accepting_experiments(stem: str, conf_dir: ConfDirs, profile: str) -> list[str]:
    """The experiments (not aggregates) that can run on data option ``stem``: same kind, sweeping nothing it lacks."""
    from dpstream.harness.config import load_experiment

    every = data_options(conf_dir)
    option = every[stem]
    out = []
    for name in options(conf_dir, "experiment"):
        spec = load_experiment(conf_dir, name, profile)
        own = every.get(str((spec.get("fixed") or {}).get("data", _default_data(conf_dir))), {})
        if not spec.get("parts") and own.get("kind") == option.get("kind") and _data_keys(spec) <= set(option):
            out.append(name)
    return out


def check_panel_data(spec: dict[str, Any], trials: list[dict[str, Any]], conf_dir: ConfDirs, profile: str) -> None:
    """Fit an experiment to the data the user chose (``experiment=fig3b data=items data.path=...``).

    A data parameter the experiment fixes for its own data (fig3b's ``data.skew``) is dropped when the chosen data
    has no such parameter; one it sweeps (fig3d sweeps ``data.skew``) is an error naming the parameter and the
    experiments that accept that data.
    """
    from dpstream.errors import ConfigError

    if not trials or not spec.get("id"):
        return
    every = data_options(conf_dir)
    stem = _stem(trials[0]["data"], every)
    if stem not in every:
        return
    for key in _data_keys(spec, ("fixed",)) - set(every[stem]):
        for params in trials:
            params["data"].pop(key, None)
    lacking = sorted(k for k in _data_keys(spec) if k not in every[stem])
    if lacking:
        fit = accepting_experiments(stem, conf_dir, profile)
        raise ConfigError("data", stem, f"experiment {spec['id']} sweeps {', '.join('data.' + k for k in lacking)}, "
                                        f"a parameter of its own (synthetic) data that data={stem} does not have; "
                                        f"experiments that accept data={stem}: {', '.join(fit) or '(none)'}")
