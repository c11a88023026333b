"""Interleaved A/B timing in one process: the speed ratio of a candidate to a reference, with its interval.

Machines differ by 3x on the same code and load on a shared machine moves a single timing several-fold, so a
speed claim is a ratio to a reference measured in the same process, in alternating repetitions (A B A B ...): a
burst of load then hits both arms. Each repetition gives one ratio (reference time / candidate time, so > 1 means
the candidate is faster, and rates divide the same way); the estimate is the median of the ratios and its 95%
interval is the distribution-free order-statistic interval of the median, computed on the log scale (a ratio's
natural scale: 2x faster and 2x slower are symmetric). With fewer than 6 repetitions no such interval reaches 95%
coverage; the interval is then [min, max] and its coverage ``1 - 2 * 0.5**n`` is reported with it.

A rule over the result (``RatioEstimate.decide``) is fixed before the run: "at least" a target holds when the whole
interval is at or above it, fails when the whole interval is below it, and is ``None`` (inconclusive) otherwise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class RatioEstimate:
    """Median speed ratio of a candidate to the reference over interleaved repetitions, with its interval.

    ``ratio`` > 1: the candidate is faster (its time is shorter, or its rate higher) than the reference.
    """

    name: str
    reference: str
    ratio: float
    low: float
    high: float
    coverage: float
    repeats: int
    candidate_seconds: float  # median time of one candidate call
    reference_seconds: float  # median time of one reference call

    def decide(self, at_least: float) -> bool | None:
        """True when the whole interval is >= ``at_least``, False when it is wholly below, else None."""
        if self.low >= at_least:
            return True
        if self.high < at_least:
            return False
        return None

    def as_dict(self) -> dict[str, float | int | str]:
        """A flat record (for JSON output and the speed page)."""
        return asdict(self)

    def __str__(self) -> str:
        """One line: the ratio, its interval and how it was measured."""
        return (f"{self.name} / {self.reference}: {self.ratio:.3g}x [{self.low:.3g}, {self.high:.3g}] "
                f"({self.coverage:.0%} interval, {self.repeats} interleaved repetitions)")


def median_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float]:
    """Median of ``values`` and its distribution-free interval on the log scale: (median, low, high, coverage).

    The interval is [x_(j), x_(n-j+1)] of the sorted values, with j the largest index whose binomial coverage
    1 - 2 P(Bin(n, 1/2) < j) is >= ``level``; when even j = 1 falls short, [min, max] and its lower coverage.
    """
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0 or np.any(x <= 0) or not np.all(np.isfinite(x)):
        raise ValueError(f"ratios must be positive and finite, got {values!r}")
    n = x.size
    logs = np.log(x)
    med = float(np.exp(np.median(logs)))
    j = 1
    for cand in range(1, n // 2 + 1):
        if 1 - 2 * stats.binom.cdf(cand - 1, n, 0.5) >= level:
            j = cand
    coverage = float(1 - 2 * stats.binom.cdf(j - 1, n, 0.5))
    return med, float(x[j - 1]), float(x[n - j]), coverage


def round_order(names: list[str], r: int) -> list[str]:
    """The order of the arms in round ``r``: ``names`` rotated by r, so no arm always runs first."""
    k = r % len(names)
    return names[k:] + names[:k]


def interleaved_ratios(candidates: Mapping[str, Callable[[], object]], reference: str, repeats: int = 7,
                       clock: Callable[[], float] = time.perf_counter) -> dict[str, RatioEstimate]:
    """Time every callable of ``candidates`` (one of them named ``reference``) in interleaved rounds.

    Each round calls every callable once, in an order rotated from round to round so no arm always runs first;
    the ratio of a round is reference time / candidate time. Returns the estimate of every non-reference arm.
    The callables should do the same work each call (a warm-up call that compiles kernels is the caller's job).
    """
    if reference not in candidates:
        raise ValueError(f"reference {reference!r} is not among the candidates {sorted(candidates)}")
    if repeats < 5:
        raise ValueError(f"repeats must be >= 5 (the interleaved protocol), got {repeats}")
    names = list(candidates)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in round_order(names, r):
            start = clock()
            candidates[name]()
            times[name].append(clock() - start)
    ref = np.asarray(times[reference])
    out = {}
    for name in names:
        if name == reference:
            continue
        cand = np.asarray(times[name])
        ratio, low, high, coverage = median_interval(ref / cand)
        out[name] = RatioEstimate(name, reference, ratio, low, high, coverage, repeats,
                                  float(np.median(cand)), float(np.median(ref)))
    return out


def log_ratio_interval(ratios: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Geometric mean of positive paired ratios and its Student-t interval on the log scale: (mean, low, high).

    For error ratios over independent trials (each trial one paired ratio), where the t interval of the log is the
    right scale for a multiplicative effect. NaN interval for fewer than 2 ratios.
    """
    x = np.asarray(ratios, dtype=float)
    x = x[np.isfinite(x)]
    if np.any(x <= 0):
        raise ValueError(f"ratios must be positive, got {ratios!r}")
    if x.size == 0:
        return math.nan, math.nan, math.nan
    logs = np.log(x)
    centre = float(np.exp(logs.mean()))
    if x.size < 2:
        return centre, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * logs.std(ddof=1) / math.sqrt(x.size))
    return centre, float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half))
