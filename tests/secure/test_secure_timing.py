"""Timing levels of the discrete secure noise (docs/secure-noise.md).

Level 2, the constant-time discrete Gaussian (``secure.cdt``, ``node_noise="discrete_secure_ct"``): its distribution,
fixed work per draw and per release, the delta it costs, and no float on its decision path. Level 1, block drawing
of the exact rejection sampler (``release.block_noise_sums``): the same values, the same work at every step of a block.
"""

from __future__ import annotations

import math

import mpmath
import numba
import numpy as np
import pytest
from test_secure_noise import FLOAT_TOKENS, N_DRAWS, _chi_square_p, _nonces

from dpstream.counters import counter_class
from dpstream.counters.discrete import DELTA_SHARE
from dpstream.counters.gauss_bm import GaussBM
from dpstream.privacy.discrete_gaussian import discrete_gaussian_sigma2
from dpstream.secure import cdt, chacha, lanes, release, samplers
from dpstream.sketches import LazyCMS, PunctualCMS


def _table(a: int, b: int) -> tuple[np.ndarray, np.ndarray, int]:
    # a table whose distance from exact over 10^6 draws is below 1e-20: undetectable by the chi-square test
    k = cdt.table_size(a / b, N_DRAWS, 1.0, 1e-12)
    hi, lo = cdt.cdt_table(a, b, k)
    return hi, lo, k


@pytest.mark.parametrize(("a", "b"), [(1, 1), (5, 2), (10, 1), (1000, 3)])
def test_constant_time_sampler_matches_pmf(a: int, b: int) -> None:
    # fixed key and nonces; fails only when p < 1e-6 (the brief's level) for a correct sampler
    hi, lo, k = _table(a, b)
    key = chacha.key_words(bytes(range(50, 82)))
    st = samplers.new_state()
    draws = cdt.discrete_gaussian_ct_batch(key, _nonces(N_DRAWS, 1000 + a), hi, lo, st)
    assert st[4] == cdt.CT_WORDS * N_DRAWS  # a fixed 4 words per draw, whatever the values
    assert np.abs(draws).max() <= k
    support = np.arange(-k, k + 1)
    assert _chi_square_p(draws, -support.astype(float) ** 2 * b / (2 * a), support) > 1e-6


@pytest.mark.parametrize(("a", "b"), [(1, 1), (5, 2), (1000, 3)])
def test_table_is_the_floor_of_the_cumulative_pmf(a: int, b: int) -> None:
    # an independent 60-digit evaluation (mpmath); the table's entries are within 1 unit of floor(C_j 2^127)
    hi, lo, k = _table(a, b)
    table = [(int(h) << 64) | int(x) for h, x in zip(hi, lo, strict=True)]
    with mpmath.workdps(60):
        s2 = mpmath.mpf(a) / b
        last = k + int(20 * math.sqrt(a / b)) + 20
        terms = [mpmath.exp(-mpmath.mpf(y) ** 2 / (2 * s2)) for y in range(last + 1)]
        z = terms[0] + 2 * mpmath.fsum(terms[1:])
        cumulative = [terms[0] + 2 * mpmath.fsum(terms[1:j + 1]) for j in range(k)]
        exact = [int(mpmath.floor(c / z * mpmath.mpf(2) ** 127)) for c in cumulative]
    assert all(abs(t - e) <= 1 for t, e in zip(table, exact, strict=True))
    assert all(x < y for x, y in zip(table, table[1:], strict=False))  # strictly increasing: every value reachable


def test_table_size_is_the_smallest_that_fits_the_share() -> None:
    sigma2, draws, epsilon, budget = 1355.02, 2982 * 1055, 1.0, 1e-6 / 1024
    k = cdt.table_size(sigma2, draws, epsilon, budget)
    scale = (1 + math.e) * draws
    assert scale * cdt.tail_bound(sigma2, k) <= budget / 2 < scale * cdt.tail_bound(sigma2, k - 1)
    assert cdt.sampler_delta(sigma2, k, draws, epsilon) <= budget
    with pytest.raises(ValueError, match="no constant-time table") as info:
        cdt.table_size(sigma2, draws, epsilon, 1e-300)
    assert "\n" not in str(info.value)


