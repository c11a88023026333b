"""The exact discrete Gaussian's tables, its slow path and its pure-Python oracle (``secure.exact``, ``samplers``).

The compiled sampler decides each Bernoulli(exp(-gamma)) by comparing a uniform's bytes with 128-bit table entries
and sends a draw whose bytes tie with a whole entry to ``samplers.settle``, which recomputes it with ``exact.dgauss``.
Here: the table bits against mpmath at 60 digits, the compiled sampler against the oracle stream by stream, and the
slow path made frequent (``_chunks=1``: one byte per entry, a tie every 256 trials) through the batch, a counter's
release and a stored tree: the values are those of the full table, draw for draw, and their law the discrete
Gaussian's.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from test_secure_noise import _chi_square_p, _nonces

from dpstream import serial
from dpstream.counters import counter_class
from dpstream.counters.gauss_bm import GaussBM
from dpstream.secure import chacha, exact, release, samplers, sequential

KEY = chacha.key_words(bytes(range(90, 122)))
SIGMA2 = [(1, 1), (5, 2), (2250, 1), (9661861, 8192)]
"""sigma^2 = a / b: the smallest, a non-integer, the per-draw benchmark's (t = 48) and a calibrated grid value."""


def _floor_2_128(num: int, den: int) -> int:
    """floor(2^128 exp(-num/den)) at 60 digits, checked to be at least 1e-12 away from an integer (so decided)."""
    with mpmath.workdps(60):
        scaled = mpmath.exp(-mpmath.mpf(num) / den) * mpmath.mpf(2) ** 128
        assert abs(scaled - mpmath.nint(scaled)) > 1e-12
        return int(mpmath.floor(scaled))


def test_exp_bits_agree_with_mpmath_at_60_digits() -> None:
    # random rationals below 1, above 1 and up to the last gamma whose exp is above 2^-128; and exp(0) read as 0.111...
    rng = np.random.default_rng(17)
    cases = [(1, 1), (1, 3), (2, 3), (88, 1), (1, 10**12)]
    cases += [(int(rng.integers(1, 10**6)), int(rng.integers(1, 10**6))) for _ in range(40)]
    cases += [(int(rng.integers(1, 88 * 1000)), 1000) for _ in range(40)]
    for num, den in cases:
        assert exact.exp_bits(num, den, 128) == _floor_2_128(num, den), (num, den)
    assert exact.exp_bits(0, 7, 128) == (1 << 128) - 1
    assert exact.exp_bits(89, 1, 128) == 0  # exp(-89) < 2^-128


@pytest.mark.parametrize(("a", "b"), SIGMA2)
def test_table_rows_are_the_floor_of_2_128_p(a: int, b: int) -> None:
    # every row kind at random rows (all rows at small sigma), against mpmath at 60 digits; the zero rows; where the
    # acceptance rows stop; and the first-byte table of the geometric part
    a, b, t = samplers.gaussian_params(a, b)
    hi, lo, y_rows, first_v = samplers.gaussian_table(a, b)
    k = (t - 1).bit_length()
    rows = [(int(h) << 64) | int(x) for h, x in zip(hi, lo, strict=True)]
    assert len(rows) == samplers.V_CAP + (1 << k) + y_rows + 1 and rows[-1] == 0
    gammas = [(v, 1) for v in range(1, samplers.V_CAP + 1)]
    gammas += [(r, t) if r < t else None for r in range(1 << k)]
    gammas += [((y * t * b - a) ** 2, 2 * a * b * t * t) for y in range(y_rows + 1)]
    rng = np.random.default_rng(a)
    picked = range(len(rows) - 1) if len(rows) <= 200 else rng.choice(len(rows) - 1, 200, replace=False)
    for i in picked:
        gamma = gammas[i]
        assert rows[i] == (0 if gamma is None else (1 << 128) - 1 if gamma[0] == 0 else _floor_2_128(*gamma)), i
    with mpmath.workdps(60):  # the last acceptance row is above 2^-128, the next one (and all after it) below
        last, past = (mpmath.exp(-mpmath.mpf(num) / den) for num, den in gammas[-2:])
        assert last >= mpmath.mpf(2) ** -128 > past
    tops = [int(mpmath.floor(mpmath.exp(-v) * 256)) for v in range(1, samplers.V_CAP + 1)]
    for c in range(256):
        above = sum(d > c for d in tops)
        assert first_v[c] == (-1 - above if c in tops else above)


