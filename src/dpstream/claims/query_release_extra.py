"""Claims of the query-release experiments qr_alg5, qr_alg4, qr_error_vs_queries (E4) and qr_error_vs_n_fair.

Each claim: the paper's sentence, a rule fixed before the run (the constant strings below), the measurement, and a
verdict from ``dpstream.claims.core``: 95% Student-t intervals of paired differences over trials (below 0 holds,
above 0 fails, straddling: inconclusive) and Page's trend test with trials as blocks. Rate claims (n^{-2/5},
n^{-1/3}, 1/sqrt(n), sqrt(|Q|)) are tested as a direction only; the rule says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpstream.claims.core import (
    Claim,
    all_points,
    below_at_points,
    deciding_effect,
    monotone_trend,
    trend_effect,
    verdict_of,
)

MECH, N, EPS, Q = "mechanism.name", "data.n", "epsilon", "data.n_queries"
PAPER, SCALED = "qr_alg5", "qr_alg5_scaled_UNCERTIFIED"


def _label(key: Any, names: list[str]) -> str:
    return ", ".join(f"{n.split('.')[-1]} {v:g}" for n, v in zip(names, np.atleast_1d(np.asarray(key)), strict=True))


def _below_uniform_points(df: pd.DataFrame, keys: list[str]) -> tuple[list[bool | None], str]:
    """At every point of ``keys``, paired over trials: mean max error below the uniform line.

    The refutation side is Holm-corrected (``below_at_points``); the text is the effect at the deciding point.
    """
    groups = list(df.groupby(keys))
    pairs = [(g.set_index("trial")["max_error"], g.set_index("trial")["uniform_max_error"]) for _, g in groups]
    return below_at_points(pairs), deciding_effect(pairs, [_label(k, keys) for k, _ in groups])


def _trends(df: pd.DataFrame, by: str, x: str,
            direction: Literal["increasing", "decreasing"]) -> tuple[list[bool | None], str]:
    """Per value of ``by``: Page's trend test of max_error over ``x`` with the trials as blocks, and its size."""
    holds, parts = [], []
    for key, g in df.groupby(by):
        ok, stat, p = monotone_trend(g[x], g["max_error"], direction, g["trial"])
        holds.append(ok)
        test = f"Page L {stat:.4g}, p {p:.2g}" if np.isfinite(p) else "< 3 trials: inconclusive"
        parts.append(f"{_label(key, [by])}: {test}; {trend_effect(g[x], g['max_error'], g['trial'])}")
    return holds, "; ".join(parts) or "no rows"


PAIRED = ("paired 95% t interval over trials: below 0 holds, above 0 fails (Holm-corrected over the points: a point "
          "fails only when Holm's procedure at 2.5% one-sided rejects 'not above'), straddling or < 3 trials "
          "inconclusive")
PAGE = ("Page's trend test with trials as blocks, p < 0.05 in the claimed direction holds, in the opposite "
        "direction or constant fails, else or < 3 trials inconclusive; tests the direction only, not the rate")


TRIVIAL = ("Laplace's error is replaced by the best trivial answer of the same trial, min(Laplace clipped to [0, 1], "
           "the uniform answer): every answer lies in [0, 1], so a release that only beats an unclipped Laplace error "
           "above 1 beats nothing; the clipped error is bounded by min(max_error, 1) (the table keeps no clipped "
           "answers)")


def trivial_baseline(rows: pd.DataFrame) -> pd.Series:
    """Per row: min(min(max_error, 1), uniform_max_error), the best trivial release next to independent Laplace."""
    return rows["max_error"].clip(upper=1.0).combine(rows["uniform_max_error"], min)


def _below_other(df: pd.DataFrame, a: str, b: str, keys: list[str]) -> tuple[bool | None, list[str]]:
    """At every point of ``keys``: mechanism a's mean max error below b's (paired t interval over trials).

    Against independent Laplace, b's error is the best trivial baseline (``trivial_baseline``).
    """
    parts: list[str] = []
    rows = df[df[MECH].isin([a, b])]
    if b == LAPLACE:
        rows = rows.assign(max_error=rows["max_error"].where(rows[MECH] != LAPLACE, trivial_baseline(rows)))
    pairs, labels = [], []
    for key, g in rows.groupby(keys):
        wide = g.pivot_table(index="trial", columns=MECH, values="max_error")
        if a not in wide or b not in wide:
            continue
        pairs.append((wide[a], wide[b]))
        label = "/".join(f"{v:g}" for v in np.atleast_1d(np.asarray(key)))
        labels.append(_label(key, keys))
        parts.append(f"{label}: {wide[a].mean():.3g} vs {wide[b].mean():.3g}")
    return all_points(below_at_points(pairs)), parts + [deciding_effect(pairs, labels)]


LAPLACE = "qr_laplace"


