"""Figure 3 panels (Holland): one line per sketch, mean over trials with a min-max band.

The paper's claims for each panel are rules in ``dpstream.claims.sketch``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dpstream.plots.common import legend, mechanism_lines, save_figure, subplots


def panel(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Draw ``plot_args.y`` against ``plot_args.x`` per mechanism, like the paper's panel."""
    args = experiment["plot_args"]
    fig, ax = subplots(figsize=(5.2, 3.8))
    mechanism_lines(ax, df, args["x"], args["y"])
    if args.get("logy"):
        ax.set_yscale("log")
    if args.get("logx"):
        ax.set_xscale("log")
    ax.set_xlabel(args.get("xlabel", args["x"]))
    ax.set_ylabel(args.get("ylabel", args["y"]))
    ax.grid(True, which="both", alpha=0.3)
    legend(ax)
    save_figure(fig, df, experiment, path)
