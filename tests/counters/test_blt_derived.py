"""Claims about the BLT counter with key-derived noise (``BLTCounter(node_noise="derived")``, ``blt_tree``).

Its noise must have exactly the stored BLT's joint law over all release steps: the linear map the generation tables
define has the formula's covariance (deterministic, to rounding), the compiled release computes that map on Philox's
normals, and the sampled releases match the covariance across release times (not only the variance).
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpstream.counters import BLTCounter, counter_class
from dpstream.counters._blt_derived import split_normals
from dpstream.counters.blt_params import _prefix_noise_coefs, blt_from_decays, optimal_blt
from dpstream.counters.blt_tree import block_tree
from dpstream.counters.philox import philox_block
from dpstream.noise import noise_mode
from dpstream.sketches import LazyCMS

SPLIT_TAG = 0x424C54 << 40


def formula_covariance(params, horizon):
    """Cov(N_s, N_t) = sum_{u <= min(s, t)} b_{s-u} b_{t-u}, s, t = 1..horizon (per unit sigma), from b directly."""
    b = _prefix_noise_coefs(params, horizon)
    rows = np.zeros((horizon, horizon))
    for s in range(1, horizon + 1):
        rows[s - 1, :s] = b[:s][::-1]
    return rows @ rows.T


def linear_map(params, horizon):
    """Rows N_s (s = 1..horizon) as linear functions of every normal the generation draws (numpy, dense)."""
    tree = block_tree(params, horizon.bit_length())
    top, used = tree.levels, [0]
    columns = tree.factors.shape[1] * (2 ** (top + 1))

    def fresh(n):
        part = np.zeros((n, columns))
        part[:, used[0]:used[0] + n] = np.eye(n)
        used[0] += n
        return part

    nodes = {(top, 0): fresh(int(tree.dims[top]))}
    for level in range(top, 0, -1):
        d, child = int(tree.dims[level]), int(tree.dims[level - 1])
        for p in range(2 ** (top - level)):
            both = tree.splits[level, :2 * child, :d] @ nodes[level, p]
            if 2 * child > d:
                both = both + tree.complements[level, :2 * child, :2 * child - d] @ fresh(2 * child - d)
            nodes[level - 1, 2 * p], nodes[level - 1, 2 * p + 1] = both[:child], both[child:]
    out = np.zeros((horizon, columns))
    for s in range(1, horizon + 1):
        for level in range(top):
            if (s >> level) & 1:
                lag = s - ((s >> level) << level)
                w = np.concatenate(([tree.weights[0]], -tree.weights[1:] * np.exp(lag * tree.log_decay)))
                d = int(tree.dims[level])
                out[s - 1] += (tree.factors[level, :d] @ w) @ nodes[level, (s >> level) - 1]
    return out


def _random_params(seed, horizon):
    rng = np.random.default_rng(seed)
    return blt_from_decays(rng.uniform(0.01, 0.95, 4), rng.uniform(0.01, 0.95, 4), horizon)


# optimal_blt(66) has two decays 3e-7 apart (a surplus buffer): inverting covariances there loses 5% of the variance
CASES = [(optimal_blt(2, 4), 1), (optimal_blt(3, 4), 3), (optimal_blt(8, 4), 8), (optimal_blt(16, 4), 16),
         (optimal_blt(66, 4), 66), (optimal_blt(100, 4), 100), (optimal_blt(257, 4), 257),
         (_random_params(0, 40), 40), (blt_from_decays([0.5, 0.05, 5e-3, 5e-4], [0.7, 0.1, 0.01, 1e-3], 200), 200)]


@pytest.mark.parametrize(("params", "horizon"), CASES)
def test_generation_has_exactly_the_blt_covariance_at_every_pair_of_steps(params, horizon):
    implied = linear_map(params, horizon)
    implied = implied @ implied.T
    want = formula_covariance(params, horizon)
    scale = np.sqrt(np.outer(np.diag(want), np.diag(want)))
    # float64 rounding over O(k^2 log T) terms of orthogonal factors: about 1e-15 measured; 1e-12 leaves margin, while
    # any error in the algebra (a wrong decay power, a missing block, a wrong split) is >= 1e-3 in correlation units
    assert np.max(np.abs(implied - want) / scale) < 1e-12


def reference_normals(key, cell, level, node, count):
    """Box-Muller (cos, sin) of Philox words (0, 1) and (2, 3), in plain Python (the documented derivation).

    Block j has counter (node, tag | j << 8 | level, cell, 0).
    """
    out = []
    for j in range((count + 3) // 4):
        o = philox_block(np.array([node, SPLIT_TAG | (j << 8) | level, cell, 0], dtype=np.uint64), key)
        for pair in range(2):
            u1 = ((int(o[2 * pair]) >> 11) + 1) * 2.0**-53
            u2 = (int(o[2 * pair + 1]) >> 11) * 2.0**-53
            r = math.sqrt(-2.0 * math.log(u1))
            out += [r * math.cos(2.0 * math.pi * u2), r * math.sin(2.0 * math.pi * u2)]
    return out[:count]


def test_split_normals_are_box_muller_of_the_keyed_philox_blocks():
    key = np.array([0x0123456789ABCDEF, 0xFEDCBA9876543210], dtype=np.uint64)
    for cell, level, node, count in ((0, 1, 0, 1), (7, 5, 3, 5), (2**40, 12, 2**20 - 1, 8)):
        out = np.zeros(count)
        split_normals(key, cell, level, node, count, out)
        np.testing.assert_allclose(out, reference_normals(key, cell, level, node, count), rtol=1e-15, atol=1e-15)


def _reference_noise(counter, cell, step):
    """N_s of ``cell`` by the dense linear map evaluated on the kernel's Philox normals, in the kernel's draw order."""
    tree, key = counter.tree, counter._key
    top = tree.levels
    normals = reference_normals(key, cell, top + 1, 0, int(tree.dims[top]))
    for level in range(top, 0, -1):
        d, child = int(tree.dims[level]), int(tree.dims[level - 1])
        for p in range(2 ** (top - level)):
            normals += reference_normals(key, cell, level, p, 2 * child - d)
    return linear_map(counter.params, 2 ** top - 1)[step - 1, :len(normals)] @ np.array(normals)


def test_compiled_release_is_the_linear_map_on_philox_normals():
    counter = BLTCounter(node_noise="derived", n=3, horizon=40, epsilon=1.0, delta=1e-3, seed=5)
    steps = np.array([1, 2, 3, 17, 32, 39, 40])
    for cell in (0, 2):
        got = counter.release(np.full(steps.size, cell), steps)
        want = [counter.sigma * _reference_noise(counter, cell, s) for s in steps]
        np.testing.assert_allclose(got, want, rtol=1e-11)  # two summation orders of the same floats


STEPS = np.array([1, 2, 7, 33, 64, 100])


def test_sampled_releases_have_the_formula_covariance_across_release_times():
    n, horizon = 20_000, 100
    counter = BLTCounter(node_noise="derived", n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=2024)
    sample = np.stack([counter.release_all(np.full(n, s)) for s in STEPS], axis=1)
    want = formula_covariance(counter.params, horizon)[np.ix_(STEPS - 1, STEPS - 1)] * counter.sigma**2
    got = sample.T @ sample / n  # mean 0 is known
    # Gaussian sample covariance: Var(mean of X_s X_t) = (C_ss C_tt + C_st^2) / n; 21 distinct entries each within 4.5
    # standard deviations (two-sided 7e-6 each, 1.4e-4 for all, under the null)
    sd = np.sqrt((np.outer(np.diag(want), np.diag(want)) + want**2) / n)
    assert np.all(np.abs(got - want) <= 4.5 * sd), (got - want) / sd
    # different counters are independent: adjacent cells' correlation at each step within 4.5 / sqrt(n)
    corr = np.array([np.corrcoef(sample[:-1, j], sample[1:, j])[0, 1] for j in range(STEPS.size)])
    assert np.all(np.abs(corr) <= 4.5 / np.sqrt(n))
    # and the marginal is Gaussian: Kolmogorov-Smirnov at the last step (alpha 1e-4 under the null)
    assert stats.kstest(sample[:, -1] / np.sqrt(want[-1, -1]), "norm").pvalue > 1e-4


def test_covariance_test_can_fail_on_noise_with_the_right_variance_and_the_wrong_correlation():
    """The derived binary tree scaled to the BLT's variance at each step matches every variance, not the covariance."""
    n, horizon = 20_000, 100
    tree = counter_class("binary", "derived")(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=2024)
    blt = BLTCounter(node_noise="derived", n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=2024)
    want = formula_covariance(blt.params, horizon)[np.ix_(STEPS - 1, STEPS - 1)] * blt.sigma**2
    scale = np.sqrt(np.diag(want) / tree.variance(STEPS))
    sample = np.stack([tree.release_all(np.full(n, s)) for s in STEPS], axis=1) * scale
    sd = np.sqrt((np.outer(np.diag(want), np.diag(want)) + want**2) / n)
    z = np.abs(sample.T @ sample / n - want) / sd
    assert np.all(np.diag(z) <= 4.5) and np.any(z > 4.5)


