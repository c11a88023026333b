"""Compiled releases of the BLT counter with derived noise (``DerivedBLT``; the math in ``blt_tree``).

A release at step s walks from the root (level H) to step s + 1's leaf: at level L it splits the node (L, s >> L) into
its halves with the normals ``node_normal(key, s >> L, split_tag(L, i), cell)``, i < 2 d_{L-1} - d_L (the root's own
d_H normals have level H + 1, index 0), and when bit L - 1 of s is set the left half is a block of the prefix (0, s]
and adds w(s - e)^T R_{L-1}^T y_left. Every release whose path crosses a node regenerates the same node.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dpstream.counters.philox import node_normal

SPLIT_TAG = np.uint64(0x424C54) << np.uint64(40)
"""High bits of the Philox counter word c1 of the BLT's splits ("BLT"), apart from the derived tree's (level alone)."""


@njit(cache=True, inline="always")
def split_tag(level: int, index: int) -> np.uint64:
    """Counter word c1 of normal ``index`` of the split of a level-``level`` node."""
    return SPLIT_TAG | (np.uint64(index) << np.uint64(8)) | np.uint64(level)


@njit(cache=True, inline="always")
def split(key: np.ndarray, cell: int, level: int, node: int, v: np.ndarray, d: int,
          child: int, splits: np.ndarray, complements: np.ndarray, g: np.ndarray, both: np.ndarray) -> None:
    """Halves (y_left; y_right) of node (``level``, ``node``) with coordinates v[:d], into ``both[:2 child]``.

    G v + G_perp g, g the node's 2 child - d fresh normals (``blt_tree``).
    """
    fresh = 2 * child - d
    for i in range(fresh):
        g[i] = node_normal(key[0], key[1], np.uint64(node), split_tag(level, i), np.uint64(cell))
    for row in range(2 * child):
        acc = 0.0
        for i in range(d):
            acc += splits[level, row, i] * v[i]
        for i in range(fresh):
            acc += complements[level, row, i] * g[i]
        both[row] = acc


@njit(cache=True, inline="always")
def block_noise(y: np.ndarray, dim: int, factor: np.ndarray, lag: int, weights: np.ndarray,
                log_decay: np.ndarray) -> float:
    """w(lag)^T R^T y of a prefix block with coordinates y[:dim] and factor R (``factor``), ``lag`` = s - its end."""
    total = 0.0
    for i in range(dim):
        coef = weights[0] * factor[i, 0]
        for j in range(log_decay.shape[0]):
            coef -= weights[j + 1] * math.exp(lag * log_decay[j]) * factor[i, j + 1]
        total += coef * y[i]
    return total


@njit(cache=True)
def cell_noise(key: np.ndarray, cell: int, s: int, factors: np.ndarray, splits: np.ndarray,
               complements: np.ndarray, dims: np.ndarray, weights: np.ndarray, log_decay: np.ndarray) -> float:
    """Unit-sigma BLT noise N_s of counter ``cell`` at step ``s`` (0 <= s < 2^H): the prefix's block vectors."""
    if s <= 0:
        return 0.0
    top = dims.shape[0] - 1
    width = factors.shape[1]
    v, both, g = np.zeros(width), np.zeros(2 * width), np.zeros(width)
    d = dims[top]
    for i in range(d):
        v[i] = node_normal(key[0], key[1], np.uint64(0), split_tag(top + 1, i), np.uint64(cell))
    total = 0.0
    for level in range(top, 0, -1):
        child = dims[level - 1]
        split(key, cell, level, s >> level, v, d, child, splits, complements, g, both)
        right = (s >> (level - 1)) & 1
        if right:  # the left half (level - 1, (s >> (level - 1)) - 1) is a block of the prefix (0, s]
            lag = s - ((s >> (level - 1)) << (level - 1))
            total += block_noise(both, child, factors[level - 1], lag, weights, log_decay)
        for i in range(child):
            v[i] = both[i + right * child]
        d = child
    return total


@njit(cache=True)
def release(exact: np.ndarray, key: np.ndarray, scale: float, cells: np.ndarray, steps: np.ndarray,
            factors: np.ndarray, splits: np.ndarray, complements: np.ndarray, dims: np.ndarray, weights: np.ndarray,
            log_decay: np.ndarray) -> np.ndarray:
    """Exact prefix count of each cell plus ``scale`` times its BLT noise at its step (``cell_noise``)."""
    out = np.empty(cells.shape[0], dtype=np.float64)
    for k in range(cells.shape[0]):
        noise = cell_noise(key, cells[k], steps[k], factors, splits, complements, dims, weights, log_decay)
        out[k] = np.float64(exact[0, cells[k]]) + scale * noise
    return out
