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
telescopes to F(0) = 1), the same for every horizon. The decoder L = A C^{-1} has first column d = the coefficients
of 1 / ((1 - x) C(x)) (``factorisation.unbounded_decoder``; d_0 = 1, and d is positive and decreasing since r is
log-convex), and Var(s) = sigma^2 sum_{t < s} d_t^2, O(ln^{2 + 2 alpha} s).

What "no horizon" means here, exactly: a counter is still built for a horizon T and refuses steps past it, but its
calibration and its values do not depend on T: sigma, the encoder and every released value (for the same seed and
stream) are the same whatever horizon is given, so a stream of unknown length can be given a generous bound without
changing its noise. Memory is O(T) for the horizon asked: stored noise keeps T - 1 floats a counter (``sqrt``'s
ring), and the encoder, decoder and variance tables are O(T) float64 each, cached for the last
``root_rows.CACHED_HORIZONS`` horizons only.

``alpha`` = 1/4: at T = 2^16 and 2^20 it gives the smallest mean variance of alpha in {0.1, 0.25, 0.5, 1}, about 1.7x
and 1.9x the square root's at that horizon (the paper reports less than 1.5x for its own construction up to 2^24).

Privacy: as every ``ToeplitzCounter``, (epsilon, delta)-DP under continual observation for m-neighbouring counter
arrays, by the Gaussian mechanism on C x followed by the post-processing L, for the steps up to the horizon given, at
the same sigma for every horizon. Streaming is the square root's (``counters.toeplitz``): O(T) state stored, or one
count with the noise derived from a key (``node_noise="derived"``).
"""

from __future__ import annotations

import math

import numpy as np

from dpstream import serial
from dpstream.counters.factorisation import (
    R0_SQUARED,
    Factorisation,
    Unbounded,
    unbounded_decoder,
    unbounded_encoder,
    unbounded_unit_variances,
)
from dpstream.counters.toeplitz import FULL, ToeplitzCounter


class UnboundedFactorisation(ToeplitzCounter):
    """The log-perturbed square root: calibration and values independent of the horizon (module docstring).

    Derived from Jacobsen and Fawaz's abstract.

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

    def factorisation(self) -> Factorisation:
        """C Toeplitz with first column r_t / r_0 (``factorisation.Unbounded``)."""
        return Unbounded(self.horizon)


# the classes of format 2: one per node noise, the stored one without ``node_noise`` (``serial.RENAMED``)
serial.rename("UnboundedFactorisation", "UnboundedFactorisation", 2, node_noise="stored")
serial.rename("DerivedUnboundedFactorisation", "UnboundedFactorisation", 2, node_noise="derived")
