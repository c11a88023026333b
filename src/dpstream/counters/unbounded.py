"""A factorisation counter with no horizon: log-perturbed square-root coefficients (after Jacobsen and Fawaz).

Jacobsen and Fawaz, "Private continual counting of unbounded streams" (arXiv 2506.15018, NeurIPS 2025): a
lower-triangular Toeplitz factorisation A = L C whose encoder's column norm stays bounded however long the stream,
built from logarithmic perturbations of the square root's generating function (1 - x)^{-1/2}, with variance
O(log^{2 + 2 alpha} t) at step t for any alpha > 0 and O(t) state. Only the paper's abstract could be read from the
search corpora, not its construction, so the factorisation below is DERIVED here from that description and is not
claimed to be the paper's: it perturbs the square root's coefficients c_t ~ 1 / sqrt(pi t) by a power of log t so
that their squares are summable, and makes the sum exact by telescoping.

Construction. With F(t) = ln(t + e)^{-2 alpha} (F(0) = 1, decreasing to 0), the encoder C has first column
r_t / r_0, r_t = sqrt(F(t) - F(t + 1)) ~ sqrt(2 alpha / t) ln(t)^{-(1/2 + alpha)}. Every column of C is a prefix of
the first, so the L2 sensitivity of C x is sqrt(m) sqrt(sum_{t >= 0} r_t^2) / r_0 = sqrt(m) / r_0 (the sum
telescopes to F(0) = 1), the same for every horizon: sigma, the encoder and so every released value do not depend on
the horizon, which only bounds the steps and sizes the coefficient tables (O(T) float64 each; for a stream of unknown
length, give a generous bound). The decoder L = A C^{-1} has first column
d = the coefficients of 1 / ((1 - x) C(x)) (``unbounded_decoder``; d_0 = 1, and d is positive and decreasing since
r is log-convex), and Var(s) = sigma^2 sum_{t < s} d_t^2, O(ln^{2 + 2 alpha} s).

``alpha`` = 1/4: at T = 2^16 and 2^20 it gives the smallest mean variance of alpha in {0.1, 0.25, 0.5, 1}, about 1.7x
and 1.9x the square root's at that horizon (the paper reports less than 1.5x for its own construction up to 2^24).

Privacy: as every ``ToeplitzCounter``, (epsilon, delta)-DP under continual observation for m-neighbouring counter
arrays, by the Gaussian mechanism on C x followed by the post-processing L, here for streams of any length.
Streaming is the square root's (``counters.toeplitz``): O(T) state stored, or one count with the noise derived from a
key (``node_noise="derived"``).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.signal import fftconvolve

from dpstream.counters.toeplitz import FULL, ToeplitzCounter, derived

ALPHA = 0.25
"""The log perturbation's exponent alpha > 0 (module docstring)."""


def perturbed_squares(steps: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """r_t^2 = F(t) - F(t + 1), F(t) = ln(t + e)^{-2 alpha}, at each t of ``steps``, without cancellation.

    F(t) - F(t + 1) = -F(t) expm1(-2 alpha ln(ln(t + 1 + e) / ln(t + e))), the ratio's log by log1p.
    """
    t = np.asarray(steps, dtype=np.float64)
    log_t = np.log(t + math.e)
    step = np.log1p(np.log1p(1.0 / (t + math.e)) / log_t)
    return -(log_t ** (-2.0 * alpha)) * np.expm1(-2.0 * alpha * step)


R0_SQUARED = float(perturbed_squares(np.zeros(1))[0])
"""r_0^2 = 1 - ln(1 + e)^{-2 alpha}: the squared sensitivity a unit of m is 1 / r_0^2."""


@functools.cache
def unbounded_encoder(length: int) -> np.ndarray:
    """C's first column r_t / r_0, t < ``length`` (read-only)."""
    r = np.sqrt(perturbed_squares(np.arange(max(1, length))))
    c = r / r[0]
    c.flags.writeable = False
    return c


def series_inverse(c: np.ndarray, length: int) -> np.ndarray:
    """The first ``length`` coefficients of 1 / c(x) (c_0 != 0), by Newton's iteration q <- q (2 - c q) with FFTs."""
    q = np.array([1.0 / c[0]])
    size = 1
    while size < length:
        size = min(2 * size, length)
        e = -fftconvolve(c[:size], q)[:size]
        e[0] += 2.0
        q = fftconvolve(q, e)[:size]
    return q


@functools.cache
def unbounded_decoder(horizon: int) -> np.ndarray:
    """d: the first ``horizon`` coefficients of 1 / ((1 - x) C(x)), L's first column (read-only)."""
    d = np.cumsum(series_inverse(unbounded_encoder(horizon), horizon))
    d.flags.writeable = False
    return d


@functools.cache
def unbounded_unit_variances(horizon: int) -> np.ndarray:
    """Var(s) / sigma^2 = sum_{t < s} d_t^2 for s = 1..horizon (read-only)."""
    out = np.cumsum(unbounded_decoder(horizon) ** 2)
    out.flags.writeable = False
    return out


class UnboundedFactorisation(ToeplitzCounter):
    """No horizon: the log-perturbed square root (module docstring; derived from Jacobsen and Fawaz's abstract).

    sens^2 = m / r_0^2 for every horizon; Var(s) = sigma^2 sum_{t < s} d_t^2 (``unbounded_unit_variances``).
    """

    name = "unbounded"
    bands = FULL

    @classmethod
    def effective_bands(cls, horizon: int) -> int:
        """T: every diagonal."""
        return max(1, horizon)

    @classmethod
    def encoder(cls, horizon: int) -> np.ndarray:
        """r_t / r_0 for t < T (``unbounded_encoder``)."""
        return unbounded_encoder(max(1, horizon))

    @classmethod
    def decoder(cls, horizon: int) -> np.ndarray:
        """The coefficients of 1 / ((1 - x) C(x)) (``unbounded_decoder``)."""
        return unbounded_decoder(horizon)

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt(m) / r_0: the column norm of C over an unbounded stream (the squares telescope to 1 / r_0^2)."""
        return math.sqrt(m / R0_SQUARED)

    @classmethod
    def unit_variance(cls, horizon: int) -> np.ndarray:
        """Var(s) / sigma^2 for s = 1..horizon (``unbounded_unit_variances``)."""
        return unbounded_unit_variances(horizon)


DerivedUnbounded = derived(UnboundedFactorisation)
