"""Figures of qr_alg5, qr_alg4, qr_error_vs_queries (E4) and qr_error_vs_n_fair. No mechanism runs here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.ticker import NullFormatter

from dpstream.plots import names
from dpstream.plots.common import legend, save_figure, subplots
from dpstream.plots.query_release import _error_panels, error_vs_n

MECH, N, EPS = "mechanism.name", "data.n", "epsilon"


def _label(name: str, g: pd.DataFrame) -> str:
    """The paper's name, marked when a row of ``g`` is not privacy-certified (unless the name says so already)."""
    label = names.label(name)
    certified = g["certified"].astype(bool).all() or "NOT privacy-certified" in label
    return label if certified else f"{label} (NOT privacy-certified)"


def alg5(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Left: max error vs n per (variant, eps) with the uniform line and tau; right: bad rounds and epochs."""
    fig, (ax, bx) = subplots(1, 2, figsize=(10, 4.2))
    means = df.groupby([MECH, EPS, N]).agg(max_error=("max_error", "mean"), tau=("tau", "mean"),
                                           bad=("bad_rounds", "mean"), epochs=("epochs", "mean"),
                                           uniform=("uniform_max_error", "mean"),
                                           certified=("certified", "all")).reset_index()
    epsilons = sorted(means[EPS].unique())
    for name in names.ordered(means[MECH]):
        for eps, g in means[means[MECH] == name].groupby(EPS):
            label = f"{_label(name, g)}, eps {eps:g}"
            style = names.line_style(name, epsilons.index(eps))
            ax.loglog(g[N], g["max_error"], label=label, **style)
            if g["tau"].max() < 1:
                ax.loglog(g[N], g["tau"], ls=style["linestyle"], lw=0.6, color=style["color"],
                          label=f"tau ({names.label(name)}, eps {eps:g})")
            bx.loglog(g[N], g["bad"].clip(lower=0.5), label=f"bad rounds, {label}", **style)
            bx.loglog(g[N], g["epochs"].clip(lower=0.5), label=f"epochs, {label}",
                      **{**style, "marker": "s", "markersize": 4, "linewidth": 0.8})
    uni = df.groupby(N)["uniform_max_error"].mean()
    ax.plot(uni.index, uni.values, color="k", ls=":", label="uniform distribution")
    for axis in (ax, bx):
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set_xticks(uni.index, [f"{v:g}" for v in uni.index])
    ax.set_xlabel("n")
    ax.set_ylabel("max error over answered queries (mean over trials)")
    legend(ax, fontsize=6)
    bx.set_xlabel("n")
    bx.set_ylabel("count (0 drawn at 0.5; epochs: small squares, thin)")
    legend(bx, fontsize=6)
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
    fig, ax = subplots(figsize=(6.5, 4.5))
    for eps, g in df.sort_values("data.d").groupby(EPS):
        ax.semilogy(g["data.d"], g["T_beat"], marker="o", ms=3, label=f"T_beat (alpha_D^ < uniform), eps {eps:g}")
    cap = df.groupby("data.d")["T_max"].first()
    ax.semilogy(cap.index, cap.values, color="k", ls="--", label="T_max: s = 24 T < N_Q = 2 3^d")
    ax.set_xlabel("d (all 3^d conjunctions)")
    ax.set_ylabel("game rounds T (n = 6.4 T records)")
    ax.legend(fontsize=7)
    save_figure(fig, df, experiment, path)
