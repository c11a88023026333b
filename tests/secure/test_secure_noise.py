"""The keyed ChaCha20 generator, the exact discrete samplers, their calibration and the discrete_secure counter."""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
import pytest
from scipy import stats

from dpstream.counters import counter_class
from dpstream.privacy.discrete_gaussian import (
    SMOOTHING_S2,
    discrete_gaussian_delta,
    discrete_gaussian_sigma2,
    grid_denominator,
    smoothing_delta,
    zcdp_delta,
)
from dpstream.secure import cdt, chacha, lanes, laplace, release, samplers, sequential
from dpstream.sketches.lazy import LazyCMS

RFC_KEY = bytes(range(32))


def test_chacha20_block_rfc8439_2_3_2() -> None:
    nonce = np.frombuffer(bytes.fromhex("000000090000004a00000000"), "<u4").astype(np.uint32)
    words = chacha.block(chacha.key_words(RFC_KEY), 1, nonce)
    expected = ("e4e7f110 15593bd1 1fdd0f50 c47120a3 c7f4d1c7 0368c033 9aaa2204 4e6cd4c3 "
                "466482d2 09aa9f07 05d7c214 a2028bd9 d19c12b5 b94e16de e883d0cb 4e3c50a2")
    assert [int(w, 16) for w in expected.split()] == words.tolist()


@pytest.mark.parametrize(("counter", "hexstream"), [
    (0, "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"),
    (1, "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
        "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"),
])
def test_chacha20_keystream_rfc8439_appendix_a1(counter: int, hexstream: str) -> None:
    assert chacha.keystream(bytes(32), bytes(12), counter, 64).hex() == hexstream


def test_chacha20_encryption_rfc8439_2_4_2() -> None:
    plain = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
             b"sunscreen would be it.")
    stream = chacha.keystream(RFC_KEY, bytes.fromhex("000000000000004a00000000"), 1, len(plain))
    cipher = bytes(p ^ k for p, k in zip(plain, stream, strict=True))
    assert cipher.hex() == (
        "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0bf91b65c5524733ab8f593dabcd62b357"
        "1639d624e65152ab8f530c359f0861d807ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
        "5af90bbf74a35be6b40b8eedf2785e42874d")


def test_chacha20_lanes_rfc8439_2_3_2_in_every_lane() -> None:
    # the vectorised block of LANES streams: the RFC's block in each lane, the other lanes other nonces
    key = chacha.key_words(RFC_KEY)
    rfc = np.frombuffer(bytes.fromhex("000000090000004a00000000"), "<u4").astype(np.uint32)
    rng = np.random.default_rng(5)
    for lane in range(chacha.LANES):
        nonces = rng.integers(0, 2**32, (3, chacha.LANES), dtype=np.uint32)
        nonces[:, lane] = rfc
        words = np.empty(16 * chacha.LANES, np.uint32)
        chacha.chacha20_lanes(key, np.uint32(1), nonces, words)
        by_lane = words.reshape(16, chacha.LANES).T
        assert by_lane[lane].tolist() == chacha.block(key, 1, rfc).tolist()
        other = (lane + 1) % chacha.LANES
        assert by_lane[other].tolist() == chacha.block(key, 1, nonces[:, other].copy()).tolist()


def _block_nodes(cells: np.ndarray, steps: np.ndarray, k: int) -> list[tuple[int, int, int, int, bool]]:
    """(cell, level, index, row, used) of every node a release draws, in release order (level 1, blocks of 2^k)."""
    nodes = []
    for row, (cell, s) in enumerate(zip(cells.tolist(), steps.tolist(), strict=True)):
        for level in range(k):  # the block's own nodes: odd indices of each level below k
            first = (s >> k) << (k - level)
            nodes += [(cell, level, i, row, (s >> level) == i) for i in range(first + 1, first + (1 << (k - level)), 2)]
        nodes += [(cell, level, s >> level, row, True) for level in range(k, s.bit_length()) if (s >> level) & 1]
    return nodes


