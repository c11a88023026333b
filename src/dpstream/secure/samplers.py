"""Exact discrete Laplace and discrete Gaussian samplers on a ChaCha20 stream, integer arithmetic only.

Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020), Algorithms 1-3.

Randomness: one stream per draw, the ChaCha20 keystream of (key, nonce) from block 0 (``chacha``), read as a bit
reservoir refilled 32 bits at a time (least significant bits first).

**Discrete Gaussian** N_Z(0, a/b) (``_dgauss``): Alg. 3, rejection from the discrete Laplace of scale t = floor(sigma)
+ 1 (Alg. 2 with s = 1), where every Bernoulli(exp(-gamma)) has gamma in a finite set fixed by (a, b): exp(-r/t) for
r < t (the uniform part), exp(-v) for v <= V_CAP (the geometric part) and exp(-gamma_y), gamma_y = (|y| t b - a)^2 /
(2 a b t^2), for |y| < V_CAP t (the acceptance). ``gaussian_table`` holds floor(2^128 p) of each such p, computed
exactly once per (a, b) (``exact.exp_bits``). A trial U < p reads a uniform U 8 bits at a time and stops at the
first byte where U and p differ: P(U < p) = p exactly, and one byte decides with probability 255/256. The uniform
r < t is drawn as k = bit_length(t - 1) bits with p = 0 for r >= t (the uniform's rejection and Alg. 2's trial in
one), and the geometric part V as #{v in [1, V_CAP]: U < exp(-v)} for one uniform U (P(V >= v) = exp(-v), the law of
Alg. 2's Bernoulli(exp(-1)) loop; a 256-entry table of U's first byte decides it with probability 250/256). When U's
bits equal all 128 stored bits of p (probability 2^-128 per trial) the compiled sampler does not guess: it returns
``TIE``, the draw is recorded in ``st`` and ``settle`` recomputes it exactly in Python (``exact.dgauss``: the same
algorithm on the same stream, p's bits extended as far as needed). So every released value is exactly the algorithm's
output. About 2.2 keystream words per draw at sigma ~ 47 (5.4 before the tables).

**Discrete Laplace** of rational scale t/s (``_dlaplace_rational``, the sparse vector family's noise): Alg. 2 in
full with Alg. 1's Bernoulli(exp(-gamma)) for rational gamma = num/den (gamma > 1 split into floor(gamma) draws of
Bernoulli(exp(-1)) and one of the fractional part); a uniform integer below n takes ceil(log2 n) bits by rejection;
Bernoulli(gamma / K) in Alg. 1 is drawn as Bernoulli(1/K) and Bernoulli(gamma), independent, so no product overflows.

Every decision compares integers; the tests read the compiled LLVM IR for float instructions.

Range: the geometric part V of a discrete Laplace draw is capped at ``V_CAP`` for the discrete Gaussian (an attempt
with V >= V_CAP is rejected), so |Y| < V_CAP t. The output is EXACTLY the discrete Gaussian conditioned on |Y| <
V_CAP t (rejection preserves the shape of the target on the accepted set): its total variation distance to the
untruncated one is P(|Y| >= 64 sigma) < 2 exp(-2048), below any delta (stated in ``privacy``, not added). sigma^2 is
limited by ``V_CAP * t^2 * b <= 2^31`` (``gaussian_params``), which bounds the table: at most 91,204 rows (1.46 MB,
sigma ~ 5790); 808 rows (15 KB with ``first_v``) at sigma^2 = 2250.

The internal functions are compiled without numba's reference counting (``_nrt=False``: they never allocate), which
removes an atomic increment / decrement of every array argument at every call (most of the cost otherwise). The
per-word helpers are inlined into their callers (the discrete Gaussian keeps its reservoir in local variables,
``_take``), and so is ``_dgauss`` itself, into its two callers (``lanes.draw_queued`` and ``_gaussian_batch``):
about 49 ns a draw at sigma ~ 136 against 56 ns out of line, for about 3 s more of cold compilation. The ChaCha20
block stays out of line (``_refill``), which keeps the compile time at a few seconds.

``st`` (int64[5 + 1 + 6 capacity]): next block counter, word position in ``buf`` (16 = empty), bit reservoir, bits
in it, words consumed so far (for the timing tests); then the number of undecided discrete Gaussian draws since the
last ``settle`` and, for each, its nonce (3), output row, multiplier and words read.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from dpstream.secure import exact
from dpstream.secure.chacha import LANES, chacha20_block
from dpstream.secure.exact import CHUNK_BITS, V_CAP

MAX_PRODUCT = 1 << 31
"""The discrete Gaussian needs V_CAP t^2 b <= MAX_PRODUCT (its table's size; ``gaussian_params``)."""
LAPLACE_MAX_SCALE = 1 << 40
"""The standalone discrete Laplace takes integer scales t <= 2^40 (its |X| < 2^62 after the V cap below)."""
EXACT_SAMPLER = "bytes-128"
"""The discrete Gaussian sampler's version (its values from a stream: byte-wise trials on 128-bit tables). Results
stores key ``discrete_secure`` trials by it and ``BinaryTree(node_noise="discrete_secure").to_bytes`` writes it: give
it a new name
whenever the value drawn from a stream changes. (The rejection sampler before it had no name.)"""
LAPLACE_SAMPLER = "alg2-rational"
"""The discrete Laplace sampler's version (``_dlaplace_rational`` read through ``sequential.laplace_draws``'s
streams). Results stores key the exact discrete Laplace tree's trials by it: give it a new name whenever the value
drawn from a stream changes."""
TABLE_BITS = 128
"""Bits of each exp(-gamma) in the discrete Gaussian's table (two uint64)."""
CHUNKS = TABLE_BITS // CHUNK_BITS
"""Bytes of a table entry compared before a draw is left to the slow path."""
TIE = -(1 << 62)
"""``_dgauss``'s value for a draw it could not decide (no draw has |y| >= 2^31)."""
FLAGS_AT, FLAG_FIELDS, FLAG_CAPACITY = 5, 6, 8
"""``st[FLAGS_AT]`` counts undecided draws; each has FLAG_FIELDS entries after it (room for FLAG_CAPACITY)."""


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


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _take(k: np.int64, res: np.int64, held: np.int64, pos: np.int64, key: np.ndarray, nonce: np.ndarray,
          buf: np.ndarray, st: np.ndarray) -> tuple[np.int64, np.int64, np.int64, np.int64]:
    """``_bits`` on a reservoir held in the caller's variables: (k fresh bits, reservoir, bits in it, word position).

    The same bits in the same order as ``_bits``; the caller writes the reservoir back to ``st`` and counts the
    words (every word position passed, over every block refilled).
    """
    if held < k:
        if pos == 16:
            _refill(key, nonce, buf, st)
            pos = np.int64(0)
        res |= np.int64(buf[pos]) << held
        held += 32
        pos += 1
    return res & ((np.int64(1) << k) - 1), res >> k, held - k, pos


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _byte(hi: np.ndarray, lo: np.ndarray, row: np.int64, j: int) -> np.int64:
    """Byte j (0 the top) of table row ``row``: of hi[row] for j < 8, then of lo[row]."""
    word = hi[row] if j < 8 else lo[row]
    return np.int64((word >> np.uint64(56 - 8 * (j & 7))) & np.uint64(0xFF))


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _below(c: np.int64, hi: np.ndarray, lo: np.ndarray, row: np.int64, chunks: np.int64, res: np.int64,
           held: np.int64, pos: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
           st: np.ndarray) -> tuple[np.int64, np.int64, np.int64, np.int64]:
    """(1 if U < p, 0 if U > p, TIE if U's first ``chunks`` bytes equal p's; reservoir, bits, word position).

    p is table row ``row``, U uniform: its first byte ``c`` (already read), then further bytes read on demand;
    byte j of p is byte j (from the top) of hi[row], then lo[row]. Decided at the first byte that differs (the
    first with probability 255/256).
    """
    d = np.int64(hi[row] >> np.uint64(56))
    if c != d:
        return (np.int64(1) if c < d else np.int64(0)), res, held, pos
    for j in range(1, chunks):
        c, res, held, pos = _take(np.int64(CHUNK_BITS), res, held, pos, key, nonce, buf, st)
        d = _byte(hi, lo, row, j)
        if c != d:
            return (np.int64(1) if c < d else np.int64(0)), res, held, pos
    return np.int64(TIE), res, held, pos


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _geometric(c: np.int64, first_v: np.ndarray, hi: np.ndarray, lo: np.ndarray, chunks: np.int64, res: np.int64,
               held: np.int64, pos: np.int64, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
               st: np.ndarray) -> tuple[np.int64, np.int64, np.int64, np.int64]:
    """(#{v in [1, V_CAP]: U < exp(-v)} or TIE; reservoir, bits, word position), U of first byte ``c``.

    ``first_v[c]``: that count when the first byte decides every v, else -1 - (the v it decides below U). Then
    the undecided v (consecutive, rows v - 1 of the table) are compared with U's next bytes.
    """
    count = first_v[c]
    if count >= 0:
        return count, res, held, pos
    count = -1 - count
    low = count + 1
    high = low
    while high < V_CAP and _byte(hi, lo, high, 0) == c:  # rows high = v - 1 of v = high + 1
        high += 1
    for j in range(1, chunks):  # undecided: v in [low, high], their bytes before j all equal U's
        c, res, held, pos = _take(np.int64(CHUNK_BITS), res, held, pos, key, nonce, buf, st)
        while low <= high and _byte(hi, lo, low - 1, j) > c:
            low += 1
            count += 1
        top = low - 1
        while top < high and _byte(hi, lo, top, j) == c:
            top += 1
        high = top
        if low > high:
            return count, res, held, pos
    return np.int64(TIE), res, held, pos


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _dgauss(sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, key: np.ndarray, nonce: np.ndarray,
            buf: np.ndarray, st: np.ndarray) -> np.int64:
    """N_Z(0, a/b), t = floor(sqrt(a/b)) + 1, conditioned on |y| < V_CAP t (Alg. 3 over Alg. 2); TIE if undecided.

    ``sampler`` (``lanes.gaussian``): t, k = bit_length(t - 1), y_rows, chunks at 3..6, the first-byte counts of
    ``_geometric`` from 7. The table (``gaussian_table``) holds exp(-v) for v in [1, V_CAP], exp(-r/t) for r < 2^k
    (0 from r = t on) and exp(-gamma_y) for y < y_rows (0 beyond). Each attempt: r from k bits accepted by
    Bernoulli(exp(-r/t)); V (V_CAP rejects), a sign bit (negative zero rejects), y = r + t V accepted by
    Bernoulli(exp(-gamma_y)) (``exact.dgauss`` reads the same bits in the same order).
    """
    t, k, y_rows, chunks = sampler[3], sampler[4], sampler[5], sampler[6]
    first_v = sampler[7:]
    first_r = np.int64(V_CAP)
    first_y = first_r + (np.int64(1) << k)
    start_block, start_pos = st[0], st[1]
    res, held, pos = st[2], st[3], st[1]
    value = np.int64(TIE)
    while True:
        while True:
            rc, res, held, pos = _take(k + CHUNK_BITS, res, held, pos, key, nonce, buf, st)
            r = rc & ((np.int64(1) << k) - 1)
            d, res, held, pos = _below(rc >> k, hi, lo, first_r + r, chunks, res, held, pos, key, nonce, buf, st)
            if d != 0:
                break
        if d == TIE:
            break
        x, res, held, pos = _take(np.int64(2 * CHUNK_BITS + 1), res, held, pos, key, nonce, buf, st)
        v, res, held, pos = _geometric(x & 0xFF, first_v, hi, lo, chunks, res, held, pos, key, nonce, buf, st)
        if v == TIE:
            break
        negative = (x >> CHUNK_BITS) & 1
        y = r + t * v
        if v == V_CAP or (negative == 1 and y == 0):
            continue
        d, res, held, pos = _below(x >> (CHUNK_BITS + 1), hi, lo, first_y + min(y, y_rows), chunks, res, held, pos,
                                   key, nonce, buf, st)
        if d == TIE:
            break
        if d == 1:
            value = -y if negative == 1 else y
            break
    st[4] += 16 * (st[0] - start_block) + pos - start_pos
    st[1], st[2], st[3] = pos, res, held
    return value


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _flag(nonce: np.ndarray, row: np.int64, used: np.int64, words: np.int64, st: np.ndarray) -> None:
    """Record an undecided draw (its nonce, output row, multiplier and words read) for ``settle``."""
    at = FLAGS_AT + 1 + FLAG_FIELDS * st[FLAGS_AT]
    if at + FLAG_FIELDS <= st.shape[0]:
        st[at], st[at + 1], st[at + 2] = np.int64(nonce[0]), np.int64(nonce[1]), np.int64(nonce[2])
        st[at + 3], st[at + 4], st[at + 5] = row, used, words
    st[FLAGS_AT] += 1


@njit(cache=True)
def _gaussian_batch(key: np.ndarray, nonces: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray,
                    st: np.ndarray) -> np.ndarray:
    """``discrete_gaussian_batch`` before ``settle``: undecided draws are 0 and recorded in ``st``."""
    out = np.zeros(nonces.shape[0], dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    for i in range(nonces.shape[0]):
        _fresh(st)
        start = st[4]
        value = _dgauss(sampler, hi, lo, key, nonces[i], buf, st)
        if value == TIE:
            _flag(nonces[i], np.int64(i), np.int64(1), st[4] - start, st)
        else:
            out[i] = value
    return out


def discrete_gaussian_batch(key: np.ndarray, nonces: np.ndarray, a: int, b: int, t: int, st: np.ndarray,
                            _chunks: int = CHUNKS) -> np.ndarray:
    """One N_Z(0, a/b) draw per nonce row (shape (n, 3) uint32), each from its own stream; int64.

    ``_chunks`` (tests only) compares that many bytes of each table entry before a draw goes to the slow path.
    """
    sampler, hi, lo = gaussian_sampler(int(a), int(b), int(t), _chunks)
    out = _gaussian_batch(key, nonces, sampler, hi, lo, st)
    settle(key, int(a), int(b), int(t), st, out)
    return out


def gaussian_sampler(a: int, b: int, t: int, chunks: int = CHUNKS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sampler, hi, lo) of N_Z(0, a/b) for ``_dgauss``: kind 0, a, b, t, k, y_rows, chunks, then ``first_v``.

    Kind 0 is ``lanes.GAUSSIAN``; ``chunks`` < CHUNKS (tests only) leaves more draws to ``settle``.
    """
    expected = gaussian_params(a, b)[2]
    if t != expected:
        raise ValueError(f"t = {t!r} is not floor(sigma) + 1 = {expected} for sigma^2 = {a}/{b}: "
                         "the table is laid out for that t (use gaussian_params)")
    if not (isinstance(chunks, int) and 1 <= chunks <= CHUNKS):
        raise ValueError(f"chunks must be an integer in [1, {CHUNKS}] (bytes of a {TABLE_BITS}-bit entry), "
                         f"got {chunks!r}")
    hi, lo, y_rows, first_v = gaussian_table(a, b)
    head = np.array([0, a, b, t, (t - 1).bit_length(), y_rows, chunks], dtype=np.int64)
    return np.concatenate((head, first_v)), hi, lo


def settle(key: np.ndarray, a: int, b: int, t: int, st: np.ndarray, out: np.ndarray) -> None:
    """Add the exact value of every draw the compiled sampler flagged (``exact.dgauss``) to ``out``; clear the flags.

    A flagged draw's U tied with all table bits of some p (probability <= 2^-128 per trial with the full table):
    ``exact.dgauss`` reads the same stream from its start and extends p's bits as far as needed.
    """
    flagged = int(st[FLAGS_AT])
    if not flagged:
        return
    st[FLAGS_AT] = 0  # cleared first: a slow path that raises leaves no record for the next batch to settle
    if FLAGS_AT + 1 + FLAG_FIELDS * flagged > st.shape[0]:
        raise RuntimeError(f"{flagged} draws went to the exact slow path, more than the sampler state records "
                           f"({(st.shape[0] - FLAGS_AT - 1) // FLAG_FIELDS}); no value was released")
    for i in range(flagged):
        n0, n1, n2, row, used, words = st[FLAGS_AT + 1 + FLAG_FIELDS * i:FLAGS_AT + 1 + FLAG_FIELDS * (i + 1)]
        value, total = exact.dgauss(key, np.array([n0, n1, n2], dtype=np.uint32), a, b, t)
        out[row] += used * value
        st[4] += total - words


@functools.lru_cache(maxsize=16)
def gaussian_table(a: int, b: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """(hi, lo, y_rows, first_v): the 128-bit truncations floor(2^128 p) of every p the sampler of N_Z(0, a/b) uses.

    Rows: exp(-v) for v in [1, V_CAP]; exp(-r/t) for r < 2^k, k = bit_length(t - 1) (0 for r >= t); exp(-gamma_y),
    gamma_y = (y t b - a)^2 / (2 a b t^2), for y < y_rows, the first y past the mode with floor(2^128 p) = 0 (or
    V_CAP t); one row of 0 (every y >= y_rows). p = 1 is stored as 2^128 - 1. 16 bytes a row. ``first_v`` (256
    int64): for each first byte c of the uniform of V, the number of v with a first byte above c, or -1 - that
    number when some v has first byte c (``_geometric``). Cached per (a, b), not to be written.
    """
    a, b, t = gaussian_params(a, b)
    k = (t - 1).bit_length()
    rows = [exact.exp_bits(v, 1, TABLE_BITS) for v in range(1, V_CAP + 1)]
    rows += [exact.exp_bits(r, t, TABLE_BITS) if r < t else 0 for r in range(1 << k)]
    y = 0
    while y < V_CAP * t:
        p = exact.exp_bits((y * t * b - a) ** 2, 2 * a * b * t * t, TABLE_BITS)
        if p == 0 and y * t * b > a:
            break
        rows.append(p)
        y += 1
    rows.append(0)
    hi = np.array([p >> 64 for p in rows], dtype=np.uint64)
    lo = np.array([p & ((1 << 64) - 1) for p in rows], dtype=np.uint64)
    tops = [p >> (TABLE_BITS - CHUNK_BITS) for p in rows[:V_CAP]]
    first_v = np.array([sum(d > c for d in tops) if c not in tops else -1 - sum(d > c for d in tops)
                        for c in range(1 << CHUNK_BITS)], dtype=np.int64)
    for shared in (hi, lo, first_v):  # one copy per (a, b) for every caller
        shared.setflags(write=False)
    return hi, lo, y, first_v


def gaussian_params(a: int, b: int) -> tuple[int, int, int]:
    """(a, b, t) for N_Z(0, a/b), t = floor(sqrt(a/b)) + 1, after checking the range (one-line error)."""
    import math

    if not (isinstance(a, int) and isinstance(b, int) and a > 0 and b > 0):
        raise ValueError(f"sigma^2 = a/b needs positive integers a, b; got a={a!r}, b={b!r}")
    t = math.isqrt(a // b) + 1
    if V_CAP * t * t * b > MAX_PRODUCT:
        largest = math.isqrt(MAX_PRODUCT // V_CAP)
        raise ValueError(f"sigma^2 = {a}/{b} is outside the exact sampler's range: need {V_CAP} t^2 b <= 2^31 "
                         f"with t = floor(sigma) + 1 = {t} (sigma^2 < {largest * largest} with b = 1)")
    return a, b, t


def new_state(capacity: int = FLAG_CAPACITY) -> np.ndarray:
    """A fresh sampler state (``st``) with room for ``capacity`` undecided draws between two ``settle`` calls."""
    st = np.zeros(FLAGS_AT + 1 + FLAG_FIELDS * capacity, dtype=np.int64)
    st[1] = 16
    return st
