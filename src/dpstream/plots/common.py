"""Shared figure plumbing: one line per mechanism in its fixed style, legends, the honest title.

Every saved figure carries that title (uncertified noise, synthetic data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dpstream.certified import uncertified
from dpstream.plots import names


def honesty_labels(df: pd.DataFrame) -> list[str]:
    """The warnings a figure made from ``df`` must carry: uncertified rows, synthetic data."""
    labels = []
    if uncertified(df):  # rows that claim privacy without being certified; a non-private baseline is labelled as such
        labels.append("NOT privacy-certified (scaled constants or debug mode)")
    if "data.synthetic" in df.columns and df["data.synthetic"].fillna(False).astype(bool).any():
        names = sorted({str(n) for n in df.get("data.name", pd.Series(dtype=str)).dropna()})
        labels.append("synthetic data" + (f" ({', '.join(names)})" if names else ""))
    return labels


def subplots(nrows: int = 1, ncols: int = 1, figsize: tuple[float, float] | None = None,
             **kwargs: Any) -> tuple[Figure, Any]:
    """``pyplot.subplots`` without pyplot.

    A Figure no GUI backend or notebook tracks, drawn by Agg on saving (so figure modules need no ``matplotlib.use`` and
    leave a notebook's inline backend alone).
    """
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def mechanism_lines(ax: Axes, df: pd.DataFrame, x: str, y: str, by: str = "mechanism.name") -> None:
    """One line per mechanism (column ``by``) in its fixed style and with the paper's name.

    The mean of ``y`` over trials against ``x``, with a min-max band.
    """
    for name in names.ordered(df[by]):
        stats = df[df[by] == name].groupby(x)[y].agg(["mean", "min", "max"]).sort_index()
        style = names.line_style(name)
        ax.plot(stats.index, stats["mean"], label=names.label(name), **style)
        ax.fill_between(stats.index, stats["min"], stats["max"], color=style["color"], alpha=0.15, lw=0)


def legend(ax: Axes, **kwargs: Any) -> None:
    """A legend whose handles are long enough to show each line style (dashes, dots) beside the marker."""
    ax.legend(**{"fontsize": 7, "handlelength": 3.5, **kwargs})


def figure_legend(fig: Figure, ax: Axes) -> None:
    """The legend of ``ax`` below the whole figure (for rows of panels whose data would hide under it)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(3, len(labels)),
               fontsize=8, handlelength=3.5)


def save_figure(fig: Figure, df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Title ``fig`` with the experiment's title plus honesty labels; write it to ``path`` as PNG at 300 dpi.

    The experiment's ``formats`` (the run's ``fmt``: pdf, svg) are written beside it with the same name.
    """
    title = experiment.get("title", experiment.get("id", ""))
    labels = honesty_labels(df)
    if experiment.get("profile_name") == "smoke":
        labels.append("smoke profile: reduced scale, not the paper's")
    fig.suptitle(title + ("\n" + "; ".join(labels) if labels else ""), fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=300, bbox_inches="tight")  # PNG at print resolution
    for ext in experiment.get("formats", ()):  # ``fmt=``: vector copies beside it, for a paper
        if ext != "png":
            fig.savefig(path.with_suffix(f".{ext}"), bbox_inches="tight")
