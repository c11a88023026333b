"""Figure 4 panels (Holland, Sec. 6.5).

Heavy hitters on a trace, one line per tracker (mean over trials, min-max band). The paper's claims are rules in
``dpstream.claims.heavy_hitters``.

The memory panels plot real bytes (``memory_bytes``) for every tracker. The paper's memory axis (20 KB
per k of k~ for LazyHH) is not reproduced by any consistent model: under the paper's own Figure 3 model
(12 B per tree level per private cell) a LazyCMS of width k~ = k = 128 needs 26 KB even at depth 1 and
0.70 MB at our depth 38, and our LazyHH holds 1.1 MB; so those panels also plot LazyHH against k~.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.axes import Axes

from dpstream.plots.common import legend, mechanism_lines, save_figure, subplots

AXIS_NOTE = ("The paper's memory axis (20 KB per k of k~) is not LazyHH's memory under any consistent model "
             "(its own Fig. 3 model: >= 26 KB at k~ = k even at depth 1); left: real bytes, right: LazyHH vs k~")


def _style(ax: Axes, df: pd.DataFrame, args: dict[str, Any], xlabel: str, logx: bool) -> None:
    if logx:
        ax.set_xscale("log")
    if args.get("logy") and (df[args["y"]] > 0).any():
        ax.set_yscale("log")
    if args.get("ylim"):
        ax.set_ylim(*args["ylim"])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(args.get("ylabel", args["y"]))
    ax.grid(True, which="both", alpha=0.3)
    legend(ax)


def panel(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Draw ``plot_args.y`` against ``plot_args.x`` per tracker.

    With ``plot_args.k_tilde_panel`` also LazyHH against k~ beside it, with a note that the paper's memory axis is a
    label.
    """
    args = experiment["plot_args"]
    with_k = bool(args.get("k_tilde_panel"))
    fig, axes = subplots(1, 2 if with_k else 1, figsize=(10.4 if with_k else 5.2, 3.8), squeeze=False)
    fig.subplots_adjust(wspace=0.3)
    mechanism_lines(axes[0, 0], df, args["x"], args["y"])
    _style(axes[0, 0], df, args, args.get("xlabel", args["x"]), bool(args.get("logx")))
    if with_k:
        lazy = df[df["mechanism.name"] == "lazyhh"]
        mechanism_lines(axes[0, 1], lazy, "mechanism.k_tilde", args["y"])
        _style(axes[0, 1], lazy, args, "k~ (LazyHH candidate set; the paper's 20 KB = k~ = k)", False)
        fig.text(0.5, -0.04, AXIS_NOTE, ha="center", fontsize=8)
    save_figure(fig, df, experiment, path)
