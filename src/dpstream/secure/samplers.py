"""Exact discrete Laplace and discrete Gaussian samplers on a ChaCha20 stream, integer arithmetic only.

Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020), Algorithms 1-3:
Bernoulli(exp(-gamma)) for rational gamma = num/den (Alg. 1, with gamma > 1 split into floor(gamma) draws of
Bernoulli(exp(-1)) and one of the fractional part), the discrete Laplace of integer scale t (Alg. 2 with s = 1) and the
discrete Gaussian N_Z(0, a/b) by rejection from the discrete Laplace of scale t = floor(sigma) + 1 (Alg. 3). Every
decision compares or divides integers; the tests read the compiled LLVM IR for float instructions.

Randomness: one stream per draw, the ChaCha20 keystream of (key, nonce) from block 0 (``chacha``), read as a bit
reservoir refilled 32 bits at a time; a uniform integer below n takes ceil(log2 n) bits by rejection.
Bernoulli(gamma / K) in Alg. 1 is drawn as Bernoulli(1/K) and Bernoulli(gamma), independent, so no product overflows.

Range (no int64 overflow): the geometric part V of a discrete Laplace draw is capped at ``V_CAP`` for the discrete
Gaussian (an attempt with V >= V_CAP is rejected), so |Y| < V_CAP t and the acceptance exponent
(|Y| t b - a)^2 / (2 a b t^2) has numerator < (V_CAP t^2 b)^2 <= 2^62. Hence the condition
``V_CAP * t^2 * b <= 2^31`` (``check_gaussian``). The output is then EXACTLY the discrete Gaussian conditioned on
|Y| < V_CAP t (rejection preserves the shape of the target on the accepted set): its total variation distance to the
untruncated one is P(|Y| >= 64 sigma) < 2 exp(-2048), below any delta (stated in ``privacy``, not added).

The internal functions are compiled without numba's reference counting (``_nrt=False``: they never allocate), which
removes an atomic increment / decrement of every array argument at every call (most of the cost otherwise). The
per-word helpers (``_word``, ``_bits``, ``_bit_length``, ``_uniform_below``) are inlined into their callers; the
ChaCha20 block stays out of line (``_refill``), which keeps the compile time at a few seconds.

``st`` (int64[5]): next block counter, word position in ``buf`` (16 = empty), bit reservoir, bits in it, words
consumed so far (for the timing tests).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.secure.chacha import LANES, chacha20_block

V_CAP = 64
"""Discrete Laplace attempts inside the discrete Gaussian with geometric part >= V_CAP are rejected."""
MAX_PRODUCT = 1 << 31
"""The discrete Gaussian needs V_CAP t^2 b <= MAX_PRODUCT."""
LAPLACE_MAX_SCALE = 1 << 40
"""The standalone discrete Laplace takes integer scales t <= 2^40 (its |X| < 2^62 after the V cap below)."""


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _fresh(st: np.ndarray) -> None:
    """Start a new stream: block 0, empty buffer and reservoir (the words-consumed count runs on)."""
    st[0] = 0
    st[1] = 16
    st[2] = 0
    st[3] = 0


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _primed(words: np.ndarray, lane: int, buf: np.ndarray, st: np.ndarray) -> None:
    """Start a new stream whose block 0 is lane ``lane`` of ``words`` (``chacha.chacha20_lanes``).

    The state is the one ``_fresh`` and the first ``_refill`` leave (block 0 in ``buf``, next block 1), so every
    draw and every count of words consumed is the same as from ``_fresh``.
    """
    for word in range(16):
        buf[word] = words[word * LANES + lane]
    st[0] = 1
    st[1] = 0
    st[2] = 0
    st[3] = 0


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _refill(key: np.ndarray, nonce: np.ndarray, buf: np.ndarray, st: np.ndarray) -> None:
    """The next keystream block into ``buf``; the word position back to 0."""
    chacha20_block(key, np.uint32(st[0]), nonce, buf)
    st[0] += 1
    st[1] = 0


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _word(key: np.ndarray, nonce: np.ndarray, buf: np.ndarray, st: np.ndarray) -> np.int64:
    """The next 32-bit keystream word (inlined; the block itself is computed out of line, in ``_refill``)."""
    if st[1] >= 16:
        _refill(key, nonce, buf, st)
    w = np.int64(buf[st[1]])
    st[1] += 1
    st[4] += 1
    return w


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _bits(k: int, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray, st: np.ndarray) -> np.int64:
    """Return k <= 32 fresh random bits as an integer in [0, 2^k).

    The reservoir holds < k <= 32 bits when it is refilled, so it stays below 2^63 (non-negative int64).
    """
    if st[3] < k:
        st[2] |= _word(key, nonce, buf, st) << st[3]
        st[3] += 32
    r = st[2] & ((np.int64(1) << k) - 1)
    st[2] >>= k
    st[3] -= k
    return r


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _bit_length(n: np.int64) -> int:
    """Number of bits of 0 <= n < 2^63: a binary search over shifts of 32, 16, ..., 1 (six steps, integers only)."""
    k = 0
    step = 32
    while step:
        if n >> step:
            n >>= step
            k += step
        step >>= 1
    return k + (1 if n else 0)


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _uniform_below(n: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray, st: np.ndarray) -> np.int64:
    """Uniform integer in [0, n), n in [1, 2^62]: ceil(log2 n) bits, rejected when >= n (accepts w.p. > 1/2)."""
    k = _bit_length(n - 1)
    while True:
        if k <= 32:
            v = _bits(k, key, nonce, buf, st)
        else:
            v = _bits(32, key, nonce, buf, st) | (_bits(k - 32, key, nonce, buf, st) << 32)
        if v < n:
            return v


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _bernoulli_exp_le1(num: np.int64, den: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
                       st: np.ndarray) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den (Canonne, Kamath, Steinke Alg. 1)."""
    k = np.int64(1)
    while True:
        if _uniform_below(den, key, nonce, buf, st) >= num:  # Bernoulli(gamma) fails
            break
        if k > 1 and _uniform_below(k, key, nonce, buf, st) != 0:  # Bernoulli(1/K) fails
            break
        k += 1
    return k % 2 == 1


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _bernoulli_exp(num: np.int64, den: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
                   st: np.ndarray) -> bool:
    """Bernoulli(exp(-num/den)) for num >= 0: floor(gamma) Bernoulli(exp(-1)), then the fractional part."""
    while num > den:
        if not _bernoulli_exp_le1(np.int64(1), np.int64(1), key, nonce, buf, st):
            return False
        num -= den
    return _bernoulli_exp_le1(num, den, key, nonce, buf, st)


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _dlaplace_magnitude(t: np.int64, vcap: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
                        st: np.ndarray) -> np.int64:
    """|X| - ... : U + t V of Alg. 2 (s = 1) with V < vcap, or -1 when the attempt is rejected."""
    u = _uniform_below(t, key, nonce, buf, st)
    if not _bernoulli_exp(u, t, key, nonce, buf, st):
        return np.int64(-1)
    v = np.int64(0)
    while _bernoulli_exp_le1(np.int64(1), np.int64(1), key, nonce, buf, st):
        v += 1
        if v >= vcap:
            return np.int64(-1)
    return u + t * v


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _dlaplace(t: np.int64, vcap: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
              st: np.ndarray) -> np.int64:
    """Discrete Laplace of integer scale t, P(x) proportional to exp(-|x| / t) (Alg. 2), |x| < vcap t."""
    while True:
        x = _dlaplace_magnitude(t, vcap, key, nonce, buf, st)
        if x < 0:
            continue
        sign = _bits(1, key, nonce, buf, st)
        if sign == 1 and x == 0:
            continue
        return x if sign == 0 else -x


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _dlaplace_rational(t: np.int64, s: np.int64, vcap: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
                       st: np.ndarray) -> np.int64:
    """Discrete Laplace of rational scale t/s, P(y) proportional to exp(-|y| s / t) (Alg. 2 in full), |y| < vcap t / s.

    X = U + t V as in ``_dlaplace_magnitude`` (geometric with P(X = x) proportional to exp(-x / t)), Y = floor(X / s)
    (then P(Y = y) is proportional to exp(-y s / t)), a fair sign, and (sign negative, Y = 0) rejected.
    """
    while True:
        x = _dlaplace_magnitude(t, vcap, key, nonce, buf, st)
        if x < 0:
            continue
        y = x // s
        sign = _bits(1, key, nonce, buf, st)
        if sign == 1 and y == 0:
            continue
        return y if sign == 0 else -y


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _dgauss(a: np.int64, b: np.int64, t: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
            st: np.ndarray) -> np.int64:
    """Discrete Gaussian N_Z(0, a/b) with t = floor(sqrt(a/b)) + 1 (Alg. 3), conditioned on |y| < V_CAP t."""
    den = 2 * a * b * t * t
    while True:
        y = _dlaplace(t, np.int64(V_CAP), key, nonce, buf, st)
        c = (y if y >= 0 else -y) * t * b - a
        if _bernoulli_exp(c * c, den, key, nonce, buf, st):
            return y


