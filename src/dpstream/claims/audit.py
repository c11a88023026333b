"""Claims of the privacy audits (audit_svt, audit_power) as rules fixed before the run.

An audit can refute a privacy claim (a certified lower bound above the claimed epsilon) but never prove one. So the
claims here are about the auditor: it flags each negative control, it separates each shipped mechanism from its
broken variants run on the same inputs with the same runs, it is sound on correct mechanisms, and it detects a
two-fold violation. A shipped mechanism that is flagged makes its row ``not confirmed``, which would be a privacy bug.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binom

from dpstream.claims.core import Claim

POWER_RATIO = 2.0
"""The violation the power claim asks the auditor to detect: true epsilon = 2 x the claimed epsilon."""
POWER_SHARE = 0.9
"""... in at least this share of the seeds."""


def audit_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """audit_svt: every control flagged; every shipped case separated from its paired controls."""
    flagged = dict(zip(df["case"], df["fails"].astype(bool), strict=True))
    out = []
    for r in df.itertuples():
        measured = f"eps_lower = {r.epsilon_lower:.3f} ({r.n_runs} + {r.n_search} runs/input; event {r.event})"
        if r.negative_control:
            out.append(Claim(
                f"{r.case}: {r.audited} is NOT {r.claimed_epsilon:g}-DP (negative control)",
                f"certified lower bound (Clopper-Pearson on the certify half, alpha = {r.alpha}) > "
                f"{r.claimed_epsilon:g}: confirmed; otherwise not confirmed (the audit missed a known violation)",
                measured, "confirmed" if flagged[r.case] else "not confirmed"))
            continue
        controls = df.loc[df["pair"] == r.case, "case"].tolist()
        power = [c for c in controls if flagged[c]]
        verdict = ("not confirmed" if flagged[r.case] or len(power) < len(controls)
                   else "confirmed" if controls else "inconclusive")
        out.append(Claim(
            f"{r.case}: the audit separates {r.audited} (claimed eps = {r.claimed_epsilon:g}) from its broken "
            f"variants on the same inputs and runs",
            "the shipped mechanism is not flagged AND every paired control is flagged: confirmed; the mechanism is "
            "flagged (a privacy violation) or a control is missed: not confirmed; no paired control: inconclusive. "
            "Passing an audit never proves privacy; it shows this audit could have caught these violations",
            f"{measured}; paired controls flagged: {len(power)}/{len(controls)}", verdict))
    return out


def smallest_flagged_ratio(df: pd.DataFrame, share: float = POWER_SHARE) -> dict[str, float]:
    """Per case: the smallest r > 1 from which every larger r in the grid is flagged in >= ``share`` of seeds."""
    out: dict[str, float] = {}
    for case, g in df[df["ratio"] > 1].groupby("case"):
        rate = g.groupby("ratio")["fails"].mean().sort_index()
        low = rate[rate < share]
        above = rate.index[rate.index > low.index.max()] if len(low) else rate.index
        out[str(case)] = float(above.min()) if len(above) else float("nan")
    return out


def power_claims(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """audit_power: per case, soundness at r = 1 (a check that can only refute) and detection of a 2x violation."""
    out = []
    alpha = float(df["alpha"].iloc[0])
    smallest = smallest_flagged_ratio(df)
    for case, g in df.groupby("case"):
        at_one = g[g["ratio"] == 1.0]["fails"].astype(bool)
        if len(at_one):
            limit = int(binom.ppf(0.99, len(at_one), alpha))
            out.append(Claim(
                f"{case}: the auditor is sound (a correct mechanism is flagged in at most alpha of the seeds)",
                f"more than {limit} of {len(at_one)} seeds flagged at r = 1 (the 99% quantile of "
                f"Binomial({len(at_one)}, {alpha})): not confirmed; otherwise inconclusive (soundness holds by "
                "construction of the held-out certify half; seeds can refute it, not prove it)",
                f"{int(at_one.sum())}/{len(at_one)} flagged at r = 1",
                "not confirmed" if at_one.sum() > limit else "inconclusive"))
        rate = g.groupby("ratio")["fails"].mean()
        at_target = rate.reindex([r for r in rate.index if r >= POWER_RATIO])
        r = smallest.get(str(case), np.nan)
        if at_target.empty:
            verdict, seen = "inconclusive", "no r >= 2 in the grid"
        else:
            verdict = "confirmed" if (at_target >= POWER_SHARE).all() else "not confirmed"
            seen = f"flagged share at r = {POWER_RATIO:g}: {rate.get(POWER_RATIO, np.nan):.2f}"
        n = g["trial"].nunique() if "trial" in g else 0
        out.append(Claim(
            f"{case}: (ours) the auditor detects a two-fold violation (true eps = {POWER_RATIO:g} x the claim)",
            f"a correct mechanism built at r x eps and claiming eps is flagged in >= {POWER_SHARE:.0%} of seeds at "
            f"every r >= {POWER_RATIO:g} of the grid: confirmed; below that at some r >= {POWER_RATIO:g}: not "
            "confirmed",
            f"{seen}; smallest r flagged in >= 90% of {n} seeds: "
            + (f"{r:g}" if np.isfinite(r) else f"not reached by r = {df['ratio'].max():g}"), verdict))
    return out
