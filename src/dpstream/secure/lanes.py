"""Draws from many keyed streams at once: the streams' first ChaCha20 blocks computed ``chacha.LANES`` at a time.

Every secure draw reads its own stream (key, nonce) from block 0. The callers (``release``, ``sequential``,
``laplace``) queue up to LANES nonces, one column each of a 3 x LANES array; ``draw_queued`` computes block 0 of
all LANES streams in one vectorised pass (``chacha.chacha20_lanes``, the unused columns too, so the generator work of
a batch is fixed), then draws the queued values in queue order: the table sampler (``cdt``) reads its 4 words from
the block, a rejection sampler (``samplers``) starts from it (``samplers._primed``) and computes any further block
itself. The values and the words consumed are those of drawing each stream alone. A discrete Gaussian draw the
compiled sampler leaves undecided (``samplers.TIE``) adds nothing here and is recorded in ``st``; the caller adds its
exact value afterwards (``samplers.settle``).

``sampler`` (int64[7]): kind (``GAUSSIAN``, ``TABLE`` or ``LAPLACE``) and its integers: N_Z(0, a/b) with t =
floor(sigma) + 1 (a, b, t, k = bit_length(t - 1), the table's y rows, the bytes compared per entry, then 256
first-byte counts: ``samplers.gaussian_sampler``; its table is passed as ``hi``, ``lo``), or the discrete Laplace of
scale t/s with the cap vcap (t, s, vcap).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.secure.cdt import _dgauss_ct_words
from dpstream.secure.chacha import LANES, chacha20_lanes
from dpstream.secure.samplers import CHUNKS, TIE, _dgauss, _dlaplace_rational, _flag, _primed, gaussian_sampler

GAUSSIAN, TABLE, LAPLACE = 0, 1, 2
Int = int | np.integer
NO_TABLE = np.zeros(0, dtype=np.uint64)
"""The table arguments of a sampler that has none."""


def gaussian(a: Int, b: Int, t: Int, chunks: int = CHUNKS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact discrete Gaussian N_Z(0, a/b) (``samplers.gaussian_params`` gives a, b, t) and its table (hi, lo).

    ``chunks`` (tests only: fewer makes undecided draws frequent) is the number of bytes of each entry compared.
    """
    return gaussian_sampler(int(a), int(b), int(t), chunks)


def table() -> np.ndarray:
    """The constant-time table sampler (its table is passed as ``hi``, ``lo``)."""
    return np.array([TABLE, 1, 1, 1, 1, 1, 0], dtype=np.int64)


def laplace(t: Int, s: Int, vcap: Int) -> np.ndarray:
    """The discrete Laplace of scale t/s, |y| < vcap t / s."""
    return np.array([LAPLACE, 1, 1, t, s, vcap, 0], dtype=np.int64)


@njit(cache=True)
def queue() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Empty scratch for ``draw_queued``: nonces (3 x LANES), rows, used, words (16 LANES), nonce (3), buf (16)."""
    return (np.zeros((3, LANES), dtype=np.uint32), np.zeros(LANES, dtype=np.int64), np.ones(LANES, dtype=np.int64),
            np.empty(16 * LANES, dtype=np.uint32), np.empty(3, dtype=np.uint32), np.empty(16, dtype=np.uint32))


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def draw_queued(key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, nonces: np.ndarray,
                rows: np.ndarray, used: np.ndarray, count: int, words: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
                st: np.ndarray, out: np.ndarray) -> None:
    """Draw the ``count`` queued streams in queue order, adding ``used`` times each value to ``out[rows]``."""
    chacha20_lanes(key, np.uint32(0), nonces, words)
    kind = sampler[0]
    for lane in range(count):
        if kind == TABLE:
            value = _dgauss_ct_words(hi, lo, words[lane], words[LANES + lane], words[2 * LANES + lane],
                                     words[3 * LANES + lane], st)
        else:
            _primed(words, lane, buf, st)
            nonce[0], nonce[1], nonce[2] = nonces[0, lane], nonces[1, lane], nonces[2, lane]
            if kind == GAUSSIAN:
                start = st[4]
                value = _dgauss(sampler, hi, lo, key, nonce, buf, st)
                if value == TIE:
                    _flag(nonce, rows[lane], used[lane], st[4] - start, st)
                    continue
            else:
                value = _dlaplace_rational(sampler[3], sampler[4], sampler[5], key, nonce, buf, st)
        out[rows[lane]] += used[lane] * value
