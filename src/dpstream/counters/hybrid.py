"""A counter with no horizon: the hybrid mechanism of Chan, Shi, Song.

"Private and Continual Release of Statistics", ACM TISSEC 2011, Sec. 4: the logarithmic mechanism over blocks of
doubling length, a binary tree inside each block.

Counting without a horizon (Jacobsen and Fawaz 2025, arXiv 2506.15018) is the newer answer: ``counters.unbounded``
builds a factorisation after its abstract, with about a seventh of this mechanism's variance at 2^20 but O(T) work at
release; this is the classic hybrid mechanism, with Gaussian noise and O(log T) work.

Construction. Step s >= 1 lies in block j = floor(log2 s), the steps [2^j, 2^(j+1)); u = s - 2^j + 1 is its position
in the block. Every block i has a block-sum node B_i (its exact sum plus N(0, 2 sigma^2)), used once the block is
complete, and a binary tree over its 2^i positions with h_i = i + 1 levels, each node with N(0, 2 h_i sigma^2). The
release at step s is sum_{i < j} (B_i + noise) plus the block-j tree's release at u: the exact prefix count plus
noise of variance 2 sigma^2 (j + (j + 1) popcount(u)) (``hybrid_variance``).

Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring inputs (one neighbour changes at most m
counters, each by at most 1 at one step), with sigma = ``gaussian_sigma(sqrt(m), epsilon, delta)``: an item of block j
moves one block sum (noise variance 2 sigma^2) and one node per level of block j's tree (h_j nodes of variance
2 h_j sigma^2); scaled to unit noise, its squared L2 change is 1/2 + h_j / (2 h_j) = 1 whatever j is, so the vector
of all nodes is the Gaussian mechanism with L2 sensitivity sqrt(m) at noise sigma. Nothing in the calibration or the
state depends on the horizon: ``horizon`` bounds the steps only, and a counter releases the same values whatever
horizon it was given (usable where the stream length is unknown: give any bound up to 2^62).

Node noise: derived from a 128-bit Philox key (``counters.philox``; computational, as ``tree_noise.PhiloxNodes``):
the block sum of block i is ``node_normal(key, i, 63, cell)``, tree node (level l, index u >> l) of block j is
``node_normal(key, u >> l, 64 (j + 1) + l, cell)``, disjoint identities. State: the exact count (8 bytes a counter)
and the key.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dpstream.counters.binary import BinaryTree, prefix_sums, tree_noises
from dpstream.counters.factorisation import Factorisation, Hybrid
from dpstream.counters.factorisation import hybrid_variance as hybrid_variance
from dpstream.counters.philox import node_normal
from dpstream.counters.tree_noise import PHILOX_NODES

BLOCK_SUM_LEVEL = 63
"""The Philox level word of a block-sum node (tree nodes use 64 (j + 1) + l >= 64)."""


@njit(cache=True)
def hybrid_release(exact: np.ndarray, key: np.ndarray, scale: float, cells: np.ndarray,
                   steps: np.ndarray) -> np.ndarray:
    """Exact prefix count of each cell plus its block sums' and its block tree's derived noise (module doc)."""
    out = np.empty(cells.shape[0], dtype=np.float64)
    for k in range(cells.shape[0]):
        cell, s = cells[k], steps[k]
        value = np.float64(exact[0, cell])
        if s > 0:
            j = 0
            while s >> (j + 1):
                j += 1
            blocks = 0.0
            for i in range(j):
                blocks += node_normal(key[0], key[1], np.uint64(i), np.uint64(BLOCK_SUM_LEVEL), np.uint64(cell))
            u = s - (1 << j) + 1
            tree = 0.0
            level = 0
            while u >> level:
                if (u >> level) & 1:
                    tree += node_normal(key[0], key[1], np.uint64(u >> level), np.uint64(64 * (j + 1) + level),
                                        np.uint64(cell))
                level += 1
            value += scale * (math.sqrt(2.0) * blocks + math.sqrt(2.0 * (j + 1)) * tree)
        out[k] = value
    return out


class HybridDerived(BinaryTree):
    """The hybrid mechanism with Philox-derived Gaussian node noise: no horizon in its calibration or state.

    The derived tree's exact counts, key and node transform (``tree_noise.PhiloxNodes``); its own releases (no node
    cache).
    """

    name = "hybrid"
    NOISES = tree_noises(PHILOX_NODES)
    cached_releases = False

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt(m) at unit noise sigma: each changed item moves its nodes by 1/2 + 1/2 in squared, noise-scaled L2."""
        return math.sqrt(m)

    def factorisation(self) -> Factorisation:
        """The hybrid mechanism: variance sigma^2 times ``hybrid_variance``."""
        return Hybrid(self.horizon)

    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the derived block-sum and block-tree noise (``hybrid_release``)."""
        cells = np.asarray(cells, dtype=np.int64)
        steps = np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), cells.shape))
        if steps.size and steps.min() < 0:
            raise ValueError(f"release steps must be >= 0, got {int(steps.min())}")
        return hybrid_release(self._exact, self._key, self._noise_scale, cells, steps)

    def release_all(self, steps: np.ndarray) -> np.ndarray:
        """Every counter's release (``release``)."""
        return self.release(np.arange(self.n), steps)

    def release_wanted(self, steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """Every counter's release (no cache saves work for a subset)."""
        return self.release_all(steps)

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Every node released by each counter's step, each divided by its noise's multiple of sigma (module doc)."""
        n, length = increments.shape
        prefix = prefix_sums(increments)
        steps = np.asarray(steps)
        out = []
        for j in range(max(1, length.bit_length())):
            start, end = 1 << j, min((2 << j) - 1, length)  # block j: steps [2^j, 2^(j+1))
            if start > length:
                break
            block = prefix[:, end] - prefix[:, start - 1]
            out.append(np.where(steps >= 2 << j, block, 0)[:, None] / math.sqrt(2.0))
            for level in range(j + 1):
                span = 1 << level
                ends = start - 1 + np.arange(span, end - start + 2, span)
                nodes = (prefix[:, ends] - prefix[:, ends - span]).astype(np.float64)
                nodes[ends[None, :] > steps[:, None]] = 0
                out.append(nodes / math.sqrt(2.0 * (j + 1)))
        return np.concatenate(out, axis=1).reshape(1, -1)