def test_tail_bound_bounds_the_tail() -> None:
    for sigma2, k in [(1.0, 3), (2.5, 6), (100.0, 35)]:
        with mpmath.workdps(40):
            ys = range(0, k + int(40 * math.sqrt(sigma2)) + 40)
            w = [mpmath.exp(-mpmath.mpf(y) ** 2 / (2 * sigma2)) for y in ys]
            tail = 2 * mpmath.fsum(w[k + 1:]) / (w[0] + 2 * mpmath.fsum(w[1:]))
        assert tail <= cdt.tail_bound(sigma2, k)


def test_counter_splits_delta_and_states_the_sampler_term() -> None:
    cls = counter_class("binary", "discrete_secure_ct")
    counter = cls(n=300, horizon=4096, epsilon=1.0, delta=1e-6, m=6, seed=1)
    share = DELTA_SHARE * 1e-6
    assert counter.sigma2 == discrete_gaussian_sigma2(counter.levels * 6, 1.0, 1e-6 * (1 - DELTA_SHARE))
    assert 0 < counter.sampler_delta <= share
    assert counter.sampler_delta == cdt.sampler_delta(float(counter.sigma2), counter.table_size, 300 * 4096, 1.0)
    bm = GaussBM(n=300, horizon=4096, epsilon=1.0, delta=1e-6, m=6, seed=1, node_noise="discrete_secure_ct")
    assert bm.privacy.sampler_delta == bm.counter.sampler_delta and bm.privacy.delta == 1e-6
    exact = GaussBM(n=300, horizon=4096, epsilon=1.0, delta=1e-6, m=6, seed=1, node_noise="discrete_secure")
    assert exact.privacy.sampler_delta == 0.0


def _drawn(k: int, s: int, previous: int) -> int:
    """Nodes a cached release at step s draws (``release.cached_noise_sums``).

    The 2^k - 1 of its block below level k, and those of its set bits >= k whose node the cell's previous block
    (-1: none) does not share.
    """
    return (1 << k) - 1 + sum(1 for level in range(k, s.bit_length())
                              if s >> level & 1 and (previous < 0 or previous >> level != s >> level))


def _expected_words(step_sequences: list[np.ndarray], k: int = 0, ahead: bool = False) -> list[int]:
    """4 words per drawn node, per whole-table release, each cell's blocks followed as the cache follows them.

    A cell released at the step of its last release draws nothing; with ``ahead``, nor one released in the block of
    its last release.
    """
    n = step_sequences[0].size
    current, previous, words = [-1] * n, [-1] * n, []
    for steps in step_sequences:
        total = 0
        for cell, s in enumerate(int(x) for x in steps):
            same_block = current[cell] >= 0 and current[cell] >> k == s >> k
            if current[cell] == s or (ahead and same_block):
                current[cell] = s
                continue
            if not same_block:
                previous[cell] = current[cell]
            current[cell] = s
            total += _drawn(k, s, previous[cell])
        words.append(cdt.CT_WORDS * total)
    return words


