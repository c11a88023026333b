"""Privacy accounting of the sparse vector and query-release families.

Scalar composition formulas, their inversion, Sparse's threshold scale and Sparse's pure-vs-approximate choice
(composition over ``Privacy`` statements: ``dpstream.privacy.composition``).

Composition is Dwork, Rothblum and Vadhan's advanced composition (Kaplan, Mansour,
Stemmer, Thm B.1; the iterative-construction notes): l adaptively
composed eps-DP steps are (sqrt(2 l ln(1/delta^)) eps + l eps (e^eps - 1), delta^)-DP; basic composition gives
l eps. Sparse (the SVT notes): c AboveThreshold rounds, threshold noise sigma = 2c/eps (pure, basic composition)
or sqrt(32 c ln(1/delta))/eps (approximate, advanced composition, checked exactly: ``sparse_advanced_certified``).
Every Laplace scale is built on ``dpstream.privacy.calibration.laplace_scale``.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

from scipy.optimize import brentq

from dpstream.privacy.calibration import laplace_scale
from dpstream.validation import check_delta, check_epsilon, check_positive_int

QUERY_SENSITIVITY = 1.0
"""|f_i(S) - f_i(S')| <= 1 for every query and neighbouring S, S': the per-query sensitivity every Sparse noise
scale is calibrated for (linear queries with f_i(x) in [0, 1], add/remove one record; checked by
``dpstream.audit.sensitivity``). Query release divides the scale by n for its 1/n-sensitive queries."""


# ---- Composition -------------------------------------------------------------------------------------------------

def advanced_composition(epsilon: float, rounds: int, delta_hat: float) -> float:
    """Thm B.1 (Dwork, Rothblum, Vadhan): eps^ = sqrt(2 l ln(1/delta^)) eps + l eps (e^eps - 1)."""
    growth = math.expm1(epsilon) if epsilon < 700.0 else math.inf  # e^eps overflows beyond ~709
    return math.sqrt(2.0 * rounds * math.log(1.0 / delta_hat)) * epsilon + rounds * epsilon * growth


def composed_epsilon(eps0: float, k: int, delta_prime: float) -> float:
    """Total epsilon of k adaptively composed eps0-DP steps: min(basic k eps0, ``advanced_composition``).

    ``delta_prime`` = 0 means pure DP (basic composition only).
    """
    eps0 = check_epsilon(eps0, "eps0")
    k = check_positive_int(k, "k")
    if delta_prime == 0 or eps0 > 1.0:  # for eps0 > 1 the DRV term k eps0 (e^eps0 - 1) exceeds k eps0
        return k * eps0
    delta_prime = check_delta(delta_prime, "delta_prime")
    return min(k * eps0, advanced_composition(eps0, k, delta_prime))


def per_step_epsilon(epsilon: float, delta: float, k: int) -> float:
    """Largest eps0 whose k-fold composition (``composed_epsilon``) is <= epsilon (delta = 0: epsilon / k)."""
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k")
    if delta == 0 or k == 1 or composed_epsilon(epsilon / k, k, delta) >= epsilon:  # basic composition is tight
        return epsilon / k
    return brentq(lambda e: composed_epsilon(e, k, delta) - epsilon, epsilon / k, epsilon, xtol=1e-14, rtol=1e-12)


def advanced_per_step_epsilon(epsilon: float, delta: float, steps: int) -> float:
    """Per-step budget for ``steps`` compositions: the larger of eps/steps (basic) and the advanced one.

    The same root as ``per_step_epsilon`` (both solve advanced_composition(e, steps, delta) = epsilon where basic
    composition is not tight), found from another bracket: the two agree to ~1e-12 relative, not bit for bit.
    The shifting-heavy-hitters baselines use this one, so their committed numbers stay bit-identical; merge the
    two at the next rerun of ``shifting_hh``.
    """
    if advanced_composition(epsilon / steps, steps, delta) >= epsilon:
        return epsilon / steps
    return max(epsilon / steps, brentq(lambda e: advanced_composition(e, steps, delta) - epsilon, 1e-300, epsilon))


# ---- Sparse ------------------------------------------------------------------------------------------------------

def check_kappa(kappa: float) -> float:
    """The noise multiplier kappa in (0, 1].

    1 is the calibrated (certified) noise; kappa < 1 multiplies every noise scale by kappa and is NOT privacy-certified
    (spec E1, optional mode for curve shapes at small n).
    """
    try:
        value = float(kappa)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 < value <= 1.0:
        raise ValueError(f"kappa must be in (0, 1] (1 = calibrated noise; < 1 is NOT privacy-certified), got {kappa!r}")
    return value


def _check_cutoff(c: float) -> float:
    """Sparse's cutoff c: an integer >= 1, or a real >= 1 (the s of Hsu, Roth, Ullman's clean-up)."""
    if isinstance(c, Integral) or not isinstance(c, Real):
        return check_positive_int(c, "c")
    if not (math.isfinite(c) and c >= 1):
        raise ValueError(f"c must be a number >= 1, got {c!r}")
    return c


def sparse_composed_epsilon(epsilon: float, c: float, delta: float) -> float:
    """The exact guarantee of approximate Sparse at threshold scale sqrt(32 c ln(1/delta))/eps.

    Its ceil(c) AboveThreshold rounds are each eps' = eps / sqrt(8 c ln(1/delta))-DP (threshold noise 2/eps'), composed
    by Thm B.1 at delta: sqrt(2 ceil(c) ln(1/delta)) eps' + ceil(c) eps' (e^eps' - 1), = eps/2 + ... for integer c.
    """
    per_round = epsilon / math.sqrt(8.0 * c * math.log(1.0 / delta))
    return advanced_composition(per_round, math.ceil(c), delta)


def sparse_advanced_certified(epsilon: float, c: float, delta: float) -> bool:
    """True when the approximate Sparse scale at (epsilon, delta), cutoff c, is (epsilon, delta)-DP.

    That is, ``sparse_composed_epsilon <= epsilon``. (The notes' eps <= 4 ln(1/delta) only bounds e^eps' - 1 by eps' and
    is too loose: at delta = 1e-6, c = 1 the largest certified eps is 19.3, not 55.)
    """
    return sparse_composed_epsilon(epsilon, c, delta) <= epsilon * (1.0 + 1e-12)


def check_sparse_advanced(epsilon: float, c: float, delta: float) -> None:
    """Reject an approximate Sparse calibration whose composition does not reach (epsilon, delta)."""
    if not sparse_advanced_certified(epsilon, c, delta):
        raise ValueError(
            f"Sparse with delta > 0 at epsilon={epsilon}, c={c}, delta={delta} composes (advanced composition) to "
            f"epsilon {sparse_composed_epsilon(epsilon, c, delta):.4g} > {epsilon}: not certified; use delta = 0 "
            f"(pure composition, sigma = 2c/eps) or a smaller epsilon"
        )


def sparse_sigma(epsilon: float, c: float, delta: float = 0.0, kappa: float = 1.0) -> float:
    """Threshold noise scale of Sparse (the SVT notes).

    sigma = 2c/eps if delta = 0, else sqrt(32 c ln(1/delta))/eps, times ``kappa`` (``check_kappa``; kappa < 1 is NOT
    privacy-certified), for sensitivity-1 queries.

    Query noise is Lap(2 sigma). AboveThreshold is the case c = 1, delta = 0 (Lap(2/eps), Lap(4/eps)).
    With delta > 0 the advanced composition is checked exactly (``check_sparse_advanced``); failing points are rejected.
    """
    c = _check_cutoff(c)
    kappa = check_kappa(kappa)
    if delta == 0:
        return kappa * laplace_scale(2.0 * c * QUERY_SENSITIVITY, epsilon)
    delta = check_delta(delta)
    check_sparse_advanced(epsilon, c, delta)
    return kappa * laplace_scale(math.sqrt(32.0 * c * math.log(1.0 / delta)) * QUERY_SENSITIVITY, epsilon)


def sparse_prefers_pure(epsilon: float, c: float, delta: float) -> bool:
    """The pure-vs-approximate choice of Sparse at budget (epsilon, delta).

    Pure (delta = 0) when its scale 2c/eps is no larger than the approximate sqrt(32 c ln(1/delta))/eps (i.e. c <= 8
    ln(1/delta); the accuracy bounds ``svt.theory.alpha_sparse_pure`` / ``_approx`` order the same way), or when the
    approximate one is not certified (``sparse_advanced_certified``); always pure when delta = 0.
    """
    if delta == 0:
        return True
    pure = sparse_sigma(epsilon, c)
    if not sparse_advanced_certified(epsilon, c, delta):
        return True
    return pure <= sparse_sigma(epsilon, c, delta)


def best_sparse_sigma(epsilon: float, c: float, delta: float) -> float:
    """Sparse's threshold scale under ``sparse_prefers_pure``: the smaller certified one of the two."""
    return sparse_sigma(epsilon, c, 0.0 if sparse_prefers_pure(epsilon, c, delta) else delta)
