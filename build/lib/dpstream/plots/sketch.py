"""Figure 3 panels (seed 004): one line per sketch, mean over trials with a min-max band.
The paper's claims for each panel are rules in ``dpstream.claims.sketch``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from dpstream.plots.common import save_figure

LABELS = {
    "cms": "CMS (non-private)", "cs": "CS (non-private)",
    "punctualcms": "PunctualCMS", "punctualcs": "PunctualCS",
    "lazycms": "LazyCMS", "lazycs": "LazyCS",
}
ORDER = list(LABELS.values())


def panel(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Draw ``plot_args.y`` against ``plot_args.x`` per mechanism, like the paper's panel."""
    args = experiment["plot_args"]
    data = df.assign(sketch=df["mechanism.name"].map(LABELS).fillna(df["mechanism.name"]))
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    sns.lineplot(data=data, x=args["x"], y=args["y"], hue="sketch", style="sketch", markers=True,
                 dashes=False, errorbar=("pi", 100), hue_order=[o for o in ORDER if o in set(data["sketch"])],
                 style_order=[o for o in ORDER if o in set(data["sketch"])], ax=ax)
    if args.get("logy"):
        ax.set_yscale("log")
    if args.get("logx"):
        ax.set_xscale("log")
    ax.set_xlabel(args.get("xlabel", args["x"]))
    ax.set_ylabel(args.get("ylabel", args["y"]))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    save_figure(fig, df, experiment, path)