def test_releases_are_consistent_and_keyed():
    a = BLTCounter(node_noise="derived", n=4, horizon=300, epsilon=1.0, delta=1e-3, seed=1)
    b = BLTCounter(node_noise="derived", n=4, horizon=300, epsilon=1.0, delta=1e-3, seed=2)
    cells, steps = np.arange(4), np.array([5, 77, 300, 0])
    first = a.release(cells, steps)
    assert np.array_equal(first, a.release(cells, steps))
    assert np.array_equal(first, a.release_all(steps))
    assert first[3] == 0.0  # step 0: nothing released yet, no noise
    assert not np.any(first[:3] == b.release(cells, steps)[:3])
    a.push(np.array([1]), np.array([6]), np.array([3]))
    assert a.release(np.array([1]), np.array([77]))[0] == first[1] + 3  # a push adds its count, the noise stays


def test_whole_table_releases_with_the_path_memo_equal_plain_releases_bit_for_bit():
    counter = BLTCounter(node_noise="derived", n=50, horizon=1054, epsilon=1.0, delta=1e-3, seed=3)
    assert counter.noise_cache_bytes == 0
    rng = np.random.default_rng(0)
    sequence = [np.full(50, s) for s in (0, 1, 2, 3, 4, 511, 512, 513, 1054, 7)]  # forward, across powers, back
    sequence += [rng.integers(0, 1055, 50) for _ in range(5)]  # every cell at its own step
    for steps in sequence:
        np.testing.assert_array_equal(counter.release_all(steps), counter.release(np.arange(50), steps))
    assert counter.noise_cache_bytes == 50 * (11 + 1) * 10 * 8 + 50 * 8  # H = 11 levels and the root, 2 (k + 1)


