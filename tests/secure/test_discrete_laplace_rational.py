"""The rational-scale discrete Laplace (Canonne-Kamath-Steinke Alg. 2), its grid, nonce scheme and float-free IR."""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
import pytest
from test_secure_noise import FLOAT_TOKENS, N_DRAWS, _chi_square_p, _nonces

from dpstream.secure import chacha, lanes, laplace, samplers
from dpstream.svt import _kernels

KEY = chacha.key_words(bytes(range(50, 82)))


@pytest.mark.parametrize(("t", "s"), [(1, 4), (7, 3), (40, 3), laplace.laplace_grid(20 / 3)])
def test_rational_discrete_laplace_matches_pmf(t: int, s: int) -> None:
    # fixed key and nonces; a correct sampler fails only when p < 1e-6 (the brief's level)
    draws = samplers.discrete_laplace_rational_batch(KEY, _nonces(N_DRAWS, t % 997 + s % 991), np.int64(t),
                                                     np.int64(s), np.int64(laplace.laplace_vcap(t)),
                                                     samplers.new_state())
    scale = Fraction(t, s)
    half_width = math.ceil(80 * scale)  # P(|y| > 80 scale) < 2 exp(-80): no draw there in 10^6
    support = np.arange(-half_width, half_width + 1)
    assert _chi_square_p(draws, -np.abs(support).astype(float) / float(scale), support) > 1e-6


@pytest.mark.parametrize("scale", [1e-12, 0.3, 2.0, 20 / 3, 12.0, 2.0**32 + 0.5, 3e11])
def test_grid_rounds_up_by_less_than_one_step(scale: float) -> None:
    t, s = laplace.laplace_grid(scale)
    exact = Fraction(scale)
    assert Fraction(t, s) >= exact  # never down
    assert Fraction(t - 1, s) < exact  # the smallest numerator on this denominator
    assert 1 <= t <= samplers.LAPLACE_MAX_SCALE and s & (s - 1) == 0  # in range, s a power of two
    assert t > 2**31 or s in (1, 2**32)  # as fine as the numerator budget allows (relative excess < 1/(t - 1))


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, 2.0**40 + 1, "3"])
def test_grid_refuses_out_of_range_in_one_line(bad: object) -> None:
    with pytest.raises(ValueError, match="discrete Laplace scale must be a finite number in") as info:
        laplace.laplace_grid(bad)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_block_reads_the_stream_of_nonce_role_call_run_index() -> None:
    t, s = laplace.laplace_grid(7.5)
    vcap = laplace.laplace_vcap(t)
    word0 = laplace.nonce_word("query", 5)
    block = laplace.laplace_block(KEY, np.int64(t), np.int64(s), np.int64(vcap), np.int64(word0), np.int64(3),
                                  np.int64(10), np.int64(4), samplers.new_state())
    nonces = np.array([[word0, r, 10 + i] for r in range(3) for i in range(4)], dtype=np.uint32)
    one_by_one = samplers.discrete_laplace_rational_batch(KEY, nonces, np.int64(t), np.int64(s), np.int64(vcap),
                                                          samplers.new_state())
    np.testing.assert_array_equal(block, one_by_one.reshape(3, 4))
    keyed = laplace.KeyedLaplace(3)
    keyed.key = KEY
    big = keyed.draw("query", (t, s), 7, 50, 0, 200)
    assert not np.array_equal(big, keyed.draw("query", (t, s), 8, 50, 0, 200))  # another call
    assert not np.array_equal(big, keyed.draw("threshold", (t, s), 7, 50, 0, 200))  # another role
    np.testing.assert_array_equal(big[:, 100:], keyed.draw("query", (t, s), 7, 50, 100, 100))  # index-keyed


def test_keys_from_seed_or_secrets_and_never_in_repr() -> None:
    a, b = laplace.KeyedLaplace(11), laplace.KeyedLaplace(11)
    np.testing.assert_array_equal(a.key, b.key)
    private = laplace.KeyedLaplace(None)
    assert private.seeded is False and a.seeded is True
    assert not np.array_equal(private.key, laplace.KeyedLaplace(None).key)
    assert private.key.tobytes().hex() not in repr(private) and str(int(private.key[0])) not in repr(private)


@pytest.mark.parametrize(("role", "call", "match"), [("x", 0, "unknown noise role"),
                                                     ("w", 1 << 28, "call number must be in")])
def test_nonce_word_refuses_out_of_range(role: str, call: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        laplace.nonce_word(role, call)


def _calls() -> list[tuple[object, tuple]]:
    key, nonce, buf, st = KEY, np.zeros(3, np.uint32), np.zeros(16, np.uint32), samplers.new_state()
    i = np.int64
    r, m = 2, 5
    return [
        (samplers._dlaplace_rational, (i(7), i(3), i(64), key, nonce, buf, st)),
        (samplers.discrete_laplace_rational_batch, (key, np.zeros((2, 3), np.uint32), i(7), i(3), i(64), st)),
        (laplace._laplace_block, (key, lanes.laplace(7, 3, 64), i(17), i(2), i(0), i(3), st)),
        (_kernels.sparse_pass, (np.arange(m, dtype=np.int64), i(3), np.zeros((r, 2), np.int64),
                                np.zeros((r, m), np.int64), np.zeros((r, 2), np.int64), i(2), True, i(1),
                                np.zeros(r, np.int64), np.zeros((r, m), np.int8), np.zeros((r, m), np.int64))),
        (_kernels.monitor_pass_int, (np.ones(3, np.int64), np.array([0, 1, 2]), np.array([0, 1]),
                                     np.zeros((r, 2), np.int64), np.zeros((r, 2), np.int64), i(5), i(3), i(2),
                                     np.zeros((r, 2), np.int8), np.zeros((r, 2), np.int64))),
    ]


def test_no_float_on_the_svt_decision_path() -> None:
    # the sampler, the block drawer and the SVT kernels at the integer types svt_noise="discrete_secure" passes;
    # cached dispatchers do not show their IR, so each function is recompiled uncached from its Python source
    for fn, args in _calls():
        fresh = numba.njit(fn.py_func)  # type: ignore[attr-defined]
        fresh(*args)
        for ir in fresh.inspect_llvm().values():
            found = [tok for tok in FLOAT_TOKENS if tok in ir]
            assert not found, f"{fn.py_func.__name__}: {found}"  # type: ignore[attr-defined]
