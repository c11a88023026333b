"""The counter interface and derived node noise (issue "beyond the paper", item 1).

Statistical tolerances: a sample variance of N independent normals has relative standard deviation sqrt(2/N);
a sample covariance of pairs with variances a, b and covariance c has standard deviation sqrt((a b + c^2)/N).
Every check allows Z_1E6 such deviations (two-sided p = 1e-6 per check), with fixed seeds.
"""

import math

import numpy as np
import pytest
from scipy import stats
from test_ziggurat import reference_normal

from dpstream.counters import BinaryTree, counter_class
from dpstream.counters.blt_params import blt_noise_stream, noise_variance
from dpstream.counters.gauss_bm import GaussBM, popcount
from dpstream.counters.honaker_tree import honaker_stream, honaker_variance
from dpstream.counters.philox import philox_block
from dpstream.noise import noise_mode
from dpstream.privacy.calibration import analytic_gaussian_sigma, gauss_bm_levels
from dpstream.sketches import LazyCMS, LazyCS, PunctualCMS, PunctualCS
from dpstream.sketches.memory import sketch_bytes

Z_1E6 = stats.norm.isf(0.5e-6)
U64 = np.uint64


def test_compiled_philox_equals_numpy_philox():
    # numpy's Philox(key, counter) increments the counter before its first block: its output is philox(counter + 1)
    rng = np.random.default_rng(0)
    for _ in range(20):
        key = rng.integers(0, 2**64 - 1, 2, dtype=np.uint64, endpoint=True)
        counter = rng.integers(0, 2**64 - 1, 4, dtype=np.uint64, endpoint=True)
        counter[0] = min(counter[0], U64(2**64 - 2))  # no carry into word 1
        expected = np.random.Philox(key=key, counter=counter).random_raw(4)
        counter[0] += U64(1)
        assert np.array_equal(philox_block(counter, key), expected)


def test_derived_releases_equal_a_reference_that_stores_the_node_values():
    n, horizon = 4, 100
    bm = GaussBM(n=n, horizon=horizon, epsilon=0.5, delta=1e-3, m=2, seed=3, node_noise="derived")
    key, sigma = bm.counter._key, bm.sigma
    rng = np.random.default_rng(1)
    increments = rng.integers(-2, 3, (horizon, n))
    nodes: dict[tuple[int, int, int], float] = {}  # (cell, level, node index) -> its noise, drawn once
    for s in range(1, horizon + 1):
        bm.update_all(increments[s - 1])
        exact = increments[:s].sum(axis=0)
        for cell in range(n):
            noise = 0.0
            for level in range(s.bit_length()):
                if (s >> level) & 1:
                    node = (cell, level, s >> level)
                    nodes.setdefault(node, sigma * reference_normal(key, s >> level, level, cell))
                    noise += nodes[node]
            assert bm.query(cell) == pytest.approx(exact[cell] + noise, rel=1e-12, abs=1e-9)
    # one new node per counter per step (level ctz(s)), as the stored tree draws one noise per step; every other
    # node of a release is reused from the earlier releases that share its dyadic prefix
    assert len(nodes) == n * horizon


@pytest.mark.parametrize("calibration", ["classic", "analytic"])
@pytest.mark.parametrize("step", [7, 8, 1000])
def test_derived_noise_variance_is_popcount_sigma_squared(step, calibration):
    n = 20000
    bm = GaussBM(n=n, horizon=1024, epsilon=1.0, delta=1e-3, seed=step, node_noise="derived", calibration=calibration)
    for _ in range(step):
        bm.update_all(np.zeros(n, dtype=np.int64))
    released = bm.query_all()
    expected = popcount(step) * bm.sigma**2
    assert bm.variance()[0] == pytest.approx(expected)
    assert abs(released.var() / expected - 1) < Z_1E6 * math.sqrt(2 / n)
    assert abs(released.mean()) < Z_1E6 * math.sqrt(expected / n)