def test_same_sigma_variance_and_sensitivity_as_the_stored_blt_in_a_counter_of_the_exact_count_alone():
    kw = {"n": 10, "horizon": 1054, "epsilon": 0.3, "delta": 1e-3, "m": 6, "calibration": "analytic", "seed": 0}
    derived, stored = BLTCounter(node_noise="derived", **kw), BLTCounter(**kw)
    assert derived.sigma == stored.sigma  # the same calibration call on the same sensitivity
    np.testing.assert_array_equal(derived.variance(np.arange(1055)), stored.variance(np.arange(1055)))
    assert derived.memory_bytes == 10 * 8 + 16
    assert counter_class("blt", "derived").bytes_per_counter(1054, 8) == 8
    assert derived.notion == "computational"
    with pytest.raises(ValueError, match=r"steps must lie in \[0, horizon=1054\]"):
        derived.release(np.array([0]), np.array([1055]))


def test_secure_noise_is_refused():
    with noise_mode("secure"), pytest.raises(ValueError, match="noise=secure is not available with counter='blt'"):
        BLTCounter(node_noise="derived", n=2, horizon=8, epsilon=1.0, delta=1e-3, seed=0)


def test_budget_sizing_gives_the_derived_tree_width_and_counts_real_bytes():
    kw = {"kilobytes": 24, "depth": 3, "epsilon": 0.3, "delta": 1e-3, "horizon": 2**20, "seed": 0,
          "calibration": "analytic", "hash_family": "multiply_shift", "model": "actual"}
    blt = LazyCMS.from_memory(counter="blt", node_noise="derived", **kw)
    tree = LazyCMS.from_memory(counter="binary", node_noise="derived", **kw)
    stored = LazyCMS.from_memory(counter="blt", node_noise="stored", **kw)
    assert blt.width == tree.width > 5 * stored.width
    assert blt.memory_bytes <= 24_000
    assert blt.memory_bytes == tree.memory_bytes  # the same exact counts, pending array, hash parameters and key
    cells = blt._state.counters
    assert cells.memory_bytes == blt.depth * blt.width * np.dtype(cells.count_dtype).itemsize + 16


def test_sketch_pushes_the_derived_trees_exact_counts_and_releases_the_blt_noise_on_them():
    keys = np.random.default_rng(0).zipf(1.5, 3000)
    kw = {"width": 16, "depth": 3, "epsilon": 1.0, "delta": 1e-3, "horizon": 3000, "seed": 0, "node_noise": "derived"}
    sk, ref = LazyCMS(counter="blt", **kw), LazyCMS(**kw)
    sk.extend(keys)
    ref.extend(keys)
    cells = sk._state.counters
    np.testing.assert_array_equal(cells._exact, ref._state.counters._exact)
    steps = sk._state.cell_steps()
    assert cells.horizon == 188 and steps.max() == 188  # ceil(3000 / 16) pushes per cell
    np.testing.assert_array_equal(sk._state.cells().ravel(), cells.release(np.arange(cells.n), steps))
    noise = sk._state.cells().ravel() - cells._exact[0]
    assert np.all(noise != 0) and np.abs(noise).max() < 10 * np.sqrt(cells.variance(steps).max())


@pytest.mark.parametrize("shape", [(2, 5), (4, 5), (10, 5), (6, 3), (5, 5)])
def test_the_block_qr_is_lapacks_on_full_rank_input_and_a_qr_on_rank_deficient_input(shape):
    """householder_qr: Q orthogonal, R upper triangular, Q R = A to 1e-14 (entries of order 1); LAPACK's signs."""
    from dpstream.counters.blt_tree import householder_qr

    a = np.random.default_rng(1).standard_normal(shape)
    deficient = a.copy()
    deficient[:, -1] = deficient[:, 0] * (1 + 1e-15)  # two columns equal but for the last bit
    for x in (a, deficient):
        q, r = householder_qr(x)
        np.testing.assert_allclose(q @ r, x, atol=1e-14)
        np.testing.assert_allclose(q.T @ q, np.eye(shape[0]), atol=1e-14)
        assert not np.tril(r, -1).any()
    q, r = householder_qr(a)
    q0, r0 = np.linalg.qr(a, mode="complete")
    np.testing.assert_allclose(r, r0, atol=1e-14)
    np.testing.assert_allclose(q[:, :min(shape)], q0[:, :min(shape)], atol=1e-14)
