"""exp(-gamma) to any number of bits, and the exact discrete Gaussian in pure Python (slow path and test oracle).

``exp_bits(num, den, n)`` is floor(2^n exp(-num/den)) for rational num/den >= 0, computed with integers only:
exp(-gamma) = exp(-1)^m exp(-f) (m = floor(gamma), f in [0, 1)), each factor enclosed between integer bounds at a
working precision of w bits (Taylor series of exp(x) with every truncated term and the remainder bounded, inverted,
multiplied as intervals) and w raised until both ends of the enclosure have the same floor at n bits. exp(-gamma)
for rational gamma > 0 is irrational (Lindemann), so the loop ends. exp(0) = 1 is read as 0.111... (n one bits).

``dgauss(key, nonce, a, b, t)`` is the sampler of ``samplers._dgauss`` written plainly: it reads the ChaCha20 stream
(key, nonce) from block 0 through the same bit reservoir, draws the same Bernoulli trials in the same order, and
decides each U < exp(-gamma) by reading U's bits 8 at a time against the bits of exp(-gamma) from ``exp_bits``,
extended as far as the comparison needs. Where the compiled sampler's 128 table bits tie with U's, this reads on;
elsewhere both read the same bits and agree. ``samplers.settle`` recomputes with it the draws the compiled sampler
flagged; the tests compare the two on many streams.
"""

from __future__ import annotations

import functools

import numpy as np

from dpstream.secure.chacha import chacha20_block

CHUNK_BITS = 8
"""Bits of U compared at a time (here and in ``samplers``)."""
V_CAP = 64
"""Discrete Laplace attempts inside the discrete Gaussian with geometric part >= V_CAP are rejected."""


def _exp_pos(f: int, den: int, w: int) -> tuple[int, int]:
    """Integers (lo, hi) with lo <= 2^w exp(f/den) <= hi, for 0 <= f <= den.

    Terms t_k = floor(t_{k-1} f / (den k)) from t_0 = 2^w: T_k - k <= t_k <= T_k for the exact T_k = 2^w x^k / k!
    (each floor loses < 1 and x <= 1), and once t_K = 0 the tail from K on is at most 2 T_K <= 2K (ratio <= 1/2).
    """
    term, total, k = 1 << w, 1 << w, 0
    while term:
        k += 1
        term = term * f // (den * k)
        total += term
    return total, total + k * (k - 1) // 2 + 2 * k


def _mul(x: tuple[int, int], y: tuple[int, int], w: int) -> tuple[int, int]:
    """Product of two non-negative enclosures at scale 2^w, rounded outwards."""
    return (x[0] * y[0]) >> w, -((-x[1] * y[1]) >> w)


