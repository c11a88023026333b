"""Exact discrete Laplace noise of rational scale from a keyed ChaCha20 stream, for the sparse vector family.

Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020), Algorithm 2: the discrete
Laplace of scale t/s, P(y) proportional to exp(-|y| s / t) on the integers (``samplers._dlaplace_rational``). Adding it
at scale b to an integer query of sensitivity Delta is (Delta / b, 0)-DP: the pmf ratio at integer shifts of at most
Delta is at most exp(Delta / b), the same bound as the continuous Laplace density's.

Grid (``laplace_grid``): a calibrated float scale b is rounded UP to t/s with s <= 2^32 a power of two chosen so that
t is in (2^31, 2^32] (``NUMERATOR_BITS``) where it can be: t/s >= b and t/s - b < 1/s, a relative excess below
1/(t - 1) <= 2^-31 for b in [1/2, 2^32] (s = 1 and t = ceil(b) above, s = 2^32 below). Since the noise scale only
grows, every epsilon computed for b holds for t/s.

Range (int64): t <= 2^40 (``LAPLACE_MAX_SCALE``) and the geometric part V of a draw below vcap = 2^60 // t, so every
draw has |y| < 2^60 (``NOISE_BOUND``); with answers and thresholds of magnitude <= 2^60 (``VALUE_BOUND``), no sum of an
answer and up to two noise values reaches 2^63. An attempt with V >= vcap >= 2^20 is rejected: the draw is exactly the
discrete Laplace conditioned on an event of probability >= 1 - exp(-2^20), total variation <= exp(-2^20) per draw from
the untruncated one (added to delta, per draw; below float precision for any stream, so stated rather than computed).

Streams: draw (run r, index i) of a role (``ROLES``) in call number n of one key has the 96-bit nonce
(role | n << 4, r, i) (``nonce_word``): injective for roles < 16, calls < 2^28, runs and indices < 2^32, so different
draws read independent keystreams and the same draw always gets the same value.
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction

import numpy as np
from numba import njit

from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.secure import lanes
from dpstream.secure.chacha import KEY_BYTES, LANES, key_words
from dpstream.secure.samplers import LAPLACE_MAX_SCALE, new_state

NUMERATOR_BITS = 32
"""The grid's numerator t is about 2^NUMERATOR_BITS (relative rounding below 2^-(NUMERATOR_BITS - 1))."""
NOISE_BOUND = 1 << 60
"""Every discrete Laplace draw has |y| < NOISE_BOUND."""
VALUE_BOUND = 1 << 60
"""Integer answers and thresholds must have magnitude <= VALUE_BOUND."""
ROLES = {"threshold": 0, "query": 1, "answer": 2, "w": 3, "v": 4}
"""The role of a noise value in its nonce: the SVT's threshold, query and answer noise, ThresholdMonitor's w and v."""
MAX_CALLS = 1 << 28
MAX_INDEX = 1 << 32


def laplace_grid(scale: float) -> tuple[int, int]:
    """(t, s): the smallest t with t/s >= ``scale`` on the grid of denominator s (module docstring), t/s rounded up."""
    if not (isinstance(scale, int | float) and math.isfinite(scale) and 0 < scale <= LAPLACE_MAX_SCALE):
        raise ValueError(f"discrete Laplace scale must be a finite number in (0, 2^40], got {scale!r}")
    exact = Fraction(scale)  # the float's exact value
    s = 1
    while s < (1 << NUMERATOR_BITS) and math.ceil(exact * 2 * s) <= (1 << NUMERATOR_BITS):
        s *= 2
    t = math.ceil(exact * s)
    return t, s


def laplace_vcap(t: int) -> int:
    """The cap on the geometric part V so that |y| < NOISE_BOUND (t <= 2^40, so the cap is >= 2^20)."""
    if not (isinstance(t, int) and 1 <= t <= LAPLACE_MAX_SCALE):
        raise ValueError(f"discrete Laplace numerator t must be an integer in [1, 2^40], got {t!r}")
    return NOISE_BOUND // t


