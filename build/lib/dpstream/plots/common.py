"""Shared figure plumbing: labels every figure honestly (uncertified noise, synthetic data) and saves it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd


def honesty_labels(df: pd.DataFrame) -> list[str]:
    """The warnings a figure made from ``df`` must carry: uncertified rows, synthetic data."""
    labels = []
    if "certified" in df.columns and not df["certified"].astype(bool).all():
        labels.append("NOT privacy-certified (scaled constants or debug mode)")
    if "data.synthetic" in df.columns and df["data.synthetic"].fillna(False).astype(bool).any():
        names = sorted({str(n) for n in df.get("data.name", pd.Series(dtype=str)).dropna()})
        labels.append("synthetic data" + (f" ({', '.join(names)})" if names else ""))
    return labels


def save_figure(fig: plt.Figure, df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Title ``fig`` with the experiment's title plus honesty labels and write it to ``path`` as PNG."""
    title = experiment.get("title", experiment.get("id", ""))
    labels = honesty_labels(df)
    if experiment.get("profile_name") == "smoke":
        labels.append("smoke profile: reduced scale, not the paper's")
    fig.suptitle(title + ("\n" + "; ".join(labels) if labels else ""), fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