@pytest.mark.parametrize("k", [0, 2])
def test_lane_batched_draws_equal_one_stream_at_a_time(k: int) -> None:
    # release, sequential and the table sampler draw LANES streams' first blocks at once: the values and the words
    # consumed must be those of drawing each node's stream alone from block 0, over a node list built here (a count
    # that is not a multiple of LANES, node indices past 2^32 so the nonce's third word carries index bits)
    key = chacha.key_words(RFC_KEY)
    a, b, t = samplers.gaussian_params(9661861, 8192)
    rng = np.random.default_rng(11)
    n = 3 * chacha.LANES + 5
    cells, steps = rng.integers(0, 1000, n), rng.integers(1, 1 << 12, n)
    steps[:4] = rng.integers(1 << 40, 1 << 41, 4)
    nodes = _block_nodes(cells, steps, k)
    nonces = np.array([(c, i & 0xFFFFFFFF, level | ((i >> 32) << 6)) for c, level, i, _, _ in nodes], dtype=np.uint32)
    rows, used = np.array([n[3] for n in nodes]), np.array([n[4] for n in nodes], dtype=float)
    alone, batched = samplers.new_state(), samplers.new_state()
    expected = np.bincount(rows, used * samplers.discrete_gaussian_batch(key, nonces, a, b, t, alone), n)
    assert release.block_noise_sums(key, a, b, t, k, cells, steps, batched).tolist() == expected.tolist()
    assert batched[4] == alone[4]
    if k == 0:  # the table sampler: its 4 words of every node's first block
        hi, lo = cdt.cdt_table(9661861, 8192, 200)
        alone, batched = samplers.new_state(), samplers.new_state()
        ct_alone = np.bincount(rows, cdt.discrete_gaussian_ct_batch(key, nonces, hi, lo, alone), n)
        assert release.noise_sums_ct(key, hi, lo, cells, steps, batched).tolist() == ct_alone.tolist()
        assert batched[4] == alone[4] == 4 * len(nodes)


def test_sequential_draws_equal_one_stream_at_a_time() -> None:
    # the stored tree's numbered draws, LANES first blocks at a time, against one stream per number (crossing 2^32)
    key = chacha.key_words(RFC_KEY)
    a, b, t = samplers.gaussian_params(9661861, 8192)
    n, first = 3 * chacha.LANES + 5, (1 << 32) - 9
    numbered = np.zeros((n, 3), np.uint32)
    numbered[:, 0], numbered[:, 1] = (first + np.arange(n)) & 0xFFFFFFFF, (first + np.arange(n)) >> 32
    numbered[:, 2] = sequential.STREAM_TAG
    alone, batched = samplers.new_state(), samplers.new_state()
    assert (sequential.draws(key, np.int64(first), np.int64(n), a, b, t, batched).tolist()
            == samplers.discrete_gaussian_batch(key, numbered, a, b, t, alone).tolist())
    assert batched[4] == alone[4]


def _nonces(n: int, salt: int) -> np.ndarray:
    nonces = np.zeros((n, 3), dtype=np.uint32)
    nonces[:, 0] = np.arange(n)
    nonces[:, 2] = salt
    return nonces


def _chi_square_p(draws: np.ndarray, log_pmf: np.ndarray, support: np.ndarray) -> float:
    """Chi-square p-value of ``draws`` against the pmf on ``support``; bins with expected count < 5 pooled per tail."""
    pmf = np.exp(log_pmf - log_pmf.max())
    pmf /= pmf.sum()
    expected = pmf * draws.size
    keep = expected >= 5
    lo, hi = support[keep].min(), support[keep].max()
    observed = np.array([np.sum(draws < lo)] + [np.sum(draws == x) for x in range(lo, hi + 1)] + [np.sum(draws > hi)])
    exp_binned = np.concatenate(([expected[support < lo].sum()], expected[(support >= lo) & (support <= hi)],
                                 [expected[support > hi].sum()]))
    nonzero = exp_binned > 0
    assert observed[~nonzero].sum() == 0
    return float(stats.chisquare(observed[nonzero], exp_binned[nonzero]).pvalue)


N_DRAWS = 1_000_000