@pytest.mark.parametrize(("a", "b"), SIGMA2[1:])
def test_compiled_sampler_equals_the_python_oracle_stream_by_stream(a: int, b: int) -> None:
    # 3 x 4000 streams: the same value and the same number of keystream words from every stream
    a, b, t = samplers.gaussian_params(a, b)
    nonces = _nonces(4000, 31 + a)
    st = samplers.new_state()
    compiled = samplers.discrete_gaussian_batch(KEY, nonces, a, b, t, st)
    oracle = [exact.dgauss(KEY, nonce, a, b, t) for nonce in nonces]
    assert compiled.tolist() == [value for value, _ in oracle]
    assert st[4] == sum(words for _, words in oracle)


def test_one_byte_tables_send_draws_to_the_slow_path_and_change_no_value() -> None:
    # with one byte per entry about 1 draw in 20 ties somewhere; settled in Python, every value (and word count) is
    # the full table's, so the law is unchanged: chi-square at p = 1e-6 over 10^6 draws of sigma^2 = 5/2
    a, b, t = samplers.gaussian_params(5, 2)
    sampler, hi, lo = samplers.gaussian_sampler(a, b, t, 1)
    draws, flagged = [], 0
    for start in range(0, 1_000_000, 50_000):
        nonces = _nonces(50_000, 1)
        nonces[:, 1] = start // 50_000
        st = samplers.new_state(capacity=6_000)
        out = samplers._gaussian_batch(KEY, nonces, sampler, hi, lo, st)
        flagged += int(st[samplers.FLAGS_AT])
        samplers.settle(KEY, a, b, t, st, out)
        draws.append(out)
        if start == 0:
            full_st = samplers.new_state()
            assert out.tolist() == samplers.discrete_gaussian_batch(KEY, nonces, a, b, t, full_st).tolist()
            assert st[4] == full_st[4] and st[samplers.FLAGS_AT] == 0
    assert 30_000 < flagged < 80_000
    draws = np.concatenate(draws)
    support = np.arange(-samplers.V_CAP * t + 1, samplers.V_CAP * t)
    assert _chi_square_p(draws, -support.astype(float) ** 2 * b / (2 * a), support) > 1e-6


def test_a_full_record_of_undecided_draws_raises_in_one_line() -> None:
    a, b, t = samplers.gaussian_params(2250, 1)
    with pytest.raises(RuntimeError, match="draws went to the exact slow path, more than") as info:
        samplers.discrete_gaussian_batch(KEY, _nonces(2000, 5), a, b, t, samplers.new_state(capacity=1), _chunks=1)
    assert "\n" not in str(info.value)


def test_a_slow_path_that_raises_leaves_no_record_for_the_next_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # an interrupted settle (here exact.dgauss raising) must not add its draws into the next batch's rows
    a, b, t = samplers.gaussian_params(5, 2)
    st = samplers.new_state(capacity=6_000)

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(exact, "dgauss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        samplers.discrete_gaussian_batch(KEY, _nonces(2000, 3), a, b, t, st, _chunks=1)
    assert st[samplers.FLAGS_AT] == 0
    monkeypatch.undo()
    nonces = _nonces(2000, 4)
    assert (samplers.discrete_gaussian_batch(KEY, nonces, a, b, t, st, _chunks=1).tolist()
            == samplers.discrete_gaussian_batch(KEY, nonces, a, b, t, samplers.new_state()).tolist())


def test_a_t_or_a_byte_count_the_table_is_not_laid_out_for_is_refused_in_one_line() -> None:
    # the table's rows are placed for t = floor(sigma) + 1 and 16-byte entries: another t would read wrong rows
    a, b, t = samplers.gaussian_params(5, 2)
    for bad in ({"t": t + 1}, {"t": t - 1}, {"chunks": 0}, {"chunks": samplers.CHUNKS + 1}):
        args = {"a": a, "b": b, "t": t, "chunks": samplers.CHUNKS} | bad
        with pytest.raises(ValueError, match="t = |chunks must be") as info:
            samplers.gaussian_sampler(**args)
        assert "\n" not in str(info.value)


def test_the_shared_tables_cannot_be_written() -> None:
    for array in samplers.gaussian_table(5, 2)[0:2] + samplers.gaussian_table(5, 2)[3:]:
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1


def _counting_settle(monkeypatch: pytest.MonkeyPatch, module: object) -> list[int]:
    """Replace ``module.settle`` by one that records how many draws each call finds undecided."""
    seen: list[int] = []

    def spy(key, a, b, t, st, out):  # type: ignore[no-untyped-def]
        seen.append(int(st[samplers.FLAGS_AT]))
        samplers.settle(key, a, b, t, st, out)

    monkeypatch.setattr(module, "settle", spy)
    return seen


def test_counter_release_with_one_byte_tables_equals_the_full_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    # the flags travel from the lanes through the release to the counter: the same releases and words
    cls = counter_class("binary", "discrete_secure")
    full, short = (cls(n=300, horizon=4096, epsilon=1.0, delta=1e-6, m=6, seed=4) for _ in range(2))
    short._chunks = 1
    short._st = samplers.new_state(capacity=4096)
    seen = _counting_settle(monkeypatch, release)
    cells = np.arange(300)
    for step in (1, 2, 3, 1000, 4095):
        steps = np.full(300, step)
        assert short.release(cells, steps).tolist() == full.release(cells, steps).tolist()
    assert short.words_consumed == full.words_consumed
    assert sum(seen[0::2]) > 0 and sum(seen[1::2]) == 0  # the short counter's releases (first of each pair) tied


def test_stored_tree_with_one_byte_tables_equals_the_full_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    # the numbered draws of a stored tree (drawn at update time) through the same slow path
    full, short = (GaussBM(n=50, horizon=256, epsilon=1.0, delta=1e-6, seed=8, node_noise="discrete_secure_stored")
                   for _ in range(2))
    short.counter._chunks = 1
    short.counter._st = samplers.new_state(capacity=4096)
    seen = _counting_settle(monkeypatch, sequential)
    for _ in range(200):
        short.update_all(np.ones(50, dtype=np.int64))
    short_seen = sum(seen)
    for _ in range(200):
        full.update_all(np.ones(50, dtype=np.int64))
    assert short.query_all().tolist() == full.query_all().tolist()
    assert short_seen > 0 and sum(seen) == short_seen


def test_state_names_the_exact_sampler_and_a_state_of_another_is_refused() -> None:
    bm = GaussBM(n=3, horizon=64, epsilon=1.0, delta=1e-3, seed=2, node_noise="discrete_secure")
    bm.update_all(np.array([1, 0, 2]))
    header, arrays = serial.unpack(bm.to_bytes())
    assert header["state"]["exact_sampler"] == samplers.EXACT_SAMPLER
    assert GaussBM.from_bytes(bm.to_bytes()).query(2) == bm.query(2)
    for written, named in [(None, "names no exact sampler"), ("rejection-2020", "exact_sampler='rejection-2020'")]:
        state = {k: v for k, v in header["state"].items() if k != "exact_sampler"}
        if written is not None:
            state["exact_sampler"] = written
        with pytest.raises(serial.SerialError, match=f"{named}.*nodes already released") as info:
            GaussBM.from_bytes(serial.pack("GaussBM", header["args"], state, arrays))
        assert "\n" not in str(info.value)
    ct = GaussBM(n=3, horizon=64, epsilon=1.0, delta=1e-3, seed=2, node_noise="discrete_secure_ct")
    assert "exact_sampler" not in serial.unpack(ct.to_bytes())[0]["state"]  # its own table sampler


def test_table_bytes_are_reported_beside_the_state() -> None:
    counter = counter_class("binary", "discrete_secure")(n=10, horizon=1 << 20, epsilon=1.0, delta=1e-6, m=6, seed=0)
    a, b = int(counter._abt[0]), int(counter._abt[1])
    hi, lo, y_rows, first_v = samplers.gaussian_table(a, b)
    assert counter.table_bytes == 16 * hi.size + 8 * 256 == hi.nbytes + lo.nbytes + first_v.nbytes
    assert counter.memory_bytes == counter._exact.nbytes + counter._key.nbytes  # the table is not state
    assert y_rows < 15 * math.sqrt(a / b) + 2  # |y| up to about 14.3 sigma carries a nonzero 128-bit entry
