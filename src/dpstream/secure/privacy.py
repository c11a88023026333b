"""The discrete Gaussian's privacy statement and its calibration (sigma^2 a rational, rounded up).

Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020): adding independent
N_Z(0, sigma^2) noise to each coordinate of an integer vector query with L2 sensitivity Delta_2 is rho-zCDP with
rho = Delta_2^2 / (2 sigma^2) (their multivariate theorem: the same rho as the continuous Gaussian), hence
(epsilon, delta)-DP for every epsilon with (their conversion, Corollary 13)

    delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1 / alpha)^alpha.

``discrete_gaussian_sigma2`` returns the smallest sigma^2 = a / b on the sampler's grid (b a power of two, as fine as
the overflow range ``samplers.gaussian_params`` allows) whose delta is <= the target: the real root rounded UP.
The samplers' truncation at |y| < 64 t adds at most 2 exp(-2048) per draw to delta (``samplers``), below float
precision for any stream length, and is stated rather than computed.
"""

from __future__ import annotations

import math
from fractions import Fraction

from scipy.optimize import brentq, minimize_scalar

from dpstream.secure.samplers import MAX_PRODUCT, V_CAP, gaussian_params
from dpstream.validation import check_delta, check_epsilon

_ALPHA_MAX = 1e6


def zcdp_log_delta(rho: float, epsilon: float) -> float:
    """The log delta of a rho-zCDP mechanism at ``epsilon`` (Canonne, Kamath, Steinke, Corollary 13), min over alpha."""
    if not (rho > 0 and epsilon >= 0):
        raise ValueError(f"need rho > 0 and epsilon >= 0, got rho={rho!r}, epsilon={epsilon!r}")

    def log_delta(alpha: float) -> float:
        return (alpha - 1) * (alpha * rho - epsilon) - math.log(alpha - 1) + alpha * math.log1p(-1 / alpha)

    # the exponent is convex in alpha with its minimum near (epsilon + rho) / (2 rho) + 1
    guess = max(1.0 + 1e-9, (epsilon + rho) / (2 * rho) + 1)
    res = minimize_scalar(log_delta, bounds=(1.0 + 1e-12, min(_ALPHA_MAX, 4 * guess + 10)), method="bounded",
                          options={"xatol": 1e-10})
    return min(0.0, float(res.fun), log_delta(guess))


def zcdp_delta(rho: float, epsilon: float) -> float:
    """The delta of a rho-zCDP mechanism at ``epsilon`` (``zcdp_log_delta``)."""
    return math.exp(zcdp_log_delta(rho, epsilon))


def discrete_gaussian_delta(l2_sensitivity_sq: int, sigma2: Fraction, epsilon: float) -> float:
    """The delta of N_Z(0, sigma2) per coordinate; ``l2_sensitivity_sq``: the integer query's squared L2 sensitivity."""
    return zcdp_delta(l2_sensitivity_sq / (2 * float(sigma2)), epsilon)


def discrete_gaussian_l2_sensitivity(sigma2: Fraction, epsilon: float, delta: float) -> float:
    """The largest L2 sensitivity N_Z(0, sigma2) covers at (epsilon, delta), inverting ``discrete_gaussian_sigma2``.

    sqrt of the largest integer Delta_2^2 with ``discrete_gaussian_delta`` <= ``delta`` (0 when none).
    """
    if discrete_gaussian_delta(1, sigma2, epsilon) > delta:
        return 0.0
    hi = 2
    while discrete_gaussian_delta(hi, sigma2, epsilon) <= delta:
        hi *= 2
    lo = hi // 2  # delta grows with the squared sensitivity: lo is covered, hi is not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if discrete_gaussian_delta(mid, sigma2, epsilon) <= delta else (lo, mid)
    return math.sqrt(lo)


def grid_denominator(sigma2: float) -> int:
    """The largest power-of-two denominator b whose sigma^2 grid stays in the sampler's int64 range at ``sigma2``."""
    t = math.isqrt(math.ceil(sigma2)) + 1
    b = 1
    while V_CAP * t * t * (2 * b) <= MAX_PRODUCT:
        b *= 2
    return b


def discrete_gaussian_sigma2(l2_sensitivity_sq: int, epsilon: float, delta: float) -> Fraction:
    """Smallest grid sigma^2 (a Fraction, rounded up) with ``discrete_gaussian_delta`` <= ``delta``.

    ``l2_sensitivity_sq``: Delta_2^2 of the integer vector (h m for the binary tree: one step of m counters moves h
    node sums by at most 1 each). A one-line error when the result is outside the sampler's range.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if not (isinstance(l2_sensitivity_sq, int) and l2_sensitivity_sq >= 1):
        raise ValueError(f"l2_sensitivity_sq must be a positive integer, got {l2_sensitivity_sq!r}")

    def excess(log_s2: float) -> float:
        return zcdp_log_delta(l2_sensitivity_sq / (2 * math.exp(log_s2)), epsilon) - math.log(delta)

    lo, hi = math.log(l2_sensitivity_sq) - 10.0, math.log(l2_sensitivity_sq) + 10.0
    while excess(hi) > 0:
        hi += 10.0
    root = math.exp(brentq(excess, lo, hi, xtol=1e-12))
    b = grid_denominator(root)
    a = math.ceil(root * b)
    while discrete_gaussian_delta(l2_sensitivity_sq, Fraction(a, b), epsilon) > delta:
        a += 1
    gaussian_params(a, b)  # range check: one-line error outside it
    return Fraction(a, b)