@pytest.mark.parametrize(("a", "b"), [(1, 1), (5, 2), (10, 1), (1000, 3)])
def test_discrete_gaussian_matches_pmf(a: int, b: int) -> None:
    # fixed key and nonces; the test fails only when p < 1e-6 (the brief's level) for a correct sampler
    a, b, t = samplers.gaussian_params(a, b)
    key = chacha.key_words(bytes(range(100, 132)))
    draws = samplers.discrete_gaussian_batch(key, _nonces(N_DRAWS, a), a, b, t, samplers.new_state())
    support = np.arange(-samplers.V_CAP * t + 1, samplers.V_CAP * t)
    p = _chi_square_p(draws, -support.astype(float) ** 2 * b / (2 * a), support)
    assert p > 1e-6


@pytest.mark.parametrize("t", [1, 3, 20])
def test_integer_scale_discrete_laplace_matches_pmf(t: int) -> None:
    # the rational-scale sampler at s = 1 (the integer scales); fails only when p < 1e-6 for a correct sampler
    vcap = laplace.laplace_vcap(t)
    key = chacha.key_words(bytes(range(7, 39)))
    draws = samplers.discrete_laplace_rational_batch(key, _nonces(N_DRAWS, t), np.int64(t), np.int64(1),
                                                     np.int64(vcap), samplers.new_state())
    support = np.arange(-60 * t, 60 * t + 1)
    assert _chi_square_p(draws, -np.abs(support).astype(float) / t, support) > 1e-6


def test_same_nonce_same_value_and_streams_independent_of_order() -> None:
    a, b, t = samplers.gaussian_params(40, 1)
    key = chacha.key_words(bytes(32))
    nonces = _nonces(1000, 0)
    first = samplers.discrete_gaussian_batch(key, nonces, a, b, t, samplers.new_state())
    backwards = samplers.discrete_gaussian_batch(key, nonces[::-1].copy(), a, b, t, samplers.new_state())[::-1]
    assert np.array_equal(first, backwards)
    other_key = samplers.discrete_gaussian_batch(chacha.key_words(bytes([1] * 32)), nonces, a, b, t,
                                                 samplers.new_state())
    assert not np.array_equal(first, other_key)


def test_out_of_range_sigma_is_one_line_error() -> None:
    with pytest.raises(ValueError, match="outside the exact sampler's range") as info:
        samplers.gaussian_params(1 << 40, 1)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="discrete Laplace numerator"):
        laplace.laplace_vcap(0)


FLOAT_TOKENS = ("double", "float ", "fcmp", "sitofp", "fptosi", "uitofp", "fptoui")


def _decision_path_calls() -> list[tuple[object, tuple]]:
    key, nonce = np.zeros(8, np.uint32), np.zeros(3, np.uint32)
    buf, st = np.zeros(16, np.uint32), samplers.new_state()
    i = np.int64
    gaussian, hi, lo = lanes.gaussian(10, 1, 4)
    first_v = gaussian[7:]
    reservoir = (i(5), i(3), i(2))
    return [
        (chacha.block, (key, 1, nonce)),
        (samplers._refill, (key, nonce, buf, st)),
        (samplers._word, (key, nonce, buf, st)),
        (samplers._bits, (5, key, nonce, buf, st)),
        (samplers._bit_length, (i(9),)),
        (samplers._uniform_below, (i(9), key, nonce, buf, st)),
        (samplers._bernoulli_exp_le1, (i(1), i(3), key, nonce, buf, st)),
        (samplers._bernoulli_exp, (i(7), i(3), key, nonce, buf, st)),
        (samplers._dlaplace_magnitude, (i(3), i(64), key, nonce, buf, st)),
        (samplers._take, (i(9), *reservoir, key, nonce, buf, st)),
        (samplers._byte, (hi, lo, i(3), 9)),
        (samplers._below, (i(7), hi, lo, i(3), i(16), *reservoir, key, nonce, buf, st)),
        (samplers._geometric, (i(0), first_v, hi, lo, i(16), *reservoir, key, nonce, buf, st)),
        (samplers._dgauss, (gaussian, hi, lo, key, nonce, buf, st)),
        (samplers._flag, (nonce, i(1), i(1), i(2), st)),
        (samplers._gaussian_batch, (key, np.zeros((2, 3), np.uint32), gaussian, hi, lo, st)),
        (chacha.chacha20_lanes, (key, np.uint32(0), np.zeros((3, chacha.LANES), np.uint32),
                                 np.zeros(16 * chacha.LANES, np.uint32))),
        (samplers._primed, (np.zeros(16 * chacha.LANES, np.uint32), 3, buf, st)),
        (lanes.queue, ()),
        (lanes.draw_queued, (key, gaussian, hi, lo, *lanes.queue()[:3], 2, *lanes.queue()[3:], st,
                             np.zeros(3, np.int64))),
        (release._node_sums, (key, gaussian, hi, lo, i(2), np.arange(3), np.array([5, 6, 7]), st)),
        *((release._cached_draws, (key, gaussian, hi, lo, i(2), ahead, np.array([5, 6, 7]), st,
                                   np.zeros((3, 5), np.int64), np.full((2, 3), -1, np.int64)))
          for ahead in (False, True)),
        (sequential._draws, (key, i(3), i(4), gaussian, hi, lo, st)),
    ]


