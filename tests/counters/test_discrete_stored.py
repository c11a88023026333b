"""The stored binary tree and Honaker's estimates over exact discrete Gaussian node noise (discrete_secure_stored).

The releases' covariance across times against the formula (the node variance of N_Z(0, sigma^2) times the linear map
of each estimator), Honaker's lower variance, integer releases, batching, flags, keys, memory and refusals. The
covariance test also runs the derived ``discrete_secure`` and ``discrete_secure_ahead`` trees through their node caches.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstream.counters import counter_class
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.honaker_tree import honaker_stream, honaker_variance
from dpstream.noise import noise_mode
from dpstream.privacy.discrete_gaussian import discrete_gaussian_sigma2
from dpstream.secure import samplers, sequential
from dpstream.sketches import LazyCMS

N_COUNTERS = 40_000
HORIZON = 15  # steps 1..15: every pattern of the 4 levels' bits
Z_SE = 5.5
"""Standard errors allowed per covariance entry: two-sided 4e-8 each, under 5e-6 over the 120 entries (union)."""

BINARY_STORED = counter_class("binary", "discrete_secure_stored")
HONAKER_STORED = counter_class("honaker", "discrete_secure_stored")


def node_variance(sigma2) -> float:
    """Exact variance of N_Z(0, sigma2) on the sampler's support |y| < V_CAP t (a sum over the pmf)."""
    a, b, t = samplers.gaussian_params(sigma2.numerator, sigma2.denominator)
    y = np.arange(-samplers.V_CAP * t + 1, samplers.V_CAP * t, dtype=np.float64)
    w = np.exp(-(y**2) * b / (2 * a))
    return float(np.sum(y**2 * w) / np.sum(w))


def binary_map(horizon: int) -> np.ndarray:
    """(horizon, nodes) 0/1 map from the noise of every node to the binary tree's release at steps 1..horizon."""
    nodes = [(level, end) for level in range(horizon.bit_length())
             for end in range(1 << level, horizon + 1, 1 << level)]
    out = np.zeros((horizon, len(nodes)))
    for k, (level, end) in enumerate(nodes):
        s = np.arange(1, horizon + 1)
        out[:, k] = ((s >> level) & 1 == 1) & ((s >> level) == (end >> level))
    return out


def honaker_map(horizon: int) -> np.ndarray:
    """(horizon, nodes) linear map from node noises to Honaker's releases, from the reference ``honaker_stream``."""
    levels = horizon.bit_length()
    cols = []
    for level in range(levels):
        for end in range(1 << level, horizon + 1, 1 << level):
            z = np.zeros((levels, horizon))
            z[level, end - 1] = 1.0
            cols.append(honaker_stream(np.zeros(horizon, dtype=np.int64), z))
    return np.column_stack(cols)


def releases(counter_name: str, n: int, seed: int, node_noise: str = "discrete_secure_stored",
             horizon: int = HORIZON) -> tuple[np.ndarray, object]:
    """(horizon, n) releases at steps 1..horizon of n counters fed zeros: the noise alone.

    Every step is released as a whole table, so the derived node noises run their node cache one push apart (the
    kept block too).
    """
    counter = counter_class(counter_name, node_noise)(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=seed)
    out = np.empty((horizon, n))
    cells = np.arange(n)
    for s in range(1, horizon + 1):
        counter.push(cells, np.full(n, s, dtype=np.int64), np.zeros(n, dtype=np.int64))
        out[s - 1] = counter.release_all(np.full(n, s, dtype=np.int64))
    return out, counter


@pytest.fixture(scope="module")
def noise() -> dict[str, np.ndarray]:
    stored = {name: releases(name, N_COUNTERS, seed)[0] for name, seed in (("binary", 1), ("honaker", 2))}
    derived = {noise: releases("binary", N_COUNTERS, seed, noise)[0]
               for noise, seed in (("discrete_secure", 5), ("discrete_secure_ahead", 6))}
    return {**stored, **derived}


@pytest.mark.parametrize(("name", "linear_map"), [("binary", binary_map), ("honaker", honaker_map),
                                                 ("discrete_secure", binary_map),
                                                 ("discrete_secure_ahead", binary_map)])
def test_release_covariance_across_times_matches_the_formula(noise, name, linear_map) -> None:
    x = noise[name]
    sigma2 = discrete_gaussian_sigma2(HORIZON.bit_length(), 1.0, 1e-3)  # h m = 4 levels, m = 1
    w = linear_map(HORIZON)
    expected = node_variance(sigma2) * w @ w.T  # independent nodes of equal variance through the estimator's map
    if name == "honaker":  # the map's diagonal is the closed form sum of v_l over the set bits
        np.testing.assert_allclose(np.diag(w @ w.T), honaker_variance(np.arange(1, HORIZON + 1), 4), rtol=1e-12)
    measured = x @ x.T / x.shape[1]  # zero mean known: second moments
    # Var(X_i X_j) = S_ii S_jj + S_ij^2 for (nearly) Gaussian X: the releases are sums of discrete Gaussians of
    # sigma^2 = 33.7, whose fourth moment is 3 sigma^4 to a relative exp(-2 pi^2 sigma^2)
    se = np.sqrt((np.outer(np.diag(expected), np.diag(expected)) + expected**2) / x.shape[1])
    worst = np.max(np.abs(measured - expected) / se)
    assert worst < Z_SE, f"{name}: a covariance entry is {worst:.1f} standard errors from the formula"
    assert np.all(np.abs(x.mean(axis=1)) < Z_SE * np.sqrt(np.diag(expected) / x.shape[1]))  # unbiased


