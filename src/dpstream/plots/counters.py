"""The continual-counting leaderboard (``experiment=counters``, rows of ``dpstream.trials.counters``)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps

from dpstream.pages import write_between
from dpstream.plots.common import save_figure, subplots

LINESTYLES = {"stored": ("-", "o"), "derived": ("--", "s"), "discrete_secure": (":", "^"),
              "discrete_secure_ahead": (":", "v"), "discrete_secure_ct": ("-.", "D"),
              "discrete_secure_stored": ((0, (5, 1, 1, 1)), "x")}
"""Line style and marker by node noise (the exact discrete noises dotted or dash-dotted)."""


def leaderboard(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Mean and max variance over the binary tree's vs T, one line per (counter, node noise), with the lower bounds.

    Left: the factorisation lower bound on the mean variance (gamma_F >= 0.701 + ln(T) / pi). Right: the
    Larsen-Bairaktari Omega(log^{3/2} T) bound on the l_inf error as a shape only: a max variance of order
    log^3 T / log T over the tree's log^2 T is a constant, drawn at the lowest counter's value at the smallest T.
    """
    d = df.sort_values("log2_horizon")
    fig, (mean_ax, max_ax) = subplots(1, 2, figsize=(11.0, 6.0))
    # one colour a counter (at most 20), one line style a node noise: 24 lines and no two alike
    palette = colormaps["tab20"]
    colour = {c: palette(i % 20) for i, c in enumerate(sorted(d["mechanism.counter"].unique()))}
    for (counter, noise), rows in d.groupby(["mechanism.counter", "mechanism.node_noise"], sort=True):
        ls, marker = LINESTYLES.get(str(noise), (":", "o"))
        style = {"ls": ls, "marker": marker, "markersize": 3, "lw": 1.0, "color": colour[counter]}
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


BOARD_BLOCK = ("<!-- counters-board -->", "<!-- /counters-board -->")
"""The markers of the page's leaderboard table at ``BOARD_HORIZON``, generated from the table (``board_markdown``)."""
BOARD_HORIZON = 2**20


def _fmt(value: float, digits: int, missing: str) -> str:
    return missing if math.isnan(value) else f"{value:.{digits}g}"


def board_markdown(df: pd.DataFrame, horizon: int = BOARD_HORIZON) -> str:
    """The leaderboard's rows at T = ``horizon`` as a Markdown table, in the table's order, with the lower bound.

    Variance and speed ratios to 3 significant digits, bytes exactly, the ARE to 2; "not timed" and "does not fit"
    where the cell is NaN.
    """
    rows = df[df["data.length"] == horizon]
    lines = ["| counter | node noise | mean var / tree | max var / tree | bytes | update / derived tree "
             "| release / derived tree | ARE at T, 24 KB |", "|---|---|---|---|---|---|---|---|"]
    for row in rows.to_dict("records"):
        cells = [str(row["mechanism.counter"]), str(row["mechanism.node_noise"]),
                 _fmt(float(row["var_mean_ratio"]), 3, ""), _fmt(float(row["var_max_ratio"]), 3, ""),
                 str(int(row["bytes_per_counter"])), _fmt(float(row["update_ratio"]), 3, "not timed"),
                 _fmt(float(row["release_ratio"]), 3, "not timed"), _fmt(float(row["are_top15"]), 2, "does not fit")]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"| factorisation lower bound | | {_fmt(float(rows['lower_bound_mean_ratio'].iloc[0]), 3, '')} "
                 "| | | | | |")
    return "\n".join(lines)


def write_board(page: Path, df: pd.DataFrame) -> None:
    """Replace the text between the ``BOARD_BLOCK`` markers of ``page`` by ``board_markdown(df)``."""
    write_between(page, BOARD_BLOCK, board_markdown(df))


def main(argv: list[str] | None = None) -> None:
    """``python -m dpstream.plots.counters TABLE PAGE``: the page's leaderboard block rewritten from the table."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("table", type=Path, help="the leaderboard's table (results/tables/counters.csv)")
    parser.add_argument("page", type=Path, help="a page with the generated block (docs/guide/counters.md)")
    args = parser.parse_args(argv)
    write_board(args.page, pd.read_csv(args.table))


if __name__ == "__main__":
    main()
