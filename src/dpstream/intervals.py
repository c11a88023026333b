"""Confidence intervals of released estimates, from the noise variance a mechanism holds.

Every interval here covers the privacy noise only: it is centred on the released estimate and contains, with
probability at least ``confidence`` over the noise, the value the same mechanism would release without its noise.
It says nothing about the error a sketch makes without noise (Count-Min collisions, one-sided: upward; Count Sketch
collisions, either sign; the lazy lag of ``LazyCMS``, one-sided: downward), nor about items chosen by their estimates
(an interval is for an item named before looking: ask for ``confidence = 1 - (1 - c) / n`` over n candidates to
cover all of them, and so any selection among them, with probability c). ``docs/guide/api.md`` shows the coverage
measured in ``tests/test_intervals.py``.

- One Gaussian release with variance v (a ``GaussBM`` prefix sum): estimate +- z sqrt(v), z the normal quantile
  at (1 + c) / 2; coverage exactly c.
- The min or median over d rows (Alg. 4 of Holland): every order statistic moves by at most max_i |N_i| when each
  row moves by N_i, so estimate +- z_d max_i sqrt(v_i), with z_d the normal quantile at (1 + c^(1/d)) / 2: all d
  independent row noises lie within their z_d sigma_i with probability c; coverage at least c.

The quantiles are the normal distribution's: exact for Gaussian node noise (stored, derived, Honaker, BLT), an
approximation for exact discrete Gaussian nodes (the same variance; sigma is in the tens or more).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import ndtri

__all__ = ["Interval", "check_confidence", "clipped", "normal_halfwidth", "rows_halfwidth"]


class Interval(NamedTuple):
    """A released estimate and its interval (floats for one item, arrays for many)."""

    estimate: float | np.ndarray
    lower: float | np.ndarray
    upper: float | np.ndarray


def check_confidence(confidence: float) -> float:
    """``confidence`` checked to be a number in (0, 1)."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    return float(confidence)


def normal_halfwidth(variance: np.ndarray, confidence: float) -> np.ndarray:
    """Z sqrt(variance), z the normal quantile at (1 + confidence) / 2: one Gaussian release."""
    z = ndtri((1.0 + check_confidence(confidence)) / 2.0)
    return z * np.sqrt(np.asarray(variance, dtype=np.float64))


def rows_halfwidth(variances: np.ndarray, confidence: float) -> np.ndarray:
    """z_d max_i sqrt(variances[i]) for each column of ``variances`` (d, n): any order statistic over the d rows."""
    variances = np.asarray(variances, dtype=np.float64)
    d = variances.shape[0]
    z = ndtri((1.0 + check_confidence(confidence) ** (1.0 / d)) / 2.0)
    return z * np.sqrt(variances.max(axis=0))


def clipped(interval: Interval, low: float, high: float) -> Interval:
    """The interval with its estimate and both ends clipped to [low, high] (post-processing, no privacy cost).

    The clipped interval holds every value of [low, high] the raw one held: for a quantity known to lie in
    [low, high] (a count in [0, t]) it covers whenever the raw one does.
    """
    return Interval(*(np.clip(v, low, high) for v in interval))
