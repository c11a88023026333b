"""Turn a Hydra config plus an experiment file into the list of trial configs it stands for.

Experiments name config-group options (``mechanism: lazycms``, ``data: zipf``) and dotted keys
(``data.skew``, ``epsilon``); the group options are read from ``conf/<group>/<name>.yaml``, which are
the single registry of mechanisms and data sources.
"""

from __future__ import annotations

import copy
import importlib
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from dpstream.data.cache import FINGERPRINT_SUFFIX, file_fingerprint

GROUPS = ("mechanism", "data")
# Top-level keys a mechanism may read; each conf/mechanism/<name>.yaml declares the ones its trial uses
# (``uses: [epsilon, delta]``), and setting one that no mechanism of the run uses is an error (``check_uses``).
SHARED_KEYS = ("epsilon", "delta", "width", "depth", "memory_kb", "release_times")
# A config value is a file input when its key ends in one of these and it is not null (``fingerprint_inputs``).
FILE_KEY_SUFFIXES = ("path", "file")
# Keys that choose how a run executes, not what it computes: excluded from trial configs and keys.
# (``data_dir`` stays in trial configs, since trials need it, but is left out of keys and rows: see the store.)
RUN_KEYS = ("experiment", "trials", "n_jobs", "backend", "scheduler_address", "rerun", "results_dir")


def import_object(path: str) -> Callable[..., Any]:
    """``"package.module:function"`` -> the function (a clear error for a bad path)."""
    module_name, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import {path!r} (expected 'package.module:function'): {exc}") from exc


def options(conf_dir: Path, group: str) -> list[str]:
    """The option names of config group ``group``."""
    return sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))


def load_option(conf_dir: Path, group: str, name: str) -> dict[str, Any]:
    """The config of option ``name`` of ``group`` as a plain dict."""
    path = conf_dir / group / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"unknown {group} {name!r}; allowed: {', '.join(options(conf_dir, group))}")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)  # type: ignore[return-value]


def load_experiment(conf_dir: Path, name: str, profile: str) -> dict[str, Any]:
    """Experiment ``name`` with its ``profiles.<profile>`` block deep-merged in."""
    return resolve_profile(load_option(conf_dir, "experiment", name), profile)


def resolve_profile(spec: Any, profile: str) -> dict[str, Any]:
    spec = OmegaConf.create(spec)
    block = spec.get("profiles", {}).get(profile, {}) if "profiles" in spec else {}
    merged = OmegaConf.merge(spec, block) if block else spec
    out = OmegaConf.to_container(merged, resolve=True)
    out.pop("profiles", None)
    out["profile_name"] = profile
    return out  # type: ignore[return-value]


def _set(params: dict[str, Any], dotted: str, value: Any, only_existing: bool = False) -> None:
    head, *rest = dotted.split(".")
    node = params
    keys = [head, *rest]
    for k in keys[:-1]:
        if not isinstance(node.get(k), dict):
            if only_existing:
                return
            raise ValueError(f"config key {dotted!r} does not exist: {k!r} is not a config section")
        node = node[k]
    if only_existing and keys[-1] not in node:
        return
    if len(keys) == 1 and keys[0] not in node:
        raise ValueError(f"unknown config key {dotted!r}; top-level keys are: {', '.join(sorted(node))}")
    node[keys[-1]] = copy.deepcopy(value)


def apply_overrides(base: dict[str, Any], overrides: list[tuple[str, Any]], conf_dir: Path,
                    profile_overrides: dict[str, Any]) -> dict[str, Any]:
    """Apply group choices first, then the profile's shrinking overrides, then dotted keys, in order."""
    params = copy.deepcopy(base)
    for key, value in overrides:
        if key in GROUPS:
            params[key] = load_option(conf_dir, key, str(value))
    for key, value in profile_overrides.items():
        _set(params, key, value, only_existing=True)
    for key, value in overrides:
        if key not in GROUPS:
            _set(params, key, value)
    return params


def grid_points(spec: dict[str, Any]) -> list[list[tuple[str, Any]]]:
    """Every point of ``grid`` (cartesian, in order) crossed with ``zip`` (keys varied together)."""
    grid = spec.get("grid") or {}
    zipped = spec.get("zip") or {}
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise ValueError(f"experiment {spec.get('id')!r}: zip lists must have equal lengths, got {sorted(lengths)}")
    zip_rows = [list(zip(zipped, vals, strict=True)) for vals in zip(*zipped.values(), strict=True)] or [[]]
    points = []
    for combo in itertools.product(*grid.values()):
        for zrow in zip_rows:
            points.append(list(zip(grid, combo, strict=True)) + zrow)
    return points


