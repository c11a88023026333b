"""Theory and calibration of the sparse vector family against the spec's reference table (exact accounting)."""

import math

import pytest

from dpstream.privacy.accounting import sparse_composed_epsilon, sparse_sigma
from dpstream.privacy.query_release import hru_sparse_sigma
from dpstream.privacy.svt import thm32_xi
from dpstream.query_release.online import online_sigma
from dpstream.svt import calibrate_monitor
from dpstream.svt import theory as T

# Spec table (eps_tot = 1, delta_tot = 1e-6, beta = 0.05, m = 1e6), printed to 2 significant digits:
# k, eps_tot/eps, Delta, 10 Delta, alpha_TM, crossover c. Tolerance 5% = half a unit in the 2nd digit.
REFERENCE = [
    (1, 35, 3.3e3, 3.3e4, 5.8e5, 5.9e4),
    (3, 45, 4.4e3, 4.4e4, 7.8e5, 1.0e5),
    (10, 80, 8.5e3, 8.5e4, 1.5e6, 3.5e5),
    (100, 533, 7.1e4, 7.1e5, 1.3e7, 1.9e7),
]


@pytest.mark.parametrize(("k", "ratio", "cap", "w_scale", "alpha_tm", "crossover"), REFERENCE)
def test_monitor_reference_numbers_match_spec_table(k, ratio, cap, w_scale, alpha_tm, crossover):
    cal = calibrate_monitor(1.0, 1e-6, k)
    assert cal.epsilon_total / cal.epsilon == pytest.approx(ratio, rel=0.05)
    assert cal.cap == pytest.approx(cap, rel=0.05)
    assert cal.w_scale == pytest.approx(w_scale, rel=0.05)
    assert T.alpha_monitor_total(1.0, 1e-6, k, 10**6, 0.05) == pytest.approx(alpha_tm, rel=0.05)
    assert T.sparse_crossover_c(1.0, 1e-6, k, 10**6, 0.05) == pytest.approx(crossover, rel=0.05)


@pytest.mark.parametrize(("c", "alpha"), [(1, 1.1e3), (100, 1.5e4), (10**4, 1.9e5)])
def test_sparse_advanced_composition_reference_numbers(c, alpha):
    # The spec prints these with "~": 1.5e4 is 1.40e4 exactly, so 10% here.
    assert T.alpha_sparse_approx(1.0, 1e-6, c, 10**4, 0.05) == pytest.approx(alpha, rel=0.1)


def test_option_a_wins_up_to_about_k_690():
    assert calibrate_monitor(1.0, 1e-6, 600).option == "A"
    assert calibrate_monitor(1.0, 1e-6, 700).option == "B"


@pytest.mark.parametrize("k", [1, 10, 100])
def test_option_a_spends_exactly_the_budget_by_thm_3_2(k):
    cal = calibrate_monitor(1.0, 1e-6, k)
    assert cal.option == "A"
    xi, delta3 = T.monitor_privacy_thm32(cal.epsilon, cal.delta, k)
    assert xi == pytest.approx(1.0, rel=1e-12)
    assert delta3 == pytest.approx(1e-6, rel=1e-12)


@pytest.mark.parametrize("k", [700, 5000])
def test_option_b_spends_exactly_the_budget_by_thm_3_8(k):
    cal = calibrate_monitor(1.0, 1e-6, k)
    assert cal.option == "B"
    eps0, delta0 = T.monitor_privacy_thm38(cal.epsilon, cal.delta, k, 1e-6 / 2)
    assert eps0 == pytest.approx(1.0, rel=1e-9)
    assert delta0 <= 1e-6 * (1 + 1e-12)
    assert cal.epsilon == max(cal.epsilon_a, cal.epsilon_b)


def test_above_threshold_bound_is_sparse_pure_at_c_1():
    assert T.alpha_above_threshold(0.5, 1000, 0.1) == pytest.approx(T.alpha_sparse_pure(0.5, 1, 1000, 0.1))
    assert T.alpha_above_threshold(0.5, 1000, 0.1) == pytest.approx(8 * (math.log(1000) + math.log(20)) / 0.5)


def test_sparse_sigma_formulas():
    assert sparse_sigma(0.5, 10) == pytest.approx(2 * 10 / 0.5)
    assert sparse_sigma(0.5, 10, 1e-6) == pytest.approx(math.sqrt(32 * 10 * math.log(1e6)) / 0.5)


