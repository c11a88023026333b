"""The package's config tree: its groups' options, an option's config, and the ``module:function`` paths it names.

``conf/<group>/<name>.yaml`` (shipped inside the package, ``CONF_DIR``) is the single registry of mechanisms, data
sources and experiments. Every layer reads it here; turning a config into trials is the harness's
(``dpstream.harness.config``).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from dpstream.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parent / "conf"  # the package's own config tree (conf/, experiments/)


def import_object(path: str) -> Callable[..., Any]:
    """``"package.module:function"`` -> the function (a clear error for a bad path)."""
    module_name, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import {path!r} (expected 'package.module:function'): {exc}") from exc


ConfDirs = Path | Sequence[Path]
"""A config dir, or several in search order: the package's, then ``hydra.searchpath`` dirs (your own configs)."""


def _dirs(conf_dir: ConfDirs) -> list[Path]:
    return [conf_dir] if isinstance(conf_dir, Path) else list(conf_dir)


def options(conf_dir: ConfDirs, group: str) -> list[str]:
    """The option names of config group ``group`` (in any of the dirs)."""
    return sorted({p.stem for d in _dirs(conf_dir) for p in (d / group).glob("*.yaml")})


def load_option(conf_dir: ConfDirs, group: str, name: str) -> dict[str, Any]:
    """The config of option ``name`` of ``group`` as a plain dict (from the first dir that has it)."""
    found = [d / group / f"{name}.yaml" for d in _dirs(conf_dir) if (d / group / f"{name}.yaml").exists()]
    path = found[0] if found else Path(name)
    if not found:
        raise ConfigError(group, name, f"unknown {group} {name!r}; allowed: {', '.join(options(conf_dir, group))}")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)  # type: ignore[return-value]



def set_key(params: dict[str, Any], dotted: str, value: Any, only_existing: bool = False) -> None:
    """Set the dotted key ``dotted`` of the nested ``params`` to a copy of ``value``, in place.

    A key whose section does not exist is an error (``ConfigError``), and so is an unknown top-level key;
    ``only_existing`` skips a key the config lacks instead.
    """
    head, *rest = dotted.split(".")
    node = params
    keys = [head, *rest]
    for k in keys[:-1]:
        if not isinstance(node.get(k), dict):
            if only_existing:
                return
            raise ConfigError(dotted, value, f"config key {dotted!r} does not exist: {k!r} is not a config section")
        node = node[k]
    if only_existing and keys[-1] not in node:
        return
    if len(keys) == 1 and keys[0] not in node:
        raise ConfigError(dotted, value, f"unknown config key {dotted!r}; top-level keys are: "
                                         f"{', '.join(sorted(node))}")
    node[keys[-1]] = copy.deepcopy(value)
