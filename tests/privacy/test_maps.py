"""Privacy maps and the one calibrator: every closed-form calibration against the search, every map against its target.

``dpstream.privacy.calibrate`` bisects in log scale to a relative 1e-13; a closed form that inverts a map exactly
(in floating point, or by a root finder at relative 1e-12) must agree with it to ``RTOL`` = 1e-9. The discrete
Gaussian's sigma^2 is rounded up to its sampler's grid, so it lies at most two grid steps above the search. Closed
forms that are bounds rather than inverses (Hsu, Roth, Ullman's Laplace scale) must meet the target, not equal the
search. The maps are cross-checked against dp-accounting's privacy loss distributions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpstream.counters.gauss_bm import GaussBM
from dpstream.privacy import (
    NOT_CERTIFIED,
    ComposedMap,
    DiscreteGaussianMap,
    GaussianMap,
    LaplaceMap,
    MonitorMap,
    Relation,
    SparseMap,
    calibrate,
)
from dpstream.privacy.accounting import sparse_sigma
from dpstream.privacy.calibration import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gauss_bm_levels,
    gauss_bm_sigma,
    laplace_scale,
)
from dpstream.privacy.discrete_gaussian import discrete_gaussian_sigma2, grid_denominator
from dpstream.privacy.maps import stated
from dpstream.privacy.query_release import hru_laplace_scale, ic_step_epsilon, laplace_answer_scale
from dpstream.privacy.svt import CONTINUOUS, DISCRETE_SECURE, option_b_epochs, option_parameters
from dpstream.sketches import LazyCMS
from dpstream.svt import NumericSparse, Sparse, ThresholdMonitor

RTOL = 1e-9
BUDGETS = [(0.1, 1e-6), (1.0, 1e-3), (4.0, 1e-9)]


@pytest.mark.parametrize("calibration", ["classic", "analytic"])
@pytest.mark.parametrize(("epsilon", "delta"), BUDGETS)
def test_gaussian_closed_forms_equal_the_search(calibration, epsilon, delta):
    closed = {"classic": classic_gaussian_sigma, "analytic": analytic_gaussian_sigma}[calibration]
    for sensitivity in (1.0, math.sqrt(12.0)):
        searched = calibrate(lambda s, d=sensitivity: GaussianMap(d, s, calibration), epsilon, delta)
        assert closed(sensitivity, epsilon, delta) == pytest.approx(searched, rel=RTOL)
    levels, m = gauss_bm_levels(1000), 6  # the binary tree: L2 sensitivity sqrt(h m)
    searched = calibrate(lambda s: GaussianMap(math.sqrt(levels * m), s, calibration), epsilon, delta)
    assert gauss_bm_sigma(1000, epsilon, delta, m, calibration) == pytest.approx(searched, rel=RTOL)


@pytest.mark.parametrize(("epsilon", "delta"), BUDGETS)
def test_laplace_and_composition_closed_forms_equal_the_search(epsilon, delta):
    assert laplace_scale(3.0, epsilon) == pytest.approx(calibrate(lambda b: LaplaceMap(3.0, b), epsilon, 0.0), rel=RTOL)
    n, k = 500, 40  # k Laplace answers of 1/n-sensitive queries, composed (basic or advanced, whichever is smaller)
    searched = calibrate(lambda b: ComposedMap(LaplaceMap(1.0 / n, b), k), epsilon, delta)
    assert laplace_answer_scale(n, epsilon, delta, k) == pytest.approx(searched, rel=RTOL)
    rounds = 25  # the iterative construction: 2 rounds steps of eps0, the answer noise 1/(n eps0)
    searched = calibrate(lambda b: ComposedMap(LaplaceMap(1.0 / n, b), 2 * rounds), epsilon, delta)
    assert 1.0 / (n * ic_step_epsilon(epsilon, delta, rounds)) == pytest.approx(searched, rel=RTOL)


@pytest.mark.parametrize(("epsilon", "c", "delta"), [(1.0, 1, 0.0), (0.5, 7, 0.0), (1.0, 50, 1e-6), (3.0, 200, 1e-9)])
def test_sparse_closed_form_equals_the_search(epsilon, c, delta):
    searched = calibrate(lambda s: SparseMap(s, c), epsilon, delta)
    assert sparse_sigma(epsilon, c, delta) == pytest.approx(searched, rel=RTOL)


def test_sparse_map_says_not_certified_where_advanced_composition_fails():
    """Epsilon 60 at c = 1, delta = 1e-6 composes above 60 (``sparse_advanced_certified``): no statement."""
    sigma = math.sqrt(32.0 * math.log(1e6)) / 60.0
    assert SparseMap(sigma, 1).epsilon(1e-6) == NOT_CERTIFIED
    assert SparseMap(sigma, 1).statement(1e-6, Relation.ADD_REMOVE_RECORD) is None
    assert SparseMap(sigma, 1).epsilon(0.0) == pytest.approx(2.0 / sigma)  # the pure theorem still applies


@pytest.mark.parametrize("svt_noise", [CONTINUOUS, DISCRETE_SECURE])
@pytest.mark.parametrize(("epsilon", "delta", "k"), [(1.0, 1e-6, 3), (2.0, 1e-9, 400)])
def test_monitor_options_equal_the_search(svt_noise, epsilon, delta, k):
    """Alg. 3's noise epsilon under option A (Thm 3.2) and B (Thm 3.8) against a search over the scale 1/eps."""
    options = option_parameters(epsilon, delta, k, svt_noise)
    for option, (eps_noise, delta_noise) in options.items():
        delta_hat = delta / 2.0 if option == "B" else 0.0
        if option == "B":
            assert delta_noise == delta / (6.0 * option_b_epochs(delta, k))

        def monitor(scale, o=option, d=delta_noise, h=delta_hat):
            return MonitorMap(1.0 / scale, d, k, o, svt_noise, h)

        delta_total = monitor(1.0).guarantee()[1]  # does not depend on the noise epsilon
        assert delta_total == pytest.approx(delta, rel=1e-12)
        searched = calibrate(monitor, epsilon, delta_total)
        assert eps_noise == pytest.approx(1.0 / searched, rel=RTOL)


