"""The experiments a config asks for, and their claims judged from a table (the runner, report and rejudge share it).

``experiments_to_run`` expands a composed config (``composed_config``) into experiment specs; ``judge`` applies an
experiment's claims function to its trial table and returns the claims table (``claims_table``), with permutation
nulls on request. Below the report in the harness, so that a report note can re-judge a table.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from dpstream.claims import Claim
from dpstream.claims.kinds import classify
from dpstream.claims.nulls import apply_nulls, null_shares
from dpstream.errors import ConfigError
from dpstream.harness.config import (
    RUN_KEYS,
    as_mapping,
    flatten,
    load_experiment,
    resolve_profile,
    sweep_override,
    without_declarations,
)
from dpstream.harness.layout import check_path_name
from dpstream.harness.store import trial_key
from dpstream.registry import CONF_DIR, ConfDirs, import_object


def experiments_to_run(cfg: dict[str, Any], conf_dir: ConfDirs, sweep: dict[str, list[Any]] | None = None,
                       typed: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The experiment specs a config asks for: parts of an aggregate expanded, or one single-run spec.

    ``sweep`` (the keys ``-m`` sweeps, with their values) is added to each experiment's grid; a single run with a
    sweep becomes one experiment whose grid it is. ``typed``: the experiment keys set on the command line, which win
    over the profile's block (``config.resolve_profile``).
    """
    profile = cfg["profile"]["name"]
    spec = cfg.get("experiment")
    if not spec:  # a single configuration: its table is named by the mechanism and a hash of the config
        base = without_declarations({k: v for k, v in cfg.items() if k not in RUN_KEYS})
        if sweep:
            run_id = f"sweep-{trial_key({'base': base, 'sweep': sweep})[:8]}"
            swept = ", ".join(f"{k}={','.join(map(str, v))}" for k, v in sweep.items())
            return [{"id": run_id, "title": f"sweep: {swept}", "grid": dict(sweep), "profile_name": profile}]
        run_id = f"run-{check_path_name(cfg['mechanism']['name'], 'mechanism.name')}-{trial_key(base)[:8]}"
        return [{"id": run_id, "title": f"single run: {cfg['mechanism']['name']}", "profile_name": profile}]
    spec = resolve_profile(spec, profile, typed)
    if spec.get("parts"):
        for key, value in flatten(typed or {}).items():
            if key not in ("id", "title", "parts"):  # the aggregate's own keys
                raise ConfigError(f"experiment.{key}", value, f"experiment {spec['id']!r} runs the parts "
                                  f"{', '.join(spec['parts'])}: set the key with one part (experiment=PART "
                                  f"experiment.{key}=...)")
        out = []
        for part in spec["parts"]:
            sub = load_experiment(conf_dir, part, profile)
            out.extend(experiments_to_run({**cfg, "experiment": sub}, conf_dir, sweep) if sub.get("parts")
                       else [with_sweep(sub, sweep)])
        return out
    return [with_sweep(spec, sweep)]


def with_sweep(spec: dict[str, Any], sweep: dict[str, list[Any]] | None) -> dict[str, Any]:
    """Experiment ``spec`` with the ``-m`` sweep added to its grid; a key it sweeps itself is an error."""
    if not sweep:
        return spec
    own = {**(spec.get("grid") or {}), **(spec.get("zip") or {})}
    for key, values in sweep.items():
        if key in own:
            section = "zip" if key in (spec.get("zip") or {}) else "grid"
            raise ConfigError(key, ",".join(map(str, values)), f"{key} is swept by experiment {spec['id']!r}; change "
                                                              f"its sweep with {sweep_override(section, key)} "
                                                              "instead")
    return {**spec, "grid": {**(spec.get("grid") or {}), **sweep}}


def claims_table(claims: list[Claim], exp_id: str = "", registered: bool = True) -> pd.DataFrame:
    """The claims CSV: one row per claim with its rule, its registered id and kind (``dpstream.claims.kinds``).

    A claims function's output in its own order carries the registered ids ``<exp_id>#<index>`` the registration
    lists (``registration.claim_ids``; a row beyond them carries none); ``registered=False`` (claims judged per value
    of a key ``-m`` added) leaves them all unregistered. Only the four verdict words are accepted.
    """
    rows = pd.DataFrame([c.row() if isinstance(c, Claim) else Claim(**c).row() for c in claims],
                        columns=["claim", "rule", "measured", "verdict"])
    return classify(exp_id, rows if registered else rows.assign(id=""))


def composed_config(results_dir: Path, experiment: str = "all", profile: str = "paper") -> dict[str, Any]:
    """The plain config of ``experiment=<experiment> profile=<profile> results_dir=<results_dir>``."""
    from hydra import compose, initialize_config_dir

    overrides = [f"experiment={experiment}", f"profile={profile}", f"results_dir={results_dir.resolve()}"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return as_mapping(OmegaConf.to_container(cfg, resolve=True), "the config")


def judge(spec: dict[str, Any], df: pd.DataFrame, nulls: int = 0, seed: int = 0) -> pd.DataFrame | None:
    """The claims table of one experiment's trial rows (None when the experiment has no claims).

    With ``nulls`` > 0 every comparative or trend rule is also run on that many permutation nulls of the table (and
    every absence rule on planted-effect tables): ``dpstream.claims.nulls``.
    """
    if not spec.get("claims"):
        return None
    fn = import_object(spec["claims"])

    def claims_of(table: pd.DataFrame) -> pd.DataFrame:
        return claims_table(fn(table, spec), spec["id"])

    claims = claims_of(df)
    if nulls <= 0:
        return claims
    grid_keys = {*(spec.get("grid") or {}), *(spec.get("zip") or {}), *(spec.get("fixed") or {})}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant or degenerate null tables warn in scipy; their verdicts count
        shares = null_shares(df, claims_of, spec["id"], grid_keys, nulls, seed)
    return apply_nulls(claims, shares, nulls)
