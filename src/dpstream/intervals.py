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

- Laplace node noise (a k-ary tree of Laplace(b) or discrete Laplace nodes, ``counter="laplace"``): a release's
  noise is the sum of D i.i.d. node noises Y (D the base-k digit sum of its step: its variance over one node's).
  Chernoff's bound P(|S| >= x) <= 2 exp(-lam x + D ln E exp(lam Y)), 0 < lam < 1/b, inverted at the per-row miss
  probability 1 - c^(1/d) and minimised over a grid of lam (every lam gives a valid bound): estimate +-
  max over rows of that bound; coverage at least c, conservative (one Laplace node at c = 0.999: 10.3 b where the
  exact quantile is 6.9 b).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.special import ndtri

__all__ = ["Interval", "check_confidence", "chernoff_sum_bound", "clipped", "laplace_rows_halfwidth",
           "normal_halfwidth", "rows_halfwidth"]


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


def chernoff_sum_bound(terms: np.ndarray, log_mgf: Callable[[np.ndarray], np.ndarray], scale: float,
                       log_term: float) -> np.ndarray:
    """The Chernoff bound: min over lam of (terms ln E exp(lam Y) + log_term) / lam, for each entry of ``terms``.

    Chernoff: a sum S of ``terms`` i.i.d. symmetric node noises Y of scale ``scale`` (``log_mgf``: ln E exp(lam Y),
    finite for 0 <= lam < 1/scale) has P(|S| >= x) <= 2 exp(-lam x + terms ln E exp(lam Y)), so the value returned
    bounds |S| except with probability 2 exp(-log_term). lam runs over a grid in (0, 1/scale).
    """
    lam = np.linspace(0.005, 0.995, 199) / scale
    bound = (np.multiply.outer(terms, log_mgf(lam)) + log_term) / lam
    return bound.min(axis=-1)


def laplace_rows_halfwidth(variances: np.ndarray, confidence: float, node_variance: float,
                           log_mgf: Callable[[np.ndarray], np.ndarray], scale: float) -> np.ndarray:
    """Laplace node noise: the Chernoff bound at miss 1 - c^(1/d) for each column of ``variances`` (d, n).

    A row's noise sums variances[i] / ``node_variance`` node noises (its digit sum); ``log_mgf`` and ``scale`` are
    the node noise's (``chernoff_sum_bound``). The largest sum over the d rows bounds every order statistic's move.
    """
    variances = np.asarray(variances, dtype=np.float64)
    miss = -math.expm1(math.log(check_confidence(confidence)) / variances.shape[0])
    if node_variance == 0.0:
        return np.zeros(variances.shape[1:])
    terms = np.rint(variances.max(axis=0) / node_variance)
    half = chernoff_sum_bound(terms, log_mgf, scale, math.log(2.0 / miss))
    return np.where(terms > 0, half, 0.0)


def clipped(interval: Interval, low: float, high: float) -> Interval:
    """The interval with its estimate and both ends clipped to [low, high] (post-processing, no privacy cost).

    The clipped interval holds every value of [low, high] the raw one held: for a quantity known to lie in
    [low, high] (a count in [0, t]) it covers whenever the raw one does.
    """
    return Interval(*(np.clip(v, low, high) for v in interval))
