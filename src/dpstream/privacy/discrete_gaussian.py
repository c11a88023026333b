"""The discrete Gaussian's privacy statement for a vector of integer node sums, and its calibration.

Mechanism: q(x) + Y with Y_j ~ N_Z(0, sigma^2) independent (Canonne, Kamath, Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020), q integer-valued with ||q(x) - q(x')||_2^2 <= K for neighbours. Any integer
difference vector qualifies (the binary tree's +-1 entries, a Count Sketch cell moved by 2): only K is used, and
the difference has at most K non-zero coordinates.

``discrete_gaussian_delta`` is the smaller of two rigorous bounds on the hockey-stick divergence at ``epsilon``:

1. zCDP (Canonne-Kamath-Steinke, multivariate theorem and Corollary 13): rho = K / (2 sigma^2), ``zcdp_delta``.
2. Smoothing (derived here, tight): for any s^2 < sigma^2, the discrete Gaussian is, up to a total variation gamma per
   coordinate, the continuous Gaussian N(q, sigma_0^2), sigma_0^2 = sigma^2 - s^2, post-processed by the
   shift-equivariant kernel K(y | z) = exp(-(y - z)^2 / (2 s^2)) / Theta_s(z) on the integers y
   (Theta_s(z) = sum_j exp(-(j - z)^2 / (2 s^2)) makes it a distribution; it is 1-periodic in z). By Poisson
   summation Theta_s(z) = s sqrt(2 pi) (1 + r(z)) and sum_j N(0, sigma^2)-density(j) = 1 + r_sigma with
   |r(z)|, r_sigma <= r_s = 2 sum_{n>=1} exp(-2 pi^2 s^2 n^2) <= 2 q / (1 - q), q = exp(-2 pi^2 s^2). Since
   N(0, sigma_0^2) * N(0, s^2) = N(0, sigma^2), the kernel's output pmf lies between the N(0, sigma^2) density at
   y divided by 1 + r_s and by 1 - r_s, so its ratio to the exact N_Z(q, sigma^2) pmf lies in
   [(1 + r_sigma) / (1 + r_s), (1 + r_sigma) / (1 - r_s)]: L1 distance <= gamma = 2 r_s / (1 - r_s) per
   coordinate. Coordinates where q(x) = q(x') are identical under both inputs and drop out of the divergence
   exactly; on the others (at most K of them, integer entries) the product's total variation is <= K gamma / 2.
   Hockey-stick divergences move by at most (1 + e^epsilon) times a total variation, and post-processing cannot
   raise them (data processing), so
       delta <= delta_G(epsilon; sqrt(K) / sigma_0) + (1 + e^epsilon) K gamma / 2,
   delta_G the exact Gaussian curve (Balle, Wang, "Improving the Gaussian Mechanism for Differential Privacy:
   Analytical Calibration and Optimal Denoising", ICML 2018, Thm 8), increasing in the sensitivity. The bound is
   minimised over s^2 on ``SMOOTHING_S2`` (s^2 about 1.5 to 2 wins: the cost is sigma^2 - s^2, under 0.1% of sigma^2
   at the sketches' sigma, and the TV term is below 1e-10).

Numerical error: delta_G = Phi(a) - e^epsilon Phi(b) is computed with ``math.erfc`` (about 1 ulp); the bound adds
``FLOAT_MARGIN`` (A + B), far above that, and sigma_0 is rounded down.

``discrete_gaussian_sigma2`` returns the smallest sigma^2 = a / b on the sampler's grid (b a power of two, as fine as
the range ``samplers.gaussian_params`` allows) whose delta is <= the target: the real root rounded UP.
The samplers' truncation at |y| < 64 t adds at most 2 exp(-2048) per draw to delta (``samplers``), below float
precision for any stream length, and is stated rather than computed.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from scipy.optimize import brentq, minimize_scalar

from dpstream.secure.samplers import MAX_PRODUCT, V_CAP, gaussian_params
from dpstream.validation import check_delta, check_epsilon

_ALPHA_MAX = 1e6
SMOOTHING_S2 = tuple(k / 16 for k in range(12, 65))
"""The s^2 tried by ``smoothing_delta`` (0.75 to 4 in steps of 1/16); any s^2 < sigma^2 gives a valid bound."""
FLOAT_MARGIN = 1e-12
"""Relative margin added to both terms of the Gaussian curve for floating-point error (``math.erfc``: ~1 ulp)."""


def _phi(x: float) -> float:
    """Standard normal cdf."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gaussian_curve_upper(epsilon: float, l2_sensitivity: float, sigma: float) -> float:
    """delta_G of N(0, sigma^2) at L2 sensitivity Delta (Balle, Wang, Thm 8) plus ``FLOAT_MARGIN`` times its terms."""
    a, b = l2_sensitivity / (2.0 * sigma), epsilon * sigma / l2_sensitivity
    first, second = _phi(a - b), math.exp(epsilon) * _phi(-a - b)
    return max(0.0, first - second) + FLOAT_MARGIN * (first + second)


