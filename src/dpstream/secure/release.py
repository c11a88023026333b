"""Compiled release of the binary tree with derived discrete Gaussian node noise (``DiscreteSecureBinary``).

The node of level l that a release at step s uses (bit l of s set) has index s >> l; its noise is one N_Z(0, a/b)
draw from the ChaCha20 stream with nonce (cell, index low 32 bits, level | index high bits << 6)
(``chacha.node_nonce``): the same node gets the same value at every release that uses it. Integer output only.

``block_noise_sums`` (timing level 1) draws every node of a step's block of 2^k steps, ``noise_sums_ct`` (level 2)
uses the constant-time table sampler (``cdt``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.secure.cdt import _dgauss_ct
from dpstream.secure.samplers import _dgauss, _fresh


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def node_nonce(cell: np.int64, level: np.int64, index: np.int64, nonce: np.ndarray) -> None:
    """Write the 96-bit nonce of node (cell, level, index) into ``nonce`` (3 uint32)."""
    nonce[0] = np.uint32(cell & 0xFFFFFFFF)
    nonce[1] = np.uint32(index & 0xFFFFFFFF)
    nonce[2] = np.uint32((level & 63) | ((index >> 32) << 6))


@njit(cache=True)
def noise_sums(key: np.ndarray, a: np.int64, b: np.int64, t: np.int64, cells: np.ndarray, steps: np.ndarray,
               st: np.ndarray) -> np.ndarray:
    """Per (cell, step): the sum of its nodes' N_Z(0, a/b) draws over the set bits of step (int64)."""
    out = np.zeros(cells.shape[0], dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    nonce = np.empty(3, dtype=np.uint32)
    for k in range(cells.shape[0]):
        s = steps[k]
        total = np.int64(0)
        level = np.int64(0)
        while s >> level:
            if (s >> level) & 1:
                node_nonce(cells[k], level, s >> level, nonce)
                _fresh(st)
                total += _dgauss(a, b, t, key, nonce, buf, st)
            level += 1
        out[k] = total
    return out


@njit(cache=True)
def noise_sums_ct(key: np.ndarray, hi: np.ndarray, lo: np.ndarray, cells: np.ndarray, steps: np.ndarray,
                  st: np.ndarray) -> np.ndarray:
    """``noise_sums`` with the constant-time table sampler (``cdt``): 4 words and one full table scan per node."""
    out = np.zeros(cells.shape[0], dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    nonce = np.empty(3, dtype=np.uint32)
    for k in range(cells.shape[0]):
        s = steps[k]
        total = np.int64(0)
        level = np.int64(0)
        while s >> level:
            if (s >> level) & 1:  # the step is public: which nodes a release uses depends on the time alone
                node_nonce(cells[k], level, s >> level, nonce)
                total += _dgauss_ct(hi, lo, key, nonce, buf, st)
            level += 1
        out[k] = total
    return out


@njit(cache=True)
def block_noise_sums(key: np.ndarray, a: np.int64, b: np.int64, t: np.int64, k: np.int64, cells: np.ndarray,
                     steps: np.ndarray, st: np.ndarray) -> np.ndarray:
    """``noise_sums`` drawing, for each (cell, step s), EVERY node of s's block of 2^k steps (block s >> k).

    The block's nodes: the 2^k - 1 nodes of levels < k inside it (level l: the odd indices in [B 2^(k-l),
    (B + 1) 2^(k-l))) and the nodes of levels >= k on the set bits of s (shared by the whole block), in that fixed
    order. Every draw is made; those s does not use are multiplied by 0, so the work of a release is the work of
    its whole block, the same for every step of the block. k = 0 is ``noise_sums``.
    """
    out = np.zeros(cells.shape[0], dtype=np.int64)
    buf = np.empty(16, dtype=np.uint32)
    nonce = np.empty(3, dtype=np.uint32)
    for c in range(cells.shape[0]):
        s = steps[c]
        block = s >> k
        total = np.int64(0)
        for level in range(k):
            first = block << (k - level)
            for index in range(first + 1, first + (np.int64(1) << (k - level)), 2):  # odd: a node closes there
                node_nonce(cells[c], level, index, nonce)
                _fresh(st)
                used = np.int64((s >> level) == index)
                total += used * _dgauss(a, b, t, key, nonce, buf, st)
        high = k
        while s >> high:
            if (s >> high) & 1:  # bits >= k are the block's: the same for every step in it
                node_nonce(cells[c], high, s >> high, nonce)
                _fresh(st)
                total += _dgauss(a, b, t, key, nonce, buf, st)
            high += 1
        out[c] = total
    return out