def test_sparse_composition_is_the_exact_advanced_composition_of_its_rounds():
    # c AboveThreshold rounds at eps' = eps / sqrt(8 c L), Thm B.1 at delta: eps/2 + c eps' (e^eps' - 1).
    eps, c, delta = 3.0, 10, 1e-6
    per_round = eps / math.sqrt(8 * c * math.log(1 / delta))
    assert sparse_composed_epsilon(eps, c, delta) == pytest.approx(eps / 2 + c * per_round * math.expm1(per_round))


@pytest.mark.parametrize("c", [1, 10, 100])
def test_sparse_at_delta_1e6_eps_45_is_not_certified(c):
    # The old precondition eps <= 4 ln(1/delta) = 55.3 accepted this point; its composition gives eps > 45.
    assert 45 < 4 * math.log(1e6)
    assert sparse_composed_epsilon(45.0, c, 1e-6) > 45.0
    with pytest.raises(ValueError, match=r"composes \(advanced composition\) to epsilon .* > 45"):
        sparse_sigma(45.0, c, 1e-6)
    # Sparse inside the query-release mechanisms falls back to pure composition (sigma = 2c/eps) there.
    assert hru_sparse_sigma(1000, 3 * 45.0, 3e-6, c) == pytest.approx(sparse_sigma(45.0, c) / 1000)
    assert online_sigma(2 * 45.0, 2e-6, c) == sparse_sigma(45.0, c)


@pytest.mark.parametrize("eps, c", [(0.1, 1), (1.0, 1), (1.0, 100), (3.0, 10_000), (19.0, 1)])
def test_sparse_sigma_is_unchanged_where_advanced_composition_certifies(eps, c):
    assert sparse_composed_epsilon(eps, c, 1e-6) <= eps
    assert sparse_sigma(eps, c, 1e-6) == pytest.approx(math.sqrt(32 * c * math.log(1e6)) / eps)
    assert hru_sparse_sigma(1000, 3 * eps, 3e-6, c) == pytest.approx(sparse_sigma(eps, c, 1e-6) / 1000)


def test_thm32_xi_formula():
    assert thm32_xi(0.01, 1e-6, 3) == pytest.approx(75 * 4 * 0.01 / math.log(1e6) + 0.25)


def test_heavy_hitter_threshold_and_tau_are_2b_and_3b():
    hh = T.heavy_hitter_tau(1.0, 1e-6, 2, 100, 50, 0.05)
    cal = calibrate_monitor(0.5, 1e-6 / (1 + math.exp(0.5)), 2)
    big_b = math.log(2 * 100 * 50 / 0.05) * (10 * cal.cap + math.log(1 / cal.delta) / cal.epsilon)
    assert hh.big_b == pytest.approx(big_b)
    assert (hh.threshold, hh.tau) == pytest.approx((2 * big_b, 3 * big_b))


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan")])
def test_calibrate_rejects_nonpositive_epsilon_total(eps):
    with pytest.raises(ValueError, match="epsilon_total must be a finite number > 0"):
        calibrate_monitor(eps, 1e-6, 1)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2.0])
def test_calibrate_rejects_delta_total_outside_open_unit_interval(delta):
    with pytest.raises(ValueError, match=r"delta_total must be in the open interval \(0, 1\)"):
        calibrate_monitor(1.0, delta, 1)


@pytest.mark.parametrize("k", [0, -3, 1.5])
def test_calibrate_rejects_k_below_1(k):
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        calibrate_monitor(1.0, 1e-6, k)


def test_calibrate_rejects_violated_preconditions():
    # eps_tot = 1e4 with delta_tot = 0.5: ln(1/delta)/eps < 2.
    with pytest.raises(ValueError, match="ln\\(1/delta\\)/eps >= 2"):
        calibrate_monitor(1e4, 0.5, 1)


def test_the_monitor_calibration_has_its_own_name_not_the_generic_calibrators():
    """``dpstream.privacy.calibrate`` is the generic search; ThresholdMonitor's closed form is ``calibrate_monitor``."""
    import dpstream.privacy
    import dpstream.privacy.svt
    import dpstream.svt
    from dpstream.privacy.maps import calibrate

    assert dpstream.privacy.calibrate is calibrate and not hasattr(dpstream.privacy.svt, "calibrate")
    assert not hasattr(dpstream.svt, "calibrate")
    assert dpstream.svt.calibrate_monitor is dpstream.privacy.svt.calibrate_monitor