def test_no_float_on_the_decision_path() -> None:
    # cached dispatchers do not show their IR, so each function is recompiled uncached from its Python source
    for fn, args in _decision_path_calls():
        fresh = numba.njit(fn.py_func)
        fresh(*args)
        for ir in fresh.inspect_llvm().values():
            found = [tok for tok in FLOAT_TOKENS if tok in ir]
            assert not found, f"{fn.py_func.__name__}: {found}"


@pytest.mark.parametrize(("sens_sq", "epsilon", "delta"), [(136, 1.0, 1e-6), (34, 0.5, 1e-5), (272, 4.0, 1e-9)])
def test_calibration_rounds_up_and_one_grid_step_down_breaks_delta(sens_sq: int, epsilon: float, delta: float) -> None:
    sigma2 = discrete_gaussian_sigma2(sens_sq, epsilon, delta)
    step = Fraction(1, grid_denominator(float(sigma2)))
    assert (sigma2 / step).denominator == 1  # on the grid
    assert discrete_gaussian_delta(sens_sq, sigma2, epsilon) <= delta
    assert discrete_gaussian_delta(sens_sq, sigma2 - step, epsilon) > delta


@pytest.mark.parametrize(("sens_sq", "epsilon", "delta"), [(136, 1.0, 1e-6), (34, 0.5, 1e-5)])
def test_zcdp_fallback_agrees_with_dp_accounting_rdp(sens_sq: int, epsilon: float, delta: float) -> None:
    from dp_accounting import dp_event, rdp

    sigma2 = float(discrete_gaussian_sigma2(sens_sq, epsilon, delta))
    orders = [1 + x / 100 for x in range(1, 6000)] + list(range(61, 2000))
    accountant = rdp.RdpAccountant(orders=orders)
    accountant.compose(dp_event.GaussianDpEvent(math.sqrt(sigma2 / sens_sq)))
    # the same conversion minimised over a finite grid of orders: equal to a relative 1e-3 (never below ours)
    ours = zcdp_delta(sens_sq / (2 * sigma2), epsilon)
    assert accountant.get_delta(epsilon) >= ours * (1 - 1e-9)
    assert accountant.get_delta(epsilon) == pytest.approx(ours, rel=1e-3)


def _exact_delta(sigma2: float, diff: tuple[int, ...], epsilon: float) -> float:
    """Hockey-stick divergence of N_Z(0, sigma2 I) vs N_Z(diff, sigma2 I), from the exact pmf of diff.Y.

    The privacy loss is (K + 2 diff.Y) / (2 sigma2), so delta = E[(1 - exp(epsilon - loss))_+] (exact convolution;
    tails cut at 40 sigma hold mass below exp(-800)).
    """
    half = math.ceil(40 * math.sqrt(sigma2)) + 5
    pmf = np.exp(-np.arange(-half, half + 1, dtype=float) ** 2 / (2 * sigma2))
    pmf /= pmf.sum()
    total = np.array([1.0])
    for c in diff:
        scaled = np.zeros(c * (pmf.size - 1) + 1)
        scaled[::c] = pmf
        total = np.convolve(total, scaled)
    values = np.arange(total.size) - (total.size - 1) // 2
    loss = (sum(c * c for c in diff) + 2 * values) / (2 * sigma2)
    return float(np.sum(total * np.clip(1 - np.exp(epsilon - loss), 0, None)))


@pytest.mark.parametrize("sigma2", [0.8, 2.5, 7.3, 120.0])
@pytest.mark.parametrize("diff", [(1,), (2,), (3,), (1, 1), (2, 1), (1, 1, 1, 1), (2, 2, 1)])
def test_every_bound_covers_the_exact_delta_of_integer_vectors(sigma2: float, diff: tuple[int, ...]) -> None:
    # the smoothing bound at every s^2 and the final minimum are upper bounds: never below the exact divergence
    # (a relative 1e-9 for the convolution's rounding), including difference vectors with entries 2 and 3
    sens_sq = sum(c * c for c in diff)
    for epsilon in (0.1, 0.5, 1.0, 3.0):
        exact = _exact_delta(sigma2, diff, epsilon)
        bounds = [smoothing_delta(sens_sq, sigma2, epsilon, s2) for s2 in SMOOTHING_S2 if s2 < sigma2]
        assert min([*bounds, discrete_gaussian_delta(sens_sq, sigma2, epsilon)]) >= exact * (1 - 1e-9)


@pytest.mark.parametrize(("sens_sq", "twos", "epsilon", "delta"), [(136, 0, 1.0, 1e-6), (136, 30, 1.0, 1e-6),
                                                                  (34, 8, 0.5, 1e-5)])
def test_calibrated_delta_agrees_with_dp_accounting_pld(sens_sq: int, twos: int, epsilon: float, delta: float) -> None:
    # dp-accounting's PLD of the 1-D discrete Gaussian at sensitivity 1 and 2, composed over the coordinates of a
    # difference vector with ``twos`` entries 2 and the rest 1 (squared norm sens_sq). Its optimistic and
    # pessimistic discretisations (interval 1e-5) bracket the exact delta: ours must not fall below the lower end
    # (soundness) and lies within 1% of the upper end (tightness: the smoothing costs s^2 ~ 1.5 of sigma^2 ~ 2400,
    # about 0.7% of delta at these tails).
    from dp_accounting.pld import privacy_loss_distribution as pld

    sigma2 = discrete_gaussian_sigma2(sens_sq, epsilon, delta)
    sigma = math.sqrt(float(sigma2))

    def composed(pessimistic: bool) -> float:
        def one(c: int, times: int):  # type: ignore[no-untyped-def]
            return pld.from_discrete_gaussian_mechanism(sigma, sensitivity=c, pessimistic_estimate=pessimistic,
                                                        value_discretization_interval=1e-5).self_compose(times)
        dist = one(1, sens_sq - 4 * twos)
        if twos:
            dist = dist.compose(one(2, twos))
        return float(dist.get_delta_for_epsilon(epsilon))

    ours = discrete_gaussian_delta(sens_sq, sigma2, epsilon)
    assert composed(False) <= ours <= delta
    assert ours <= composed(True) * 1.01


def test_calibration_is_close_to_the_analytic_gaussian() -> None:
    # the smoothing bound costs sigma^2 - s^2 (s^2 <= 4) plus the grid: within 0.2% of the analytic Gaussian's
    # sigma^2 at the sketches' sensitivities, where zCDP needs about 15% more
    from dpstream.privacy.calibration import analytic_gaussian_sigma

    for sens_sq in (136, 204):
        analytic = analytic_gaussian_sigma(math.sqrt(sens_sq), 1.0, 1e-6) ** 2
        assert analytic <= float(discrete_gaussian_sigma2(sens_sq, 1.0, 1e-6)) <= analytic * 1.002


def test_counter_same_node_same_noise_and_keys() -> None:
    cls = counter_class("binary", "discrete_secure")
    seeded = cls(n=50, horizon=1000, epsilon=1.0, delta=1e-6, m=8, seed=5)
    again = cls(n=50, horizon=1000, epsilon=1.0, delta=1e-6, m=8, seed=5)
    cells, steps = np.arange(50), np.full(50, 777)
    out = seeded.release(cells, steps)
    assert np.array_equal(out, seeded.release(cells, steps))
    assert np.array_equal(out, again.release(cells, steps))
    assert np.array_equal(out, np.round(out))
    # step 776 shares the nodes of levels 3.. of step 777 (776 = 777 - 1): same prefix noise on shared nodes
    assert seeded.certified and not seeded.deployable
    private = cls(n=50, horizon=1000, epsilon=1.0, delta=1e-6, m=8)
    assert private.deployable and private.certified
    assert not np.array_equal(private.release(cells, steps), out)
    assert private._key.tobytes().hex() not in repr(private)
    assert private.sigma2 == discrete_gaussian_sigma2(private.levels * 8, 1.0, 1e-6)