def nonce_word(role: str, call: int) -> int:
    """Word 0 of the nonce: role | call << 4 (one-line error for an unknown role or a call out of range)."""
    if role not in ROLES:
        raise ValueError(f"unknown noise role {role!r}; allowed: {', '.join(ROLES)}")
    if not 0 <= call < MAX_CALLS:
        raise ValueError(f"call number must be in [0, 2^28), got {call!r}: this key has drawn for too many runs")
    return ROLES[role] | (call << 4)


@njit(cache=True)
def _laplace_block(key: np.ndarray, sampler: np.ndarray, word0: np.int64, n_runs: np.int64, start: np.int64,
                   count: np.int64, st: np.ndarray) -> np.ndarray:
    """``laplace_block``'s draws, run-major in one flat array."""
    out = np.zeros(n_runs * count, dtype=np.int64)
    nonces, rows, used, words, nonce, buf = lanes.queue()
    queued = 0
    for r in range(n_runs):
        for i in range(count):
            nonces[0, queued], nonces[1, queued], nonces[2, queued] = word0, r, start + i
            rows[queued] = r * count + i
            queued += 1
            if queued == LANES or (r == n_runs - 1 and i == count - 1):
                lanes.draw_queued(key, sampler, lanes.NO_TABLE, lanes.NO_TABLE, nonces, rows, used, queued, words,
                                  nonce, buf, st, out)
                queued = 0
    return out


def laplace_block(key: np.ndarray, t: np.int64, s: np.int64, vcap: np.int64, word0: np.int64, n_runs: np.int64,
                  start: np.int64, count: np.int64, st: np.ndarray) -> np.ndarray:
    """(n_runs, count) int64 draws of scale t/s; draw (r, i) from the stream of nonce (word0, r, start + i)."""
    flat = _laplace_block(key, lanes.laplace(t, s, vcap), np.int64(word0), np.int64(n_runs), np.int64(start),
                          np.int64(count), st)
    return flat.reshape(n_runs, count)


def seed_key(seed: SeedLike) -> np.ndarray:
    """The 8 key words: from OS entropy (``secrets``) when ``seed`` is None, else words 8..15 of the seed's state.

    Words 0..7 are what numpy's PCG64 takes from the same seed, so the key and the seeded generator do not overlap.
    """
    if seed is None:
        return key_words(secrets.token_bytes(KEY_BYTES))
    raw = as_seed_sequence(seed).generate_state(16, np.uint32)[8:]
    return np.ascontiguousarray(raw, dtype=np.uint32)


class KeyedLaplace:
    """Discrete Laplace draws from one ChaCha20 key: a call counter, the nonce scheme and the sampler state.

    ``seeded`` (the key derived from a seed, so NOT deployable) or keyed from ``secrets``. The key is never shown in
    ``repr``; the owner's ``to_bytes`` writes it (SECRET).
    """

    def __init__(self, seed: SeedLike) -> None:
        """The key from ``seed`` (``seed_key``); call 0; a fresh sampler state."""
        self.seeded = seed is not None
        self.key = seed_key(seed)
        self.calls = 0
        self.state = new_state()

    def next_call(self) -> int:
        """A fresh call number (each run of a mechanism draws under its own)."""
        call = self.calls
        nonce_word("query", call)  # range check
        self.calls += 1
        return call

    def draw(self, role: str, grid: tuple[int, int] | None, call: int, n_runs: int, start: int,
             count: int) -> np.ndarray:
        """(n_runs, count) draws at scale t/s (``grid``; None: zeros) for indices start.. of ``role`` in ``call``."""
        if grid is None or n_runs * count == 0:
            return np.zeros((n_runs, count), dtype=np.int64)
        if n_runs > MAX_INDEX or start + count > MAX_INDEX:
            raise ValueError(f"discrete Laplace noise takes at most 2^32 runs and 2^32 draws per run, got "
                             f"n_runs={n_runs}, index up to {start + count}")
        t, s = grid
        return laplace_block(self.key, np.int64(t), np.int64(s), np.int64(laplace_vcap(t)),
                             np.int64(nonce_word(role, call)), np.int64(n_runs), np.int64(start), np.int64(count),
                             self.state)

    @property
    def words_consumed(self) -> int:
        """32-bit generator words drawn so far."""
        return int(self.state[4])

    def __repr__(self) -> str:
        """The call count and whether seeded, never the key."""
        return f"KeyedLaplace(seeded={self.seeded}, calls={self.calls})"
