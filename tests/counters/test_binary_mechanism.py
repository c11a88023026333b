"""Claims about GaussBM: exact accounting against Alg. 1, and the noise it adds against its formula."""

import math

import numpy as np
import pytest
from scipy import stats

from dpstream.counters.gauss_bm import GaussBM, popcount
from dpstream.noise import NoiseSource
from dpstream.privacy.calibration import gauss_bm_levels, gauss_bm_sigma

Z_1E6 = stats.norm.isf(0.5e-6)  # two-sided normal quantile at p = 1e-6


def _algorithm_1_tree(cs: list[int]) -> list[tuple[int, int, int]]:
    """Holland, Alg. 1 taken literally (without noise): the node list (start, end, count) after the updates.

    Its merge test ``t & (1 << l) != 0`` is applied to the 0-based index u = t - 1: this builds the dyadic
    tree of Figure 2 (release at t = 7 is c7 + c5:6 + c1:4) for 1-based steps t, which Alg. 5 passes.
    """
    tree: list[tuple[int, int, int]] = []
    for u, c in enumerate(cs):
        tree.append((u + 1, u + 1, c))
        level = 0
        while len(tree) > 1 and u & (1 << level):
            right, left = tree.pop(), tree.pop()
            tree.append((left[0], right[1], left[2] + right[2]))
            level += 1
    return tree