@pytest.mark.parametrize(("s1", "s2"), [(12, 14), (8, 15), (7, 8), (5, 13)])
def test_two_release_times_share_exactly_their_common_dyadic_prefix(s1, s2):
    n = 20000
    bm = GaussBM(n=n, horizon=16, epsilon=1.0, delta=1e-3, seed=s1 * 100 + s2, node_noise="derived")
    zeros = np.zeros(n, dtype=np.int64)
    for s in range(1, s2 + 1):
        bm.update_all(zeros)
        if s == s1:
            first = bm.query_all()
    second = bm.query_all()
    shared = sum(1 for level in range(5) if (s1 >> level) & 1 and (s2 >> level) & 1 and s1 >> level == s2 >> level)
    var = bm.sigma**2
    a, b, c = popcount(s1) * var, popcount(s2) * var, shared * var
    assert abs(np.mean(first * second) - c) < Z_1E6 * math.sqrt((a * b + c * c) / n)


@pytest.mark.parametrize("cls", [LazyCMS, LazyCS, PunctualCMS, PunctualCS])
def test_derived_sketch_without_noise_equals_the_stored_one_and_extend_equals_updates(cls):
    kw = {"width": 7, "depth": 3, "epsilon": 1.0, "delta": 1e-3, "horizon": 500, "seed": 4}
    stream = np.random.default_rng(2).integers(0, 50, 500)
    stored = cls._uncertified_noiseless(**kw)
    derived = cls._uncertified_noiseless(**kw, node_noise="derived")
    for stop in (1, 64, 65, 333, 500):
        stored.extend(stream[stored.t : stop])
        derived.extend(stream[derived.t : stop])
        assert np.array_equal(stored._state.cells(), derived._state.cells())
    bulk, single = cls(**kw, node_noise="derived"), cls(**kw, node_noise="derived")
    bulk.extend(stream)
    for x in stream:
        single.update(int(x))
    assert np.array_equal(bulk.query_many(np.arange(50)), single.query_many(np.arange(50)))


@pytest.mark.parametrize("cls", [LazyCMS, PunctualCS])
def test_derived_sketch_cells_have_the_formula_variance(cls):
    # 3 x 2000 cells at one step each: sample variance of the released cells minus their exact counts
    kw = {"width": 2000, "depth": 3, "epsilon": 1.0, "delta": 1e-3, "horizon": 2**16, "seed": 8}
    sketch, exact = cls(**kw, node_noise="derived"), cls._uncertified_noiseless(**kw, node_noise="derived")
    stream = np.random.default_rng(3).integers(0, 10**6, 2**15 + 2**12 + 3)
    sketch.extend(stream)
    exact.extend(stream)
    noise = (sketch._state.cells() - exact._state.cells()).ravel()
    variances = sketch._state.cell_variances().ravel()
    z = noise / np.sqrt(variances)
    assert abs(z.var() - 1) < Z_1E6 * math.sqrt(2 / z.size)


def test_derived_sketch_memory_is_its_exact_counts():
    sketch = LazyCMS(width=995, depth=3, epsilon=0.3, delta=1e-3, horizon=10**6, node_noise="derived")
    model = sketch_bytes("lazy", np.array([995]), 3, 10**6, "actual", counter_class("binary", "derived"))[0]
    assert sketch.memory_bytes == model == 3 * 995 * (4 + 4) + 3 * 32 + 16  # exact + pending, hashes, key
    wide = PunctualCMS.from_memory(kilobytes=24, depth=3, epsilon=0.3, delta=1e-3, horizon=10**6, model="actual",
                                   node_noise="derived")
    assert wide.width == (24000 - 3 * 32 - 16) // 12 and wide.memory_bytes <= 24000


def test_calibration_reaches_every_counter():
    h = gauss_bm_levels(1000)
    bm = GaussBM(n=2, horizon=1000, epsilon=0.3, delta=1e-3, m=6, calibration="analytic")
    assert bm.sigma == analytic_gaussian_sigma(math.sqrt(h * 6), 0.3, 1e-3)
    sketch = LazyCMS(width=10, depth=3, epsilon=0.3, delta=1e-3, horizon=1000, calibration="analytic")
    cells = sketch._state.counters
    assert cells.sigma == analytic_gaussian_sigma(math.sqrt(cells.levels * 6), 0.3, 1e-3)


