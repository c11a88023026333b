"""Compiled release of the binary tree with derived discrete Gaussian node noise (``DiscreteSecureBinary``).

The node of level l that a release at step s uses (bit l of s set) has index s >> l; its noise is one N_Z(0, a/b)
draw from the ChaCha20 stream with nonce (cell, index low 32 bits, level | index high bits << 6)
(``chacha.node_nonce``): the same node gets the same value at every release that uses it. Integer output only.

``block_noise_sums`` (timing level 1) draws every node of a step's block of 2^k steps, ``noise_sums_ct`` (level 2)
uses the constant-time table sampler (``cdt``). The nodes are drawn ``chacha.LANES`` at a time (``lanes``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.secure import lanes
from dpstream.secure.chacha import LANES
from dpstream.secure.samplers import CHUNKS, settle


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def node_nonce(cell: np.int64, level: np.int64, index: np.int64, nonces: np.ndarray, lane: int) -> None:
    """Write the 96-bit nonce of node (cell, level, index) into column ``lane`` of ``nonces`` (3 x LANES uint32)."""
    nonces[0, lane] = np.uint32(cell & 0xFFFFFFFF)
    nonces[1, lane] = np.uint32(index & 0xFFFFFFFF)
    nonces[2, lane] = np.uint32((level & 63) | ((index >> 32) << 6))


@njit(cache=True)
def _node_sums(key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, k: np.int64,
               cells: np.ndarray, steps: np.ndarray, st: np.ndarray) -> np.ndarray:
    """Per (cell, step s): the nodes of s's block of 2^k steps drawn in a fixed order, the sum of those s uses.

    The block's nodes: the 2^k - 1 nodes of levels < k inside block s >> k (level l: the odd indices in
    [B 2^(k-l), (B + 1) 2^(k-l))) and the nodes of levels >= k on the set bits of s (shared by the whole block).
    Every draw is made; those s does not use are multiplied by 0. k = 0: the nodes of the set bits of s alone.
    """
    out = np.zeros(cells.shape[0], dtype=np.int64)
    nonces, rows, used, words, nonce, buf = lanes.queue()
    queued = 0
    for c in range(cells.shape[0]):
        s = steps[c]
        for level in range(64):  # s < 2^63: the break comes at level 63 at the latest
            if level < k:  # the block's own nodes, all drawn: the odd indices of level l inside it
                first = (s >> k) << (k - level)
                indices, stride, last = first + 1, np.int64(2), first + (np.int64(1) << (k - level))
            elif (s >> level) & 1:  # the step is public: which nodes a release uses depends on the time alone
                indices, stride, last = s >> level, np.int64(1), (s >> level) + 1
            elif s >> level:
                continue
            else:
                break
            for index in range(indices, last, stride):
                node_nonce(cells[c], level, index, nonces, queued)
                rows[queued], used[queued] = c, np.int64((s >> level) == index)
                queued += 1
                if queued == LANES:
                    lanes.draw_queued(key, sampler, hi, lo, nonces, rows, used, queued, words, nonce, buf, st, out)
                    queued = 0
    if queued:
        lanes.draw_queued(key, sampler, hi, lo, nonces, rows, used, queued, words, nonce, buf, st, out)
    return out


def noise_sums(key: np.ndarray, a: np.int64, b: np.int64, t: np.int64, cells: np.ndarray, steps: np.ndarray,
               st: np.ndarray, _chunks: int = CHUNKS) -> np.ndarray:
    """Per (cell, step): the sum of its nodes' N_Z(0, a/b) draws over the set bits of step (int64)."""
    return block_noise_sums(key, a, b, t, np.int64(0), cells, steps, st, _chunks)


def block_noise_sums(key: np.ndarray, a: np.int64, b: np.int64, t: np.int64, k: np.int64, cells: np.ndarray,
                     steps: np.ndarray, st: np.ndarray, _chunks: int = CHUNKS) -> np.ndarray:
    """``noise_sums`` drawing, for each (cell, step s), EVERY node of s's block of 2^k steps (block s >> k).

    The work of a release is then the work of its whole block, the same for every step of the block. Draws the
    compiled sampler leaves undecided are added exactly afterwards (``samplers.settle``); ``_chunks``: tests only.
    """
    sampler, hi, lo = lanes.gaussian(a, b, t, _chunks)
    out = _node_sums(key, sampler, hi, lo, np.int64(k), cells, steps, st)
    settle(key, int(a), int(b), int(t), st, out)
    return out


def noise_sums_ct(key: np.ndarray, hi: np.ndarray, lo: np.ndarray, cells: np.ndarray, steps: np.ndarray,
                  st: np.ndarray) -> np.ndarray:
    """``noise_sums`` with the constant-time table sampler (``cdt``): 4 words and one full table scan per node."""
    return _node_sums(key, lanes.table(), hi, lo, np.int64(0), cells, steps, st)
