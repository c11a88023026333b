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
from pathlib import Path

import pandas as pd

from dpstream.claims.registration import gate
from dpstream.harness.experiments import composed_config, experiments_to_run, judge
from dpstream.harness.registered import is_registered, labels, looks_of
from dpstream.harness.report import write_report
from dpstream.harness.rule_notes import write_seed_verdicts
from dpstream.harness.runner import write_csv
from dpstream.registry import CONF_DIR

NULLS = 20
"""Permutation nulls per comparative rule in ``make claims`` (``make verify`` runs 200)."""


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
        write_seed_verdicts(results_dir / "tables")  # the rule notes' per-seed verdicts, read by every render
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