def test_bad_choices_are_named():
    assert counter_class().cls is BinaryTree and counter_class().node_noise == "stored"
    assert counter_class() is counter_class("binary", "stored")  # the registry's one descriptor
    with pytest.raises(ValueError, match="unknown counter 'fenwick'; allowed: .*binary, blt"):
        counter_class("fenwick")
    with pytest.raises(ValueError, match="unknown node_noise 'cached'; allowed: stored, derived"):
        LazyCMS(width=5, depth=2, epsilon=1.0, delta=1e-3, horizon=10, node_noise="cached")
    with pytest.raises(ValueError, match="model='paper' describes the paper's stored binary tree"):
        LazyCMS.from_memory(kilobytes=24, depth=3, epsilon=1.0, delta=1e-3, horizon=10**6, node_noise="derived")
    with noise_mode("secure"), pytest.raises(ValueError, match="noise=secure is not available"):
        GaussBM(n=2, horizon=10, epsilon=1.0, delta=1e-3, node_noise="derived")


def test_derived_privacy_is_computational():
    assert LazyCMS(width=5, depth=2, epsilon=1.0, delta=1e-3, horizon=10, node_noise="derived").privacy.notion == (
        "computational")
    assert LazyCMS(width=5, depth=2, epsilon=1.0, delta=1e-3, horizon=10).privacy.notion == "approximate"


def released_stream(counter: str, increments: np.ndarray, seed: int) -> tuple[np.ndarray, GaussBM]:
    """Releases of one GaussBM counter at every step, and the mechanism (its counter's recorded draws)."""
    bm = GaussBM(n=1, horizon=increments.size, epsilon=1.0, delta=1e-3, seed=seed, counter=counter)
    out = np.empty(increments.size)
    for s, c in enumerate(increments):
        bm.update(0, int(c))
        out[s] = bm.query(0)
    return out, bm


def test_honaker_counter_equals_the_reference_estimator():
    increments = np.random.default_rng(4).integers(-1, 3, 300)
    released, bm = released_stream("honaker", increments, seed=5)
    # the same noises, in the order the counter draws them: ctz(s) + 1 per step, levels 0..ctz(s) of step s
    draws = np.random.default_rng(np.random.SeedSequence(5)).normal(0.0, bm.sigma, 600)
    z = np.zeros((bm.levels, increments.size))
    pos = 0
    for s in range(1, increments.size + 1):
        for level in range(((s & -s).bit_length() - 1) + 1):
            z[level, s - 1] = draws[pos]
            pos += 1
    assert released == pytest.approx(honaker_stream(increments, z), rel=1e-12, abs=1e-9)


def test_blt_counter_equals_the_streaming_reference():
    increments = np.random.default_rng(6).integers(-1, 3, 300)
    released, bm = released_stream("blt", increments, seed=7)
    z = np.random.default_rng(np.random.SeedSequence(7)).normal(0.0, 1.0, increments.size)
    expected = np.cumsum(increments) + bm.sigma * blt_noise_stream(bm.counter.params, z)
    assert released == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("counter", ["honaker", "blt"])
@pytest.mark.parametrize("step", [7, 64, 200])
def test_counter_noise_variance_matches_its_formula(counter, step):
    n = 20000
    bm = GaussBM(n=n, horizon=256, epsilon=1.0, delta=1e-3, seed=step, counter=counter)
    for _ in range(step):
        bm.update_all(np.zeros(n, dtype=np.int64))
    expected = bm.variance()[0]
    per_unit = honaker_variance(step, bm.levels) if counter == "honaker" else noise_variance(bm.counter.params, step)
    assert expected == pytest.approx(per_unit * bm.sigma**2)
    assert abs(bm.query_all().var() / expected - 1) < Z_1E6 * math.sqrt(2 / n)