@pytest.mark.parametrize(("squared_sensitivity", "epsilon", "delta"), [(12, 1.0, 1e-6), (60, 0.5, 1e-3)])
def test_discrete_gaussian_closed_form_is_the_search_rounded_up_to_its_grid(squared_sensitivity, epsilon, delta):
    closed = discrete_gaussian_sigma2(squared_sensitivity, epsilon, delta)
    searched = calibrate(lambda s: DiscreteGaussianMap(squared_sensitivity, Fraction(s * s)), epsilon, delta,
                         start=math.sqrt(float(closed))) ** 2
    step = 1.0 / grid_denominator(float(closed))
    assert searched <= float(closed) <= searched + 2.0 * step
    assert DiscreteGaussianMap(squared_sensitivity, closed).check(epsilon, delta)


def test_hru_laplace_scale_is_a_bound_that_meets_its_target():
    """3 sqrt(8 s ln(3/delta)) / (eps n) is looser than the composition it stands for: it meets (eps/3, delta/3)."""
    n, epsilon, delta, s = 2000, 1.0, 1e-6, 48.0
    scale = hru_laplace_scale(n, epsilon, delta, s)
    answers = ComposedMap(LaplaceMap(1.0 / n, scale), int(s))
    assert answers.check(epsilon / 3, delta / 3)
    assert calibrate(lambda b: ComposedMap(LaplaceMap(1.0 / n, b), int(s)), epsilon / 3, delta / 3) <= scale


def test_stated_epsilon_has_twelve_digits_and_never_understates():
    assert stated(0.9999999999999999) == 1.0 and stated(1.0000000000000002) == 1.0  # float noise of a round trip
    assert stated(0.49999999999765116) == 0.499999999998
    assert stated(1.0000000000003) == 1.00000000001  # above by more than rounding: the next 12-digit number up
    rng = np.random.default_rng(5)
    for value in rng.uniform(1e-3, 50.0, 200):
        assert stated(value) >= value - 4.0 * math.ulp(value) and stated(value) == pytest.approx(value, rel=1e-11)


