"""The k-ary Laplace tree over exact discrete Laplace node noise (``counters.laplace_tree``).

The noise tests: the frequencies of 200 000 node draws at scale 1 against the discrete Laplace pmf (every value in
[-6, 6] within 5 binomial standard errors) and their variance against 2 q / (1 - q)^2, and the release variance at
every step 1..80 of 20 000 counters against the factorisation's digit sum times that variance, within 5.5 standard
errors estimated from the squared releases themselves. At half the scale the draw variance is 0.36, not 1.84, and
the release variance a quarter: both fail by hundreds of standard errors.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpstream.counters import LaplaceTree, counter_class
from dpstream.counters.laplace_tree import kary_digit_sum
from dpstream.heavy_hitters.lazy_hh import LazyHH
from dpstream.heavy_hitters.thresholds import laplace_sum_tail
from dpstream.privacy.heavy_hitters import final_delta
from dpstream.secure.laplace import laplace_grid
from dpstream.sketches import LazyCMS

Z_SE = 5.5
Z_BIN = 5.0


def discrete_laplace_variance(t: int, s: int) -> float:
    """The variance of the discrete Laplace of scale t/s, 2 q / (1 - q)^2 with q = exp(-s / t), written out here."""
    q = math.exp(-s / t)
    return 2 * q / (1 - q) ** 2


def discrete(**kwargs) -> LaplaceTree:
    """The Laplace tree with exact discrete Laplace nodes."""
    return LaplaceTree(node_noise="discrete_secure_stored", **kwargs)


def test_the_registry_names_it_and_the_scale_is_the_grid_above_b():
    assert counter_class("laplace", "discrete_secure_stored").cls is LaplaceTree
    counter = discrete(n=2, horizon=2**20, epsilon=0.3, delta=1e-3, m=3, seed=0)
    b = LaplaceTree(n=2, horizon=2**20, epsilon=0.3, delta=1e-3, m=3, seed=0).scale
    t, s = counter.grid
    assert (t, s) == laplace_grid(b) and Fraction(t, s) == Fraction(counter.scale)
    assert 0 <= counter.scale - b < b * 2.0**-30
    assert counter.privacy.delta == 0.0 and counter.privacy.epsilon <= 0.3
    assert counter.privacy.epsilon == pytest.approx(0.3, rel=1e-9)
    assert not counter.deployable  # seeded
    deployed = discrete(n=2, horizon=64, epsilon=1.0, delta=1e-3)
    assert deployed.deployable and deployed.privacy.notion == "computational"
    assert not discrete(n=2, horizon=64, epsilon=1.0, delta=1e-3, kappa=0.5).deployable


def test_node_draws_follow_the_discrete_laplace_pmf_and_variance():
    counter = discrete(n=1, horizon=18, epsilon=1.0, delta=1e-3, seed=11)  # one level: b = 1
    assert counter.scale == 1.0
    n = 200_000
    draws = counter.draw(n)
    assert np.array_equal(draws, np.round(draws))
    q = math.exp(-1.0)
    values = np.arange(-6, 7)
    pmf = (1 - q) / (1 + q) * q ** np.abs(values)
    freq = np.array([(draws == v).mean() for v in values])
    z = np.abs(freq - pmf) / np.sqrt(pmf * (1 - pmf) / n)
    assert z.max() < Z_BIN, f"value {values[z.argmax()]} is {z.max():.1f} standard errors from the pmf"
    var = discrete_laplace_variance(1, 1)
    assert counter.draw_variance == pytest.approx(var, rel=1e-12)
    se = np.std(draws**2) / math.sqrt(n)
    assert abs(np.mean(draws**2) - var) < Z_SE * se


def test_release_variance_matches_the_discrete_laplace_formula():
    n, horizon = 20_000, 80
    counter = discrete(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=3, arity=3)
    cells, zeros = np.arange(n), np.zeros(n, dtype=np.int64)
    worst = 0.0
    steps = np.arange(1, horizon + 1)
    expected = counter.variance(steps)
    np.testing.assert_allclose(expected, kary_digit_sum(steps, 3) * discrete_laplace_variance(*counter.grid))
    for s in steps:
        counter.push(cells, np.full(n, s, dtype=np.int64), zeros)
        released = counter.release_all(np.full(n, s))
        assert np.array_equal(released, np.round(released))
        se = np.std(released**2) / math.sqrt(n)  # zero mean known
        worst = max(worst, abs(np.mean(released**2) - expected[s - 1]) / se)
    assert worst < Z_SE, f"a step's variance is {worst:.1f} standard errors from the formula"


def test_noiseless_releases_are_exact_and_a_restored_counter_draws_fresh_streams():
    increments = np.random.default_rng(2).integers(-2, 4, (3, 60))
    exact = discrete(n=3, horizon=60, epsilon=1.0, delta=1e-3, arity=3, kappa=0.0, seed=1)
    noisy = discrete(n=3, horizon=60, epsilon=1.0, delta=1e-3, arity=3, seed=1)
    for s in range(1, 31):
        for c in (exact, noisy):
            c.push(np.arange(3), np.full(3, s, dtype=np.int64), increments[:, s - 1])
    np.testing.assert_array_equal(exact.release_all(np.full(3, 30)), increments[:, :30].sum(axis=1))
    restored = LaplaceTree.from_bytes(noisy.to_bytes())
    np.testing.assert_array_equal(restored.release_all(np.full(3, 30)), noisy.release_all(np.full(3, 30)))
    assert int(restored._drawn[0]) == int(noisy._drawn[0]) > 0
    assert not np.array_equal(restored.draw(8), discrete(n=3, horizon=60, epsilon=1.0, delta=1e-3,
                                                                    arity=3, seed=1).draw(8))


def test_lazycms_takes_it_and_states_pure_dp():
    stream = np.random.default_rng(5).integers(0, 20, 400)
    sketch = LazyCMS(width=8, depth=2, epsilon=1.0, delta=1e-3, horizon=400, seed=4, counter="laplace",
                     node_noise="discrete_secure_stored")
    sketch.extend(stream)
    answers = sketch.query_many(np.arange(20))
    assert np.array_equal(answers, np.round(answers))
    assert sketch.privacy.delta == 0.0 and sketch.privacy.epsilon <= 1.0


@pytest.mark.parametrize("node_noise", ["stored", "discrete_secure_stored"])
def test_the_lazyhh_tail_bound_covers_one_node_and_is_within_a_third_of_its_exact_quantile(node_noise):
    # over step 1 alone the digit sum is D = 1: the release noise is one node noise, whose two-sided tail is exact,
    # 2 q^x / (1 + q) for the discrete Laplace (x an integer), exp(-x / b) for the continuous one
    counter = counter_class("laplace", node_noise)(n=1, horizon=18, epsilon=1.0, delta=1e-3, m=4, seed=0)
    steps, counters, beta = 1, 900, 1e-4
    bound = laplace_sum_tail(counter, steps, counters, beta)
    b = counter.scale
    if node_noise == "stored":
        exact_tail = math.exp(-bound / b)
        quantile = b * math.log(2 * steps * counters / beta)
    else:
        q = math.exp(-1.0 / b)
        exact_tail = 2 * q ** math.ceil(bound) / (1 + q)
        quantile = b * math.log(4 * steps * counters / (beta * (1 + q)))
    assert steps * counters * exact_tail <= beta / 2
    assert bound < 1.34 * quantile


def test_lazyhh_takes_the_discrete_laplace_tree_and_states_the_configured_delta():
    kw = {"k": 2, "k_tilde": 8, "epsilon": 1.0, "delta": 1e-3, "beta": 1e-4, "horizon": 2048, "seed": 0}
    hh = LazyHH(**kw, counter="laplace", node_noise="discrete_secure_stored")
    gauss = LazyHH(**kw)
    assert hh.privacy.delta == gauss.privacy.delta == final_delta(1.0, 1e-3) and hh.privacy.epsilon <= 1.0
    assert hh.privacy.notion == "computational"
    assert LazyHH(**kw, counter="laplace").privacy.notion == "approximate"
    # the threshold covers Laplace nodes: their tail bound, above the Gaussian closed form at m = 2d
    assert hh.gamma == laplace_sum_tail(counter_class("laplace", "discrete_secure_stored")(
        n=1, horizon=256, epsilon=1.0, delta=1e-3, m=2 * hh.depth, seed=0), 256, 8 * hh.depth, 1e-4) > gauss.gamma
    hh.extend(np.random.default_rng(1).integers(0, 30, 2048))