def test_better_counters_lower_the_mean_variance_at_the_same_calibration():
    # mean over steps 1..T of the release variance, in units of the binary tree's at the same (eps, delta, m)
    horizon = 2**14
    binary = GaussBM(n=1, horizon=horizon, epsilon=0.3, delta=1e-3, m=6)
    steps = np.arange(1, horizon + 1)
    base = binary.variance(steps).mean()
    honaker = GaussBM(n=1, horizon=horizon, epsilon=0.3, delta=1e-3, m=6, counter="honaker").variance(steps).mean()
    blt_ = GaussBM(n=1, horizon=horizon, epsilon=0.3, delta=1e-3, m=6, counter="blt").variance(steps).mean()
    assert honaker / base < 0.6  # v_l -> 1/2: at most ~0.55 of the binary tree's once most set bits are high levels
    assert blt_ / base <= 0.25  # the target for BLT


def test_lazy_hh_thresholds_cover_the_calibration_it_uses():
    from dpstream.heavy_hitters import LazyHH
    from dpstream.heavy_hitters.thresholds import lazy_cms_noise_tail

    kw = {"k": 4, "k_tilde": 16, "delta": 1e-3, "beta": 1e-4, "horizon": 4096, "seed": 0}
    for eps in (0.5, 8.0):  # analytic below classic at 0.5, above it at 8 (calibration erratum)
        classic = LazyHH(**kw, epsilon=eps)
        analytic = LazyHH(**kw, epsilon=eps, calibration="analytic", node_noise="derived")
        assert analytic.sketch._state.counters.calibration == "analytic"
        ratio = analytic.sketch._state.counters.sigma / classic.sketch._state.counters.sigma
        tail = lazy_cms_noise_tail(4096, 16, eps, 1e-3, classic.depth, 1e-4)
        assert analytic.gamma >= tail * max(1.0, ratio) * (1 - 1e-12)
        assert (analytic.gamma > classic.gamma) == (ratio > 1.0 and tail * ratio > classic.gamma)


def test_derived_cached_and_partial_releases_equal_the_uncached_release():
    # the node cache and the partial releases (cells skipped for some steps, steps moving back and forth, the whole
    # table after partial ones) must give exactly release()'s floats: integers and floats compared exactly
    n, horizon = 40, 1000
    counter = BinaryTree(n=n, horizon=horizon, epsilon=0.5, delta=1e-3, m=2, seed=5, node_noise="derived")
    counter._exact[0] = np.arange(n) * 3 - 50
    rng = np.random.default_rng(2)
    steps = rng.integers(0, horizon + 1, n)
    for round_ in range(60):
        steps = np.clip(steps + rng.integers(-3, 9, n) * (rng.random(n) < 0.8), 0, horizon)
        expected = counter.release(np.arange(n), steps)
        if round_ % 7 == 6:
            assert np.array_equal(counter.release_all(steps), expected)
            continue
        wanted = rng.random(n) < 0.6
        out = counter.release_wanted(steps, wanted)
        assert np.array_equal(out[wanted], expected[wanted])
        assert np.isnan(out[~wanted]).all()


@pytest.mark.parametrize("cls", [LazyCMS, LazyCS])
def test_derived_sketch_queries_read_only_their_cells_and_give_the_whole_table_estimates(cls):
    # a query releases only the cells its keys hash to; its estimates equal Alg. 4 over the whole released table
    sketch = cls(width=64, depth=5, epsilon=0.5, delta=1e-3, horizon=5000, seed=4, node_noise="derived")
    rng = np.random.default_rng(3)
    for block in range(5):
        sketch.extend(rng.zipf(1.3, 1000) % 10_000)
        keys = rng.integers(0, 10_000, 50 + 40 * block)
        rows = sketch.row_estimates_many(keys)  # every cell released
        whole = np.median(rows, axis=0) if cls is LazyCS else rows.min(axis=0)
        assert np.array_equal(sketch.query_many(keys), whole)


def test_a_count_dtype_name_from_a_state_is_checked_before_numpy_parses_it():
    """A dtype name with a comma makes numpy call ``ast.literal_eval``: a SyntaxError, not a refusal."""
    with pytest.raises(ValueError, match=r"count_dtype=','; allowed: \('int32', 'int64'\)"):
        BinaryTree._allocation_bytes({"count_dtype": ",", "n": 1, "horizon": 8, "node_noise": "derived"})
