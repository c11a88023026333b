"""Constant-time discrete Gaussian: a cumulative table scanned in full, a fixed 4 keystream words per draw.

The sampler behind ``node_noise="discrete_secure_ct"`` (``counters.BinaryTree(node_noise="discrete_secure_ct")``). It
trades the exact
rejection sampler of Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020), whose
work depends on the value drawn, for a sampler whose work is the same for every draw, at a cost in delta that is
computed and stated (their section 5.4 discusses exactly this trade: a fixed budget, and a tail that fails safe).

Design (why a table, not capped rejection): a rejection sampler with capped iterations still has a value-dependent
number of useful iterations, and making it constant time means running every attempt to the cap, about 10x the
expected work for a failure probability of 1e-30. A cumulative-distribution table (CDT) needs exactly one uniform
per draw. Let Y ~ N_Z(0, a/b) and K >= 1 the table size. The magnitude M = |Y| truncated to [0, K] has cumulative
values C_k = P(|Y| <= k), k < K, stored as 127-bit fixed-point integers T_k = floor(C_k 2^127) (computed with
Python's ``decimal`` at 80 significant digits, so |T_k 2^-127 - C_k| < 2^-126). One draw reads 4 keystream words:
127 bits for u, uniform on [0, 2^127), and one sign bit. M = #{k < K : T_k <= u} by a scan of the WHOLE table
(no early exit, a branch-free count), and y = M or -M by the sign bit (M = 0 either way, so P(y = j) = P(|Y| = |j|)
/ 2 for j != 0). Every draw runs one ChaCha20 block, K loop iterations of the same instructions, and reads the table
in the same order: the number of words, iterations and the memory addresses touched do not depend on the value.

Failure term: the output's distribution is within total variation
``eta = P(|Y| > K) + (K + 1) 2^-126`` of N_Z(0, a/b) (the tail beyond K lands on +-K, and each of the K table entries
is off by < 2^-126). P(|Y| > K) <= sqrt(2 / pi) (sigma / K) exp(-K^2 / (2 sigma^2)): the sum over y > K is at most the
Gaussian integral beyond K (Mills ratio) and the normaliser is at least sqrt(2 pi) sigma (Poisson summation).
Independent draws add their distances: the N node values a stream can use are within N eta of exact ones, and a
mechanism within total variation N eta of an (epsilon, delta)-DP one on every input is (epsilon, delta + (1 + e^eps)
N eta)-DP. ``table_size`` takes the smallest K whose term (1 + e^eps) N eta fits the sampler's share of delta.
"""

from __future__ import annotations

import math
from decimal import ROUND_FLOOR, Decimal, localcontext
from functools import lru_cache

import numpy as np
from numba import njit

from dpstream.secure.chacha import chacha20_block

CT_WORDS = 4
"""Keystream words one constant-time draw consumes: 127 bits of u and one sign bit."""
FRACTION_BITS = 127
MAX_TABLE = 1 << 20
"""The largest table (16 MiB): a K above it raises a one-line error."""
_MARGIN = 1 + 1e-9
"""Relative margin on the float evaluation of the tail bound (its rounding error is below 1e-13 relative)."""
_DIGITS = 80


def tail_bound(sigma2: float, k: int) -> float:
    """An upper bound on P(|Y| > k) for Y ~ N_Z(0, sigma2): sqrt(2 / pi) (sigma / k) exp(-k^2 / (2 sigma2))."""
    log = 0.5 * math.log(2 / math.pi) + 0.5 * math.log(sigma2) - math.log(k) - k * k / (2 * sigma2)
    return math.exp(log) * _MARGIN


def total_variation(sigma2: float, k: int) -> float:
    """eta: the distance of one table draw (size ``k``) from N_Z(0, sigma2), tail plus the table's rounding."""
    return tail_bound(sigma2, k) + (k + 1) * 2.0**-126


def sampler_delta(sigma2: float, k: int, draws: int, epsilon: float) -> float:
    """(1 + e^eps) N eta: what ``draws`` constant-time draws add to delta."""
    return (1 + math.exp(epsilon)) * draws * total_variation(sigma2, k) * _MARGIN


