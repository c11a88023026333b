"""Figures of the query-release experiments (E0, E1, E2, E3, E5, E10); claims live in ``dpstream.claims``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from dpstream.claims.query_release import TRIVIAL_ERROR, alg3_feasible
from dpstream.plots import names
from dpstream.plots.common import figure_legend, save_figure, subplots
from dpstream.privacy.query_release import game_rho

# ---- E0 -------------------------------------------------------------------------------------------------------

def theory_curves(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Log-log accuracy bounds vs n, with where each drops below 1 marked; Alg 3 only where s < N_Q (feasible)."""
    d = df.sort_values("data.n")
    feasible = alg3_feasible(d)
    fig, ax = subplots(figsize=(6.5, 4.5))
    for col, name, label in [("alpha_hru", "qr_hru", "HRU game (Alg 3), where s < N_Q"),
                             ("alpha_pmw", "qr_pmw", "PMW / IC"), ("alpha_laplace", "qr_laplace", "Laplace")]:
        rows = d[feasible] if col == "alpha_hru" else d
        style = {**names.line_style(name), "linestyle": "-", "markersize": 4}
        ax.loglog(rows["data.n"], rows[col], label=label, **style)
        below = rows[rows[col] < 1]
        if len(below):
            ax.axvline(below["data.n"].iloc[0], ls=":", lw=0.8, color=style["color"])
    if (~feasible).any():
        ax.axvspan(d.loc[~feasible, "data.n"].min(), d["data.n"].max(), color="0.9", zorder=0,
                   label="Alg 3 infeasible (s = 12 n L >= N_Q)")
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="alpha = 1 (vacuous above)")
    ax.set_xlabel("n (records)")
    ax.set_ylabel("alpha bound (beta = 0.05)")
    ax.legend(fontsize=8)
    save_figure(fig, df, experiment, path)


# ---- E1 -------------------------------------------------------------------------------------------------------

def _curves(df: pd.DataFrame) -> list[tuple[float, np.ndarray, np.ndarray, float]]:
    out = []
    for _, row in df.iterrows():
        c = json.loads(row["curve"])
        out.append((row["mechanism.eta"], np.array(c["round"]), np.array(c["max_error"]), row["uniform_max_error"]))
    return out


def convergence(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error of the running average D^_{<=t} vs t per eta, with 4 rho(t) dashed and the uniform line."""
    fig, ax = subplots(figsize=(6.5, 4.5))
    big_l = math.log(2 * 3 ** int(df["data.d"].iloc[0]))
    for eta, t, err, _ in sorted(_curves(df), key=lambda c: c[0]):
        line = ax.plot(t, err, label=f"eta = {eta:g}")[0]
        ax.plot(t, np.minimum(4 * game_rho(eta, t, big_l), TRIVIAL_ERROR), ls="--", lw=0.8, color=line.get_color())
    ax.axhline(df["uniform_max_error"].mean(), color="k", ls=":", label="uniform distribution")
    ax.set_xscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel("max error over the workload")
    ax.set_title("dashed: 4 rho(t), capped at 1 (every error is <= 1: the bound says nothing there)", fontsize=8)
    ax.legend(fontsize=8)
    save_figure(fig, df, experiment, path)


# ---- E2, E3 ---------------------------------------------------------------------------------------------------

def _error_panels(df: pd.DataFrame, experiment: dict[str, Any], path: Path, x: str, panel: str | None) -> None:
    panels = sorted(df[panel].unique()) if panel else [None]
    fig, axes = subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False, sharey=True)
    for ax, value in zip(axes[0], panels, strict=True):
        sub = df if value is None else df[df[panel] == value]
        means = sub.groupby(["mechanism.name", x]).agg(
            max_error=("max_error", "mean"), uniform=("uniform_max_error", "mean"),
            certified=("certified", "all")).reset_index()
        for name in names.ordered(means["mechanism.name"]):
            g = means[means["mechanism.name"] == name]
            note = "" if g["certified"].all() else " (eps_data > eps: NOT certified at nominal eps)"
            label = names.label(name) + note
            ax.loglog(g[x], g["max_error"], label=label, **names.line_style(name))
        uni = sub.groupby(x)["uniform_max_error"].mean()
        ax.plot(uni.index, uni.values, color="k", ls=":", label="uniform distribution")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(uni.index, [f"{v:g}" for v in uni.index])
        ax.set_xlabel(names.column_label(x))
        ax.set_title("" if value is None else f"{panel} = {value:g}", fontsize=9)
    axes[0][0].set_ylabel("max error (mean over trials)")
    figure_legend(fig, axes[0][-1])
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    save_figure(fig, df, experiment, path)


def error_vs_n(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error vs n, one panel per eps, uniform line dotted."""
    _error_panels(df, experiment, path, "data.n", "epsilon")


def error_vs_eps(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error vs eps, uniform line dotted."""
    _error_panels(df, experiment, path, "epsilon", None)


# ---- E5 -------------------------------------------------------------------------------------------------------

def analyst_audit(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Audited lower bound on the analyst epsilon vs s, next to the claimed eps_analyst (Lemma 3.8 or trivial)."""
    d = df.sort_values("mechanism.s")
    fig, ax = subplots(figsize=(6.5, 4.5))
    ax.semilogx(d["mechanism.s"], d["eps_lower"], marker="o", label="audited lower bound (Clopper-Pearson, 95%)")
    ax.semilogx(d["mechanism.s"], d["eps_analyst"], marker="s", ls="--", label="claimed eps_analyst")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("density s of the query player")
    ax.set_ylabel("analyst epsilon")
    ax.legend(fontsize=8, loc="center left")
    if "synopsis_max_error" in d:
        twin = ax.twinx()
        twin.semilogx(d["mechanism.s"], d["synopsis_max_error"], color="tab:green", marker="^",
                      label="max error of D^ (utility)")
        twin.axhline(d["uniform_max_error"].mean(), color="k", ls=":", label="uniform distribution")
        twin.set_ylabel("max error")
        twin.legend(fontsize=8, loc="lower right")
    save_figure(fig, df, experiment, path)


# ---- E10 ------------------------------------------------------------------------------------------------------

def median_toy(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error (linear and non-linear queries) vs n per |X| and eps, one line per mechanism, uniform dotted."""
    panels = sorted({(u, e) for u, e in zip(df["data.universe_size"], df["epsilon"], strict=True)})
    fig, axes = subplots(1, len(panels), figsize=(3.6 * len(panels), 4), squeeze=False, sharey=True)
    for ax, (u, e) in zip(axes[0], panels, strict=True):
        sub = df[(df["data.universe_size"] == u) & (df["epsilon"] == e)]
        for kind, g in sub.groupby("mechanism.kind"):
            m = g.groupby("data.n")[["max_error", "nonlinear_max_error"]].mean()
            name = names.MEDIAN_KINDS[kind]
            ax.plot(m.index, m["max_error"], label=f"{names.label(name)}: all queries", **names.line_style(name, 0))
            ax.plot(m.index, m["nonlinear_max_error"], label=f"{names.label(name)}: max queries",
                    **names.line_style(name, 1))
        uni = sub.groupby("data.n")["uniform_max_error"].mean()
        ax.plot(uni.index, uni.values, color="k", ls=":", label="uniform distribution")
        ax.set_title(f"|X| = {u}, eps = {e:g}", fontsize=9)
        ax.set_yscale("log")
        ax.set_xlabel("n")
    axes[0][0].set_ylabel("max error (mean over trials)")
    figure_legend(fig, axes[0][-1])
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    save_figure(fig, df, experiment, path)
