"""Claims about the six frequency sketches (Holland, Alg. 3-5): one check suite over all of them."""

import math

import numpy as np
import pytest
from scipy import stats
from test_binary_mechanism import record_draws, released_from_scratch

from dpstream.counters.gauss_bm import popcount
from dpstream.hashing import bucket_many, canonical_keys
from dpstream.privacy.calibration import cell_neighbour_m, gauss_bm_levels, gauss_bm_sigma
from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS, lazy, punctual
from dpstream.sketches._kernels import query_hashed
from dpstream.sketches.memory import sketch_bytes

ALL = [CMS, CS, PunctualCMS, PunctualCS, LazyCMS, LazyCS]
PRIVATE = [PunctualCMS, PunctualCS, LazyCMS, LazyCS]
EXACT_TWIN = {LazyCMS: CMS, LazyCS: CS, PunctualCMS: CMS, PunctualCS: CS}
KW = {"width": 16, "depth": 3, "epsilon": 1.0, "delta": 1e-3, "horizon": 1000, "seed": 7}
Z_1E6 = stats.norm.isf(0.5e-6)  # two-sided normal quantile at p = 1e-6


def _zipf_stream(n: int, seed: int, universe: int = 500) -> np.ndarray:
    return (np.random.default_rng(seed).zipf(1.3, n) % universe).astype(np.int64)


def _state_arrays(sketch) -> list[np.ndarray]:
    state = sketch._state
    if hasattr(state, "counts"):
        return [state.counts]
    arrays = [state.counters._exact, state.counters._noisy_sums, state.counters._steps]
    return arrays + ([state.pending] if hasattr(state, "pending") else [])


@pytest.mark.parametrize("cls", ALL)
def test_extend_equals_update_loop(cls, monkeypatch):
    # small noise blocks so that extend crosses many block boundaries
    monkeypatch.setattr(lazy, "ITEMS_PER_BLOCK", 7)
    monkeypatch.setattr(punctual, "NOISE_BLOCK", 100)
    stream = _zipf_stream(300, 1)
    bulk, single = cls(**KW), cls(**KW)
    bulk.extend(stream[:123])
    bulk.extend(stream[123:])
    for x in stream:
        single.update(int(x))
    assert bulk.t == single.t == 300
    for a, b in zip(_state_arrays(bulk), _state_arrays(single), strict=True):
        assert np.array_equal(a, b)
    keys = np.arange(600)
    assert np.array_equal(bulk.query_many(keys), single.query_many(keys))


@pytest.mark.parametrize("cls", ALL)
def test_query_many_equals_query(cls):
    sketch = cls(**KW)
    sketch.extend(_zipf_stream(400, 2))
    keys = np.array([0, 1, 2, 3, 17, 499, 10**9])
    assert sketch.query_many(keys).tolist() == [sketch.query(int(k)) for k in keys]
    assert np.array_equal(sketch.variance_many(keys)[:, 4], sketch.variance(17))


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5, 8])
def test_query_many_is_alg4_min_or_median_of_row_estimates(cls, depth):
    # the compiled query hashes each key and combines its d cells: bit for bit numpy's min / median (mean of the
    # two middle rows for an even depth; +0.0 for a -0.0 middle) over the row estimates v_i of the released table
    sketch = cls(**(KW | {"depth": depth}))
    sketch.extend(_zipf_stream(700, 12))
    keys = np.concatenate([np.arange(600), [10**9, 2**62, -5]])  # three blocks of the compiled query
    rows = sketch.row_estimates_many(keys)
    combined = np.median(rows, axis=0) if cls in (CS, PunctualCS, LazyCS) else rows.min(axis=0)
    assert np.array_equal(sketch.query_many(keys).view(np.int64), combined.view(np.int64))


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 7])
def test_the_compiled_median_is_numpys_with_ties_signed_zeros_infinities_and_nan(depth):
    rng = np.random.default_rng(depth)
    values = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, 1e308, -1e308])
    cells = rng.choice(values, size=(depth, 64), p=[0.2, 0.2, 0.15, 0.15, 0.1, 0.05, 0.05, 0.02, 0.04, 0.04])
    cols = np.tile(np.arange(64), (depth, 1))
    incs = rng.choice([-1, 1], size=(depth, 64))
    with np.errstate(invalid="ignore"):  # inf - inf in numpy's mean of the two middle rows
        expected = np.median(incs * cells, axis=0)
    got = query_hashed(cols, incs, True, cells)
    nan = np.isnan(expected)
    assert nan.any() and np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.int64), expected[~nan].view(np.int64))


