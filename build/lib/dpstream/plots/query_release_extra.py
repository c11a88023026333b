"""Figures of qr_alg5, qr_alg4, qr_error_vs_queries (E4) and qr_error_vs_n_fair. No mechanism runs here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import NullFormatter

from dpstream.plots.common import save_figure
from dpstream.plots.query_release import _error_panels, error_vs_n

MECH, N, EPS = "mechanism.name", "data.n", "epsilon"


def _label(name: str, g: pd.DataFrame) -> str:
    return name if g["certified"].astype(bool).all() else f"{name} (NOT privacy-certified)"


def alg5(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Left: max error vs n per (variant, eps) with the uniform line and tau; right: bad rounds and epochs."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.2))
    means = df.groupby([MECH, EPS, N]).agg(max_error=("max_error", "mean"), tau=("tau", "mean"),
                                           bad=("bad_rounds", "mean"), epochs=("epochs", "mean"),
                                           uniform=("uniform_max_error", "mean"),
                                           certified=("certified", "all")).reset_index()
    for (name, eps), g in means.groupby([MECH, EPS]):
        label = f"{_label(name, g)}, eps {eps:g}"
        line = ax.loglog(g[N], g["max_error"], marker="o", ms=3, label=label)[0]
        if g["tau"].max() < 1:
            ax.loglog(g[N], g["tau"], ls="--", lw=0.8, color=line.get_color(), label=f"tau ({name}, eps {eps:g})")
        bx.loglog(g[N], g["bad"].clip(lower=0.5), marker="o", ms=3, color=line.get_color(),
                  label=f"bad rounds, {label}")
        bx.loglog(g[N], g["epochs"].clip(lower=0.5), marker="s", ms=3, ls=":", color=line.get_color(),
                  label=f"epochs, {label}")
    uni = df.groupby(N)["uniform_max_error"].mean()
    ax.plot(uni.index, uni.values, color="k", ls=":", label="uniform distribution")
    for axis in (ax, bx):
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set_xticks(uni.index, [f"{v:g}" for v in uni.index])
    ax.set_xlabel("n")
    ax.set_ylabel("max error over answered queries (mean over trials)")
    ax.legend(fontsize=6)
    bx.set_xlabel("n")
    bx.set_ylabel("count (0 drawn at 0.5)")
    bx.legend(fontsize=6)
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    save_figure(fig, df, experiment, path)


def alg4(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error vs n, one panel per eps: Alg 4, Alg 3 (T = n/6.4), uniform line."""
    _error_panels(df, experiment, path, N, EPS)


def error_vs_queries(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Spec E4: max error vs |Q|, one panel per eps, uniform line dotted."""
    _error_panels(df, experiment, path, "data.n_queries", EPS)


def error_vs_n_fair(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """E2 on Fair's data; the title states the structural zeros (non-empty cells of the 2^d histogram per n)."""
    cells = df.groupby(N)["nonempty_cells"].mean()
    d = int(df["data.d"].iloc[0])
    zeros = ", ".join(f"n {k:g}: {v:.0f}" for k, v in cells.items())
    error_vs_n(df, {**experiment, "title": f"{experiment.get('title', '')}\nnon-empty cells of 2^{d}: {zeros}"},
               path)


def crossover(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """T needed for alpha_D^ < uniform (T_beat) vs the feasibility cap T_max = N_Q/24, per d and eps (log scale)."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for eps, g in df.sort_values("data.d").groupby(EPS):
        ax.semilogy(g["data.d"], g["T_beat"], marker="o", ms=3, label=f"T_beat (alpha_D^ < uniform), eps {eps:g}")
    cap = df.groupby("data.d")["T_max"].first()
    ax.semilogy(cap.index, cap.values, color="k", ls="--", label="T_max: s = 24 T < N_Q = 2 3^d")
    ax.set_xlabel("d (all 3^d conjunctions)")
    ax.set_ylabel("game rounds T (n = 6.4 T records)")
    ax.legend(fontsize=7)
    save_figure(fig, df, experiment, path)
