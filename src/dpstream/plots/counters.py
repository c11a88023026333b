"""The continual-counting leaderboard (``experiment=counters``, rows of ``dpstream.trials.counters``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps

from dpstream.plots.common import save_figure, subplots

LINESTYLES = {"stored": "-", "derived": "--"}
"""Line style by node noise (the exact discrete noises dotted)."""


def leaderboard(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Mean and max variance over the binary tree's vs T, one line per (counter, node noise), with the lower bounds.

    Left: the factorisation lower bound on the mean variance (gamma_F >= 0.701 + ln(T) / pi). Right: the
    Larsen-Bairaktari Omega(log^{3/2} T) bound on the l_inf error as a shape only: a max variance of order
    log^3 T / log T over the tree's log^2 T is a constant, drawn at the lowest counter's value at the smallest T.
    """
    d = df.sort_values("log2_horizon")
    fig, (mean_ax, max_ax) = subplots(1, 2, figsize=(11.0, 6.0))
    palette = colormaps["tab20"]
    for i, ((counter, noise), rows) in enumerate(d.groupby(["mechanism.counter", "mechanism.node_noise"], sort=True)):
        style = {"ls": LINESTYLES.get(str(noise), ":"), "marker": "o", "markersize": 3, "lw": 1.0,
                 "color": palette(i % 20)}
        mean_ax.plot(rows["log2_horizon"], rows["var_mean_ratio"], label=f"{counter}, {noise}", **style)
        max_ax.plot(rows["log2_horizon"], rows["var_max_ratio"], **style)
    bound = d.groupby("log2_horizon")["lower_bound_mean_ratio"].first()
    mean_ax.plot(bound.index, bound.values, color="k", lw=2.0,
                 label=f"factorisation lower bound (gamma_F; {_at(bound, 20)} at 2^20)")
    first = d[d["log2_horizon"] == d["log2_horizon"].min()]["var_max_ratio"].min()
    max_ax.plot(bound.index, np.full(len(bound), first), color="k", lw=2.0, ls=":",
                label="Larsen-Bairaktari shape (constant unknown)")
    for ax, what in ((mean_ax, "mean"), (max_ax, "max")):
        ax.set_yscale("log")
        ax.set_xlabel("log2 T")
        ax.set_ylabel(f"{what} variance over steps / binary tree's")
        ax.axhline(1.0, color="0.5", lw=0.8)
    mean_ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(0.0, -0.15))
    max_ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.15))
    save_figure(fig, df, experiment, path)


def _at(series: pd.Series, log2: int) -> str:
    """The series' value at log2 T = ``log2``, or "not run"."""
    value = series.get(float(log2), math.nan)
    return "not run" if math.isnan(value) else f"{value:.3f}x"