@njit(cache=True)
def discrete_gaussian_batch(key: np.ndarray, nonces: np.ndarray, a: np.int64, b: np.int64, t: np.int64,
                            st: np.ndarray) -> np.ndarray:
    """One N_Z(0, a/b) draw per nonce row (shape (n, 3) uint32), each from its own stream; int64."""
    out = np.empty(nonces.shape[0], dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    for i in range(nonces.shape[0]):
        _fresh(st)
        out[i] = _dgauss(a, b, t, key, nonces[i], buf, st)
    return out


@njit(cache=True)
def discrete_laplace_batch(key: np.ndarray, nonces: np.ndarray, t: np.int64, vcap: np.int64,
                           st: np.ndarray) -> np.ndarray:
    """One discrete Laplace (scale t, |x| < vcap t) draw per nonce row, each from its own stream; int64."""
    out = np.empty(nonces.shape[0], dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    for i in range(nonces.shape[0]):
        _fresh(st)
        out[i] = _dlaplace(t, vcap, key, nonces[i], buf, st)
    return out


@njit(cache=True)
def discrete_laplace_rational_batch(key: np.ndarray, nonces: np.ndarray, t: np.int64, s: np.int64, vcap: np.int64,
                                    st: np.ndarray) -> np.ndarray:
    """One discrete Laplace (scale t/s, |x| < vcap t / s) draw per nonce row, each from its own stream; int64."""
    out = np.empty(nonces.shape[0], dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    for i in range(nonces.shape[0]):
        _fresh(st)
        out[i] = _dlaplace_rational(t, s, vcap, key, nonces[i], buf, st)
    return out


def gaussian_params(a: int, b: int) -> tuple[int, int, int]:
    """(a, b, t) for N_Z(0, a/b), t = floor(sqrt(a/b)) + 1, after checking the overflow range (one-line error)."""
    import math

    if not (isinstance(a, int) and isinstance(b, int) and a > 0 and b > 0):
        raise ValueError(f"sigma^2 = a/b needs positive integers a, b; got a={a!r}, b={b!r}")
    t = math.isqrt(a // b) + 1
    if V_CAP * t * t * b > MAX_PRODUCT:
        raise ValueError(f"sigma^2 = {a}/{b} is outside the exact sampler's int64 range: need {V_CAP} t^2 b <= 2^31 "
                         f"with t = floor(sigma) + 1 = {t} (sigma^2 <= {MAX_PRODUCT // V_CAP - 1} with b = 1)")
    return a, b, t


def laplace_cap(t: int) -> int:
    """The V cap of a standalone discrete Laplace of scale t (so |x| < 2^62), after checking t (one-line error)."""
    if not (isinstance(t, int) and 1 <= t <= LAPLACE_MAX_SCALE):
        raise ValueError(f"discrete Laplace scale must be an integer in [1, 2^40], got {t!r}")
    return (1 << 62) // t


def new_state() -> np.ndarray:
    """A fresh sampler state (``st``)."""
    st = np.zeros(5, dtype=np.int64)
    st[1] = 16
    return st
