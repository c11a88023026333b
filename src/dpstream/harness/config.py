"""Turn a Hydra config plus an experiment file into the list of trial configs it stands for.

Experiments name config-group options (``mechanism: lazycms``, ``data: zipf``) and dotted keys
(``data.skew``, ``epsilon``); the group options are read from ``conf/<group>/<name>.yaml`` (``dpstream.registry``).
Everything a user can get wrong is checked here, before any trial runs, and raised as
``ConfigError(key, value, allowed)``.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, cast

from omegaconf import OmegaConf

from dpstream.data.cache import FINGERPRINT_SUFFIX, file_fingerprint
from dpstream.errors import ConfigError
from dpstream.registry import ConfDirs, load_option, options, set_key
from dpstream.validation import physical_memory, readable_bytes

GROUPS = ("mechanism", "data")
# Top-level keys a mechanism may read; each conf/mechanism/<name>.yaml declares the ones its trial uses
# (``uses: [epsilon, delta]``), and setting one that no mechanism of the run uses is an error (``check_uses``).
SHARED_KEYS = ("epsilon", "delta", "width", "depth", "memory_kb", "release_times")
# What data a mechanism reads (``data_kinds`` in conf/mechanism/*.yaml) and is (``kind`` in conf/data/*.yaml).
DATA_KINDS = ("stream", "qr_database", "qr_categorical", "svt_atoms", "shifting_hh", "none")
# Declarations checked before the run (``check_fits``) and then dropped: no trial reads them, no key hashes them.
DECLARATIONS = {"mechanism": ("data_kinds", "data_max", "natural_data"), "data": ("kind",)}
# A config value is a file input when its key ends in one of these and it is not null (``fingerprint_inputs``).
FILE_KEY_SUFFIXES = ("path", "file")
# Keys that choose how a run executes, not what it computes: excluded from trial configs and keys.
# (``data_dir`` stays in trial configs, since trials need it, but is left out of keys and rows: see the store.)
RUN_KEYS = ("experiment", "trials", "n_jobs", "backend", "scheduler_address", "rerun", "release_only", "results_dir",
            "fmt", "reproduction")


@dataclass(frozen=True)
class ExperimentSchema:
    """The keys an ``experiments/<id>.yaml`` may have (docs/harness.md); any other key is an error."""

    id: str
    title: str = ""
    paper_claim: str = ""
    trials: int | None = None       # trials per grid point (default: the top-level ``trials``)
    fixed: dict = field(default_factory=dict)    # dotted key -> value, for every trial
    grid: dict = field(default_factory=dict)     # dotted key -> list (cartesian product)
    zip: dict = field(default_factory=dict)      # dotted key -> list (varied together)
    plot: str | None = None         # module:function(df, experiment, path)
    plot_args: dict = field(default_factory=dict)
    claims: str | None = None       # module:function(df, experiment) -> list[Claim]
    trial: str | None = None        # module:function overriding the mechanism's trial function
    parts: list | None = None       # an aggregate: the experiments it runs
    report: bool = False            # write report.md / report.html after the parts
    profiles: dict = field(default_factory=dict)  # profile name -> a block of the keys above, deep-merged


EXPERIMENT_KEYS = tuple(f.name for f in fields(ExperimentSchema))
PROFILE_BLOCK_KEYS = tuple(k for k in EXPERIMENT_KEYS if k not in ("id", "parts", "profiles"))
MAPPING_KEYS = ("fixed", "grid", "zip", "plot_args", "profiles")


def check_experiment(spec: dict[str, Any], name: str) -> None:
    """Reject an experiment file that does not fit ``ExperimentSchema``.

    Unknown keys (a typo such as ``grdi:`` would otherwise silently shrink a sweep to one point), sections that are
    not mappings, and sweeps that are not lists are errors.
    """
    unknown_keys(name, [k for k in spec if k != "profile_name"], EXPERIMENT_KEYS, "")
    for key in MAPPING_KEYS:
        if not isinstance(spec.get(key) or {}, dict):
            raise ConfigError("experiment", name, f"{key} must be a mapping in experiment {name!r}, got {spec[key]!r}")
    for profile, block in (spec.get("profiles") or {}).items():
        if not isinstance(block, dict):
            raise ConfigError("experiment", name, f"profiles.{profile} must be a mapping in experiment {name!r}")
        unknown_keys(name, block, PROFILE_BLOCK_KEYS, f"profiles.{profile}.")
    check_sweeps(spec, name)


def unknown_keys(name: str, keys: Iterable[str], allowed: tuple[str, ...], block: str) -> None:
    """Reject the first key of ``keys`` (in ``block`` of experiment ``name``) that is not in ``allowed``."""
    for key in keys:
        if key not in allowed:
            raise ConfigError("experiment", name, f"unknown key '{block}{key}' in experiment {name!r}; allowed keys: "
                                                  f"{', '.join(allowed)}")


def check_sweeps(spec: dict[str, Any], name: str) -> None:
    """Reject a ``grid`` or ``zip`` entry of experiment ``name`` that is not a non-empty list."""
    for section in ("grid", "zip"):
        for key, values in (spec.get(section) or {}).items():
            if not isinstance(values, list) or not values:
                raise ConfigError("experiment", name, f"{section}.{key} must be a non-empty list in experiment "
                                                      f"{name!r}, got {values!r}")


def load_experiment(conf_dir: ConfDirs, name: str, profile: str) -> dict[str, Any]:
    """Experiment ``name`` with its ``profiles.<profile>`` block deep-merged in."""
    return resolve_profile(load_option(conf_dir, "experiment", name), profile)


def as_mapping(value: Any, what: str) -> dict[str, Any]:
    """``value`` (e.g. an ``OmegaConf.to_container`` result) as a ``dict[str, Any]``; anything else is an error."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a mapping of keys to values, got {type(value).__name__}")
    return cast(dict[str, Any], value)