# ---- qr_alg5 -----------------------------------------------------------------------------------------------------

RULE_ALG5_UNIFORM = ("every row with the paper's constants has 0 bad rounds and a max error equal to the uniform "
                     "distribution's (|difference| <= 1e-12): Alg 5 answered everything from H_0 = D_0 (theory: "
                     "Pr[any bad] <= k exp(-(tau - 1)/sigma)); no paper rows: inconclusive")
RULE_ALG5_PRIVACY = ("a row with the paper's constants whose accounted eps_data (Thm 5.6 condition) or eps_analyst "
                     "(Claims 5.9 + 5.10) exceeds eps: not confirmed; otherwise inconclusive: the accounting "
                     "recomputes the paper's own formulas (Thm 5.6 is stated without proof), not an independent check")
RULE_ALG5_ACCURACY = ("on every row whose bound tau + 6 sigma ln(3k/beta) is < 1 (else vacuous), the max error over "
                      "answered queries is <= the bound; no such row: inconclusive")
RULE_ALG5_HALT = "every row answered all k queries (answered_fraction = 1); no rows: inconclusive"
RULE_ALG5_SCALED = ("scaled (NOT certified) rows: at every (n, eps) point the mean max error is below the uniform "
                    f"line ({PAIRED})")
RULE_ALG5_TREND = f"scaled (NOT certified) rows: max error decreases with n at every eps ({PAGE})"


def alg5_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """Algorithm 5: what theory predicts at laptop n with the paper's constants, and what the scaled version does."""
    paper, scaled = df[df[MECH] == PAPER], df[df[MECH] == SCALED]
    uniform_ok = ((paper["bad_rounds"] == 0)
                  & ((paper["max_error"] - paper["uniform_max_error"]).abs() <= 1e-12)).tolist()
    bound = paper["epsilon"] * (1 + 1e-9)
    private_ok = ((paper["eps_data"] <= bound) & (paper["eps_analyst"] <= bound)).tolist()
    tight = df[df["alpha_bound"] < 1]
    out = [
        Claim("with the paper's constants (tau ~ 1.5e7, sigma ~ 2e5 at n = 4000, d = 12) every query is good and "
              "Alg 5 releases H_0 = D_0, the uniform distribution", RULE_ALG5_UNIFORM,
              f"{sum(uniform_ok)} of {len(uniform_ok)} paper rows; bad rounds max "
              f"{paper['bad_rounds'].max() if len(paper) else float('nan'):g}; tau {paper['tau'].min():.3g} .. "
              f"{paper['tau'].max():.3g}, sigma {paper['sigma'].min():.3g} .. {paper['sigma'].max():.3g}",
              verdict_of(all_points(uniform_ok))),
        Claim("Thm 5.7/5.8: Alg 5 is (eps, delta)-DP and (eps, delta) one-query-to-many-analyst private",
              RULE_ALG5_PRIVACY,
              f"eps_data / eps <= {(paper['eps_data'] / paper['epsilon']).max():.3g}, eps_analyst / eps <= "
              f"{(paper['eps_analyst'] / paper['epsilon']).max():.3g} over {len(paper)} paper rows; scaled rows "
              f"(NOT certified): eps_data up to {scaled['eps_data'].max() if len(scaled) else float('nan'):.3g}",
              "not confirmed" if any(v is False for v in private_ok) else "inconclusive"),
        Claim("Claim 5.3: before halting every answer is within tau + 6 sigma ln(3k/beta)", RULE_ALG5_ACCURACY,
              f"{int((tight['max_error'] <= tight['alpha_bound']).sum())} of {len(tight)} non-vacuous rows (all "
              f"scaled, NOT certified); paper rows' bound >= {paper['alpha_bound'].min():.3g} (vacuous)",
              verdict_of(all_points([bool(v) for v in tight["max_error"] <= tight["alpha_bound"]]))),
        Claim("Claim 5.4: w.p. >= 1 - 3 beta / 4 Alg 5 does not terminate before answering all k queries",
              RULE_ALG5_HALT, f"answered fraction min {df['answered_fraction'].min():.3g} over {len(df)} rows",
              verdict_of(all_points([bool(v) for v in df["answered_fraction"] >= 1.0]))),
    ]
    points, effect = _below_uniform_points(scaled, [N, EPS])
    means = scaled.groupby([N, EPS])[["max_error", "uniform_max_error"]].mean()
    out.append(Claim("scaled constants (NOT privacy-certified): Alg 5 beats the uniform distribution at laptop n",
                     RULE_ALG5_SCALED,
                     "; ".join(f"n {k[0]:g}, eps {k[1]:g}: {r.max_error:.3g} vs {r.uniform_max_error:.3g}"
                               for k, r in zip(means.index, means.itertuples(), strict=True)) + f"; {effect}",
                     verdict_of(all_points(points))))
    trends, text = _trends(scaled, EPS, N, "decreasing")
    out.append(Claim("Thm 5.2 (scaled constants, NOT certified): error falls like n^{-2/5}", RULE_ALG5_TREND,
                     text, verdict_of(all_points(trends))))
    return out[:4] + [uncertified_cap(c) for c in out[4:]]


