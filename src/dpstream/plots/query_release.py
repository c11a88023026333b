"""Figures and claim checks of the query-release experiments (E0, E1, E2, E3, E5, E10). No mechanism runs here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from dpstream.plots.common import save_figure

Claim = dict[str, str]


def _claim(claim: str, measured: str, holds: bool | None) -> Claim:
    verdict = "n/a" if holds is None else ("holds" if holds else "does not hold")
    return {"claim": claim, "measured": measured, "verdict": verdict}


# ---- E0 -------------------------------------------------------------------------------------------------------

def theory_curves(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Log-log accuracy bounds vs n, with where each drops below 1 marked."""
    d = df.sort_values("data.n")
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for col, label in [("alpha_hru", "Alg 3 (HRU)"), ("alpha_pmw", "PMW / IC"), ("alpha_laplace", "Laplace")]:
        ax.loglog(d["data.n"], d[col], marker="o", ms=3, label=label)
        below = d[d[col] < 1]
        if len(below):
            ax.axvline(below["data.n"].iloc[0], ls=":", lw=0.8, color=ax.lines[-1].get_color())
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="alpha = 1 (vacuous above)")
    ax.set_xlabel("n (records)")
    ax.set_ylabel("alpha bound (beta = 0.05)")
    ax.legend()
    save_figure(fig, df, experiment, path)


def _crossing(df: pd.DataFrame, col: str) -> float:
    below = df.sort_values("data.n")
    below = below[below[col] < 1]
    return float(below["data.n"].iloc[0]) if len(below) else math.inf


def theory_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    out = []
    ref = {1000: (244, 7.1, 183), 100000: (27.7, 0.79, 1.8), 100000000: (1.17, 0.03, 0.002)}
    for n, (hru, pmw_, lap) in ref.items():
        row = df[df["data.n"] == n]
        if len(row):
            r = row.iloc[0]
            ok = all(abs(a / b - 1) < 0.1 for a, b in [(r.alpha_hru, hru), (r.alpha_pmw, pmw_), (r.alpha_laplace, lap)])
            out.append(_claim(f"spec reference bounds at n = {n:g}: Alg3 {hru}, PMW {pmw_}, Laplace {lap}",
                              f"{r.alpha_hru:.3g}, {r.alpha_pmw:.3g}, {r.alpha_laplace:.3g}", ok))
    for col in ("alpha_hru", "alpha_pmw", "alpha_laplace"):
        out.append(_claim(f"{col} < 1 from n =", f"{_crossing(df, col):.3g}", None))
    return out


# ---- E1 -------------------------------------------------------------------------------------------------------

def _curves(df: pd.DataFrame) -> list[tuple[float, np.ndarray, np.ndarray, float]]:
    out = []
    for _, row in df.iterrows():
        c = json.loads(row["curve"])
        out.append((row["mechanism.eta"], np.array(c["round"]), np.array(c["max_error"]), row["uniform_max_error"]))
    return out


def _rho(eta: float, t: np.ndarray, big_l: float, beta: float = 0.05) -> np.ndarray:
    return eta + big_l / (eta * t) + 4 * math.log(2 / beta) / np.sqrt(t)