@pytest.mark.parametrize("cls", PRIVATE)
@pytest.mark.parametrize("length", [1, 16, 17, 300, 333])
def test_released_cells_equal_sum_of_noisy_nodes_over_set_bits(cls, length, monkeypatch):
    # every cell's released prefix sum is kept up to date by the update kernels; it equals, bit for bit, the sum
    # recomputed from scratch of (exact pushed count + its recorded noise) over the set bits of the cell's step
    monkeypatch.setattr(lazy, "ITEMS_PER_BLOCK", 50)
    monkeypatch.setattr(punctual, "NOISE_BLOCK", 1000)
    w, d = KW["width"], KW["depth"]
    sketch = cls(**(KW | {"horizon": 400}))
    drawn = record_draws(sketch._state.counters)
    stream = _zipf_stream(length, 13)
    sketch.extend(stream[: length // 3])
    sketch.extend(stream[length // 3 :])
    noise = np.concatenate(drawn)
    cols, signs = bucket_many(sketch._params, canonical_keys(stream), w)
    incs = signs if cls in (PunctualCS, LazyCS) else np.ones_like(signs)
    t = np.arange(length)
    cells = np.arange(d)[:, None] * w + cols  # (d, length): the cell of row i that item t hashes to
    steps = sketch._state.counters.steps
    values = np.zeros((d * w, length // w + 2 if cls in (LazyCMS, LazyCS) else length), dtype=np.int64)
    if cls in (LazyCMS, LazyCS):
        # column j pushes at items t = q w + j (q = 0, 1, ...); item t' lands in the first push at or after it,
        # drawing noise t d + i for row i
        push = np.maximum(0, -(-(t - cols) // w))
        np.add.at(values, (cells, push), incs)
        rows, column = np.divmod(np.arange(d * w), w)
        pushes = np.arange(values.shape[1])
        noises = np.zeros(values.shape)
        pushed = pushes[None, :] < steps[:, None]
        noises[pushed] = noise[((pushes[None, :] * w + column[:, None]) * d + rows[:, None])[pushed]]
    else:
        # every cell steps at every item t, drawing noise t d w + cell
        np.add.at(values, (cells, np.broadcast_to(t, cells.shape)), incs)
        noises = noise.reshape(length, d * w).T
    assert np.array_equal(sketch._state.cells().ravel(), released_from_scratch(values, noises, steps))


@pytest.mark.parametrize("cls", ALL)
def test_seeded_runs_are_reproducible(cls):
    stream = _zipf_stream(500, 3)
    runs = []
    for seed in (7, 7, 8):
        sketch = cls(**(KW | {"seed": seed}))
        sketch.extend(stream)
        runs.append(sketch.row_estimates_many(np.arange(500)))
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_seed_sequence_is_not_consumed_and_matches_its_int():
    ss = np.random.SeedSequence(3)
    runs = [LazyCS(**(KW | {"seed": seed})) for seed in (ss, ss, 3)]
    for sketch in runs:
        sketch.extend(_zipf_stream(200, 0))
    assert np.array_equal(runs[0].query_many(np.arange(50)), runs[1].query_many(np.arange(50)))
    assert np.array_equal(runs[0].query_many(np.arange(50)), runs[2].query_many(np.arange(50)))
    assert ss.n_children_spawned == 0


@pytest.mark.parametrize("cls", ALL)
def test_state_after_zero_updates_is_empty(cls):
    sketch = cls(**KW)
    sketch.extend(np.array([]))
    assert sketch.t == 0
    assert np.array_equal(sketch.query_many(np.arange(50)), np.zeros(50))
    assert np.array_equal(sketch.variance(3), np.zeros(3))


def test_cms_never_underestimates():
    stream = _zipf_stream(20_000, 4, universe=5000)
    sketch = CMS(width=50, depth=3, horizon=20_000, seed=0)
    sketch.extend(stream)
    keys = np.arange(5000)
    truth = np.bincount(stream, minlength=5000)
    assert (sketch.query_many(keys) >= truth).all()
    assert (sketch.query_many(keys) > truth).any()  # collisions at w = 50 do happen


def test_cs_row_estimate_is_unbiased_over_seeds():
    # one CS row: E[g(x) C[h(x)]] = f_x because pairwise independent signs cancel every colliding item.
    # Over 600 seeds, |mean error| < z(p = 1e-6) * sd / sqrt(600), sd estimated from the sample.
    stream = _zipf_stream(3000, 5, universe=300)
    x, truth = 3, int((stream == 3).sum())
    errors = []
    for seed in range(600):
        sketch = CS(width=8, depth=1, horizon=3000, seed=seed)
        sketch.extend(stream)
        errors.append(sketch.query(x) - truth)
    errors = np.array(errors)
    assert errors.std() > 0
    assert abs(errors.mean()) < Z_1E6 * errors.std(ddof=1) / math.sqrt(errors.size)


@pytest.mark.parametrize("cls", [PunctualCMS, PunctualCS])
def test_punctual_without_noise_equals_exact_sketch(cls):
    stream = _zipf_stream(257, 6)
    noiseless = cls._uncertified_noiseless(**KW)
    exact = EXACT_TWIN[cls](**KW)
    noiseless.extend(stream)
    exact.extend(stream)
    assert np.array_equal(noiseless._state.cells(), exact._state.cells())


@pytest.mark.parametrize("cls", [LazyCMS, LazyCS])
@pytest.mark.parametrize("length", [0, 5, 16, 300, 333])
def test_lazy_without_noise_equals_exact_sketch_up_to_pending_backlog(cls, length):
    kw = KW | {"horizon": 400}
    stream = _zipf_stream(length, 7)
    noiseless = cls._uncertified_noiseless(**kw)
    exact = EXACT_TWIN[cls](**kw)
    noiseless.extend(stream)
    exact.extend(stream)
    w, d = kw["width"], kw["depth"]
    # column j has been pushed floor(t/w) + (1 if j < t mod w) times (Alg. 5) ...
    pushes = length // w + (np.arange(w) < length % w)
    assert np.array_equal(noiseless._state.counters.steps.reshape(d, w), np.broadcast_to(pushes, (d, w)))
    # ... so its backlog is exactly the items since its last push: t' >= (pushes - 1) * w + j + 1, hashed to j
    cols, signs = bucket_many(noiseless._params, canonical_keys(stream), w)
    incr = signs if cls is LazyCS else np.ones_like(signs)
    since = (pushes - 1) * w + np.arange(w) + 1
    backlog = np.zeros((d, w), dtype=np.int64)
    for i in range(d):
        fresh = np.arange(length) >= since[cols[i]]
        np.add.at(backlog[i], cols[i][fresh], incr[i][fresh])
    assert np.array_equal(noiseless._state.pending, backlog)
    # every released cell equals the exact cell minus its backlog, and the backlog spans fewer than w items
    assert np.array_equal(noiseless._state.cells() + backlog, exact._state.cells())
    assert (np.abs(backlog) <= w).all()
    keys = np.arange(600)
    delay = noiseless.query_many(keys) - exact.query_many(keys)
    if cls is LazyCMS:
        assert ((-w <= delay) & (delay <= 0)).all()
    else:
        assert (np.abs(delay) <= w).all()


@pytest.mark.parametrize("cls", PRIVATE)
def test_query_variance_equals_analytic_formula(cls):
    kw = KW | {"horizon": 1000, "width": 16}
    sketch = cls(**kw)
    stream = _zipf_stream(555, 8)
    sketch.extend(stream)
    keys = np.arange(40)
    cols, _ = bucket_many(sketch._params, canonical_keys(keys), 16)
    m = cell_neighbour_m(cls._estimator.signed, kw["depth"])
    if cls in (LazyCMS, LazyCS):
        steps = 555 // 16 + (cols < 555 % 16)
        sigma = gauss_bm_sigma(math.ceil(1000 / 16), 1.0, 1e-3, m)
    else:
        steps = np.full_like(cols, 555)
        sigma = gauss_bm_sigma(1000, 1.0, 1e-3, m)
    assert np.allclose(sketch.variance_many(keys), popcount(steps) * sigma**2, rtol=1e-12, atol=0)


@pytest.mark.parametrize("cls", PRIVATE)
def test_query_row_noise_matches_its_variance(cls):
    # Over 1000 seeds, each row estimate of a fixed key minus its noiseless twin (same seed, same hashes) is
    # N(0, variance(x)_i), independent across rows (different cells) and seeds: the 3000 standardised errors
    # have sum of squares ~ chi2(3000) (accept between the p = 1e-6 two-sided quantiles) and mean ~ N(0, 1/3000).
    kw = {"width": 4, "depth": 3, "epsilon": 0.5, "delta": 1e-3, "horizon": 64}
    stream = _zipf_stream(45, 9, universe=10)
    z = []
    for seed in range(1000):
        noisy, twin = cls(**kw, seed=seed), cls._uncertified_noiseless(**kw, seed=seed)
        noisy.extend(stream)
        twin.extend(stream)
        err = noisy.row_estimates_many([1])[:, 0] - twin.row_estimates_many([1])[:, 0]
        z.append(err / np.sqrt(noisy.variance(1)))
    z = np.concatenate(z)
    assert stats.chi2.ppf(0.5e-6, z.size) < (z**2).sum() < stats.chi2.isf(0.5e-6, z.size)
    assert abs(z.mean()) < Z_1E6 / math.sqrt(z.size)


def test_cell_neighbour_m_is_2d_for_count_min_and_4d_for_count_sketch():
    # erratum: a CS cell shared by x and x' with opposite signs moves by 2 (squared L2 change 4 per row)
    assert [cell_neighbour_m(False, d) for d in (1, 3, 7)] == [2, 6, 14]
    assert [cell_neighbour_m(True, d) for d in (1, 3, 7)] == [4, 12, 28]
    for cls, m in ((PunctualCMS, 6), (LazyCMS, 6), (PunctualCS, 12), (LazyCS, 12)):
        assert cls(**KW)._state.counters.m == m


@pytest.mark.parametrize("cls", [PunctualCS, LazyCS])
def test_count_sketch_cell_noise_has_the_m_4d_sigma(cls):
    # The noise a CS actually adds, against sigma = gauss_bm_sigma(cell horizon, eps, delta, m = 4d) computed
    # here from the formula (not read from the object). Cells after step s carry N(0, popcount(s) sigma^2);
    # over 40 seeds x 3 x 64 cells the standardised errors' sum of squares ~ chi2(7680), accepted between the
    # p = 1e-6 two-sided quantiles; the m = 2d sigma (variance / 2) would give a sum near 2 x 7680, far outside.
    kw = {"width": 64, "depth": 3, "epsilon": 0.7, "delta": 1e-4, "horizon": 64 * 13}
    cell_horizon = 64 * 13 if cls is PunctualCS else 13
    sigma = gauss_bm_sigma(cell_horizon, 0.7, 1e-4, 4 * 3)
    stream = _zipf_stream(64 * 12 + 5, 3, universe=1000)  # Lazy: cells took 12 or 13 pushes
    z = []
    for seed in range(40):
        noisy, twin = cls(**kw, seed=seed), cls._uncertified_noiseless(**kw, seed=seed)
        noisy.extend(stream)
        twin.extend(stream)
        cell_steps = noisy._state.counters.steps.reshape(3, 64)
        assert cls is PunctualCS or np.array_equal(np.unique(cell_steps), [12, 13])
        z.append(((noisy._state.cells() - twin._state.cells()) / (sigma * np.sqrt(popcount(cell_steps)))).ravel())
    z = np.concatenate(z)
    assert stats.chi2.ppf(0.5e-6, z.size) < (z**2).sum() < stats.chi2.isf(0.5e-6, z.size)


@pytest.mark.parametrize("cls", PRIVATE)
def test_cell_noise_variance_matches_popcount_sigma2(cls):
    # Every released cell is its exact value plus N(0, popcount(step) sigma^2), independently; over
    # 2 sketches x 3 x 2500 cells the standardised errors' sum of squares ~ chi2(15 000) at p = 1e-6.
    kw = {"width": 2500, "depth": 3, "epsilon": 0.3, "delta": 1e-3}
    rounds = (7, 13)  # Lazy: rounds of w pushes (plus a partial one); Punctual: steps of every cell
    lengths = [r * 2500 + 17 * r for r in rounds] if cls in (LazyCMS, LazyCS) else list(rounds)
    z = []
    for seed, length in enumerate(lengths):
        noisy = cls(**kw, horizon=length, seed=seed)
        twin = cls._uncertified_noiseless(**kw, horizon=length, seed=seed)
        stream = _zipf_stream(length, seed, universe=10**6)
        noisy.extend(stream)
        twin.extend(stream)
        var = noisy._state.cell_variances()
        assert np.allclose(var, popcount(noisy._state.counters.steps).reshape(3, 2500) * noisy._state.counters.sigma**2)
        z.append(((noisy._state.cells() - twin._state.cells()) / np.sqrt(var)).ravel())
    z = np.concatenate(z)
    assert stats.chi2.ppf(0.5e-6, z.size) < (z**2).sum() < stats.chi2.isf(0.5e-6, z.size)
    assert abs(z.mean()) < Z_1E6 / math.sqrt(z.size)


@pytest.mark.parametrize(
    ("cls", "width"),
    [(CMS, 2000), (CS, 2000), (LazyCMS, 55), (LazyCS, 55), (PunctualCMS, 33), (PunctualCS, 33)],
)
def test_paper_memory_model_reproduces_paper_widths(cls, width):
    sketch = cls.from_memory(kilobytes=24, depth=3, epsilon=0.3, delta=0.001, horizon=2**20, seed=0)
    assert sketch.width == width


def test_paper_model_levels_versus_allocated_levels():
    # paper model: Lazy 12 levels at w = 55, Punctual 20 at T = 2^20; allocated: 15 and 21
    assert sketch_bytes("lazy", [55], 3, 2**20, "paper")[0] == 12 * 12 * 3 * 55
    assert sketch_bytes("punctual", [33], 3, 2**20, "paper")[0] == 12 * 20 * 3 * 33
    assert LazyCMS(width=55, depth=3, epsilon=0.3, delta=0.001, horizon=2**20)._state.counters.levels == 15
    assert gauss_bm_levels(2**20) == 21


@pytest.mark.parametrize("cls", ALL)
def test_memory_bytes_counts_the_arrays_held_and_actual_model_fits(cls):
    sketch = cls.from_memory(kilobytes=24, depth=3, epsilon=0.3, delta=0.001, horizon=2**20, model="actual")
    held = sum(a.nbytes for a in _state_arrays(sketch)) + sketch._params.nbytes
    assert sketch.memory_bytes == held
    assert sketch.memory_bytes <= 24_000
    kind = sketch._schedule.kind
    assert sketch_bytes(kind, [sketch.width], 3, 2**20, "actual")[0] == held
    bigger = sketch_bytes(kind, np.arange(sketch.width + 1, 3 * sketch.width), 3, 2**20, "actual")
    assert (bigger > 24_000).all()


@pytest.mark.parametrize("cls", ALL)
def test_string_keys_count_like_their_integers(cls):
    words = np.array(["apple", "pear", "apple", "fig", "apple", "pear"])
    sketch = cls._uncertified_noiseless(**(KW | {"width": 1000}))
    sketch.extend(words)
    sketch.update("fig")
    if cls in (LazyCMS, LazyCS):
        sketch.extend(np.zeros(1000 - 7, dtype=np.int64) + 10**6)  # push every column once more
    assert [sketch.query(w) for w in ("apple", "pear", "fig")] == [3.0, 2.0, 2.0]


def test_public_private_sketches_are_certified_and_the_noiseless_switch_and_the_baselines_are_not():
    assert all(cls(**KW).certified for cls in PRIVATE) and not any(cls(**KW).certified for cls in (CMS, CS))
    assert not LazyCMS._uncertified_noiseless(**KW).certified
    assert all(cls(**KW).private for cls in PRIVATE) and not CMS(**KW).private


def test_non_private_sketches_ignore_epsilon_and_delta():
    assert CMS(width=4, depth=2, epsilon=-1, delta=5, horizon=10).width == 4
    assert CS(width=4, depth=2, horizon=10).depth == 2


@pytest.mark.parametrize("cls", PRIVATE)
@pytest.mark.parametrize("epsilon", [0, -1.0, float("nan"), None])
def test_rejects_nonpositive_epsilon(cls, epsilon):
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        cls(**(KW | {"epsilon": epsilon}))


@pytest.mark.parametrize("cls", PRIVATE)
@pytest.mark.parametrize("delta", [0, 1, 1.5, -0.1])
def test_rejects_delta_outside_open_unit_interval(cls, delta):
    with pytest.raises(ValueError, match=r"delta must be in the open interval \(0, 1\)"):
        cls(**(KW | {"delta": delta}))


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("name", ["width", "depth", "horizon"])
def test_rejects_width_depth_or_horizon_below_one(cls, name):
    with pytest.raises(ValueError, match=f"{name} must be an integer >= 1, got 0"):
        cls(**(KW | {name: 0}))


@pytest.mark.parametrize("cls", ALL)
def test_rejects_stream_longer_than_horizon_on_extend(cls):
    sketch = cls(**(KW | {"horizon": 20}))
    sketch.extend(np.arange(15))
    with pytest.raises(ValueError, match=r"t=21 would exceed horizon=20"):
        sketch.extend(np.arange(6))
    assert sketch.t == 15  # nothing was processed


@pytest.mark.parametrize("cls", ALL)
def test_rejects_stream_longer_than_horizon_on_update(cls):
    sketch = cls(**(KW | {"horizon": 3}))
    for x in range(3):
        sketch.update(x)
    with pytest.raises(ValueError, match=r"t=4 would exceed horizon=3"):
        sketch.update(3)


@pytest.mark.parametrize("cls", ALL)
def test_rejects_memory_too_small_for_one_column(cls):
    with pytest.raises(ValueError, match=r"kilobytes=0\.001 is too small .* the minimum is [0-9.]+ KB"):
        cls.from_memory(kilobytes=0.001, depth=3, epsilon=0.3, delta=0.001, horizon=2**20)


def test_rejects_unknown_memory_model():
    with pytest.raises(ValueError, match="unknown model 'guess'; allowed: actual, paper"):
        LazyCMS.from_memory(kilobytes=24, depth=3, epsilon=0.3, delta=0.001, horizon=2**20, model="guess")


def test_rejects_nonpositive_memory():
    with pytest.raises(ValueError, match="kilobytes must be a finite number > 0, got -5"):
        CMS.from_memory(kilobytes=-5, depth=3, horizon=100)


def test_rejects_float_items():
    with pytest.raises(TypeError, match="keys must be integers, str or bytes"):
        LazyCMS(**KW).extend(np.array([0.5, 1.5]))