UNCERTIFIED_NOTE = ("; rows NOT privacy-certified (scaled constants) can refute but never confirm a claim about the "
                    "certified algorithm: a holding rule is reported inconclusive")


def uncertified_cap(claim: Claim) -> Claim:
    """A claim decided on NOT certified rows: ``confirmed`` becomes ``inconclusive``; the rule says so."""
    return replace(claim, rule=claim.rule + UNCERTIFIED_NOTE,
                   verdict="inconclusive" if claim.verdict == "confirmed" else claim.verdict)


# ---- qr_alg4 -----------------------------------------------------------------------------------------------------

ALG4, ALG3 = "qr_alg4", "qr_hru_private"
RULE_ALG4_UNIFORM = f"Alg 4: at every (eps, n) point the mean max error is below the uniform line ({PAIRED})"
RULE_ALG4_TREND = f"Alg 4: max error decreases with n at every eps ({PAGE})"
RULE_ALG4_VS_ALG3 = f"Alg 3 (T = n/6.4) has a lower mean max error than Alg 4 at every (eps, n) point ({PAIRED})"
RULE_ALG4_PRIVACY = ("Alg 4's privacy theorem needs density s = 12 T (m > 12 T analysts): rows with a smaller s are "
                     "outside its domain: n/a; on rows inside it, accounted eps_data > eps: not confirmed, else "
                     "inconclusive (accounting recomputed, not an independent check)")


def alg4_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """Algorithm 4 against Algorithm 3 at d <= 8."""
    a4 = df[df[MECH] == ALG4]
    points, effect = _below_uniform_points(a4, [EPS, N])
    means = a4.groupby([EPS, N])[["max_error", "uniform_max_error"]].mean()
    trends, text = _trends(a4, EPS, N, "decreasing")
    vs, parts = _below_other(df, ALG3, ALG4, [EPS, N])
    return [
        Claim("Alg 4 releases answers better than the uniform distribution", RULE_ALG4_UNIFORM,
              "; ".join(f"eps {k[0]:g}, n {k[1]:g}: {r.max_error:.3g} vs {r.uniform_max_error:.3g}"
                        for k, r in zip(means.index, means.itertuples(), strict=True)) + f"; {effect}",
              verdict_of(all_points(points))),
        Claim("Alg 4 error O~(1/(eps n^{1/3})): falls with n", RULE_ALG4_TREND, text, verdict_of(all_points(trends))),
        Claim("Alg 3 (one-query privacy) is more accurate than Alg 4 (one-analyst privacy)", RULE_ALG4_VS_ALG3,
              "eps/n: Alg 3 vs Alg 4 " + "; ".join(parts), verdict_of(vs)),
        Claim("Alg 4 is (eps, 4 delta / 3)-DP for the data (as accounted)", RULE_ALG4_PRIVACY,
              f"eps_data / eps up to {(a4['eps_data'] / a4['epsilon']).max():.3g}; eps_analyst (trivial bound, "
              f"s < 12 T) up to {a4['eps_analyst'].max():.3g}",
              _alg4_privacy_verdict(a4)),
    ]


def _alg4_privacy_verdict(a4: pd.DataFrame) -> str:
    inside = a4[a4["mechanism.s"] >= 12 * a4["rounds"]] if {"mechanism.s", "rounds"} <= set(a4.columns) else a4.iloc[:0]
    if inside.empty:
        return "n/a"
    return "not confirmed" if (inside["eps_data"] > inside["epsilon"] * (1 + 1e-9)).any() else "inconclusive"


# ---- E4: error vs |Q| --------------------------------------------------------------------------------------------

RULE_E4_LAPLACE = f"Laplace: max error increases with |Q| at every eps ({PAGE})"
RULE_E4_BELOW = ("{name}: at the largest |Q|, mean max error below Laplace's at every eps (" + PAIRED + "). "
                 + TRIVIAL)
RULE_E4_UNIFORM = "{name}: mean max error below the uniform line at every (eps, |Q|) point (" + PAIRED + ")"


