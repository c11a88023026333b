"""Statistical privacy tester: a high-confidence lower bound on epsilon from one output event.

For neighbouring inputs D1, D2 and an event E, (eps, delta)-DP implies
Pr[M(D1) in E] <= e^eps Pr[M(D2) in E] + delta, so eps >= ln((p1 - delta) / p2). The tester runs the
mechanism n times on each input, bounds p1 from below and p2 from above with exact Clopper-Pearson
intervals (scipy), and reports the larger of the two directions. All four one-sided bounds hold
together with probability >= 1 - alpha (each at alpha/4), so a correct mechanism "fails"
(lower bound > claimed eps) with probability <= alpha.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import binomtest

from dpstream.noise import SeedLike, children
from dpstream.validation import check_open_interval, check_positive_int

Sampler = Callable[[Any, int, np.random.SeedSequence], Any]
"""sampler(data, n_runs, seed) -> the outputs of n_runs independent runs on ``data`` (any batch form)."""
Event = Callable[[Any], np.ndarray]
"""event(outputs) -> bool array of length n_runs: whether each run's output lies in E."""


@dataclass(frozen=True)
class AuditResult:
    """Counts, Clopper-Pearson bounds and the epsilon lower bound of one audit."""

    n_runs: int
    count_1: int
    count_2: int
    epsilon_lower: float
    claimed_epsilon: float
    delta: float
    alpha: float
    direction: str
    event: str = "given"
    n_search: int = 0

    @property
    def fails(self) -> bool:
        """True when the data prove (at confidence 1 - alpha) that the claimed epsilon is violated."""
        return self.epsilon_lower > self.claimed_epsilon

    def row(self) -> dict[str, Any]:
        """A flat dict for result tables."""
        return {
            **asdict(self),
            "p_1": self.count_1 / self.n_runs,
            "p_2": self.count_2 / self.n_runs,
            "fails": self.fails,
        }


def clopper_pearson(count: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) binomial interval (each end one-sided at alpha/2)."""
    ci = binomtest(count, n).proportion_ci(confidence_level=1.0 - alpha, method="exact")
    return ci.low, ci.high


def directed_lower_bound(count_a: int, count_b: int, n_runs: int, delta: float, alpha: float) -> float:
    """ln((p_a lower - delta) / p_b upper) for ONE direction fixed in advance; 0 when the data show nothing.

    Each one-sided Clopper-Pearson bound holds with probability >= 1 - alpha/2, so both do with >= 1 - alpha.
    """
    low_a, _ = clopper_pearson(count_a, n_runs, alpha)
    _, high_b = clopper_pearson(count_b, n_runs, alpha)
    return max(math.log((low_a - delta) / high_b), 0.0) if low_a > delta else 0.0


def epsilon_lower_bound(
    count_1: int, count_2: int, n_runs: int, delta: float = 0.0, alpha: float = 0.05
) -> tuple[float, str]:
    """Max over directions of ln((p_a lower - delta) / p_b upper); 0 when the data show nothing."""
    low_1, high_1 = clopper_pearson(count_1, n_runs, alpha / 2.0)
    low_2, high_2 = clopper_pearson(count_2, n_runs, alpha / 2.0)

    def bound(low: float, high: float) -> float:
        return math.log((low - delta) / high) if low > delta and high > 0 else 0.0

    forward, backward = bound(low_1, high_2), bound(low_2, high_1)
    return (max(forward, backward, 0.0), "D1>D2" if forward >= backward else "D2>D1")


def audit(
    sampler: Sampler,
    data_1: Any,
    data_2: Any,
    event: Event,
    n_runs: int,
    claimed_epsilon: float,
    delta: float = 0.0,
    alpha: float = 0.05,
    seed: SeedLike = 0,
) -> AuditResult:
    """Run ``sampler`` n_runs times on each neighbouring input, count ``event``, bound epsilon from below."""
    n_runs = check_positive_int(n_runs, "n_runs")
    alpha = check_open_interval(alpha, "alpha", 0.0, 1.0)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    seed_1, seed_2 = children(seed, 2)
    counts = []
    for data, s in ((data_1, seed_1), (data_2, seed_2)):
        hits = np.asarray(event(sampler(data, n_runs, s)), dtype=bool)
        if hits.shape != (n_runs,):
            raise ValueError(f"event must return one bool per run ({n_runs}), got shape {hits.shape}")
        counts.append(int(hits.sum()))
    eps_lower, direction = epsilon_lower_bound(counts[0], counts[1], n_runs, delta, alpha)
    return AuditResult(n_runs, counts[0], counts[1], eps_lower, float(claimed_epsilon), float(delta), alpha, direction)