def _exp_neg(num: int, den: int, w: int) -> tuple[int, int]:
    """Integers (lo, hi) with lo <= 2^w exp(-num/den) <= hi."""
    m, f = divmod(num, den)
    one = 1 << (2 * w)
    pos = _exp_pos(f, den, w)
    result = (one // pos[1], -(-one // pos[0]))
    e1 = _exp_pos(1, 1, w)
    power = (one // e1[1], -(-one // e1[0]))
    while m:  # exp(-1)^m by squaring
        if m & 1:
            result = _mul(result, power, w)
        m >>= 1
        if m:
            power = _mul(power, power, w)
    return result


@functools.lru_cache(maxsize=1 << 16)
def exp_bits(num: int, den: int, n: int) -> int:
    """floor(2^n exp(-num/den)) for integers num >= 0, den >= 1 (2^n - 1 at num = 0: exp(0) read as 0.111...)."""
    if num == 0:
        return (1 << n) - 1
    w = n + 64
    while True:
        lo, hi = _exp_neg(num, den, w)
        if lo >> (w - n) == hi >> (w - n):
            return lo >> (w - n)
        w *= 2


class Stream:
    """The compiled samplers' bit reservoir over the ChaCha20 stream (key, nonce) from block 0.

    Words are taken 32 bits at a time when the reservoir holds fewer bits than asked for; ``words`` counts them.
    """

    def __init__(self, key: np.ndarray, nonce: np.ndarray) -> None:
        """Stream (key, nonce) before its first word."""
        self.key, self.nonce = key, np.ascontiguousarray(nonce, dtype=np.uint32)
        self.block, self.buf = np.empty(16, dtype=np.uint32), list[int]()
        self.counter = self.reservoir = self.held = self.words = 0

    def bits(self, k: int) -> int:
        """Return k <= 32 fresh bits as an integer in [0, 2^k)."""
        if self.held < k:
            if not self.buf:
                chacha20_block(self.key, np.uint32(self.counter), self.nonce, self.block)
                self.counter += 1
                self.buf = self.block.tolist()[::-1]
            self.reservoir |= self.buf.pop() << self.held
            self.held += 32
            self.words += 1
        r = self.reservoir & ((1 << k) - 1)
        self.reservoir >>= k
        self.held -= k
        return r


def below(stream: Stream, first: int, num: int | None, den: int) -> bool:
    """U < exp(-num/den) (num None: p = 0) for a uniform U of first byte ``first``, further bytes from ``stream``.

    The first byte (CHUNK_BITS bits) where U's bits differ from p's decides; on equal bytes the next ones are read.
    """
    n, c = CHUNK_BITS, first
    while True:
        d = 0 if num is None else exp_bits(num, den, n) & ((1 << CHUNK_BITS) - 1)
        if c != d:
            return c < d
        n += CHUNK_BITS
        c = stream.bits(CHUNK_BITS)


def geometric(stream: Stream, first: int) -> int:
    """#{v in [1, V_CAP]: U < exp(-v)} for a uniform U of first byte ``first``, further bytes from ``stream``.

    P(V >= v) = exp(-v): the geometric part of Alg. 2 by inversion of one uniform. A byte decides every v whose
    byte differs from U's; the v whose bytes all equal U's so far need U's next byte.
    """
    undecided, count, n, c = list(range(1, V_CAP + 1)), 0, CHUNK_BITS, first
    while True:
        digits = [(v, exp_bits(v, 1, n) & ((1 << CHUNK_BITS) - 1)) for v in undecided]
        count += sum(c < d for _, d in digits)
        undecided = [v for v, d in digits if d == c]
        if not undecided:
            return count
        n += CHUNK_BITS
        c = stream.bits(CHUNK_BITS)


def dgauss(key: np.ndarray, nonce: np.ndarray, a: int, b: int, t: int) -> tuple[int, int]:
    """(value, words) of one N_Z(0, a/b) draw from stream (key, nonce): ``samplers._dgauss`` with exact trials.

    Alg. 3 of Canonne, Kamath, Steinke over their Alg. 2 (s = 1). An attempt: r from k = bit_length(t - 1) bits
    with Bernoulli(exp(-r/t)) (Bernoulli(0) for r >= t: the uniform's rejection and Alg. 2's trial in one), repeated
    until accepted; then 2 CHUNK_BITS + 1 bits at once: the first byte of the uniform of V (``geometric``; V =
    V_CAP rejects the attempt), the sign (negative zero rejects) and the first byte of the last trial, y = r + t V
    accepted with Bernoulli(exp(-(|y| t b - a)^2 / (2 a b t^2))).
    """
    stream = Stream(key, nonce)
    k = (t - 1).bit_length()
    byte = (1 << CHUNK_BITS) - 1
    while True:
        while True:  # r and the first byte of its trial read at once
            rc = stream.bits(k + CHUNK_BITS)
            r = rc & ((1 << k) - 1)
            if below(stream, rc >> k, r if r < t else None, t):
                break
        x = stream.bits(2 * CHUNK_BITS + 1)
        v = geometric(stream, x & byte)
        negative = (x >> CHUNK_BITS) & 1
        y = r + t * v
        if v == V_CAP or (negative and y == 0):
            continue
        if below(stream, x >> (CHUNK_BITS + 1), (y * t * b - a) ** 2, 2 * a * b * t * t):
            return (-y if negative else y), stream.words
