"""Compiled batches of N_Z(0, a/b) (or discrete Laplace) draws numbered in order, for node noise drawn once and stored.

Draw number i (counted from 0 over the life of one key) comes from its own ChaCha20 stream, nonce
(i low 32 bits, i high 32 bits, ``STREAM_TAG``): a stored tree draws its nodes' noise as they close, in the order
its pushes consume them, and the next batch goes on from the last number, so no number (no stream) is used twice.
The tag keeps these nonces apart from the node nonces of ``release.node_nonce`` (their word 2 is below 2^32 - 1 for
every level < 63). Integer output only; the decisions are the samplers' (``samplers._dgauss``,
``samplers._dlaplace_rational`` for ``laplace_draws``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.secure import lanes
from dpstream.secure.chacha import LANES
from dpstream.secure.laplace import laplace_vcap
from dpstream.secure.samplers import CHUNKS, settle

STREAM_TAG = 0xFFFFFFFF
"""Word 2 of every sequential nonce."""


@njit(cache=True)
def _draws(key: np.ndarray, first: np.int64, count: int, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray,
           st: np.ndarray) -> np.ndarray:
    out = np.zeros(count, dtype=np.int64)
    nonces, rows, used, words, nonce, buf = lanes.queue()
    nonces[2, :] = np.uint32(STREAM_TAG)
    for start in range(0, count, LANES):
        queued = min(LANES, count - start)
        for lane in range(queued):
            i = first + start + lane
            nonces[0, lane] = np.uint32(i & 0xFFFFFFFF)
            nonces[1, lane] = np.uint32(i >> 32)
            rows[lane] = start + lane
        lanes.draw_queued(key, sampler, hi, lo, nonces, rows, used, queued, words, nonce, buf, st, out)
    return out


def draws(key: np.ndarray, first: np.int64, count: np.int64, a: np.int64, b: np.int64, t: np.int64,
          st: np.ndarray, _chunks: int = CHUNKS) -> np.ndarray:
    """Draws number ``first`` .. ``first + count - 1`` of N_Z(0, a/b), each from its own stream (int64).

    Draws the compiled sampler leaves undecided are added exactly afterwards (``samplers.settle``); ``_chunks``:
    tests only.
    """
    sampler, hi, lo = lanes.gaussian(a, b, t, _chunks)
    out = _draws(key, np.int64(first), int(count), sampler, hi, lo, st)
    settle(key, int(a), int(b), int(t), st, out)
    return out


def laplace_draws(key: np.ndarray, first: np.int64, count: np.int64, t: int, s: int, st: np.ndarray) -> np.ndarray:
    """Draws number ``first`` .. ``first + count - 1`` of the discrete Laplace of scale t/s, each from its own stream.

    The sampler is ``samplers._dlaplace_rational`` with ``secure.laplace``'s cap (|y| < 2^60); int64. Every draw is
    decided in the compiled code (no table, nothing to settle).
    """
    return _draws(key, np.int64(first), int(count), lanes.laplace(t, s, laplace_vcap(t)), lanes.NO_TABLE,
                  lanes.NO_TABLE, st)
