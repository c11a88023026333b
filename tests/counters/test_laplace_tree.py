"""The k-ary Laplace tree (``counters.laplace_tree``): exact sums, pure-DP calibration and the noise it adds.

The noise test compares the release variance at every step 1..80 of 20 000 counters with 2 b^2 times the base-k digit
sum, each step within 5.5 standard errors of the sample variance (the Laplace sum's own fourth moment, not the
Gaussian's), so halving b (a quarter of the variance) fails by hundreds of standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpstream.counters import LaplaceTree
from dpstream.counters._kary_kernels import kary_levels
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.laplace_tree import kary_digit_sum
from dpstream.sketches import LazyCMS, PunctualCMS

Z_SE = 5.5


@pytest.mark.parametrize("arity", [2, 3, 19])
def test_noiseless_releases_are_the_exact_prefix_sums(arity):
    increments = np.random.default_rng(arity).integers(-2, 4, (3, 400))
    counter = LaplaceTree(n=3, horizon=400, epsilon=1.0, delta=1e-3, arity=arity, kappa=0.0)
    for s in range(1, 401):
        counter.push(np.arange(3), np.full(3, s, dtype=np.int64), increments[:, s - 1])
        np.testing.assert_array_equal(counter.release_all(np.full(3, s)), increments[:, :s].sum(axis=1))


def test_levels_digits_and_the_pure_calibration():
    assert [kary_levels(t, 19) for t in (1, 18, 19, 360, 361, 2**20)] == [1, 1, 2, 2, 3, 5]
    assert kary_digit_sum(np.array([0, 1, 18, 19, 20, 361]), 19).tolist() == [0, 1, 18, 1, 2, 1]
    counter = LaplaceTree(n=2, horizon=2**20, epsilon=0.5, delta=1e-3, m=3)
    assert counter.scale == 5 * 3 / 0.5 and counter.privacy_delta == 0.0 and counter.notion == "pure"
    bm = GaussBM(n=2, horizon=100, epsilon=0.5, delta=1e-3, counter="laplace")
    assert bm.privacy.delta == 0.0 and bm.privacy.notion == "pure"


@pytest.mark.parametrize("arity", [3, 19])
def test_release_variance_is_two_b_squared_times_the_digit_sum(arity):
    n, horizon = 20_000, 80
    counter = LaplaceTree(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=arity, arity=arity)
    cells = np.arange(n)
    measured = np.empty(horizon)
    for s in range(1, horizon + 1):
        counter.push(cells, np.full(n, s, dtype=np.int64), np.zeros(n, dtype=np.int64))
        measured[s - 1] = np.mean(counter.release_all(np.full(n, s)) ** 2)  # zero mean known
    steps = np.arange(1, horizon + 1)
    d, v = kary_digit_sum(steps, arity), 2.0 * counter.scale**2
    expected = d * v
    np.testing.assert_allclose(counter.variance(steps), expected)
    # a sum of d Laplace(b): fourth moment 6 d v^2 + 3 d (d - 1) v^2, so Var(X^2) = 2 d^2 v^2 + 3 d v^2
    se = np.sqrt((2 * d**2 + 3 * d) * v**2 / n)
    worst = np.max(np.abs(measured - expected) / se)
    assert worst < Z_SE, f"a step's variance is {worst:.1f} standard errors from 2 b^2 digit sum"


@pytest.mark.parametrize("cls", [LazyCMS, PunctualCMS])
def test_sketches_take_the_laplace_tree_and_state_pure_dp(cls):
    stream = np.random.default_rng(5).integers(0, 20, 400)
    kw = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 400, "seed": 4}
    sketch = cls(**kw, counter="laplace")
    sketch.extend(stream)
    assert np.all(np.isfinite(sketch.query_many(np.arange(20))))
    assert sketch.privacy.delta == 0.0 and sketch.privacy.notion == "pure"
    exact, tree = cls._uncertified_noiseless(**kw, counter="laplace"), cls._uncertified_noiseless(**kw)
    exact.extend(stream)
    tree.extend(stream)
    np.testing.assert_array_equal(exact.query_many(np.arange(20)), tree.query_many(np.arange(20)))