def test_honaker_variance_is_below_the_binary_trees(noise) -> None:
    steps = np.arange(1, HORIZON + 1)
    formula = honaker_variance(steps, 4)
    popcounts = np.bitwise_count(steps)
    assert np.all(formula <= popcounts) and np.all(formula[popcounts > 1] < popcounts[popcounts > 1])
    measured = {k: np.mean(v**2, axis=1) for k, v in noise.items()}
    # total variance over the 15 steps: formula ratio sum(v) / sum(popcount) = 0.73, each measured to about 1%
    assert measured["honaker"].sum() < 0.8 * measured["binary"].sum()


@pytest.mark.parametrize("counter_name", ["binary", "honaker"])
def test_stored_releases_follow_the_exact_counts_and_are_integer_node_sums(counter_name) -> None:
    rng = np.random.default_rng(3)
    incs = rng.integers(0, 4, (HORIZON, 30))
    counter = counter_class(counter_name, "discrete_secure_stored")(n=30, horizon=HORIZON, epsilon=1.0, delta=1e-3,
                                                                    seed=4)
    noiseless = counter_class(counter_name, "discrete_secure_stored")(n=30, horizon=HORIZON, epsilon=1.0, delta=1e-3,
                                                                      seed=4, kappa=0.0)
    cells = np.arange(30)
    for s in range(1, HORIZON + 1):
        for c in (counter, noiseless):
            c.push(cells, np.full(30, s, dtype=np.int64), incs[s - 1])
    steps = np.full(30, HORIZON)
    np.testing.assert_array_equal(noiseless.release_all(steps), incs.sum(axis=0))
    assert not noiseless.certified and not noiseless.deployable
    out = counter.release_all(steps)
    if counter_name == "binary":
        np.testing.assert_array_equal(out, np.round(out))  # exact + integer node noise
    assert not np.array_equal(out, noiseless.release_all(steps))


def test_draws_do_not_depend_on_batching_and_never_repeat() -> None:
    a, b, t = samplers.gaussian_params(4131, 16)
    key = np.arange(8, dtype=np.uint32)
    whole = sequential.draws(key, np.int64(0), np.int64(1000), a, b, t, samplers.new_state())
    parts = [sequential.draws(key, np.int64(lo), np.int64(hi - lo), a, b, t, samplers.new_state())
             for lo, hi in ((0, 1), (1, 400), (400, 1000))]
    np.testing.assert_array_equal(whole, np.concatenate(parts))
    counter = BINARY_STORED(n=8, horizon=100, epsilon=1.0, delta=1e-3, seed=0)
    first, second = counter.draw(500), counter.draw(500)
    assert not np.array_equal(first, second) and int(counter._drawn[0]) == 1000


def test_flags_keys_and_repr() -> None:
    for cls in (BINARY_STORED, HONAKER_STORED):
        seeded = cls(n=10, horizon=64, epsilon=1.0, delta=1e-6, m=4, seed=5)
        assert seeded.certified and not seeded.deployable and seeded.notion == "computational"
        private = cls(n=10, horizon=64, epsilon=1.0, delta=1e-6, m=4)
        assert private.certified and private.deployable
        assert private._key.tobytes().hex() not in repr(private) and "key" not in repr(private)
        assert private.sigma2 == discrete_gaussian_sigma2(private.levels * 4, 1.0, 1e-6)
        scaled = cls(n=10, horizon=64, epsilon=1.0, delta=1e-6, kappa=0.5)
        assert not scaled.certified and not scaled.deployable
    bm = GaussBM(n=10, horizon=64, epsilon=1.0, delta=1e-6, seed=1, counter="honaker",
                 node_noise="discrete_secure_stored")
    assert bm.certified and not bm.deployable and bm.privacy.notion == "computational"
    assert not GaussBM.from_bytes(bm.to_bytes()).deployable  # a restored seeded tree stays not deployable
    sketch = LazyCMS(width=16, depth=2, epsilon=1.0, delta=1e-6, horizon=512, node_noise="discrete_secure_stored",
                     counter="honaker")
    assert sketch.deployable and sketch.certified


def test_memory_counts_the_stored_tree_the_key_and_the_draw_count() -> None:
    for cls in (BINARY_STORED, HONAKER_STORED):
        counter = cls(n=37, horizon=1000, epsilon=1.0, delta=1e-6, seed=0, count_dtype=np.int32)
        assert counter.memory_bytes == 37 * cls.bytes_per_counter(1000, 4) + cls.fixed_bytes
        assert cls.fixed_bytes == 32 + 8


def test_refusals_are_one_line() -> None:
    with pytest.raises(ValueError, match="real-valued noise") as info:
        counter_class("blt", "discrete_secure_stored")
    assert "\n" not in str(info.value)
    with noise_mode("secure"), pytest.raises(ValueError, match="noise=secure is not available") as info:
        BINARY_STORED(n=4, horizon=16, epsilon=1.0, delta=1e-3, seed=0)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="discrete_secure_stored") as info:
        counter_class("honaker", "discrete_secure")  # Honaker over derived discrete nodes is not built
    assert "\n" not in str(info.value)


def test_sigma_is_the_calibrations() -> None:
    counter = HONAKER_STORED(n=3, horizon=2**10, epsilon=0.5, delta=1e-5, m=6, seed=0)
    assert counter.sigma == pytest.approx(math.sqrt(discrete_gaussian_sigma2(11 * 6, 0.5, 1e-5)), rel=1e-15)
