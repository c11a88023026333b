"""Each factorisation's closed forms against its explicit B and C, and each counter against its factorisation.

B C must be the prefix-sum matrix A; ||row s of B||^2 must be ``row_norms_squared(s)``; the largest column of C times
sqrt(m) (m for the L1 Laplace tree) must be ``sensitivity(m)`` (at most, for the smooth and hybrid trees, whose
calibrations are bounds). Every counter's ``variance`` must be its factorisation's row norms times the variance of one
noise draw, and its calibration sensitivity the factorisation's. Floats: relative 1e-9 (the closed forms and the
matrices sum in other orders); counter against factorisation: the same closed forms, so 1e-12.
"""

import numpy as np
import pytest

from dpstream.counters import COUNTERS, LaplaceTree
from dpstream.counters.factorisation import (
    BLT,
    Dyadic,
    HonakerEstimate,
    Hybrid,
    KaryTree,
    Smooth,
    Toeplitz,
    factorisation_of,
)

HORIZONS = (2, 3, 7, 16, 33, 100)
MAKERS = {
    "binary": Dyadic,
    "honaker": HonakerEstimate,
    "laplace-2": lambda t: KaryTree(t, 2),
    "laplace-19": lambda t: KaryTree(t, 19),
    "smooth": Smooth,
    "hybrid": Hybrid,
    "sqrt": Toeplitz,
    "banded4": lambda t: Toeplitz(t, 4),
    "blt": BLT,
}
BOUNDS = {"smooth", "hybrid"}
"""Factorisations whose sensitivity is a bound on the largest column, not always equal to it."""


@pytest.mark.parametrize("horizon", HORIZONS)
@pytest.mark.parametrize("name", MAKERS)
def test_closed_forms_match_the_matrices(name, horizon):
    f = MAKERS[name](horizon)
    b, c = f.matrices()
    np.testing.assert_allclose(b @ c, np.tril(np.ones((horizon, horizon))), atol=1e-9)
    steps = np.arange(horizon + 1)
    expected = np.concatenate(([0.0], (b**2).sum(axis=1)))
    np.testing.assert_allclose(f.row_norms_squared(steps), expected, rtol=1e-9, atol=1e-12)
    for m in (1, 3):
        largest = f.column_norms().max() * (m if f.norm == 1 else np.sqrt(m))
        assert largest <= f.sensitivity(m) * (1 + 1e-9)
        if name not in BOUNDS:
            assert largest == pytest.approx(f.sensitivity(m), rel=1e-9)


def test_the_hybrid_bound_is_met_once_a_block_closes():
    assert Hybrid(7).column_norms().max() == pytest.approx(1.0, rel=1e-12)
    assert Hybrid(1).column_norms().max() < 1.0


def test_a_wrong_row_norm_is_caught():
    b, _ = Dyadic(16).matrices()
    b[5, np.flatnonzero(b[5])[0]] = 0.0  # drop one node from the release at step 6
    assert not np.allclose((b**2).sum(axis=1), Dyadic(16).row_norms_squared(np.arange(1, 17)))


@pytest.mark.parametrize("horizon", (5, 64))
@pytest.mark.parametrize("cls", list(dict.fromkeys(COUNTERS.values())), ids=lambda c: c.__name__)
def test_counter_variance_and_sensitivity_come_from_its_factorisation(cls, horizon):
    counter = cls(n=2, horizon=horizon, epsilon=1.0, delta=1e-6, m=2, seed=1)
    f = factorisation_of(counter)
    draw_variance = counter._noise_scale**2 * (2.0 if isinstance(counter, LaplaceTree) else 1.0)
    steps = np.arange(horizon + 1)
    np.testing.assert_allclose(counter.variance(steps), f.variance(steps, draw_variance), rtol=1e-12, atol=0)
    if isinstance(counter, LaplaceTree):
        assert counter.l1_sensitivity() == f.sensitivity(2)
    else:
        assert cls.l2_sensitivity(horizon, 2) == pytest.approx(f.sensitivity(2), rel=1e-12)