def command_line_overrides(task: list[str], cfg: dict[str, Any]) -> list[tuple[str, Any]]:
    """The ``key=value`` overrides a user typed (Hydra's ``overrides.task``), with their composed values.

    Group choices keep the option name; run settings, ``experiment`` and ``profile`` are not trial keys.
    """
    out = []
    for item in task:
        key = item.split("=", 1)[0].lstrip("+")
        head = key.split(".", 1)[0]
        if key.startswith("~") or head in ("hydra", "experiment", "profile") or head in RUN_KEYS:
            continue
        value = cfg[key]["name"] if key in GROUPS else OmegaConf.select(OmegaConf.create(cfg), key)
        out.append((key, value))
    return out


def declared_uses(mechanism: dict[str, Any]) -> list[str]:
    """The top-level keys mechanism config ``mechanism`` declares its trial reads (its ``uses`` list)."""
    uses = mechanism.get("uses")
    if not isinstance(uses, list) or any(k not in SHARED_KEYS for k in uses):
        raise ValueError(f"mechanism {mechanism.get('name')!r} must declare `uses: [...]`, the top-level keys its "
                         f"trial reads, a subset of {list(SHARED_KEYS)}; got {uses!r}")
    return uses


def check_uses(settings: list[tuple[str, Any]], trials: list[dict[str, Any]], where: str) -> None:
    """Reject a top-level key set by the user or the experiment (``settings``) that no mechanism of ``trials``
    reads: it would be printed and stored while the mechanism runs at something else."""
    declared = {p["mechanism"]["name"]: declared_uses(p["mechanism"]) for p in trials}
    used = {key for uses in declared.values() for key in uses}
    for key, value in settings:
        if key in SHARED_KEYS and key not in used:
            mechanisms = "; ".join(f"{name} uses {uses}" for name, uses in sorted(declared.items()))
            raise ValueError(f"{key}={value!r} is set ({where}) but no mechanism of this run reads {key} "
                             f"(mechanism {mechanisms}); drop {key}=... or choose a mechanism that reads it")


def fingerprint_inputs(params: dict[str, Any], prefix: str = "") -> None:
    """Add ``<key>_xxh3`` (content hash, ``file_fingerprint``) beside every file input of ``params``, in place.

    A file input is any non-null value whose key ends in ``path`` or ``file`` (e.g. ``data.path``); it must name an
    existing readable file. The hash enters the trial's store key, so a replaced file is recomputed.
    """
    for key, value in list(params.items()):
        if isinstance(value, dict):
            fingerprint_inputs(value, f"{prefix}{key}.")
        elif key.endswith(FILE_KEY_SUFFIXES) and value is not None:
            if not isinstance(value, str):
                raise ValueError(f"{prefix}{key} must be a file path, got {value!r}")
            try:
                params[f"{key}{FINGERPRINT_SUFFIX}"] = file_fingerprint(value)
            except OSError as exc:
                raise ValueError(f"{prefix}{key}={value!r}: {exc}") from exc


def expand(spec: dict[str, Any], base: dict[str, Any], conf_dir: Path, trials: int,
           profile_overrides: dict[str, Any], cli: list[tuple[str, Any]] = ()) -> list[dict[str, Any]]:
    """All trial configs of ``spec``: one per grid point and trial index, in a fixed order.

    Precedence: base config < the experiment's ``fixed`` < command-line overrides < the swept point.
    A command-line override of a swept key is an error (it would silently collapse the sweep), and so is a
    top-level key that no mechanism of the experiment uses (``check_uses``). File inputs get content hashes.
    """
    fixed = list((spec.get("fixed") or {}).items())
    sweeps = {**(spec.get("grid") or {}), **(spec.get("zip") or {})}
    for key, _ in cli:
        if key in sweeps:
            raise ValueError(f"{key} is swept by experiment {spec.get('id')!r}; change the sweep with "
                             f"experiment.grid.{key}=[...] (or experiment.zip.{key}) instead of {key}=...")
    out = []
    for point in grid_points(spec):
        params = apply_overrides(base, fixed + list(cli) + point, conf_dir, profile_overrides)
        fingerprint_inputs(params)
        for trial in range(trials):
            out.append({**copy.deepcopy(params), "trial": trial})
    check_uses(list(cli), out, "on the command line")
    check_uses(fixed + list(sweeps.items()), out, f"by experiment {spec.get('id')!r}")
    return out


def flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config -> one level with dotted keys (lists kept as values)."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat
