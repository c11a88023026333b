"""Compiled batches of N_Z(0, a/b) draws numbered in order, for node noise drawn once and stored.

Draw number i (counted from 0 over the life of one key) comes from its own ChaCha20 stream, nonce
(i low 32 bits, i high 32 bits, ``STREAM_TAG``): a stored tree draws its nodes' noise as they close, in the order
its pushes consume them, and the next batch goes on from the last number, so no number (no stream) is used twice.
The tag keeps these nonces apart from the node nonces of ``release.node_nonce`` (their word 2 is below 2^32 - 1 for
every level < 63). Integer output only; the decisions are the samplers' (``samplers._dgauss``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.secure.samplers import _dgauss, _fresh

STREAM_TAG = 0xFFFFFFFF
"""Word 2 of every sequential nonce."""


@njit(cache=True)
def draws(key: np.ndarray, first: np.int64, count: np.int64, a: np.int64, b: np.int64, t: np.int64,
          st: np.ndarray) -> np.ndarray:
    """Draws number ``first`` .. ``first + count - 1`` of N_Z(0, a/b), each from its own stream (int64)."""
    out = np.empty(count, dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    nonce = np.empty(3, dtype=np.uint32)
    nonce[2] = np.uint32(STREAM_TAG)
    for k in range(count):
        i = first + k
        nonce[0] = np.uint32(i & 0xFFFFFFFF)
        nonce[1] = np.uint32(i >> 32)
        _fresh(st)
        out[k] = _dgauss(a, b, t, key, nonce, buf, st)
    return out
