"""The hybrid mechanism (``counters.hybrid``): no horizon in its noise, exact sums, and the variance it adds.

The noise test compares the release variance of 40 000 counters at 24 steps (block boundaries and inside blocks) with
sigma^2 ``hybrid_variance``, each within 5.5 standard errors of a Gaussian sample variance (sqrt(2 / n) relative), so
halving a noise scale fails by hundreds of standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstream.counters import HybridDerived
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.hybrid import hybrid_variance
from dpstream.privacy.calibration import gaussian_sigma
from dpstream.sketches import LazyCMS, PunctualCMS

Z_SE = 5.5
STEPS = np.array([1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 100, 127, 128, 255, 256, 300, 511, 512])


def test_variance_formula_counts_block_sums_and_tree_nodes():
    # step 12: block 3 (steps 8..15) complete blocks 0, 1, 2 and u = 5 (two nodes of a 4-level tree)
    assert hybrid_variance(12) == pytest.approx(2 * (3 + 4 * 2))
    assert hybrid_variance(np.array([0, 1, 2, 3])).tolist() == [0.0, 2.0, 2 * (1 + 2), 2 * (1 + 2)]  # u = 1, 2
    assert hybrid_variance(2**52) == pytest.approx(2 * (52 + 53))


def test_the_noise_does_not_depend_on_the_horizon():
    small = HybridDerived(n=3, horizon=600, epsilon=1.0, delta=1e-3, m=2, seed=8)
    large = HybridDerived(n=3, horizon=2**40, epsilon=1.0, delta=1e-3, m=2, seed=8)
    assert small.sigma == large.sigma == gaussian_sigma(math.sqrt(2), 1.0, 1e-3)
    steps = np.array([1, 77, 600])
    np.testing.assert_array_equal(small.release(np.arange(3), steps), large.release(np.arange(3), steps))
    assert large.memory_bytes == small.memory_bytes == 3 * 8 + 16


def test_noiseless_releases_are_the_exact_prefix_sums():
    increments = np.random.default_rng(2).integers(-2, 4, (300, 3))
    bm = GaussBM._uncertified_noiseless(n=3, horizon=300, epsilon=1.0, delta=1e-3, counter="hybrid",
                                       node_noise="derived")
    for s in range(300):
        bm.update_all(increments[s])
        np.testing.assert_array_equal(bm.query_all(), increments[: s + 1].sum(axis=0))


def test_release_variance_matches_the_formula():
    n = 40_000
    counter = HybridDerived(n=n, horizon=512, epsilon=1.0, delta=1e-3, seed=4)
    measured = np.array([np.mean(counter.release_all(np.full(n, s)) ** 2) for s in STEPS])  # zero mean known
    expected = counter.variance(STEPS)
    np.testing.assert_allclose(expected, hybrid_variance(STEPS) * counter.sigma**2)
    worst = np.max(np.abs(measured / expected - 1) / math.sqrt(2 / n))
    assert worst < Z_SE, f"a step's variance is {worst:.1f} standard errors from its formula"


@pytest.mark.parametrize("cls", [LazyCMS, PunctualCMS])
def test_sketches_take_the_hybrid_counter(cls):
    stream = np.random.default_rng(5).integers(0, 20, 400)
    kw = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 400, "seed": 4}
    sketch = cls(**kw, counter="hybrid", node_noise="derived")
    sketch.extend(stream)
    assert np.all(np.isfinite(sketch.query_many(np.arange(20))))
    exact, tree = cls._uncertified_noiseless(**kw, counter="hybrid", node_noise="derived"), cls._uncertified_noiseless(
        **kw)
    exact.extend(stream)
    tree.extend(stream)
    np.testing.assert_array_equal(exact.query_many(np.arange(20)), tree.query_many(np.arange(20)))
