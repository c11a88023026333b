"""Re-judge every claim from the committed trial tables, without running a trial: ``make claims``.

``python -m dpstream.harness.rejudge [results_dir]`` reads ``<results_dir>/tables/<id>.csv`` of every experiment of
``experiment=all`` (paper profile), applies its claim rules, rewrites ``<id>.claims.csv`` and ``report.{md,html}``.
The figures are left as they are (they are drawn from the same tables by ``make figures``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from dpstream.harness.config import CONF_DIR, as_mapping, import_object
from dpstream.harness.report import write_report
from dpstream.harness.runner import claims_table, experiments_to_run, write_csv


def composed_config(results_dir: Path, experiment: str = "all", profile: str = "paper") -> dict[str, Any]:
    """The plain config of ``experiment=<experiment> profile=<profile> results_dir=<results_dir>``."""
    from hydra import compose, initialize_config_dir

    overrides = [f"experiment={experiment}", f"profile={profile}", f"results_dir={results_dir.resolve()}"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return as_mapping(OmegaConf.to_container(cfg, resolve=True), "the config")


def judge(spec: dict[str, Any], df: pd.DataFrame) -> pd.DataFrame | None:
    """The claims table of one experiment's trial rows (None when the experiment has no claims)."""
    if not spec.get("claims"):
        return None
    return claims_table(import_object(spec["claims"])(df, spec), spec["id"])


def rejudge(results_dir: Path, experiment: str = "all", profile: str = "paper",
            report: bool = True) -> dict[str, pd.DataFrame]:
    """Rewrite every ``<id>.claims.csv`` (and the report) from the trial tables under ``results_dir``.

    Returns the claims of every experiment by id. An experiment without a table is an error naming the file.
    """
    cfg = composed_config(results_dir, experiment, profile)
    specs = experiments_to_run(cfg, CONF_DIR)
    frames, out = [], {}
    for spec in specs:
        path = results_dir / "tables" / f"{spec['id']}.csv"
        if not path.exists():
            raise FileNotFoundError(f"no trial table {path}: run the experiment {spec['id']!r} first")
        df = pd.read_csv(path)
        frames.append(df)
        claims = judge(spec, df)
        if claims is not None:
            write_csv(claims, results_dir / "tables" / f"{spec['id']}.claims.csv")
            out[spec["id"]] = claims
    if report and (cfg.get("experiment") or {}).get("report"):
        write_report(specs, frames, cfg)
    return out


def main(argv: list[str] | None = None) -> None:
    """``python -m dpstream.harness.rejudge [results_dir]`` (default ``results``)."""
    args = sys.argv[1:] if argv is None else argv
    results_dir = Path(args[0] if args else "results")
    claims = rejudge(results_dir)
    everything = pd.concat(claims.values(), ignore_index=True)
    print(f"{len(claims)} experiments re-judged from {results_dir / 'tables'}: "
          + ", ".join(f"{n} {v}" for v, n in everything["verdict"].value_counts().items()))


if __name__ == "__main__":
    main()
