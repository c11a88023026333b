"""Re-judge every claim from the committed trial tables, without running a trial: ``make claims``.

``python -m dpstream.harness.rejudge [results_dir]`` reads ``<results_dir>/tables/<id>.csv`` of every experiment of
``experiment=all`` (paper profile), applies its claim rules, rewrites ``<id>.claims.csv`` and ``report.{md,html}``.
Every verdict passes ``registration.gate``: rows not run under the registered pre-registration on seeds >= 3 are
history, and their verdicts are written as ``inconclusive`` with the verdict they would give in the ``gate`` column.
An experiment adopted from the registered run (``make adopt-registered``) keeps its claims: they were decided at
their looks.
The figures are left as they are (they are drawn from the same tables by ``make figures``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from dpstream.claims.nulls import apply_nulls, null_shares
from dpstream.claims.registration import gate
from dpstream.harness.config import as_mapping
from dpstream.harness.registered import is_registered, labels, looks_of
from dpstream.harness.report import write_report
from dpstream.harness.runner import claims_table, experiments_to_run, write_csv
from dpstream.registry import CONF_DIR, import_object

NULLS = 20
"""Permutation nulls per comparative rule in ``make claims`` (``make verify`` runs 200)."""


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


def adopted(results_dir: Path, exp_id: str, df: pd.DataFrame) -> pd.DataFrame | None:
    """The claims of ``exp_id`` when every one is a registered look's (``registered.labels``), else None.

    A label is registered only when ``<results_dir>/verify/paper/looks.csv`` holds the claim's final record as the
    claims file shows it: a claims file edited after its look is re-judged (and gated) like history.

    Those were decided at their looks (sequential rules included) by ``make adopt-registered`` from the stores; a
    fixed-sample re-judgement of the pooled table is not their rule, so ``make claims`` leaves them.
    """
    path = results_dir / "tables" / f"{exp_id}.claims.csv"
    if not path.exists():
        return None
    claims = pd.read_csv(path, keep_default_na=False)
    shown = labels(claims, df, looks_of(results_dir / "tables"), exp_id)
    return claims if len(claims) and all(map(is_registered, shown)) else None


def rejudge(results_dir: Path, experiment: str = "all", profile: str = "paper", report: bool = True,
            nulls: int = NULLS) -> dict[str, pd.DataFrame]:
    """Rewrite every ``<id>.claims.csv`` (and the report) from the trial tables under ``results_dir``.

    Returns the claims of every experiment by id. An experiment without a table (not run yet at this scale) is left
    out, of the report too, and named on stderr; with no table at all it is an error naming the folder.
    """
    cfg = composed_config(results_dir, experiment, profile)
    specs = [s for s in experiments_to_run(cfg, CONF_DIR) if (results_dir / "tables" / f"{s['id']}.csv").exists()]
    missing = sorted({s["id"] for s in experiments_to_run(cfg, CONF_DIR)} - {s["id"] for s in specs})
    if not specs:
        raise FileNotFoundError(f"no trial table in {results_dir / 'tables'}: run the experiments first")
    if missing:
        print(f"not re-judged, no trial table in {results_dir / 'tables'} yet: {', '.join(missing)}", file=sys.stderr)
    frames, out = [], {}
    for spec in specs:
        df = pd.read_csv(results_dir / "tables" / f"{spec['id']}.csv", low_memory=False)
        frames.append(df)
        kept = adopted(results_dir, spec["id"], df)
        if kept is not None:  # decided look by look from the stores (``make adopt-registered``): left as it is
            out[spec["id"]] = kept
            continue
        claims = judge(spec, df, nulls)
        if claims is not None:
            claims = gate(claims, df, spec["id"])  # history (seeds 0-2, another registration) decides nothing
            write_csv(claims, results_dir / "tables" / f"{spec['id']}.claims.csv")
            out[spec["id"]] = claims
    if report and (cfg.get("experiment") or {}).get("report"):
        write_report(specs, frames, {**cfg, "regenerated_by": f"make claims (python -m dpstream.harness.rejudge, "
                                                              f"{nulls} nulls per rule, from the committed tables)"})
    return out


def main(argv: list[str] | None = None) -> None:
    """``python -m dpstream.harness.rejudge [results_dir] [--nulls N]`` (default ``results``, 20 nulls)."""
    parser = argparse.ArgumentParser(prog="python -m dpstream.harness.rejudge", description=__doc__.split("\n")[0])
    parser.add_argument("results_dir", nargs="?", default="results", type=Path)
    parser.add_argument("--nulls", type=int, default=NULLS, help="permutation nulls per comparative rule")
    args = parser.parse_args(argv)
    claims = rejudge(args.results_dir, nulls=args.nulls)
    everything = pd.concat(claims.values(), ignore_index=True)
    print(f"{len(claims)} experiments re-judged from {args.results_dir / 'tables'} ({args.nulls} nulls per rule): "
          + ", ".join(f"{n} {v}" for v, n in everything["verdict"].value_counts().items()))


if __name__ == "__main__":
    main()