def table_size(sigma2: float, draws: int, epsilon: float, budget: float) -> int:
    """Smallest K whose tail term (1 + e^eps) N P(|Y| > K) <= budget / 2, the rounding term checked against the rest.

    The tail bound decreases in K, so a bisection finds it; a one-line error when no table up to ``MAX_TABLE`` fits.
    """
    scale = (1 + math.exp(epsilon)) * draws * _MARGIN
    lo, hi = 0, MAX_TABLE  # the tail bound at hi fits, at lo it does not (K = 0 is not a table)
    if scale * tail_bound(sigma2, hi) <= budget / 2:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if scale * tail_bound(sigma2, mid) <= budget / 2 else (mid, hi)
        if scale * (hi + 1) * 2.0**-126 <= budget / 2:
            return hi
    raise ValueError(f"no constant-time table up to {MAX_TABLE} entries fits the delta share {budget:.3g} at "
                     f"sigma^2={sigma2:.6g} over {draws} draws; allowed: a larger delta or a shorter horizon")


@lru_cache(maxsize=16)
def _table(a: int, b: int, k: int) -> tuple[bytes, bytes]:
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        two_s2 = Decimal(2 * a) / Decimal(b)
        sigma = math.sqrt(a / b)
        # the normaliser: terms beyond 19 sigma + 2 are below 1e-78 of it
        last = max(k, math.ceil(19 * sigma)) + 2
        terms = [(-Decimal(y * y) / two_s2).exp() for y in range(last + 1)]
        z = terms[0] + 2 * sum(terms[1:])
        scale = Decimal(2) ** FRACTION_BITS
        hi, lo = np.empty(k, dtype=np.uint64), np.empty(k, dtype=np.uint64)
        cumulative = terms[0]
        for j in range(k):
            if j:
                cumulative += 2 * terms[j]
            fixed = int((cumulative / z * scale).to_integral_value(rounding=ROUND_FLOOR))
            hi[j], lo[j] = fixed >> 64, fixed & ((1 << 64) - 1)
    return hi.tobytes(), lo.tobytes()


def cdt_table(a: int, b: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The table of N_Z(0, a/b) of size ``k``: T_j = floor(P(|Y| <= j) 2^127), j < k, as (high 63, low 64) bits."""
    if not (isinstance(k, int) and 1 <= k <= MAX_TABLE):
        raise ValueError(f"table size must be an integer in [1, {MAX_TABLE}], got {k!r}")
    hi, lo = _table(a, b, k)
    return np.frombuffer(hi, dtype=np.uint64).copy(), np.frombuffer(lo, dtype=np.uint64).copy()


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _dgauss_ct_words(hi: np.ndarray, lo: np.ndarray, w0: np.uint32, w1: np.uint32, w2: np.uint32, w3: np.uint32,
                     st: np.ndarray) -> np.int64:
    """One table draw from the stream's first 4 words: u from 127 bits, the sign bit, a full branch-free scan."""
    st[4] += 4
    u_hi = np.uint64(w0) | ((np.uint64(w1) & np.uint64(0x7FFFFFFF)) << np.uint64(32))
    u_lo = np.uint64(w2) | (np.uint64(w3) << np.uint64(32))
    sign = np.int64(np.uint64(w1) >> np.uint64(31))
    m = np.int64(0)
    for j in range(hi.shape[0]):
        h = hi[j]
        m += np.int64((h < u_hi) | ((h == u_hi) & (lo[j] <= u_lo)))
    return m - 2 * sign * m


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _dgauss_ct(hi: np.ndarray, lo: np.ndarray, key: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
               st: np.ndarray) -> np.int64:
    """One table draw from the stream of ``nonce``: one ChaCha20 block, 4 words, a full branch-free table scan."""
    chacha20_block(key, np.uint32(0), nonce, buf)
    return _dgauss_ct_words(hi, lo, buf[0], buf[1], buf[2], buf[3], st)


@njit(cache=True)
def discrete_gaussian_ct_batch(key: np.ndarray, nonces: np.ndarray, hi: np.ndarray, lo: np.ndarray,
                               st: np.ndarray) -> np.ndarray:
    """One table draw per nonce row (shape (n, 3) uint32), each from its own stream; int64."""
    out = np.empty(nonces.shape[0], dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    for i in range(nonces.shape[0]):
        out[i] = _dgauss_ct(hi, lo, key, nonces[i], buf, st)
    return out