def convergence(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error of the running average D^_{<=t} vs t per eta, with 4 rho(t) dashed and the uniform line."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    big_l = math.log(2 * 3 ** int(df["data.d"].iloc[0]))
    for eta, t, err, _ in sorted(_curves(df), key=lambda c: c[0]):
        line = ax.plot(t, err, label=f"eta = {eta:g}")[0]
        ax.plot(t, np.minimum(4 * _rho(eta, t, big_l), 2.0), ls="--", lw=0.8, color=line.get_color())
    ax.axhline(df["uniform_max_error"].mean(), color="k", ls=":", label="uniform distribution")
    ax.set_xscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel("max error over the workload")
    ax.set_title("dashed: 4 rho(t) (capped at 2)", fontsize=8)
    ax.legend(fontsize=8)
    save_figure(fig, df, experiment, path)


def convergence_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    big_l = math.log(2 * 3 ** int(df["data.d"].iloc[0]))
    out = []
    for eta, t, err, uniform in _curves(df):
        bound = 4 * _rho(eta, t, big_l)
        out.append(_claim(f"eta = {eta:g}: max error <= 4 rho(t) at every recorded t",
                          f"final error {err[-1]:.3f} (uniform {uniform:.3f}), final 4 rho {bound[-1]:.3f}",
                          bool(np.all(err <= bound))))
    return out


# ---- E2, E3 ---------------------------------------------------------------------------------------------------

def _error_panels(df: pd.DataFrame, experiment: dict[str, Any], path: Path, x: str, panel: str | None) -> None:
    panels = sorted(df[panel].unique()) if panel else [None]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False, sharey=True)
    for ax, value in zip(axes[0], panels, strict=True):
        sub = df if value is None else df[df[panel] == value]
        means = sub.groupby(["mechanism.name", x]).agg(
            max_error=("max_error", "mean"), uniform=("uniform_max_error", "mean"),
            certified=("certified", "all")).reset_index()
        for name, g in means.groupby("mechanism.name"):
            label = name if g["certified"].all() else f"{name} (eps_data > eps: NOT certified at nominal eps)"
            ax.loglog(g[x], g["max_error"], marker="o", ms=3, label=label)
        uni = sub.groupby(x)["uniform_max_error"].mean()
        ax.plot(uni.index, uni.values, color="k", ls=":", label="uniform distribution")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(uni.index, [f"{v:g}" for v in uni.index])
        ax.set_xlabel(x)
        ax.set_title("" if value is None else f"{panel} = {value:g}", fontsize=9)
    axes[0][0].set_ylabel("max error (mean over trials)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    save_figure(fig, df, experiment, path)


def error_vs_n(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error vs n, one panel per eps, uniform line dotted."""
    _error_panels(df, experiment, path, "data.n", "epsilon")


def error_vs_eps(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error vs eps, uniform line dotted."""
    _error_panels(df, experiment, path, "epsilon", None)


def _beats_uniform(df: pd.DataFrame, name: str) -> tuple[int, int]:
    sub = df[df["mechanism.name"] == name]
    return int((sub["max_error"] < sub["uniform_max_error"]).sum()), len(sub)


def _common_claims(df: pd.DataFrame) -> list[Claim]:
    out = []
    for name in sorted(df["mechanism.name"].unique()):
        won, total = _beats_uniform(df, name)
        sub = df[df["mechanism.name"] == name]
        out.append(_claim(f"{name} beats the uniform distribution (max error)", f"{won}/{total} runs; "
                          f"eps_data accounted {sub['eps_data'].min():.3g}..{sub['eps_data'].max():.3g}", None))
    return out


def error_vs_n_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    out = _common_claims(df)
    for name in ("qr_hru_private", "qr_hru_uncapped"):
        sub = df[df["mechanism.name"] == name].groupby("data.n")["max_error"].mean()
        if len(sub) > 1:
            out.append(_claim(f"{name}: max error decreases with n", " -> ".join(f"{v:.3f}" for v in sub.values),
                              bool(sub.values[-1] < sub.values[0])))
    hru = df[df["mechanism.name"] == "qr_hru_private"].groupby(["epsilon", "data.n"])["max_error"].mean()
    lap = df[df["mechanism.name"] == "qr_laplace"].groupby(["epsilon", "data.n"])["max_error"].mean()
    both = pd.concat([hru.rename("hru"), lap.rename("lap")], axis=1).dropna()
    if len(both):
        out.append(_claim("Alg 3 (T = n/6.4) beats independent Laplace", f"{int((both.hru < both.lap).sum())}"
                          f"/{len(both)} (eps, n) points", bool((both.hru < both.lap).all())))
    return out


def error_vs_eps_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    out = _common_claims(df)
    lap = df[df["mechanism.name"] == "qr_laplace"].groupby("epsilon")["max_error"].mean()
    if len(lap) > 1:
        slope = np.polyfit(np.log(lap.index.values), np.log(lap.values), 1)[0]
        out.append(_claim("Laplace error ~ 1/eps (log-log slope -1)", f"slope {slope:.2f}", bool(abs(slope + 1) < 0.2)))
    return out


# ---- E5 -------------------------------------------------------------------------------------------------------

def analyst_audit(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Audited lower bound on the analyst epsilon vs s, next to the claimed eps_analyst (Lemma 3.8 or trivial)."""
    d = df.sort_values("mechanism.s")
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
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


def analyst_audit_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    out = []
    for _, r in df.sort_values("mechanism.s").iterrows():
        out.append(_claim(f"s = {r['mechanism.s']:g}: audit does not refute eps_analyst = {r.eps_analyst:.3g}",
                          f"lower bound {r.eps_lower:.3f} (Pr[event] {r.p_with_canary:.3f} with canary vs "
                          f"{r.p_without_canary:.3f} without, {int(r.audit_runs)} runs each)"
                          + (f"; D^ max error {r.synopsis_max_error:.3f} (uniform {r.uniform_max_error:.3f})"
                             if "synopsis_max_error" in r else ""), not bool(r.audit_fails)))
    return out


# ---- E10 ------------------------------------------------------------------------------------------------------

def median_toy(df: pd.DataFrame, experiment: dict[str, Any], path: Path) -> None:
    """Max error (linear and non-linear queries) vs n per |X| and eps, one line per mechanism, uniform dotted."""
    panels = sorted({(u, e) for u, e in zip(df["data.universe_size"], df["epsilon"], strict=True)})
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 4), squeeze=False, sharey=True)
    for ax, (u, e) in zip(axes[0], panels, strict=True):
        sub = df[(df["data.universe_size"] == u) & (df["epsilon"] == e)]
        for kind, g in sub.groupby("mechanism.kind"):
            m = g.groupby("data.n")[["max_error", "nonlinear_max_error"]].mean()
            line = ax.plot(m.index, m["max_error"], marker="o", label=f"{kind}: all queries")[0]
            ax.plot(m.index, m["nonlinear_max_error"], ls="--", color=line.get_color(), label=f"{kind}: max queries")
        uni = sub.groupby("data.n")["uniform_max_error"].mean()
        ax.plot(uni.index, uni.values, color="k", ls=":", label="uniform distribution")
        ax.set_title(f"|X| = {u}, eps = {e:g}", fontsize=9)
        ax.set_yscale("log")
        ax.set_xlabel("n")
    axes[0][0].set_ylabel("max error (mean over trials)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    save_figure(fig, df, experiment, path)


def median_toy_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    out = []
    med = df[df["mechanism.kind"] == "median"]
    out.append(_claim("median mechanism answers non-linear max queries better than the uniform distribution",
                      f"mean non-linear max error {med['nonlinear_max_error'].mean():.3f} vs uniform "
                      f"{med['uniform_nonlinear_max_error'].mean():.3f}",
                      bool(med["nonlinear_max_error"].mean() < med["uniform_nonlinear_max_error"].mean())))
    for kind in ("median", "pmw", "laplace"):
        sub = df[df["mechanism.kind"] == kind]
        out.append(_claim(f"{kind}: mean max error over all toy runs", f"{sub['max_error'].mean():.3f} "
                          f"(uniform {sub['uniform_max_error'].mean():.3f})", None))
    return out