def released_from_scratch(values: np.ndarray, noise: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Released prefix sums of counters recomputed from scratch.

    Row j of ``values`` / ``noise`` holds counter j's increments / node noises in step order (entries from column
    ``steps[j]`` on are ignored).

    At step s the released nodes are the set bits l of s: the dyadic interval ending at u = s with its bits below l
    cleared, released as sum(values[u - 2^l : u]) + noise[u - 1]; they are added highest bit first.
    """
    n = values.shape[0]
    cum = np.concatenate([np.zeros((n, 1), dtype=np.int64), np.cumsum(values, axis=1, dtype=np.int64)], axis=1)
    rows = np.arange(n)
    out = np.zeros(n)
    for level in reversed(range(int(steps.max(initial=0)).bit_length())):
        on = (steps >> level) & 1 == 1
        end = (steps >> level) << level
        start = np.maximum(end - (1 << level), 0)
        node = (cum[rows, end] - cum[rows, start]) + noise[rows, np.maximum(end - 1, 0)]
        out = np.where(on, out + node, out)
    return out


def record_draws(counter) -> list[np.ndarray]:
    """Make ``counter`` keep a copy of every noise array it draws, in order (the draws themselves are unchanged)."""
    drawn: list[np.ndarray] = []
    draw = counter.draw

    def recording(size: int) -> np.ndarray:
        drawn.append(draw(size))
        return drawn[-1]

    counter.draw = recording
    return drawn


def test_sigma_equals_calibration_formula():
    bm = GaussBM(n=4, horizon=1000, epsilon=0.5, delta=1e-3, m=6, seed=0)
    assert bm.levels == gauss_bm_levels(1000) == 10
    assert bm.sigma == gauss_bm_sigma(1000, 0.5, 1e-3, 6)
    assert math.isclose(bm.sigma, math.sqrt(2 * 10 * 6 * math.log(1.25 / 1e-3)) / 0.5, rel_tol=1e-12)
    assert GaussBM(n=1, horizon=2**20, epsilon=1.0, delta=0.1).levels == 21


def test_noiseless_prefix_sums_equal_literal_algorithm_1():
    rng = np.random.default_rng(5)
    cs = rng.integers(-3, 4, 100)
    bm = GaussBM._uncertified_noiseless(n=1, horizon=100, epsilon=1.0, delta=0.1, seed=0)
    assert not bm.certified
    for t, c in enumerate(cs, start=1):
        bm.update(0, int(c))
        tree = _algorithm_1_tree(cs[:t].tolist())
        # Alg. 1's released nodes are the dyadic intervals of the set bits of t, largest first ...
        sizes = [end - start + 1 for start, end, _ in tree]
        assert sizes == [1 << l for l in reversed(range(t.bit_length())) if t >> l & 1]
        # ... and their exact counts sum to the prefix sum our counter releases.
        assert bm.query(0) == sum(count for _, _, count in tree) == cs[:t].sum()


def test_incremental_released_prefix_equals_sum_of_noisy_nodes_over_set_bits():
    # The released prefix sums are kept up to date at every update; after any number of updates they equal,
    # bit for bit, the sum recomputed from scratch of (exact dyadic count + its recorded noise) over the set bits
    # of each counter's step, highest bit first (the same float additions in the same order, hence exact).
    rng = np.random.default_rng(11)
    n, total = 6, 3000
    js, cs = rng.integers(0, n, total), rng.integers(-3, 4, total)
    bm = GaussBM(n=n, horizon=total, epsilon=0.5, delta=1e-3, m=2, seed=3)
    drawn = record_draws(bm.counter)
    for lo, hi in [(0, 1), (1, 2), (2, 7), (7, 64), (64, 1000), (1000, 2047), (2047, 2048), (2048, total)]:
        bm.extend(js[lo:hi], cs[lo:hi])
        noise = np.concatenate(drawn)
        values, noises = np.zeros((n, hi), dtype=np.int64), np.zeros((n, hi))
        for j in range(n):
            mine = js[:hi] == j
            values[j, : mine.sum()], noises[j, : mine.sum()] = cs[:hi][mine], noise[mine]
        assert np.array_equal(bm.steps, np.bincount(js[:hi], minlength=n))
        # exact and portable: the same additions in the same order (highest bit first), no fastmath, in one process
        assert np.array_equal(bm.query_all(), released_from_scratch(values, noises, bm.steps))
        assert [bm.query(j) for j in range(n)] == bm.query_all().tolist()


@pytest.mark.parametrize("step", [1, 7, 8, 21, 63, 64])
def test_prefix_sum_variance_matches_popcount_sigma2(step):
    # 20 000 independent counters with random 0/1 increments, released at `step`: the errors are i.i.d.
    # N(0, popcount(step) sigma^2), so sum(err^2) / (popcount sigma^2) ~ chi2(20 000); accept between its
    # p = 1e-6 two-sided quantiles, and |mean| below the normal quantile at p = 1e-6.
    n, horizon = 20_000, 64
    bm = GaussBM(n=n, horizon=horizon, epsilon=0.7, delta=1e-3, m=2, seed=step)
    increments = np.random.default_rng(step).integers(0, 2, (step, n))
    for cs in increments:
        bm.update_all(cs)
    err = bm.query_all() - increments.sum(axis=0)
    var = popcount(step) * bm.sigma**2
    assert np.allclose(bm.variance(), var) and bm.variance(step) == var
    stat = float((err**2).sum() / var)
    assert stats.chi2.ppf(0.5e-6, n) < stat < stats.chi2.isf(0.5e-6, n)
    assert abs(err.mean()) < Z_1E6 * math.sqrt(var / n)
    # the tails are Gaussian too: Kolmogorov-Smirnov against N(0, 1) at p = 1e-6
    assert stats.kstest(err / math.sqrt(var), "norm").pvalue > 1e-6


def test_numpy_bulk_normal_equals_single_draws():
    # the property extend relies on: n draws at once give the same values as n single draws / any chunking
    bulk = NoiseSource(42).gaussian(3.5, 1000)
    one = NoiseSource(42)
    assert np.array_equal(bulk, np.concatenate([one.gaussian(3.5, 1) for _ in range(1000)]))
    chunked = NoiseSource(42)
    assert np.array_equal(bulk, np.concatenate([chunked.gaussian(3.5, k) for k in (3, 97, 400, 500)]))


def test_update_many_equals_update_loop():
    rng = np.random.default_rng(1)
    js, cs = rng.integers(0, 5, 200), rng.integers(-2, 3, 200)
    a = GaussBM(n=5, horizon=200, epsilon=1.0, delta=0.01, m=3, seed=9)
    b = GaussBM(n=5, horizon=200, epsilon=1.0, delta=0.01, m=3, seed=9)
    a.extend(js, cs)
    for j, c in zip(js, cs, strict=True):
        b.update(int(j), int(c))
    assert np.array_equal(a.counter._exact, b.counter._exact)
    assert np.array_equal(a.counter._noisy_sums, b.counter._noisy_sums)
    assert np.array_equal(a.steps, b.steps) and np.array_equal(a.query_all(), b.query_all())


def test_seeded_counters_are_reproducible():
    a, b, c = (GaussBM(n=3, horizon=10, epsilon=1.0, delta=0.01, seed=s) for s in (4, 4, 5))
    for bm in (a, b, c):
        bm.update_all(np.array([1, 2, 3]))
    assert np.array_equal(a.query_all(), b.query_all())
    assert not np.array_equal(a.query_all(), c.query_all())


def test_memory_bytes_is_int64_sums_float64_nodes_and_steps():
    bm = GaussBM(n=7, horizon=2**20, epsilon=1.0, delta=0.01)
    assert bm.memory_bytes == 7 * 21 * (8 + 8) + 7 * 8


def test_rejects_step_beyond_horizon():
    bm = GaussBM(n=2, horizon=3, epsilon=1.0, delta=0.01, seed=0)
    bm.extend(np.array([0, 0, 0, 1]), np.array([1, 1, 1, 1]))
    with pytest.raises(ValueError, match=r"counter 0 would reach step t=4 > horizon=3"):
        bm.update(0, 1)
    assert bm.steps.tolist() == [3, 1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0.0}, "epsilon must be a finite number > 0, got 0.0"),
        ({"epsilon": -1.0}, "epsilon must be a finite number > 0, got -1.0"),
        ({"delta": 0.0}, r"delta must be in the open interval \(0, 1\), got 0.0"),
        ({"delta": 1.0}, r"delta must be in the open interval \(0, 1\), got 1.0"),
        ({"n": 0}, "n must be an integer >= 1, got 0"),
        ({"m": 0}, "m must be an integer >= 1, got 0"),
        ({"horizon": 0}, "horizon must be an integer >= 1, got 0"),
    ],
)
def test_rejects_bad_parameters(kwargs, message):
    params = {"n": 2, "horizon": 10, "epsilon": 1.0, "delta": 0.01, "m": 1} | kwargs
    with pytest.raises(ValueError, match=message):
        GaussBM(**params)


def test_rejects_counter_index_out_of_range():
    bm = GaussBM(n=2, horizon=3, epsilon=1.0, delta=0.01)
    with pytest.raises(ValueError, match=r"counter indices must be in \[0, 2\)"):
        bm.update(2, 1)


def test_merge_is_refused_with_the_reason():
    bm = GaussBM(n=2, horizon=8, epsilon=1.0, delta=1e-3, seed=0)
    with pytest.raises(ValueError, match="cannot merge two GaussBM counter arrays: each tree's node noise"):
        bm.merge(GaussBM(n=2, horizon=8, epsilon=1.0, delta=1e-3, seed=1))