def theta_excess(s2: float) -> float:
    """r_s >= 2 sum_{n>=1} exp(-2 pi^2 s^2 n^2), as 2 q / (1 - q) with q = exp(-2 pi^2 s^2) (n^2 >= n)."""
    q = math.exp(-2.0 * math.pi ** 2 * s2)
    return 2.0 * q / (1.0 - q)


def smoothing_delta(l2_sensitivity_sq: int, sigma2: float, epsilon: float, s2: float) -> float:
    """The smoothing bound at one s^2 < sigma^2: delta_G(sqrt(K) / sigma_0) + (1 + e^eps) K gamma / 2 (module doc)."""
    r = theta_excess(s2)
    if not (0 < s2 < sigma2 and r < 1):
        return 1.0
    sigma0 = math.sqrt((sigma2 - s2) * (1.0 - 1e-14))  # rounded down: the curve grows as sigma_0 shrinks
    gamma = 2.0 * r / (1.0 - r)
    tv = (1.0 + math.exp(epsilon)) * l2_sensitivity_sq * gamma / 2.0
    return min(1.0, gaussian_curve_upper(epsilon, math.sqrt(l2_sensitivity_sq), sigma0) + tv)


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


def discrete_gaussian_delta(l2_sensitivity_sq: int, sigma2: Fraction | float, epsilon: float) -> float:
    """An upper bound on the delta of N_Z(0, sigma2) per coordinate at ``epsilon`` (module docstring).

    ``l2_sensitivity_sq``: K, the integer query's squared L2 sensitivity. The smaller of the zCDP bound and the
    smoothing bound minimised over ``SMOOTHING_S2``; both hold for every integer difference vector with squared norm
    <= K, so the minimum does.
    """
    s2 = float(sigma2)
    smooth = min(smoothing_delta(l2_sensitivity_sq, s2, epsilon, t) for t in SMOOTHING_S2)
    return min(smooth, zcdp_delta(l2_sensitivity_sq / (2 * s2), epsilon))


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
    """The largest power-of-two denominator b whose sigma^2 grid stays in the exact sampler's range at ``sigma2``."""
    t = math.isqrt(math.ceil(sigma2)) + 1
    b = 1
    while V_CAP * t * t * (2 * b) <= MAX_PRODUCT:
        b *= 2
    return b


@lru_cache(maxsize=256)
def discrete_gaussian_sigma2(l2_sensitivity_sq: int, epsilon: float, delta: float) -> Fraction:
    """Smallest grid sigma^2 (a Fraction, rounded up) with ``discrete_gaussian_delta`` <= ``delta``.

    ``l2_sensitivity_sq``: Delta_2^2 of the integer vector (h m for the binary tree: one step of m counters moves h
    node sums by at most 1 each). A one-line error when the result is outside the sampler's range. Memoised (a pure
    function of its arguments; about 10 ms a call otherwise).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if not (isinstance(l2_sensitivity_sq, int) and l2_sensitivity_sq >= 1):
        raise ValueError(f"l2_sensitivity_sq must be a positive integer, got {l2_sensitivity_sq!r}")

    def excess(log_s2: float) -> float:
        bound = discrete_gaussian_delta(l2_sensitivity_sq, math.exp(log_s2), epsilon)
        return math.log(max(bound, 1e-300)) - math.log(delta)

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
