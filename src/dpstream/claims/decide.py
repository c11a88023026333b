"""A claim decided by its registered sequential rule: the per-trial evidence of a claims function, once a look.

A claims function (``dpstream.claims.sketch`` and siblings) may give a ``Claim`` its ``Evidence``: the family of its
rule (``location``, ``trend``, ``quantile``; ``dpstream.claims.sequential.RULES``) and, per point of the rule, one value
per trial of the pooled new seeds, oriented so that the claim says "below 0" (a paired difference, a margin-shifted
value, a per-trial slope; the caller negates where the claim says "above"). ``decide`` judges it with the parameters of
the claim's entry in the pre-registration (``results/preregistration.yaml``): its smallest effect, alpha and budget,
and the trial counts of its earlier looks (Lan-DeMets O'Brien-Fleming spending; Holm over the points on the refutation
side). A claim whose every point has zero spread over the trials is a deterministic computation: no test, its value
decides (confirmed when it is at least the smallest effect that matters, else not confirmed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpstream.claims.sequential import (
    RULES,
    Decision,
    decide_every_point,
    decide_location,
    decide_quantile,
)

DETERMINISTIC = "a deterministic computation (zero spread over {n} trials): no test"
SPENT = "its registered budget of {budget} trials was reached at an earlier look: the alpha is spent"


@dataclass(frozen=True)
class Evidence:
    """Per-trial values of a claim's rule, per point, oriented so that the claim says "below 0" at every point."""

    family: str
    points: tuple[np.ndarray, ...]
    labels: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        """Reject an unknown family or an empty rule."""
        if self.family not in RULES:
            raise ValueError(f"evidence family must be one of {RULES}, got {self.family!r}")
        if not self.points:
            raise ValueError("evidence needs at least one point")

    @classmethod
    def of(cls, family: str, points: dict[str, Any]) -> Evidence:
        """Evidence from labelled points (label -> per-trial values)."""
        return cls(family, tuple(np.asarray(v, dtype=np.float64) for v in points.values()), tuple(points))


@dataclass(frozen=True)
class Verdict:
    """A claim's registered decision at one look: the verdict, its text and the trials it was taken on."""

    verdict: str
    measured: str
    trials: int


def _finite(x: np.ndarray) -> np.ndarray:
    return x[np.isfinite(x)]


def _standardised(points: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Each point in units of its trial-to-trial sd (a registered effect in sd units; zero spread left as it is)."""
    out = []
    for p in points:
        x = _finite(p)
        sd = float(x.std(ddof=1)) if x.size > 1 else 0.0
        out.append(p / sd if sd > 0 else p)
    return tuple(out)


def _point_text(label: str, d: Decision) -> str:
    return f"{label}: {d.verdict}, estimate {d.estimate:.4g} over {d.n} trials" if label else d.text()


def decide(evidence: Evidence, entry: dict[str, Any], looks_at: tuple[int, ...] = ()) -> Verdict:
    """The verdict of one claim at a look from its ``evidence`` and registration ``entry``.

    ``looks_at`` are the pooled trial counts of the claim's earlier looks. A look after the budget was reached at an
    earlier one cannot decide (the alpha is spent) and says how many trials a new registration would need.
    """
    budget, alpha = int(entry["budget"]), float(entry["alpha"])
    effect = entry.get("smallest_effect") or {}
    delta = float(effect.get("value", 0.5))
    points = evidence.points
    if str(effect.get("unit", "")).startswith("standardised"):
        points = _standardised(points)
    n = min((_finite(p).size for p in points), default=0)
    earlier = tuple(m for m in looks_at if m < n)
    if earlier and max(earlier) >= budget:
        return Verdict("inconclusive", SPENT.format(budget=budget), n)
    if n >= 3 and all(np.ptp(_finite(p)) == 0 for p in points):
        values = [float(_finite(p)[0]) for p in points]
        verdict = "confirmed" if max(values) <= -delta else "not confirmed"
        listed = ", ".join(f"{lab}: {v:.4g}" if lab else f"{v:.4g}"
                           for lab, v in zip(evidence.labels or ("",) * len(values), values, strict=True))
        return Verdict(verdict, f"{verdict}: {DETERMINISTIC.format(n=n)}; value {listed} against -{delta:g}", n)
    one = decide_quantile if evidence.family == "quantile" else decide_location
    if len(points) == 1:
        d = one(points[0], delta, budget, alpha, earlier)
        return Verdict(d.verdict, d.text(), d.n)
    verdict, decisions = decide_every_point(points, delta, budget, alpha, earlier, decider=one)
    labels = evidence.labels or tuple(f"point {i}" for i in range(len(points)))
    needed = max(d.needed for d in decisions)
    more = f"; a decision needs about {needed} trials in all" if verdict == "inconclusive" else ""
    detail = "; ".join(_point_text(lab, d) for lab, d in zip(labels, decisions, strict=True))
    return Verdict(verdict, f"{verdict} at every point (Holm on the refutation side) after {n} trials{more}: {detail}",
                   n)