def resolve_profile(spec: Any, profile: str, typed: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check ``spec`` against ``ExperimentSchema``, then deep-merge its ``profiles.<profile>`` block.

    ``typed`` (``typed_experiment_keys``): the experiment's keys the user set on the command line, merged last, so
    that a profile shrinks what the user left alone and never replaces what they typed.
    """
    plain = spec if isinstance(spec, dict) else OmegaConf.to_container(OmegaConf.create(spec), resolve=False)
    plain = as_mapping(plain, "an experiment")
    check_experiment(plain, str(plain.get("id", "?")))
    config = OmegaConf.create(spec)
    block = config.get("profiles", {}).get(profile, {}) if "profiles" in config else {}
    merged = OmegaConf.merge(config, block, typed or {})
    out = as_mapping(OmegaConf.to_container(merged, resolve=True), f"experiment {plain.get('id', '?')!r}")
    out.pop("profiles", None)
    out["profile_name"] = profile
    return out


def apply_overrides(base: dict[str, Any], overrides: list[tuple[str, Any]], conf_dir: ConfDirs,
                    profile_overrides: dict[str, Any]) -> dict[str, Any]:
    """Apply group choices first, then the profile's shrinking overrides, then dotted keys, in order."""
    params = copy.deepcopy(base)
    for key, value in overrides:
        if key in GROUPS:  # an option name, or (from the command line) the option's composed config
            params[key] = copy.deepcopy(value) if isinstance(value, dict) else load_option(conf_dir, key, str(value))
    for key, value in profile_overrides.items():
        set_key(params, key, value, only_existing=True)
    for key, value in overrides:
        if key not in GROUPS:
            set_key(params, key, value)
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


def sweep_override(section: str, key: str) -> str:
    """The command-line override that sets the list of ``key`` in the experiment's ``section`` (grid or zip).

    A dotted key (``data.length``) is one key of the section, which a Hydra path (``experiment.grid.data.length``)
    cannot reach: the section is given as a mapping instead, which Hydra merges into the experiment's (quoted, so the
    shell leaves its braces alone).
    """
    return f"'experiment.{section}={{{key}:[...]}}'" if "." in key else f"experiment.{section}.{key}=[...]"


def typed_keys(task: list[str]) -> list[str]:
    """The keys of the ``key=value`` items a user typed (Hydra's ``overrides.task``), a leading ``+`` dropped."""
    return [item.split("=", 1)[0].lstrip("+") for item in task]


def typed_experiment_keys(task: list[str], cfg: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``cfg["experiment"]`` the user typed (``experiment.grid.x=[...]``), nested, with composed values."""
    keys = [k for k in typed_keys(task) if k.startswith("experiment.")]
    composed = OmegaConf.create(cfg if keys else {})  # converted once for every key (and not at all without one)
    out = OmegaConf.create({})
    for key in keys:
        OmegaConf.update(out, key.removeprefix("experiment."), OmegaConf.select(composed, key), merge=True)
    return as_mapping(OmegaConf.to_container(out, resolve=True), "the command line's experiment keys")


def command_line_overrides(task: list[str], cfg: dict[str, Any]) -> list[tuple[str, Any]]:
    """The ``key=value`` overrides a user typed (Hydra's ``overrides.task``), with their composed values.

    Group choices carry the composed option config (which may come from a ``hydra.searchpath`` dir, and whose
    ``name`` need not be its file name); run settings, ``experiment`` and ``profile`` are not trial keys.
    """
    keys = [k for k in typed_keys(task) if not k.startswith("~")
            and k.split(".", 1)[0] not in ("hydra", "experiment", "profile", *RUN_KEYS)]
    composed = OmegaConf.create(cfg if any(k not in GROUPS for k in keys) else {})  # once, and only if needed
    return [(key, cfg[key] if key in GROUPS else OmegaConf.select(composed, key)) for key in keys]


def declared_uses(mechanism: dict[str, Any]) -> list[str]:
    """The top-level keys mechanism config ``mechanism`` declares its trial reads (its ``uses`` list)."""
    uses = mechanism.get("uses")
    if not isinstance(uses, list) or any(k not in SHARED_KEYS for k in uses):
        raise ValueError(f"mechanism {mechanism.get('name')!r} must declare `uses: [...]`, the top-level keys its "
                         f"trial reads, a subset of {list(SHARED_KEYS)}; got {uses!r}")
    return uses


def check_uses(settings: list[tuple[str, Any]], trials: list[dict[str, Any]], where: str) -> None:
    """Reject a top-level key set by the user or the experiment (``settings``) that no mechanism of ``trials`` reads.

    Such a key would be printed and stored while the mechanism runs at something else.
    """
    declared = {p["mechanism"]["name"]: declared_uses(p["mechanism"]) for p in trials}
    used = {key for uses in declared.values() for key in uses}
    for key, value in settings:
        if key in SHARED_KEYS and key not in used:
            mechanisms = "; ".join(f"{name} uses {uses}" for name, uses in sorted(declared.items()))
            raise ConfigError(key, value, f"set ({where}) but no mechanism of this run reads {key} (mechanism "
                                          f"{mechanisms}); drop {key}=... or choose a mechanism that reads it")


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


def expand(spec: dict[str, Any], base: dict[str, Any], conf_dir: ConfDirs, trials: int,
           profile_overrides: dict[str, Any], cli: tuple[tuple[str, Any], ...] | list[tuple[str, Any]] = (),
           ) -> list[dict[str, Any]]:
    """All trial configs of ``spec``: one per grid point and trial index, in a fixed order.

    Precedence: base config < the experiment's ``fixed`` < command-line overrides < the swept point.
    A command-line override of a swept key is an error (it would silently collapse the sweep), and so is a
    top-level key that no mechanism of the experiment uses (``check_uses``). File inputs get content hashes.
    """
    fixed = list((spec.get("fixed") or {}).items())
    sweeps = {**(spec.get("grid") or {}), **(spec.get("zip") or {})}
    for key, value in cli:
        if key in sweeps:
            shown = value.get("name") if isinstance(value, dict) else value
            section = "zip" if key in (spec.get("zip") or {}) else "grid"
            raise ConfigError(key, shown, f"{key} is swept by experiment {spec.get('id')!r}; change the sweep with "
                                          f"{sweep_override(section, key)} instead of {key}=...")
    out = []
    points = grid_points(spec)
    for number, point in enumerate(points):
        params = apply_overrides(base, fixed + list(cli) + point, conf_dir, profile_overrides)
        if number == 0:
            check_trial_count(len(points), trials, params)
        check_fits(params["mechanism"], params["data"], conf_dir)
        params = without_declarations(params)
        fingerprint_inputs(params)
        for trial in range(trials):
            out.append({**copy.deepcopy(params), "trial": trial})
    check_uses(list(cli), out, "on the command line")
    check_uses(fixed + list(sweeps.items()), out, f"by experiment {spec.get('id')!r}")
    return out


TRIAL_BYTES_PER_JSON_BYTE = 4
"""Memory model of a planned trial: its config, its key and its row as Python objects take about 4 times its config's
JSON (the config alone measured 2.2 times)."""


def check_trial_count(points: int, trials: int, params: dict[str, Any]) -> None:
    """Refuse, before building them, more trial configs (``points`` x ``trials`` like ``params``) than memory holds."""
    each = TRIAL_BYTES_PER_JSON_BYTE * len(json.dumps(params, default=str))
    available = physical_memory()
    if points * trials * each > available:
        raise ConfigError("trials", trials, f"must be at most {available // (points * each)} on this machine: "
                                            f"{points} configuration(s) x {trials} trials would need "
                                            f"~{readable_bytes(points * trials * each)} of trial configs and rows, "
                                            f"more than its {readable_bytes(available)} of memory")


def data_kinds(mechanism: dict[str, Any]) -> list[str]:
    """The data kinds mechanism config ``mechanism`` declares it accepts (its ``data_kinds`` list)."""
    kinds = mechanism.get("data_kinds")
    if not isinstance(kinds, list) or not kinds or any(k not in DATA_KINDS for k in kinds):
        raise ValueError(f"mechanism {mechanism.get('name')!r} must declare `data_kinds: [...]`, the data it reads, "
                         f"a non-empty subset of {list(DATA_KINDS)}; got {kinds!r}")
    return kinds


def data_kind(data: dict[str, Any]) -> str:
    """The kind data config ``data`` declares (its ``kind``)."""
    if data.get("kind") not in DATA_KINDS:
        raise ValueError(f"data {data.get('name')!r} must declare `kind:`, one of {list(DATA_KINDS)}; "
                         f"got {data.get('kind')!r}")
    return data["kind"]


def data_options(conf_dir: ConfDirs) -> dict[str, dict[str, Any]]:
    """Every data option (file stem) with its config."""
    return {name: load_option(conf_dir, "data", name) for name in options(conf_dir, "data")}


def check_fits(mechanism: dict[str, Any], data: dict[str, Any], conf_dir: ConfDirs) -> None:
    """Reject a mechanism run on data it cannot read, naming both and the data that fit.

    Declarative: each mechanism config lists ``data_kinds`` and each data config has a ``kind`` (``DATA_KINDS``); a
    mechanism may also bound data keys by its own (``data_max: {universe: universe_size}``: data.universe <=
    mechanism.universe_size).
    """
    kinds, kind = data_kinds(mechanism), data_kind(data)
    mech = mechanism.get("name")

    def option() -> str:  # the data option's file name (its ``name`` may differ), read only for an error
        stems = [stem for stem, d in data_options(conf_dir).items() if d.get("name") == data.get("name")]
        return stems[0] if stems else str(data.get("name"))

    if kind not in kinds:
        fit = [stem for stem, d in data_options(conf_dir).items() if d.get("kind") in kinds]
        raise ConfigError("data", option(), f"mechanism {mech} reads data of kind {' or '.join(kinds)}, but data="
                                            f"{option()} is of kind {kind}; data that fit mechanism={mech}: "
                                            f"{', '.join(fit) or '(none)'}")
    for data_key, mech_key in (mechanism.get("data_max") or {}).items():
        bound, value = mechanism.get(mech_key), data.get(data_key)
        if value is None or bound is None or not value <= bound:
            raise ConfigError(f"data.{data_key}", value, f"mechanism {mech} needs data.{data_key} <= "
                                                         f"mechanism.{mech_key}={bound} (data={option()}); set "
                                                         f"data.{data_key}=... or mechanism.{mech_key}=...")


def without_declarations(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` less the declarations checked before the run (``DECLARATIONS``): trials and keys never see them."""
    out = dict(params)
    for group, keys in DECLARATIONS.items():
        if isinstance(out.get(group), dict):
            out[group] = {k: v for k, v in out[group].items() if k not in keys}
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_override(key: str, raw: str, defaults: dict[str, Any], choices: dict[str, list[str]]) -> None:
    """Check one command-line ``key=raw`` against the composed-by-default config ``defaults`` before Hydra sees it.

    A group choice must name an option (``choices[group]``); a dotted key must exist; a key whose default is a
    number must be given numbers (``data.skew=abc`` is rejected here, not deep in a worker). ``raw`` may be a
    comma-separated sweep (``-m``).
    """
    head = key.split(".", 1)[0]
    values = [v.strip() for v in raw.split(",")] if "," in raw and not raw.startswith(("[", "{")) else [raw]
    if re.match(r"^\w+\(.*\)$", raw) or "${" in raw:  # a Hydra sweep function (glob(*), range(1,4)) or interpolation
        values = []
    if head in choices and key == head:
        for value in values:
            if value not in choices[head] and value != "null":
                raise ConfigError(key, value, f"unknown {head}; allowed: {', '.join(choices[head])}")
        return
    node: Any = defaults
    parts = key.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            raise unknown_key(key, raw, node, depth)
        node = node[part]
    if (isinstance(node, int | float) and not isinstance(node, bool)) or (node is None and key in SHARED_KEYS):
        for value in values:  # every shared key is a number, also where its default is null (memory_kb)
            if not _is_number(value) and value != "null":
                raise ConfigError(key, value, f"must be a number (default {'null' if node is None else node})")


def unknown_key(key: str, raw: str, node: Any, depth: int) -> ConfigError:
    """The error of ``key=raw`` whose path leaves the config at part ``depth``, in the section ``node``.

    A dotted key of a mapping (a grid's ``data.length``) is one key that a dotted path cannot reach: the error
    names the mapping form that sets it.
    """
    parts = key.split(".")
    section, rest = ".".join(parts[:depth]), ".".join(parts[depth:])
    if isinstance(node, dict) and rest in node:
        return ConfigError(key, raw, f"{rest} is one key of {section}, which a dotted path cannot reach; set it with "
                                     f"'{section}={{{rest}:{raw}}}' (merged into {section})")
    allowed = sorted(node) if isinstance(node, dict) else []
    where = f"keys of {section}" if section else "top-level keys"
    return ConfigError(key, raw, f"unknown config key; {where}: {', '.join(map(str, allowed))}")


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
