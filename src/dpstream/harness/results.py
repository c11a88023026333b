"""Read stored results back (for notebooks and reports): tables, claims, and figures redrawn from rows."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from dpstream.harness.config import load_experiment
from dpstream.registry import CONF_DIR, import_object

__all__ = ["CONF_DIR", "load_claims", "load_table", "redraw", "results_dir", "show_experiments"]


def results_dir(default: str | Path = "results") -> Path:
    """``$DPSTREAM_RESULTS`` if set (tests point it at a smoke run), else ``default``.

    ``results/`` of the working directory, the committed reproduction (run notebooks from the project root, or set
    ``$DPSTREAM_RESULTS``, e.g. to a run's own folder ``results/runs/<run>``, which has the same layout).
    """
    return Path(os.environ.get("DPSTREAM_RESULTS", default))


def load_table(exp_id: str, where: Path | None = None) -> pd.DataFrame:
    """The tidy table of experiment ``exp_id`` (one row per trial); a clear error if it was never run."""
    path = (where or results_dir()) / "tables" / f"{exp_id}.csv"
    if not path.exists():
        raise FileNotFoundError(f"no results table {path}; run `dpstream experiment={exp_id}` first")
    return pd.read_csv(path)


def load_claims(exp_id: str, where: Path | None = None) -> pd.DataFrame | None:
    """The claims table ``tables/<exp_id>.claims.csv`` (verdicts as written), or None if absent."""
    path = (where or results_dir()) / "tables" / f"{exp_id}.claims.csv"
    # keep_default_na=False: the verdict "n/a" is a word, not a missing value
    return pd.read_csv(path, keep_default_na=False) if path.exists() else None


def redraw(exp_id: str, out: Path, where: Path | None = None) -> dict[str, Any]:
    """Redraw the figure of ``exp_id`` from its stored rows into ``out``; returns the experiment spec."""
    df = load_table(exp_id, where)
    profile = str(df["profile.name"].iloc[0]) if "profile.name" in df.columns else "paper"
    spec = load_experiment(CONF_DIR, exp_id, profile)
    if spec.get("plot"):
        import_object(spec["plot"])(df, spec, out)
    return spec


def show_experiments(exp_ids: list[str], where: Path | None = None) -> list[str]:
    """For each experiment: redraw its figure from the stored rows, display it, print its claims table.

    Experiments that were never run are reported and skipped. Returns the ids that were shown.
    """
    import tempfile

    import matplotlib.pyplot as plt

    where = where or results_dir()
    scratch = Path(tempfile.mkdtemp(prefix="dpstream-figures-"))
    shown = []
    for exp_id in exp_ids:
        try:
            table = load_table(exp_id, where)
        except FileNotFoundError as missing:
            print(missing)
            continue
        spec = redraw(exp_id, scratch / f"{exp_id}.png", where)
        print(f"\n{exp_id}: {len(table)} trial rows. Paper: {spec.get('paper_claim', '-')}")
        if (scratch / f"{exp_id}.png").exists():
            plt.figure(figsize=(7, 5))
            plt.imshow(plt.imread(scratch / f"{exp_id}.png"))
            plt.axis("off")
            plt.show()
        claims = load_claims(exp_id, where)
        if claims is not None:
            print(claims.to_string(index=False))
        shown.append(exp_id)
    return shown
