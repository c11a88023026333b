"""The smooth binary mechanism (``counters.smooth``): its leaves, exact sums, factorisation and noise.

The noise test compares the releases' covariance across steps 1..16 with the factorisation's (sigma^2 times the
number of nodes two release leaves share), entry by entry, for every node noise: halving a noise scale moves the
diagonal to a quarter, hundreds of standard errors away.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_discrete_stored import releases

from dpstream.counters import SmoothBinary, counter_class
from dpstream.counters._smooth_kernels import binomials, push_draws, release_leaves
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.smooth import smooth_shape, used_nodes
from dpstream.sketches import LazyCMS, LazyCS, PunctualCMS

NOISES = ("stored", "derived", "discrete_secure")
HORIZON = 16
Z_SE = 5.5
"""Standard errors allowed per covariance entry: two-sided 4e-8 each, under 1e-5 over the 136 entries (union)."""


def test_shape_minimises_the_product_with_enough_leaves():
    for horizon in (1, 2, 7, 16, 100, 1000, 2**20):
        h, k = smooth_shape(horizon)
        assert math.comb(h, k) >= horizon + 1
        best = min(j * (g - j) for g in range(1, 40) for j in range(1, g) if math.comb(g, j) >= horizon + 1)
        assert k * (h - k) == best
    assert smooth_shape(2**20) == (23, 10)


@pytest.mark.parametrize("horizon", [1, 5, 16, 300])
def test_release_leaves_are_the_k_bit_integers_in_order(horizon):
    h, k = smooth_shape(horizon)
    leaves = release_leaves(np.arange(horizon + 1, dtype=np.int64), np.int64(h), np.int64(k), binomials(h))
    brute = [x for x in range(1 << h) if x.bit_count() == k][1:horizon + 1]
    assert leaves[0] == 0 and leaves[1:].tolist() == brute


def test_stored_draws_count_the_new_nodes():
    horizon = 300
    h, k = smooth_shape(horizon)
    _, _, first = used_nodes(horizon)
    steps = np.arange(1, horizon + 1, dtype=np.int64)
    # every node is drawn once, at the first step that uses it
    assert push_draws(steps, np.int64(h), np.int64(k), binomials(h)) == first.size
    per_step = [push_draws(steps[s - 1:s], np.int64(h), np.int64(k), binomials(h)) for s in steps]
    assert per_step == np.bincount(first, minlength=horizon + 1)[1:].tolist()


@pytest.mark.parametrize("node_noise", NOISES)
def test_noiseless_releases_are_the_exact_prefix_sums(node_noise):
    increments = np.random.default_rng(1).integers(-2, 4, (40, 3))
    bm = GaussBM._uncertified_noiseless(n=3, horizon=40, epsilon=1.0, delta=1e-3, seed=2, counter="smooth",
                                       node_noise=node_noise)
    for s in range(40):
        bm.update_all(increments[s])
        np.testing.assert_array_equal(bm.query_all(), increments[: s + 1].sum(axis=0))


def shared_nodes(horizon: int) -> np.ndarray:
    """(horizon, horizon): how many nodes the releases at steps s and s' (1..horizon) both sum."""
    h, k = smooth_shape(horizon)
    leaves = release_leaves(np.arange(1, horizon + 1, dtype=np.int64), np.int64(h), np.int64(k), binomials(h))
    nodes = [{(level, int(t) >> level) for level in range(h) if (int(t) >> level) & 1} for t in leaves]
    return np.array([[len(a & b) for b in nodes] for a in nodes], dtype=np.float64)


@pytest.mark.parametrize(("node_noise", "n"), [("stored", 40_000), ("derived", 40_000), ("discrete_secure", 20_000)])
def test_release_covariance_across_steps_is_the_factorisations(node_noise, n):
    x, counter = releases("smooth", n, 3, node_noise, HORIZON)
    expected = counter._noise_scale**2 * shared_nodes(HORIZON)  # discrete: sigma^2 - its variance < 1e-200 relative
    np.testing.assert_allclose(np.diag(expected), counter.variance(np.arange(1, HORIZON + 1)), rtol=1e-12)
    measured = x @ x.T / n  # zero mean known: second moments
    se = np.sqrt((np.outer(np.diag(expected), np.diag(expected)) + expected**2) / n)  # Var(X_i X_j), Gaussian
    worst = np.max(np.abs(measured - expected) / se)
    assert worst < Z_SE, f"{node_noise}: a covariance entry is {worst:.1f} standard errors from the formula"
    if node_noise == "discrete_secure":
        assert np.array_equal(x, np.round(x))


def test_every_release_has_k_nodes_and_the_calibration_takes_h_minus_k():
    horizon = 1000
    h, k = smooth_shape(horizon)
    stored = SmoothBinary(n=1, horizon=horizon, epsilon=1.0, delta=1e-3, m=3)
    binary = counter_class("binary", "stored")(n=1, horizon=horizon, epsilon=1.0, delta=1e-3, m=3)
    assert stored.sigma / binary.sigma == pytest.approx(math.sqrt((h - k) / binary.levels))
    np.testing.assert_allclose(stored.variance(np.arange(1, horizon + 1)), k * stored.sigma**2)
    assert stored.variance(0) == 0
    secure = SmoothBinary(n=1, horizon=horizon, epsilon=1.0, delta=1e-3, m=3, node_noise="discrete_secure")
    assert secure.squared_sensitivity == (h - k) * 3 and secure.levels == h
    derived = SmoothBinary(n=1, horizon=horizon, epsilon=1.0, delta=1e-3, node_noise="derived")
    assert secure.deployable and derived.notion == "computational" and stored.notion == "approximate"


def test_released_noise_is_the_trees_at_the_release_leaf():
    # the derived smooth counter releases the binary tree's Philox node noises at tree step t_s: same key, same nodes
    smooth = SmoothBinary(n=4, horizon=50, epsilon=1.0, delta=1e-3, seed=9, node_noise="derived")
    tree = counter_class("binary", "derived")(n=4, horizon=2**smooth.levels - 1, epsilon=1.0, delta=1e-3, seed=9)
    tree._noise_scale = smooth._noise_scale
    steps = np.array([1, 7, 33, 50])
    np.testing.assert_array_equal(smooth.release(np.arange(4), steps), tree.release(np.arange(4),
                                                                                     smooth.leaves(steps)))
    with pytest.raises(ValueError, match="horizon=50"):
        smooth.release(np.arange(1), np.array([51]))


@pytest.mark.parametrize("cls", [LazyCMS, LazyCS, PunctualCMS])
@pytest.mark.parametrize("node_noise", NOISES)
def test_sketches_take_the_smooth_counter(cls, node_noise):
    stream = np.random.default_rng(5).integers(0, 20, 400)
    kw = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 400, "seed": 4}
    sketch = cls(**kw, counter="smooth", node_noise=node_noise)
    exact = cls._uncertified_noiseless(**kw, counter="smooth", node_noise=node_noise) if hasattr(
        cls, "_uncertified_noiseless") else None
    sketch.extend(stream)
    keys = np.arange(20)
    estimates = sketch.query_many(keys)
    assert np.all(np.isfinite(estimates))
    cells = sketch._state.counters
    assert isinstance(cells, SmoothBinary) and cells.node_noise == node_noise
    assert cells.variance(np.array([1]))[0] == smooth_shape(cells.horizon)[1] * cells._noise_scale**2
    if exact is not None:
        exact.extend(stream)
        tree = cls._uncertified_noiseless(**kw)  # the same hashes: the same exact cell counts
        tree.extend(stream)
        np.testing.assert_array_equal(exact.query_many(keys), tree.query_many(keys))
