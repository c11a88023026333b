"""Claims about dpstream.privacy.calibration.

The analytic Gaussian sigma is the exact smallest one, checked against Google's dp-accounting privacy loss distributions
(an accountant independent of our formula); the classic default is unchanged.
"""

import math
import sys

import numpy as np
import pytest
from absl import logging as absl_logging
from dp_accounting.pld import privacy_loss_distribution as pld

from dpstream.privacy.calibration import (
    CALIBRATIONS,
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gauss_bm_levels,
    gauss_bm_sigma,
    gaussian_l2_sensitivity,
    gaussian_sigma,
)

# dp_accounting imports absl, whose log handler keeps the sys.stderr of the moment (this file's captured stream) and
# closes it when a later logging reconfiguration (Hydra's, in the in-process CLI tests) shuts handlers down: point it
# at the real stderr, which absl never closes.
absl_logging.get_absl_handler().python_handler.stream = sys.__stderr__

GRID = [(eps, delta, l2) for eps in (0.05, 0.3, 1.0, 2.0, 8.0) for delta in (1e-3, 1e-6) for l2 in (1.0, math.sqrt(60))]
DV = 1e-4  # PLD value discretisation interval of the pessimistic (upper-bound) accountant
DV_LOWER = 1e-3  # coarser interval for the optimistic (lower-bound) accountant: still a valid lower bound
TRUNCATION = math.exp(-50)  # dp-accounting's default log_mass_truncation_bound: mass moved to +infinity


def _pld_delta(sigma: float, l2: float, epsilon: float, upper: bool) -> float:
    """dp-accounting's delta(epsilon) of N(0, sigma^2) on an L2-sensitivity ``l2`` query (add/remove shift by l2).

    upper: pessimistic connect-the-dots PLD, an upper bound on the true delta; else the optimistic privacy-buckets
    PLD (privacy loss rounded down to the grid, truncated mass dropped), a lower bound.
    """
    if upper:
        dist = pld.from_gaussian_mechanism(sigma, sensitivity=l2, value_discretization_interval=DV)
    else:
        dist = pld.from_gaussian_mechanism(sigma, sensitivity=l2, value_discretization_interval=DV_LOWER,
                                           pessimistic_estimate=False, use_connect_dots=False)
    return float(dist.get_delta_for_epsilon(epsilon))


@pytest.mark.parametrize(("epsilon", "delta", "l2"), GRID)
def test_analytic_sigma_is_the_smallest_sigma_per_dp_accounting(epsilon, delta, l2):
    sigma = analytic_gaussian_sigma(l2, epsilon, delta)
    upper = _pld_delta(sigma, l2, epsilon, upper=True)
    # Safe side: the pessimistic PLD is >= the true delta; the true delta is the target up to brentq's 1e-12
    # relative step in sigma, far below 1e-6 relative in delta.
    assert upper >= delta * (1 - 1e-6)
    # Within the discretisation error of the target: the pessimistic PLD rounds each privacy loss up by at most DV,
    # so its delta(eps) is at most the exact curve at eps - DV (E[(1 - e^(eps - L'))+] with L' <= L + DV), plus the
    # truncated mass. At this grid that bound is 1.0002 to 1.028 times the target.
    assert upper <= analytic_gaussian_delta(epsilon - DV, l2, sigma) + TRUNCATION
    # Tight: the optimistic PLD (a lower bound on the true delta) already exceeds delta at a 1% smaller sigma.
    assert _pld_delta(0.99 * sigma, l2, epsilon, upper=False) > delta
    assert _pld_delta(sigma, l2, epsilon, upper=False) <= delta


def test_classic_sigma_violates_delta_at_epsilon_8_per_dp_accounting():
    # Why the analytic option exists: Dwork-Roth's theorem needs eps < 1; at eps = 8, delta = 1e-3 the classic sigma
    # is 1.7% below the smallest valid one and a lower bound on its true delta already exceeds 1e-3.
    sigma = classic_gaussian_sigma(1.0, 8.0, 1e-3)
    assert sigma < analytic_gaussian_sigma(1.0, 8.0, 1e-3)
    assert _pld_delta(sigma, 1.0, 8.0, upper=False) > 1e-3


@pytest.mark.parametrize("delta", [1e-2, 1e-3, 1e-6, 1e-10])
def test_analytic_sigma_is_at_most_classic_below_epsilon_1(delta):
    # The classic sigma is a valid calibration for eps < 1 (Dwork and Roth, Thm A.1) and the analytic one is the
    # smallest valid one, so it can never be larger there.
    for epsilon in np.geomspace(1e-3, 0.999, 40):
        assert analytic_gaussian_sigma(2.5, epsilon, delta) <= classic_gaussian_sigma(2.5, epsilon, delta)


def test_analytic_sigma_lands_on_the_safe_side_of_the_exact_curve():
    for epsilon, delta, l2 in GRID:
        sigma = analytic_gaussian_sigma(l2, epsilon, delta)
        assert analytic_gaussian_delta(epsilon, l2, sigma) <= delta
        assert analytic_gaussian_delta(epsilon, l2, sigma * (1 - 1e-9)) > delta


def test_default_calibration_is_classic_and_bit_identical():
    # exact on purpose, and portable: both sides evaluate the same IEEE operations in the same order with the same libm
    # in one process, so they agree bit for bit on every machine (only recorded floats need a tolerance)
    assert gaussian_sigma(3.0, 0.7, 1e-4) == 3.0 * math.sqrt(2.0 * math.log(1.25 / 1e-4)) / 0.7
    assert gaussian_sigma(3.0, 0.7, 1e-4) == gaussian_sigma(3.0, 0.7, 1e-4, "classic")
    h = gauss_bm_levels(1000)
    assert gauss_bm_sigma(1000, 0.5, 1e-3, 6) == math.sqrt(h * 6) * math.sqrt(2.0 * math.log(1.25e3)) / 0.5
    assert gaussian_l2_sensitivity(2.0, 0.5, 1e-3) == 2.0 * 0.5 / math.sqrt(2.0 * math.log(1.25e3))


def test_analytic_calibration_dispatches_everywhere():
    h = gauss_bm_levels(1000)
    assert gaussian_sigma(3.0, 0.7, 1e-4, "analytic") == analytic_gaussian_sigma(3.0, 0.7, 1e-4)
    assert gauss_bm_sigma(1000, 0.5, 1e-3, 6, calibration="analytic") == analytic_gaussian_sigma(
        math.sqrt(h * 6), 0.5, 1e-3)
    for calibration in CALIBRATIONS:  # analytic: two root solves, each within ~1e-11 relative of the exact root
        sigma = gaussian_sigma(3.0, 0.7, 1e-4, calibration)
        assert gaussian_l2_sensitivity(sigma, 0.7, 1e-4, calibration) == pytest.approx(3.0, rel=1e-10)


def test_rejects_unknown_calibration():
    for call in (lambda: gaussian_sigma(1.0, 1.0, 1e-3, "renyi"), lambda: gauss_bm_sigma(10, 1.0, 1e-3, 2, "renyi"),
                 lambda: gaussian_l2_sensitivity(1.0, 1.0, 1e-3, "renyi")):
        with pytest.raises(ValueError, match="calibration 'renyi'; allowed: analytic, classic"):
            call()


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_analytic_sigma_rejects_nonpositive_sensitivity(bad):
    with pytest.raises(ValueError, match="l2_sensitivity must be > 0"):
        analytic_gaussian_sigma(bad, 1.0, 1e-3)