@pytest.mark.parametrize(("build", "epsilon", "delta"), [
    (lambda: GaussBM(n=4, horizon=500, epsilon=0.7, delta=1e-5, m=3, seed=1), 0.7, 1e-5),
    (lambda: GaussBM(n=4, horizon=500, epsilon=0.7, delta=1e-5, m=3, seed=1, calibration="analytic"), 0.7, 1e-5),
    (lambda: LazyCMS(width=8, depth=3, epsilon=2.0, delta=1e-4, horizon=300, seed=2), 2.0, 1e-4),
    (lambda: LazyCMS(width=8, depth=3, epsilon=2.0, delta=1e-4, horizon=300, seed=2, counter="laplace"), 2.0, 0.0),
    (lambda: LazyCMS(width=8, depth=3, epsilon=2.0, delta=1e-4, horizon=300, seed=2, node_noise="discrete_secure"),
     2.0, 1e-4),
    (lambda: Sparse(epsilon=1.5, threshold=3.0, c=4, seed=3), 1.5, 0.0),
    (lambda: Sparse(epsilon=1.5, threshold=3.0, c=40, delta=1e-6, seed=3), 1.5, 1e-6),
    (lambda: NumericSparse(epsilon=1.5, threshold=3.0, c=4, delta=1e-6, seed=3), 1.5, 1e-6),
    (lambda: ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=20.0, k=3, seed=4), 1.0, 1e-6),
])
def test_each_mechanism_states_the_map_of_its_noise_at_its_budget(build, epsilon, delta):
    """The statement comes from the noise held: it meets the budget it was built for, within 1e-6 below it."""
    statement = build().privacy
    assert statement is not None
    assert epsilon * (1 - 1e-6) <= statement.epsilon <= epsilon and statement.delta == pytest.approx(delta, rel=1e-12)


def test_statement_follows_the_noise_held_not_the_epsilon_given():
    """A counter whose held noise is doubled states half the epsilon: the map reads the noise, not the argument."""
    bm = GaussBM(n=2, horizon=64, epsilon=1.0, delta=1e-6, seed=0)
    bm.counter._noise_scale *= 2.0
    assert bm.privacy is not None and bm.privacy.epsilon == pytest.approx(0.5, rel=1e-12)
    scaled = Sparse(epsilon=1.0, threshold=3.0, c=2, seed=0, kappa=0.5)
    assert scaled.privacy is None and not scaled.certified  # kappa < 1: no statement (the labels rule)


# ---- dp-accounting (privacy loss distributions) -------------------------------------------------------------------

INTERVAL = 1e-4
"""dp-accounting's value discretisation: its epsilons are pessimistic by at most a few of these."""


def _pld():
    return pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")


@pytest.mark.parametrize(("sigma", "delta"), [(3.0, 1e-5), (0.8, 1e-3), (12.0, 1e-9)])
def test_analytic_gaussian_map_equals_dp_accounting(sigma, delta):
    pld = _pld().from_gaussian_mechanism(standard_deviation=sigma, sensitivity=1.0,
                                         value_discretization_interval=INTERVAL)
    assert GaussianMap(1.0, sigma, "analytic").epsilon(delta) == pytest.approx(
        pld.get_epsilon_for_delta(delta), abs=10 * INTERVAL)


@pytest.mark.parametrize(("sigma2", "squared_sensitivity"), [(100, 1), (400, 4), (2500, 9)])
def test_discrete_gaussian_map_bounds_dp_accounting(sigma2, squared_sensitivity):
    """Our bound is an upper bound on the exact one-dimensional epsilon, and within the smoothing cost of it.

    The smoothing bound pays for sigma_0^2 = sigma^2 - s^2 with s^2 <= 4: epsilon grows by at most
    sqrt(sigma^2 / (sigma^2 - 4)) (plus dp-accounting's discretisation).
    """
    delta = 1e-6
    exact = _pld().from_discrete_gaussian_mechanism(
        sigma=math.sqrt(sigma2), sensitivity=math.isqrt(squared_sensitivity), value_discretization_interval=INTERVAL,
    ).get_epsilon_for_delta(delta)
    ours = DiscreteGaussianMap(squared_sensitivity, Fraction(sigma2)).epsilon(delta)
    assert exact - 10 * INTERVAL <= ours <= exact * math.sqrt(sigma2 / (sigma2 - 4.0)) + 10 * INTERVAL


