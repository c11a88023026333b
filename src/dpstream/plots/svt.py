"""Figures of the sparse vector experiments.

svt_theory, svt_c, svt_kstar, svt_kcap, svt_order, shifting_hh, audit_svt, audit_power. Claims live in
``dpstream.claims.svt`` and ``dpstream.claims.audit``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from dpstream.plots import names
from dpstream.plots.common import legend, save_figure, subplots


def _synthetic(df: pd.DataFrame, design: str) -> pd.DataFrame:
    """``df`` with ``data.name`` = ``design`` and ``data.synthetic`` set, for the honest title of ``save_figure``."""
    tags: dict[str, Any] = {"data.name": design, "data.synthetic": True}
    return df.assign(**tags)


def theory_figure(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """E0: alpha vs c (Sparse pure / approximate / min, alpha_TM lines per k*, crossovers) and alpha_TM vs k."""
    df = df.sort_values("c")
    fig, (ax1, ax2) = subplots(1, 2, figsize=(12, 4.8))
    sparse, tm = names.line_style("svt_sparse")["color"], names.line_style("svt_tm")["color"]
    ax1.plot(df["c"], df["alpha_sparse_pure"], ":", color=sparse, label="Sparse, pure (basic composition)")
    ax1.plot(df["c"], df["alpha_sparse_approx"], "--", color=sparse, label="Sparse, approx. (advanced composition)")
    ax1.plot(df["c"], df["alpha_sparse"], "-", color=sparse, lw=2.5, alpha=0.6, label="Sparse, min")
    lines = sorted((c for c in df.columns if c.startswith("alpha_tm_kstar_")), key=lambda c: int(c.rsplit("_", 1)[1]))
    for i, col in enumerate(lines):
        k_star = col.rsplit("_", 1)[1]
        alpha = df[col].iloc[0]
        style = names.line_style("svt_tm", i)
        ax1.axhline(alpha, lw=1, color=tm, ls=style["linestyle"], label=f"ThresholdMonitor, k*={k_star}")
        cross = df[f"crossover_c_kstar_{k_star}"].iloc[0]
        ax1.plot([cross], [alpha], ls="none", **{k: v for k, v in style.items() if k != "linestyle"})
        ax1.annotate(f"c={cross:.2g}", (cross, alpha), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax1.set(
        xscale="log",
        yscale="log",
        xlabel="c (number of above-threshold queries)",
        ylabel="alpha (theory)",
        title=f"alpha vs c, m = {df['m'].iloc[0]:.0e}; dots: crossovers",
    )
    legend(ax1)
    ax2.plot(df["c"], df["alpha_tm_A"], "--", color=tm, label="ThresholdMonitor, Option A (Thm 3.2)")
    ax2.plot(df["c"], df["alpha_tm_B"], ":", color=tm, label="ThresholdMonitor, Option B (Thm 3.8)")
    ax2.plot(df["c"], df["alpha_tm"], "-", color=tm, lw=2.5, alpha=0.6, label="ThresholdMonitor, min (calibrate)")
    ax2.plot(df["c"], df["alpha_sparse"], "-", color=sparse, label="Sparse at c = k (min)")
    ax2.set(xscale="log", yscale="log", xlabel="k (cap) = c", ylabel="alpha (theory)", title="alpha_TM vs k")
    legend(ax2)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    save_figure(fig, df.drop(columns=[c for c in df.columns if c.startswith("data.")]), experiment, path)


def _series(df: pd.DataFrame, hue: list[str]) -> list[tuple[str, dict[str, Any], pd.DataFrame]]:
    """(legend label, line style, rows) per series.

    ``hue[0]`` is the mechanism (its name and style), the other hue columns (k*, kappa) pick the line style
    (``names.VARIANT_LINESTYLES``) within the mechanism's colour.
    """
    mech, rest = hue[0], hue[1:]
    variants = sorted({tuple(r) for r in df[rest].itertuples(index=False)}) if rest else []
    out = []
    for name in names.ordered(df[mech]):
        rows = df[df[mech] == name]
        if not rest:
            out.append((names.label(name), names.line_style(name), rows))
            continue
        for key, g in rows.groupby(rest, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            text = ", ".join(f"{_short(h)}={v}" for h, v in zip(rest, key, strict=True))
            out.append((f"{names.label(name)}, {text}", names.line_style(name, variants.index(key)), g))
    return out


def _short(column: str) -> str:
    """Legend name of a series column: ``mechanism.kappa`` -> ``kappa``, ``k_star`` -> ``k*``."""
    short = column.split(".")[-1]
    return "k*" if short == "k_star" else short


NOISE_SCALE = "noise_w_scale"  # TM's main noise Lap(10 Delta); Sparse's threshold noise Lap(sigma) fills its rows
PANELS: dict[str, tuple[str, str, str]] = {  # name -> (column, y label, title); "recall" adds recall to "success"
    "success": ("success_rate_eval", "fraction", "at margin gamma = alpha_TM(k*) (theory):\nsuccess rate (lines), "
                "recall on heavy (x, no line)"),
    "processed": ("processed_fraction", "fraction of queries processed", "queries processed before halting"),
    "success_fixed": ("success_rate_fixed", "fraction", "success rate at a FIXED margin\ngamma = alpha_TM(k* = 1) "
                      "(theory), the same for every point"),
    "noise_scale": (NOISE_SCALE, "Laplace scale", "noise scale: TM main noise w = Lap(10 Delta),\nSparse threshold "
                    "noise Lap(sigma)"),
}


def atoms_figure(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """E1: empirical alpha (theory thin dashed) and two panels from ``PANELS`` against plot_args.x.

    The panels are plot_args.panels; default: success rate and recall at the evaluation margin, queries processed.
    """
    args = experiment.get("plot_args", {})
    x, hue = args.get("x", "c"), args.get("hue", ["mechanism.name", "k_star"])
    panels = [PANELS[p] for p in args.get("panels", ["success", "processed"])]
    noise = [df[c] for c in (NOISE_SCALE, "noise_threshold_scale") if c in df]
    df = df.assign(processed_fraction=df["processed"] / df["m"],
                   **{NOISE_SCALE: noise[0].fillna(noise[-1]) if noise else np.nan})
    cols = ["emp_alpha", "theory_alpha", "recall", *(col for col, _, _ in panels)]
    means = df.groupby([*hue, x], sort=True)[cols].mean().reset_index()
    fig, axes = subplots(1, 3, figsize=(15, 4.6))
    for label, style, g in _series(means, hue):
        finite = g[np.isfinite(g["emp_alpha"])]
        axes[0].plot(finite[x], finite["emp_alpha"], label=label, **style)
        if not finite.empty:  # no theory line for mechanisms that cannot succeed (halt before all heavy queries)
            axes[0].plot(g[x], g["theory_alpha"], color=style["color"], ls=(0, (4, 2)), lw=0.8)
        for ax, (col, _, _) in zip(axes[1:], panels, strict=True):
            ax.plot(g[x], g[col], label=label, **style)
            if col == "success_rate_eval":
                ax.plot(g[x], g["recall"], color=style["color"], marker="x", ls="none")
    n_runs = int(df["n_runs"].min())
    axes[0].set(xscale="log", yscale="log", xlabel=names.column_label(x), ylabel="alpha")
    axes[0].set_title(f"empirical alpha (1-beta quantile, {n_runs} runs/point)\nthin dashed: theory", fontsize=9)
    for ax, (col, ylabel, title) in zip(axes[1:], panels, strict=True):
        ax.set(xscale="log", xlabel=names.column_label(x), ylabel=ylabel)
        ax.set(**({"yscale": "log"} if col == NOISE_SCALE else {"ylim": (-0.02, 1.02)}))
        ax.set_title(title, fontsize=9)
    legend(axes[0])
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    save_figure(fig, _synthetic(df, "svt atoms design"), experiment, path)


def audit_figure(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Audit: searched epsilon lower bound per case vs the claim; controls red, correct mechanisms green.

    One audit per case and trial: the bar is the median over trials, each trial a dot (hand-picked event: black
    tick), and a case's label counts the trials flagged (lower bound above the claim).
    """
    df = df.reset_index(drop=True)
    cases = list(dict.fromkeys(df["case"]))
    groups = {c: df[df["case"] == c] for c in cases}
    fig, ax = subplots(figsize=(10, 5.5))
    y = np.arange(len(cases))
    colors = ["tab:red" if bool(groups[c]["negative_control"].iloc[0]) else "tab:green" for c in cases]
    ax.barh(y, [float(groups[c]["epsilon_lower"].clip(upper=8.0).median()) for c in cases], color=colors, alpha=0.6)
    for i, c in enumerate(cases):
        ax.plot(groups[c]["epsilon_lower"].clip(upper=8.0), np.full(len(groups[c]), i), "o", color="k", ms=2.5,
                alpha=0.7)
        if "epsilon_lower_given" in df.columns:
            ax.plot(groups[c]["epsilon_lower_given"].clip(upper=8.0), np.full(len(groups[c]), i), "k|", ms=14, mew=1)
    ax.set_yticks(y, [f"{c} (flagged {int(groups[c]['fails'].astype(bool).sum())}/{len(groups[c])})" for c in cases])
    ax.axvline(df["claimed_epsilon"].max(), color="k", ls="--")
    ax.set(
        xlabel=f"epsilon lower bound (searched event, Clopper-Pearson on the certify half, alpha={df['alpha'].iloc[0]};"
        " clipped at 8)",
    )
    ax.legend(
        handles=[
            Rectangle((0, 0), 1, 1, color="tab:green", alpha=0.6, label="correct mechanism (must pass): median"),
            Rectangle((0, 0), 1, 1, color="tab:red", alpha=0.6, label="negative control (must be flagged): median"),
            Line2D([], [], color="k", marker="o", ms=2.5, ls="", label="one trial's audit"),
            Line2D([], [], color="k", marker="|", ls="", label="hand-picked event (where one exists)"),
            Line2D([], [], color="k", ls="--", label="claimed epsilon"),
        ],
        fontsize=8,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    save_figure(fig, _synthetic(df, "neighbouring query answers"), experiment, path)


def power_figure(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Fraction of seeds flagged vs r = eps used / eps claimed, one line per case; 0.9 and alpha marked."""
    rates = df.groupby(["case", "ratio"])["fails"].mean().reset_index()
    fig, ax = subplots(figsize=(8, 4.8))
    for case, g in rates.groupby("case"):
        ax.plot(g["ratio"], g["fails"], "o-", label=case)
    ax.axhline(0.9, color="k", ls="--", lw=1, label="90% of seeds")
    ax.axhline(df["alpha"].iloc[0], color="grey", ls=":", lw=1, label="alpha")
    ax.set(xscale="log", xlabel="r = epsilon used to build / epsilon claimed", ylabel="fraction of seeds flagged")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"searching auditor, {df['trial'].nunique() if 'trial' in df else '?'} seeds per point", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    save_figure(fig, _synthetic(df, "neighbouring query answers"), experiment, path)


def hh_figure(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """E2: recall per group size and empirical tau vs m.

    One panel per m (dotted: theoretical tau); one colour and marker per mechanism, one line style per k*.
    """
    ms = sorted(df["data.m"].unique())
    fig, axes = subplots(1, len(ms) + 1, figsize=(4.6 * (len(ms) + 1), 4.4), squeeze=False)
    axes = axes[0]
    size_cols = sorted(c for c in df.columns if c.startswith("size_g"))
    series = _series(df, ["mechanism.name", "k_star"])
    for ax, m in zip(axes, ms, strict=False):
        for label, style, g in series:
            g = g[g["data.m"] == m]
            sizes = g[size_cols].mean().to_numpy()
            recall = g[[c.replace("size", "recall") for c in size_cols]].mean().to_numpy()
            ax.plot(sizes, recall, label=label, **{**style, "markersize": 3.5, "markevery": 2})
            ax.axvline(g["theory_tau"].mean(), color=style["color"], ls=":", lw=0.8)
        ax.set(xscale="log", xlabel="group size = weight of its element", ylabel="recall", ylim=(-0.02, 1.02))
        ax.set_title(f"m = {m:.0e} steps (dotted: theoretical tau)", fontsize=9)
    legend(axes[0])
    ax = axes[-1]
    for label, style, g in series:
        g = g.groupby("data.m")[["emp_tau", "theory_tau"]].mean()
        ax.plot(g.index, g["emp_tau"], label=label, **style)
        ax.plot(g.index, g["theory_tau"], color=style["color"], ls=style["linestyle"], lw=0.6)
    ax.set(xscale="log", yscale="log", xlabel="m (time steps)", ylabel="tau")
    ax.set_title("empirical tau (markers) and theory (thin)", fontsize=9)
    legend(ax)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    save_figure(fig, _synthetic(df, "E2 shifting groups"), experiment, path)


def order_figure(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """E1: empirical alpha (bars) and theory (ticks) per query order and mechanism."""
    table = df.groupby(["data.order", "mechanism.name"])[["emp_alpha", "theory_alpha"]].mean().unstack()
    fig, ax = subplots(figsize=(8, 4.5))
    orders, mechanisms = list(table.index), names.ordered(table["emp_alpha"].columns)
    width = 0.8 / len(mechanisms)
    for j, name in enumerate(mechanisms):
        xs = np.arange(len(orders)) + j * width
        ax.bar(xs, table["emp_alpha"][name], width, color=names.line_style(name)["color"],
               label=f"{names.label(name)} (empirical)")
        ax.plot(xs, table["theory_alpha"][name], "k_", ms=20, mew=2)
    ax.set_xticks(np.arange(len(orders)) + width * (len(mechanisms) - 1) / 2, orders)
    ax.set(yscale="log", ylabel="alpha", xlabel="query order")
    ax.set_ylim(np.nanmin(table.to_numpy()) / 3, np.nanmax(table.to_numpy()) * 2)
    ax.set_title(f"empirical alpha ({int(df['n_runs'].min())} runs/point); black ticks: theory", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    save_figure(fig, _synthetic(df, "svt atoms design"), experiment, path)
