"""Generic noise calibration: Gaussian and Laplace scales from (epsilon, delta) and a sensitivity.

Every mechanism gets its noise scale from a function here (or, for a family with its own
accounting, from that family's ``calibration`` module, which builds on these). Tests compare the
noise a mechanism actually adds against these formulas.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.stats import norm

from dpstream.validation import check_choice, check_delta, check_epsilon, check_positive_int

CALIBRATIONS = ("classic", "analytic")
"""Gaussian calibrations: ``classic`` (Dwork and Roth, Thm A.1; the papers' choice, the default) or
``analytic`` (Balle and Wang 2018: the exact smallest sigma)."""


def _check_l2_sensitivity(l2_sensitivity: float) -> float:
    if not l2_sensitivity > 0:
        raise ValueError(f"l2_sensitivity must be > 0, got {l2_sensitivity!r}")
    return float(l2_sensitivity)


def classic_gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float) -> float:
    """Classical Gaussian mechanism: sigma = Delta_2 * sqrt(2 ln(1.25/delta)) / epsilon.

    (Dwork and Roth, Thm A.1; Holland, Sec. 2.) The theorem is stated for epsilon < 1; the Lazy
    Sketch paper applies it for larger epsilon too, and so does this noise scale, but the statement made for it is
    ``maps.GaussianMap``'s: from epsilon 1 up, the larger of this epsilon and the exact one.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    return _check_l2_sensitivity(l2_sensitivity) * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


_SAFE_RTOL = 1e-12  # brentq's relative tolerance on sigma; the result is then moved to the safe side


def analytic_gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float) -> float:
    """Analytic Gaussian mechanism (Balle and Wang 2018, Alg. 1 / Thm 8).

    The smallest sigma with ``analytic_gaussian_delta(epsilon, Delta_2, sigma) <= delta``, valid for every epsilon > 0.

    The exact curve decreases in sigma, so brentq on a doubling/halving bracket finds the root to a relative
    1e-12; the returned sigma is then raised in steps of that size until the curve is <= delta, so it is
    always on the safe side of the computed curve (never more than ~1e-11 relative above the exact root).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    l2_sensitivity = _check_l2_sensitivity(l2_sensitivity)

    def excess(sigma: float) -> float:
        return analytic_gaussian_delta(epsilon, l2_sensitivity, sigma) - delta

    hi = lo = l2_sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    while excess(hi) > 0:
        hi *= 2.0
    while excess(lo) <= 0:
        lo /= 2.0
    sigma = brentq(excess, lo, hi, xtol=1e-300, rtol=_SAFE_RTOL)
    while excess(sigma) > 0:
        sigma *= 1.0 + 4.0 * _SAFE_RTOL
    return sigma


_SIGMA_OF = {"classic": classic_gaussian_sigma, "analytic": analytic_gaussian_sigma}


def gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float, calibration: str = "classic") -> float:
    """Noise scale of the Gaussian mechanism for an L2-sensitivity ``l2_sensitivity`` query at (epsilon, delta).

    ``classic_gaussian_sigma`` (default, the papers') or ``analytic_gaussian_sigma`` (``CALIBRATIONS``).
    """
    return _SIGMA_OF[check_choice(calibration, "calibration", CALIBRATIONS)](l2_sensitivity, epsilon, delta)


def laplace_scale(l1_sensitivity: float, epsilon: float) -> float:
    """Laplace mechanism: b = Delta_1 / epsilon, noise density exp(-|x|/b) / (2b)."""
    epsilon = check_epsilon(epsilon)
    if not l1_sensitivity > 0:
        raise ValueError(f"l1_sensitivity must be > 0, got {l1_sensitivity!r}")
    return l1_sensitivity / epsilon


def gauss_bm_levels(horizon: int) -> int:
    """Tree levels of a binary mechanism over ``horizon`` steps: h = ceil(log2(horizon + 1)) (Holland, Alg. 1)."""
    horizon = check_positive_int(horizon, "horizon")
    return max(1, math.ceil(math.log2(horizon + 1)))


def gauss_bm_sigma(horizon: int, epsilon: float, delta: float, m: int, calibration: str = "classic") -> float:
    """Per-node noise of GaussBM(T, eps, delta, m): sigma = sqrt(2 h m ln(1.25/delta)) / eps (Holland, Alg. 1).

    One neighbour changes each of at most ``m`` counters by 1 at one step; that step touches h nodes
    of each counter, so the L2 sensitivity of all node values is sqrt(h m). ``calibration="analytic"`` gives
    the exact smallest sigma for that sensitivity instead (``analytic_gaussian_sigma``): the node values are one
    Gaussian mechanism with isotropic noise, whose privacy curve depends only on Delta_2 / sigma.
    """
    m = check_positive_int(m, "m")
    return gaussian_sigma(math.sqrt(gauss_bm_levels(horizon) * m), epsilon, delta, calibration)


def gaussian_l2_sensitivity(sigma: float, epsilon: float, delta: float, calibration: str = "classic") -> float:
    """The L2 sensitivity a Gaussian noise scale ``sigma`` covers at (epsilon, delta).

    The inverse of ``gaussian_sigma``. Classic: Delta_2 = sigma * epsilon / sqrt(2 ln(1.25/delta)); analytic: sigma
    divided by the analytic sigma of a unit sensitivity (both calibrations are linear in Delta_2). The sensitivity probe
    (``dpstream.audit.sensitivity``) reads a mechanism's assumption from its calibrated sigma this way.
    """
    if check_choice(calibration, "calibration", CALIBRATIONS) == "analytic":
        return sigma / analytic_gaussian_sigma(1.0, epsilon, delta)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    return sigma * epsilon / math.sqrt(2.0 * math.log(1.25 / delta))


def cell_neighbour_m(signed: bool, depth: int) -> int:
    """Multiplicity m of the GaussBM cells of a d-row sketch, replace-one neighbours: 2d (Count-Min), 4d (Count Sketch).

    Replacing x by x' moves, in each row i, the pushed increment of cell h_i(x) by -c_i(x) and of cell
    h_i(x') by +c_i(x'), at one step each. Count-Min (c = 1): two cells move by 1, or, when h_i(x) = h_i(x'),
    one cell by 0; squared L2 change <= 2 per row, so m = 2d (Holland, Thm 2). Count Sketch (c = g_i = +-1):
    when h_i(x) = h_i(x') and g_i(x) = -g_i(x') that one cell moves by 2, squared change 4 per row, 4d in
    all. ERRATUM: the paper's Thm 2 proof drops the colliding cells and calibrates CS with m = 2d too; with
    sigma from m = 2d the exact Gaussian privacy curve (Balle and Wang 2018) gives delta = 2.2e-3 instead of
    1e-3 at eps = 2 (README, errata). GaussBM's m counts unit changes of squared L2, so m = 4d covers it.
    """
    depth = check_positive_int(depth, "depth")
    return (4 if signed else 2) * depth


def analytic_gaussian_delta(epsilon: float, l2_sensitivity: float, sigma: float) -> float:
    """Exact privacy curve of the Gaussian mechanism (Balle and Wang 2018, Thm 8).

    The smallest delta for which N(0, sigma^2) noise on an L2-sensitivity Delta query is (epsilon, delta)-DP, delta =
    Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta).
    """
    if not (l2_sensitivity > 0 and sigma > 0 and epsilon >= 0):
        raise ValueError(f"need epsilon >= 0, l2_sensitivity > 0, sigma > 0; got {epsilon!r}, {l2_sensitivity!r}, "
                         f"{sigma!r}")
    a, b = l2_sensitivity / (2.0 * sigma), epsilon * sigma / l2_sensitivity
    return float(norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b))
