"""Each factorisation's closed forms against its explicit B and C, and each counter against its factorisation.

B C must be the prefix-sum matrix A; ||row s of B||^2 must be ``row_norms_squared(s)``; the largest column of C times
sqrt(m) (m for the L1 Laplace tree) must be ``sensitivity(m)`` (at most, for the smooth and hybrid trees and the
no-horizon square root, whose calibrations are bounds). Every counter's ``variance`` must be its factorisation's row
norms times the variance of one noise draw, and its calibration sensitivity the factorisation's. Floats: relative 1e-9
(the closed forms and the matrices sum in other orders); counter against factorisation: the same closed forms, so 1e-12.
"""

import math
from typing import NamedTuple

import numpy as np
import pytest
from numba import njit

from dpstream.counters import COUNTERS, Counter, LaplaceTree
from dpstream.counters.factorisation import (
    BLT,
    Dyadic,
    HonakerEstimate,
    Hybrid,
    KaryTree,
    NormalisedRoot,
    Smooth,
    Toeplitz,
    Unbounded,
    factorisation_of,
)
from dpstream.counters.kernels import EXTERNAL
from dpstream.sketches import LazyCMS

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
    "unbounded": Unbounded,
    "nsqrt": NormalisedRoot,
}
BOUNDS = {"smooth", "hybrid", "unbounded"}
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
@pytest.mark.parametrize("cls", list(COUNTERS.values()), ids=lambda d: d.label)
def test_counter_variance_and_sensitivity_come_from_its_factorisation(cls, horizon):
    counter = cls(n=2, horizon=horizon, epsilon=1.0, delta=1e-6, m=2, seed=1)
    f = factorisation_of(counter)
    draw_variance = counter._noise_scale**2 * (2.0 if isinstance(counter, LaplaceTree) else 1.0)
    if counter.node_noise == "discrete_secure_stored" and isinstance(counter, LaplaceTree):  # just below 2 b^2
        draw_variance = counter.draw_variance  # its closed form: test_laplace_exact
    steps = np.arange(horizon + 1)
    np.testing.assert_allclose(counter.variance(steps), f.variance(steps, draw_variance), rtol=1e-12, atol=0)
    if isinstance(counter, LaplaceTree):
        assert counter.l1_sensitivity() == f.sensitivity(2)
    else:
        assert cls.l2_sensitivity(horizon, 2) == pytest.approx(f.sensitivity(2), rel=1e-12)


class _OldState(NamedTuple):
    exact: np.ndarray
    noisy: np.ndarray


@njit(inline="always")
def _old_push(state, cell, step, c, noise, z):
    """Input perturbation: each step adds its increment and one fresh noise to a running noisy total."""
    state[0][0, cell] += c
    state[1][0, cell] += noise[z]
    return z + 1


class OldStyle(Counter):
    """A counter written outside the package in the style before factorisations: its own push and variance."""

    name = "old_style"
    node_noise = "stored"
    kind = EXTERNAL
    push_kernel = _old_push
    tracks_steps = False
    draws_per_push = 1

    @classmethod
    def l2_sensitivity(cls, horizon, m):
        return math.sqrt(m)

    @classmethod
    def bytes_per_counter(cls, horizon, count_bytes):
        return count_bytes + 8

    def _allocate(self):
        self.state = _OldState(np.zeros((1, self.n), dtype=self.count_dtype), np.zeros((1, self.n)))

    def noise_count(self, steps):
        return int(np.size(steps))

    def release(self, cells, steps):
        return self.state.exact[0, cells] + self.state.noisy[0, cells]

    def protected(self, increments, steps):
        return increments.reshape(1, -1)

    def variance(self, steps):
        return np.asarray(steps) * self._noise_scale**2


class NoVariance(OldStyle):
    variance = Counter.variance


def test_an_old_style_counter_still_works_in_a_sketch():
    counter = OldStyle(n=2, horizon=50, epsilon=1.0, delta=1e-6, seed=1)
    np.testing.assert_array_equal(counter.variance(np.arange(3)), np.arange(3) * counter.sigma**2)
    sketch = LazyCMS(width=8, depth=2, epsilon=1.0, delta=1e-6, horizon=400, seed=2, counter=f"{__name__}:OldStyle")
    stream = np.random.default_rng(3).integers(0, 20, 400)
    sketch.extend(stream)
    assert np.all(np.isfinite(sketch.query_many(np.arange(20))))
    assert np.all(sketch.variance_many(np.arange(20)) > 0)
    with pytest.raises(NotImplementedError, match="override variance or factorisation"):
        NoVariance(n=2, horizon=50, epsilon=1.0, delta=1e-6, seed=1).variance(3)