def test_blt_refuses_discrete_secure_in_one_line() -> None:
    with pytest.raises(ValueError, match="real-valued noise") as info:
        counter_class("blt", "discrete_secure")
    assert "\n" not in str(info.value)


def test_lazy_cms_discrete_secure_flags() -> None:
    keys = np.arange(3000) % 40
    seeded = LazyCMS(width=32, depth=3, epsilon=1.0, delta=1e-6, horizon=4096, seed=2, node_noise="discrete_secure")
    seeded.extend(keys)
    est = seeded.query_many(np.arange(40))
    assert np.array_equal(est, np.round(est))
    assert seeded.certified and not seeded.deployable
    private = LazyCMS(width=32, depth=3, epsilon=1.0, delta=1e-6, horizon=4096, node_noise="discrete_secure")
    assert private.deployable
    derived = LazyCMS(width=32, depth=3, epsilon=1.0, delta=1e-6, horizon=4096, node_noise="derived")
    assert not derived.deployable


@pytest.mark.parametrize("name", ["LazyCS", "PunctualCMS", "PunctualCS"])
def test_other_sketches_take_discrete_secure(name: str) -> None:
    import dpstream.sketches as sketches

    cls = getattr(sketches, name)
    sketch = cls(width=16, depth=2, epsilon=1.0, delta=1e-6, horizon=512, seed=1, node_noise="discrete_secure")
    sketch.extend(np.arange(400) % 9)
    est = sketch.query_many(np.arange(9))
    assert np.all(np.isfinite(est)) and sketch.certified and not sketch.deployable


def test_gauss_bm_discrete_secure_releases_integers() -> None:
    from dpstream.counters.gauss_bm import GaussBM

    seeded = GaussBM(n=20, horizon=64, epsilon=1.0, delta=1e-6, seed=3, node_noise="discrete_secure")
    seeded.update_all(np.ones(20, dtype=np.int64))
    out = seeded.query_all()
    assert np.array_equal(out, np.round(out)) and seeded.certified and not seeded.deployable
    private = GaussBM(n=20, horizon=64, epsilon=1.0, delta=1e-6, node_noise="discrete_secure")
    assert private.deployable


def test_noiseless_discrete_secure_is_exact_and_uncertified() -> None:
    sketch = LazyCMS._uncertified_noiseless(width=16, depth=2, epsilon=1.0, delta=1e-6, horizon=512, seed=1,
                                           node_noise="discrete_secure")
    reference = LazyCMS._uncertified_noiseless(width=16, depth=2, epsilon=1.0, delta=1e-6, horizon=512, seed=1,
                                              node_noise="derived")
    keys = np.arange(300) % 7
    sketch.extend(keys)
    reference.extend(keys)
    assert np.array_equal(sketch.query_many(np.arange(7)), reference.query_many(np.arange(7)))
    assert not sketch.certified and not sketch.deployable


@pytest.mark.parametrize("sensitivity_sq", [1, 21, 136])
def test_l2_sensitivity_inverts_the_calibration(sensitivity_sq):
    # sigma^2 is rounded up, so it covers at least the sensitivity it was calibrated for; the grid is fine enough
    # (power-of-two denominator) that it covers less than twice that
    from dpstream.privacy.discrete_gaussian import discrete_gaussian_l2_sensitivity, discrete_gaussian_sigma2

    sigma2 = discrete_gaussian_sigma2(sensitivity_sq, 0.5, 1e-3)
    covered = discrete_gaussian_l2_sensitivity(sigma2, 0.5, 1e-3) ** 2
    assert sensitivity_sq <= round(covered) < 2 * sensitivity_sq