def test_laplace_maps_bound_dp_accounting():
    """One Laplace release: epsilon Delta/b exactly; k of them: our composition is an upper bound on the PLD's."""
    pld = _pld().from_laplace_mechanism(parameter=20.0, sensitivity=1.0, value_discretization_interval=INTERVAL)
    assert LaplaceMap(1.0, 20.0).epsilon(0.0) == pytest.approx(pld.get_epsilon_for_delta(1e-300), abs=10 * INTERVAL)
    composed = pld.self_compose(50).get_epsilon_for_delta(1e-6)
    assert composed - 10 * INTERVAL <= ComposedMap(LaplaceMap(1.0, 20.0), 50).epsilon(1e-6)


# ---- where a theorem stops: the classic Gaussian beyond epsilon 1, delta at 0 or 1 ---------------------------------

def test_classic_gaussian_states_the_exact_epsilon_where_thm_a1_does_not_hold():
    """At epsilon 10 the classic sigma is (10, 3.36e-3)-DP exactly, not (10, 1e-3): the map states the exact epsilon.

    The noise is the classic one still (the calibration is unchanged); below epsilon 1 the statement is the classic one.
    """
    sketch = LazyCMS(width=55, depth=3, epsilon=10.0, delta=1e-3, horizon=2**16, seed=0)
    statement = sketch.privacy
    assert statement is not None and statement.delta == 1e-3 and statement.epsilon > 10.0
    sigma = classic_gaussian_sigma(1.0, 10.0, 1e-3)
    assert analytic_gaussian_delta(10.0, 1.0, sigma) == pytest.approx(3.36e-3, rel=1e-2)
    stated_epsilon = GaussianMap(1.0, sigma, "classic").epsilon(1e-3)
    assert stated_epsilon == pytest.approx(GaussianMap(1.0, sigma, "analytic").epsilon(1e-3), rel=1e-12)
    assert analytic_gaussian_delta(stated_epsilon, 1.0, sigma) <= 1e-3
    assert not GaussianMap(1.0, sigma, "classic").check(10.0, 1e-3)
    small = classic_gaussian_sigma(1.0, 0.5, 1e-5)  # inside the theorem's range: the classic closed form
    assert GaussianMap(1.0, small, "classic").epsilon(1e-5) == 1.0 * math.sqrt(2.0 * math.log(1.25 / 1e-5)) / small


@pytest.mark.parametrize("privacy_map", [GaussianMap(1.0, 3.0, "classic"), GaussianMap(1.0, 3.0, "analytic"),
                                         DiscreteGaussianMap(1, Fraction(9))])
def test_gaussian_maps_certify_nothing_at_delta_zero(privacy_map):
    assert privacy_map.epsilon(0.0) == NOT_CERTIFIED and not privacy_map.check(1e6, 0.0)
    assert privacy_map.statement(0.0, Relation.ADD_REMOVE_RECORD) is None
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        privacy_map.epsilon(1.0)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        privacy_map.check(1.0, -1e-9)


def test_calibrate_refuses_gaussian_noise_at_delta_zero_and_bad_targets():
    with pytest.raises(ValueError, match="delta must be > 0 for this noise"):
        calibrate(lambda s: GaussianMap(1.0, s, "analytic"), 1.0, 0.0)
    with pytest.raises(ValueError, match="delta must be > 0 for this noise"):
        calibrate(lambda s: GaussianMap(1.0, s, "classic"), 1.0, 0.0)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        calibrate(lambda s: GaussianMap(1.0, s, "analytic"), 1.0, 1.5)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        calibrate(lambda b: LaplaceMap(1.0, b), 0.0, 0.0)


def test_maps_at_delta_one_raise_a_clear_error():
    for privacy_map in (SparseMap(1.0, 1), LaplaceMap(1.0, 2.0), ComposedMap(LaplaceMap(1.0, 2.0), 3)):
        with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
            privacy_map.epsilon(1.0)
    with pytest.raises(ValueError, match="epsilon must be a finite number >= 0"):
        GaussianMap(1.0, 3.0, "analytic").check(-1.0, 1e-6)