@pytest.mark.parametrize("cls", [LazyCMS, PunctualCMS])
def test_words_before_each_release_depend_only_on_time_width_depth(cls) -> None:
    # two sketches, different data and keys (one seeded, one from OS entropy): the same words at every release,
    # and the formula's count
    width, depth, horizon = 13, 3, 1500
    kw = {"width": width, "depth": depth, "epsilon": 1.0, "delta": 1e-6, "horizon": horizon,
          "node_noise": "discrete_secure_ct"}
    sketches = [cls(**kw, seed=4), cls(**kw)]
    streams = [np.zeros(horizon, dtype=np.int64), np.random.default_rng(9).integers(0, 10**6, horizon)]
    sequences = []
    for sketch, items in zip(sketches, streams, strict=True):
        words, t = [], 0
        for end in [1, 2, 7, 100, 101, 640, 1023, 1024, 1500]:
            sketch.extend(items[t:end])
            t = end
            before = sketch._state.counters.words_consumed
            sketch.query_many(np.arange(5))
            words.append(sketch._state.counters.words_consumed - before)
        sequences.append(words)
    assert sequences[0] == sequences[1]
    ends = [1, 2, 7, 100, 101, 640, 1023, 1024, 1500]
    if cls is LazyCMS:  # cell j of each row at floor(t / w) + (j < t mod w)
        steps = [np.tile(t // width + (np.arange(width) < t % width), depth) for t in ends]
    else:  # every cell is at step t
        steps = [np.full(width * depth, t) for t in ends]
    assert sequences[0] == _expected_words(steps)


def test_constant_time_sketch_releases_integers_and_flags() -> None:
    seeded = LazyCMS(width=32, depth=3, epsilon=1.0, delta=1e-6, horizon=4096, seed=2, node_noise="discrete_secure_ct")
    seeded.extend(np.arange(3000) % 40)
    est = seeded.query_many(np.arange(40))
    assert np.array_equal(est, np.round(est)) and seeded.certified and not seeded.deployable
    private = LazyCMS(width=32, depth=3, epsilon=1.0, delta=1e-6, horizon=4096, node_noise="discrete_secure_ct")
    assert private.deployable and 0 < private.privacy.sampler_delta <= 1e-6 / 1024


def test_blt_refuses_constant_time_in_one_line() -> None:
    with pytest.raises(ValueError, match="discrete_secure_ct") as info:
        counter_class("blt", "discrete_secure_ct")
    assert "\n" not in str(info.value)


def test_no_float_on_the_constant_time_and_block_decision_paths() -> None:
    # as test_secure_noise.test_no_float_on_the_decision_path, for the table sampler and both new release loops
    key, nonce = np.zeros(8, np.uint32), np.zeros(3, np.uint32)
    buf, st = np.zeros(16, np.uint32), samplers.new_state()
    hi, lo = cdt.cdt_table(10, 1, 30)
    calls = [
        (cdt._dgauss_ct, (hi, lo, key, nonce, buf, st)),
        (cdt._dgauss_ct_words, (hi, lo, np.uint32(1), np.uint32(2), np.uint32(3), np.uint32(4), st)),
        (cdt.discrete_gaussian_ct_batch, (key, np.zeros((2, 3), np.uint32), hi, lo, st)),
        (lanes.draw_queued, (key, lanes.table(), hi, lo, *lanes.queue()[:3], 2, *lanes.queue()[3:], st,
                             np.zeros(3, np.int64))),
        (release._node_sums, (key, lanes.table(), hi, lo, np.int64(0), np.arange(3), np.array([5, 6, 7]), st)),
        *((release._cached_draws, (key, lanes.table(), hi, lo, np.int64(2), ahead, np.array([5, 6, 7]), st,
                                   np.zeros((3, 5), np.int64), np.full((2, 3), -1, np.int64)))
          for ahead in (False, True)),
        *((release._cached_sums, (np.zeros((3, 5), np.int64), np.int64(2), ahead, np.array([5, 6, 7])))
          for ahead in (False, True)),
        (release._advance, (np.full((2, 3), -1, np.int64), 1, np.int64(5), np.int64(1), True)),
        (release._enqueue_kept, (key, lanes.table(), hi, lo, np.int64(1), np.int64(2), 0, np.int64(5), np.int64(0),
                                 *lanes.queue()[:3], 0, *lanes.queue()[3:], st, np.zeros(8, np.int64))),
    ]
    for fn, args in calls:
        fresh = numba.njit(fn.py_func)
        fresh(*args)
        for ir in fresh.inspect_llvm().values():
            found = [tok for tok in FLOAT_TOKENS if tok in ir]
            assert not found, f"{fn.py_func.__name__}: {found}"


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_block_release_has_the_same_values_and_the_same_work_across_its_block(k: int) -> None:
    # level 1: the nodes are derived from the key, so drawing the whole block changes no value; the words a release
    # consumes (the rejection sampler's work) are the same at every step of a block of 2^k steps
    a, b, t = samplers.gaussian_params(2791, 1)
    key = chacha.key_words(bytes(range(32)))
    cells, steps = np.repeat(np.arange(20), 70), np.tile(np.arange(1, 71), 20)
    reference = release.noise_sums(key, a, b, t, cells, steps, samplers.new_state())
    assert np.array_equal(release.block_noise_sums(key, a, b, t, k, cells, steps, samplers.new_state()), reference)
    words = {}
    for s in range(1, 71):
        st = samplers.new_state()
        release.block_noise_sums(key, a, b, t, k, np.array([7]), np.array([s]), st)
        words.setdefault(s >> k, set()).add(int(st[4]))
    assert all(len(w) == 1 for w in words.values())
    if k == 0:  # without blocks the work varies from step to step (the leak level 1 closes)
        assert len({next(iter(w)) for w in words.values()}) > 1


def test_discrete_secure_counter_draws_in_blocks() -> None:
    cls = counter_class("binary", "discrete_secure")
    counter = cls(n=4, horizon=1000, epsilon=1.0, delta=1e-6, m=6, seed=3)
    k = cls.block_levels
    assert k >= 1
    before = counter.words_consumed
    counter.release(np.arange(4), np.full(4, 2 << k))
    first = counter.words_consumed - before
    counter.release(np.arange(4), np.full(4, (2 << k) + (1 << k) - 1))  # the last step of the same block
    assert counter.words_consumed - before == 2 * first


def _histories(rng: np.random.Generator, n: int, horizon: int) -> list[np.ndarray]:
    """Whole-table release steps: steps that advance one or a few at a time, repeat, jump back and start at 0."""
    steps, out = np.zeros(n, dtype=np.int64), []
    for _ in range(60):
        move = rng.integers(0, 4)
        steps = (steps + rng.integers(0, 3, n) if move < 2 else steps if move == 2 else
                 rng.integers(0, horizon, n))
        steps = np.minimum(steps, horizon - 1)
        out.append(steps.copy())
    return out


@pytest.mark.parametrize(("noise", "chunks"), [("discrete_secure", None), ("discrete_secure", 1),
                                               ("discrete_secure_ahead", None), ("discrete_secure_ahead", 1),
                                               ("discrete_secure_ct", None)])
def test_cached_whole_table_release_has_release_values(noise: str, chunks: int | None) -> None:
    # the node cache changes no value: every release_all equals release of the same cells at the same steps, after
    # any history; chunks=1 sends about 1 comparison in 256 to the exact slow path (ties settled into the cache)
    cls = counter_class("binary", noise)
    counter, reference = (cls(n=40, horizon=700, epsilon=1.0, delta=1e-6, m=6, seed=5) for _ in range(2))
    if chunks:
        counter._chunks = chunks
        counter._st = samplers.new_state(capacity=4096)
    for steps in _histories(np.random.default_rng(3), 40, 700):
        assert np.array_equal(counter.release_all(steps), reference.release(np.arange(40), steps))
    k = counter._sampler()[3]
    ahead = ((1 << k) - 1) * 40 * 8 if counter.keeps_block else 0  # the nodes kept ahead: state, not cache
    assert counter.noise_cache_bytes == 40 * 8 * (1 + counter.levels - k) + 2 * 40 * 8 - (ahead and 40 * 8)
    assert counter.memory_bytes == counter._exact.nbytes + counter._key.nbytes + ahead
    assert counter.memory_bytes == 40 * cls.bytes_per_counter(700, counter._exact.itemsize) + cls.fixed_bytes


@pytest.mark.parametrize("k", [0, 1, 2])
def test_cached_release_draws_its_blocks_new_nodes_and_the_same_at_every_step_of_a_block(k: int) -> None:
    # with the table sampler every node costs 4 words, so the words count the nodes drawn: D(s) of each release
    # (``_drawn``), the same for every release inside one block whatever the cache held before it; with ``ahead``
    # D(s) at a cell's first release in a block and nothing at its later ones
    hi, lo, _ = _table(2791, 1)
    key = chacha.key_words(bytes(range(32)))
    n, levels = 30, 11
    history = _histories(np.random.default_rng(4), n, 1 << levels)
    for ahead in (False, True):
        kept = (1 << k) - 1 if ahead else 1
        nodes, blocks = np.zeros((n, kept + levels - k), dtype=np.int64), np.full((2, n), -1, dtype=np.int64)
        words = []
        for steps in history:
            st = samplers.new_state()
            sums = release.cached_noise_sums(key, lanes.table(), hi, lo, k, steps, st, nodes, blocks, ahead)
            words.append(int(st[4]))
            uncached = release.sampled_noise_sums(key, lanes.table(), hi, lo, k, np.arange(n), steps,
                                                  samplers.new_state())
            assert np.array_equal(sums, uncached)
        assert words == _expected_words(history, k, ahead)
    # one cell released at every step of a stream, by the exact (rejection) sampler: its work, which depends on the
    # values drawn, is the same at every step of each block
    a, b, t = samplers.gaussian_params(2791, 1)
    sampler, hi, lo = lanes.gaussian(a, b, t)
    nodes, blocks = np.zeros((1, 1 + levels - k), dtype=np.int64), np.full((2, 1), -1, dtype=np.int64)
    per_block: dict[int, set[int]] = {}
    for s in range(300):
        st = samplers.new_state()
        release.cached_noise_sums(key, sampler, hi, lo, k, np.array([s]), st, nodes, blocks)
        per_block.setdefault(s >> k, set()).add(int(st[4]))
    assert all(len(w) == 1 for w in per_block.values())
    if k == 0:  # without blocks the work of the one new node shows (the leak level 1 closes)
        assert len({next(iter(w)) for w in per_block.values()}) > 1


@pytest.mark.parametrize("noise", ["discrete_secure", "discrete_secure_ahead"])
def test_cached_release_survives_a_change_of_key_or_block_levels_and_the_last_step(noise: str) -> None:
    # the cache belongs to one key and one k: replacing either, and steps up to 2^levels - 1, keep release's values
    # (k = 2 with the nodes kept ahead: three in-block columns)
    cls = counter_class("binary", noise)
    counter = cls(n=12, horizon=1000, epsilon=1.0, delta=1e-6, m=6, seed=6)
    last = (1 << counter.levels) - 1
    for steps in (np.full(12, 5), np.full(12, 6), np.arange(12) + last - 11, np.full(12, last)):
        for k in (1, 0, 2):
            counter.block_levels = k
            assert np.array_equal(counter.release_all(steps), counter.release(np.arange(12), steps))
    counter.release_all(np.full(12, 9))
    counter._key = chacha.key_words(bytes(range(1, 33)))
    steps = np.full(12, 9)
    assert np.array_equal(counter.release_all(steps), counter.release(np.arange(12), steps))


@pytest.mark.parametrize("noise", ["discrete_secure", "discrete_secure_ahead"])
def test_a_release_that_raises_drops_the_cache(noise: str) -> None:
    # settle refuses more undecided draws than its state records; the cached draws of that release are unsettled,
    # so the cache must not be reused (a tied node kept as 0 would be released without its noise)
    counter = counter_class("binary", noise)(n=200, horizon=64, epsilon=1.0, delta=1e-6, m=6, seed=3)
    counter._chunks = 1
    counter._st = samplers.new_state(capacity=1)
    with pytest.raises(RuntimeError, match="slow path"):
        counter.release_all(np.full(200, 62))
    assert counter.noise_cache_bytes == 0
    counter._st = samplers.new_state(capacity=1 << 16)
    for s in (62, 60, 56, 48):
        steps = np.full(200, s)
        assert np.array_equal(counter.release_all(steps), counter.release(np.arange(200), steps))


def test_whole_table_releases_one_push_apart_do_the_same_work_inside_each_block() -> None:
    # every cell at step s, s = 0, 1, 2, ... (a LazyHH refresh at every period): the exact sampler's words, which
    # depend on the values drawn, are the same at both steps of each block of 2; keeping the block's node ahead,
    # the block's first step does the work of the two (the same words) and its second none
    made = {noise: counter_class("binary", noise)(n=25, horizon=300, epsilon=1.0, delta=1e-6, m=6, seed=7)
            for noise in ("discrete_secure", "discrete_secure_ahead")}
    assert made["discrete_secure"].block_levels == made["discrete_secure_ahead"].block_levels == 1
    work: dict[str, list[int]] = {noise: [] for noise in made}
    for s in range(200):
        for noise, counter in made.items():
            before = counter.words_consumed
            released = counter.release_all(np.full(25, s))
            work[noise].append(counter.words_consumed - before)
        assert np.array_equal(released, made["discrete_secure"].release_all(np.full(25, s)))
    plain, ahead = np.array(work["discrete_secure"]), np.array(work["discrete_secure_ahead"])
    assert np.array_equal(plain[0::2], plain[1::2])
    assert len(set(plain[0::2].tolist())) > 1  # the work does vary from block to block
    assert np.array_equal(ahead[0::2], plain[0::2]) and not ahead[1::2].any()


@pytest.mark.parametrize("noise", ["discrete_secure", "discrete_secure_ahead", "discrete_secure_ct"])
def test_a_whole_table_release_at_the_same_steps_again_draws_nothing(noise: str) -> None:
    # a sketch queried twice between two pushes: the second release reads its sums from the cache, the same values
    counter = counter_class("binary", noise)(n=30, horizon=300, epsilon=1.0, delta=1e-6, m=6, seed=8)
    steps = np.arange(30) + 5
    first = counter.release_all(steps)
    before = counter.words_consumed
    assert np.array_equal(counter.release_all(steps), first)
    assert counter.words_consumed == before
    moved = steps.copy()
    moved[::3] += 1  # the cells pushed since draw their new step's nodes, the others nothing
    released = counter.release_all(moved)
    drawn = counter.words_consumed - before
    assert np.array_equal(released, counter.release(np.arange(30), moved))
    if noise == "discrete_secure_ct":  # 4 words a node: exactly the moved cells' new nodes
        assert drawn == _expected_words([steps, steps, moved])[2] > 0
    else:
        assert drawn > 0


def test_cached_release_refuses_a_cache_of_the_wrong_shape() -> None:
    # a cache laid out for another k, another in-block layout or fewer levels would read and write other columns
    hi, lo, _ = _table(2791, 1)
    key = chacha.key_words(bytes(range(32)))
    steps = np.array([5, 6, 7])
    blocks = np.full((2, 3), -1, dtype=np.int64)
    with pytest.raises(ValueError, match="in-block column"):
        release.cached_noise_sums(key, lanes.table(), hi, lo, 3, steps, samplers.new_state(),
                                  np.zeros((3, 5), np.int64), blocks, True)
    with pytest.raises(ValueError, match="past the node cache"):
        release.cached_noise_sums(key, lanes.table(), hi, lo, 1, np.array([5, 6, 64]), samplers.new_state(),
                                  np.zeros((3, 6), np.int64), blocks, False)
    assert release.cached_noise_sums(key, lanes.table(), hi, lo, 1, np.array([5, 6, 63]), samplers.new_state(),
                                     np.zeros((3, 6), np.int64), blocks, False).shape == (3,)
