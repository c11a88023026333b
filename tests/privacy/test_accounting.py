"""The accounting module (``dpstream.privacy.accounting``): composition, its inversion, Sparse's scale and choice."""

import math

import pytest

from dpstream.privacy.accounting import (
    advanced_composition,
    advanced_per_step_epsilon,
    best_sparse_sigma,
    composed_epsilon,
    per_step_epsilon,
    sparse_advanced_certified,
    sparse_prefers_pure,
    sparse_sigma,
)
from dpstream.privacy.query_release import hru_sparse_sigma
from dpstream.svt import theory as T


@pytest.mark.parametrize(("eps0", "k", "dp"), [(0.01, 5000, 1e-6), (0.3, 40, 1e-9), (0.9, 3, 1e-3)])
def test_composed_epsilon_is_the_smaller_of_basic_and_drv(eps0, k, dp):
    drv = eps0 * math.sqrt(2 * k * math.log(1 / dp)) + k * eps0 * math.expm1(eps0)  # written out independently
    assert composed_epsilon(eps0, k, dp) == min(k * eps0, drv)  # bit for bit: the committed rows depend on it
    assert composed_epsilon(eps0, k, 0.0) == k * eps0


@pytest.mark.parametrize(("eps", "delta", "k"), [(1.0, 1e-6, 1000), (0.5, 5e-7, 294), (3.0, 1e-6, 5000)])
def test_both_inversions_solve_the_same_equation(eps, delta, k):
    a, b = per_step_epsilon(eps, delta, k), advanced_per_step_epsilon(eps, delta, k)
    assert a > eps / k  # advanced composition beats basic at these k
    assert advanced_composition(a, k, delta) == pytest.approx(eps, rel=1e-10)
    assert b == pytest.approx(a, rel=1e-10)  # same root, other bracket (see the docstring)


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
@pytest.mark.parametrize("c", [1, 5, 50, 110, 111, 500, 5000])
def test_sparse_choice_orders_like_the_accuracy_bounds(c, delta):
    eps, m, beta = 1.0, 10_000, 0.05
    if not sparse_advanced_certified(eps, c, delta):
        assert sparse_prefers_pure(eps, c, delta)  # an uncertified approximate scale is never chosen
        return
    by_alpha = T.alpha_sparse_pure(eps, c, m, beta) <= T.alpha_sparse_approx(eps, delta, c, m, beta)
    assert sparse_prefers_pure(eps, c, delta) == by_alpha
    assert best_sparse_sigma(eps, c, delta) == min(sparse_sigma(eps, c), sparse_sigma(eps, c, delta))


def test_sparse_choice_flips_at_c_equal_8_ln_inverse_delta():
    delta = 1e-6  # 8 ln(1e6) = 110.5
    assert sparse_prefers_pure(1.0, 110, delta) and not sparse_prefers_pure(1.0, 111, delta)


@pytest.mark.parametrize(("eps", "s"), [(1.0, 24.0), (30.0, 480.0), (135.0, 2.0), (2.0, 7.5)])
@pytest.mark.parametrize("delta", [1e-6, 1e-3])
def test_hru_clean_up_sigma_is_sparse_sigma_over_n(eps, s, delta):
    n = 640
    if sparse_advanced_certified(eps / 3, s, delta / 3):  # the pre-refactor expressions, bit for bit
        expected = math.sqrt(32 * s * math.log(3 / delta)) / (eps / 3) / n
    else:
        expected = 2 * s / (eps / 3) / n
    assert hru_sparse_sigma(n, eps, delta, s) == expected


@pytest.mark.parametrize("c", [0, 0.5, -2, math.inf, True])
def test_sparse_sigma_rejects_a_bad_cutoff(c):
    with pytest.raises(ValueError, match="c must be"):
        sparse_sigma(1.0, c)


def test_composition_of_statements_adds_budgets_and_checks_the_relation():
    from dpstream.privacy import AnalystRelation, Privacy, Relation, compose, compose_advanced

    item = Privacy(0.5, 1e-6, Relation.REPLACE_ONE_ITEM)
    both = compose(item, Privacy(0.25, 0.0, Relation.REPLACE_ONE_ITEM))
    assert (both.epsilon, both.delta, both.notion) == (0.75, 1e-6, "approximate")
    pure = Privacy(0.5, 0.0, Relation.REPLACE_ONE_ITEM)
    assert compose(pure, pure).notion == "pure"
    with pytest.raises(ValueError, match="different neighbouring relations: REPLACE_ONE_ITEM, REPLACE_ONE_USER"):
        compose(item, Privacy(0.5, 1e-6, Relation.REPLACE_ONE_USER))
    step = Privacy(0.01, 0.0, Relation.REPLACE_ONE_RECORD)
    many = compose_advanced(step, 1000, 1e-6)
    assert many.epsilon == composed_epsilon(0.01, 1000, 1e-6) and many.delta == 1e-6  # below basic 1000 * 0.01
    assert many.epsilon < 10.0
    with pytest.raises(ValueError, match="relation must be a dpstream.privacy.Relation"):
        Privacy(0.5, 0.0, "replace one item")
    with pytest.raises(ValueError, match="eps_analyst needs analysts"):
        Privacy(0.5, 0.0, Relation.REPLACE_ONE_RECORD, eps_analyst=1.0)
    game = Privacy(0.5, 0.0, Relation.REPLACE_ONE_RECORD, eps_analyst=1.0, analysts=AnalystRelation.ONE_QUERY_TO_MANY)
    assert compose(game, game).eps_analyst == 2.0