def error_vs_queries_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """Spec E4: Laplace grows with |Q|; MW/game-based releases stay below it at large |Q|."""
    lap = df[df[MECH] == LAPLACE]
    trends, text = _trends(lap, EPS, Q, "increasing")
    out = [Claim("independent Laplace error grows like sqrt(|Q|) log|Q|", RULE_E4_LAPLACE, text,
                 verdict_of(all_points(trends)))]
    largest = df[df[Q] == df[Q].max()] if len(df) else df
    for name in sorted(set(df[MECH]) - {LAPLACE}):
        holds, parts = _below_other(largest, name, LAPLACE, [EPS])
        out.append(Claim(f"{name}: error only ~ log|Q|, so below independent Laplace at large |Q|",
                         RULE_E4_BELOW.format(name=name), f"|Q| = {df[Q].max():g}, eps: " + "; ".join(parts),
                         verdict_of(holds)))
        sub = df[df[MECH] == name]
        points, effect = _below_uniform_points(sub, [EPS, Q])
        out.append(Claim(f"{name} beats the uniform distribution at every |Q|", RULE_E4_UNIFORM.format(name=name),
                         f"{sum(p is True for p in points)} of {len(points)} points below; {effect}",
                         verdict_of(all_points(points))))
    return out


# ---- E2 on Fair's data -------------------------------------------------------------------------------------------

RULE_FAIR_VS_LAPLACE = ("Alg 3 (T = n/6.4) mean max error below independent Laplace's at every (eps, n) point "
                        f"({PAIRED}). " + TRIVIAL)
RULE_FAIR_TREND = f"Alg 3 (T = n/6.4): max error decreases with n at every eps ({PAGE})"
RULE_FAIR_UNIFORM = f"Alg 3 (T = n/6.4): mean max error below the uniform line at every (eps, n) point ({PAIRED})"


def error_vs_n_fair_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """E2 on the real Fair data: the paper's sentences as decision rules; structural zeros in the measurement."""
    cells = df.groupby(N)["nonempty_cells"].mean()
    zeros = "non-empty cells of 2^12 (mean over trials) " + ", ".join(f"n {k:g}: {v:.0f}" for k, v in cells.items())
    vs, parts = _below_other(df, ALG3, LAPLACE, [EPS, N])
    a3 = df[df[MECH] == ALG3]
    trends, text = _trends(a3, EPS, N, "decreasing")
    points, effect = _below_uniform_points(a3, [EPS, N])
    means = a3.groupby([EPS, N])[["max_error", "uniform_max_error"]].mean()
    return [
        Claim("Alg 3 beats independent Laplace (real data)", RULE_FAIR_VS_LAPLACE,
              "eps/n: Alg 3 vs Laplace " + "; ".join(parts) + f"; {zeros}", verdict_of(vs)),
        Claim("Alg 3 error falls like 1/sqrt(n) (real data)", RULE_FAIR_TREND, text, verdict_of(all_points(trends))),
        Claim("Alg 3 releases answers better than the uniform distribution (real data)", RULE_FAIR_UNIFORM,
              "; ".join(f"eps {k[0]:g}, n {k[1]:g}: {r.max_error:.3g} vs {r.uniform_max_error:.3g}"
                        for k, r in zip(means.index, means.itertuples(), strict=True)) + f"; {effect}",
              verdict_of(all_points(points))),
    ]


# ---- qr_crossover ------------------------------------------------------------------------------------------------

RULE_CROSS_EXISTS = ("theory (hru_crossover): at every (d, eps) point some T <= T_max (s = 24 T < N_Q, T = n/6.4) has "
                     "alpha_D^(T) < this data's uniform max error. Inconclusive by design: the paper's bound is "
                     "recomputed, not measured; the listing says where it is feasible")
RULE_CROSS_RUNS = ("at some feasible point, 3 trials of T_beat rounds at the measured CPU seconds per round fit in "
                   "240 s on 2 cores (3 T_beat round_s / 2 <= 240); no feasible point: not confirmed")


def crossover_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """Where Algorithm 3's bound could beat the uniform line, and whether that point can be run here."""
    feasible = df[df["feasible"].astype(bool)]
    listing = "; ".join(f"d {r['data.d']:g}, eps {r.epsilon:g}: T_beat {r.T_beat:.3g} (n {r.n_beat:.3g}) vs T_max "
                        f"{r.T_max:g}" for _, r in df.sort_values(["data.d", EPS]).iterrows())
    fits = (1.5 * feasible["est_T_beat_s"] <= 240).tolist()
    cost = "; ".join(f"d {r['data.d']:g}, eps {r.epsilon:g}: {r.est_T_beat_s / 60:.3g} CPU-min per trial "
                     f"({r.round_s * 1e3:.3g} ms/round)" for _, r in feasible.iterrows()) or "no feasible point"
    return [
        Claim("Alg 3's synopsis bound O~(1/(eps sqrt n)) falls below the uniform line for n large enough",
              RULE_CROSS_EXISTS,
              listing + f"; feasible at {int(df['feasible'].astype(bool).sum())} of {len(df)} points",
              "inconclusive"),
        Claim("the smallest point where the bound beats the uniform line can be run on this machine",
              RULE_CROSS_RUNS, cost, verdict_of(any(fits))),
    ]
