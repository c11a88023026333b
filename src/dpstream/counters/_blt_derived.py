"""Compiled releases of the BLT counter with derived noise (``BLTCounter``; the math in ``blt_tree``).

A release at step s walks from the root (level H) to step s + 1's leaf: at level L it splits the node (L, s >> L) into
its halves with 2 d_{L-1} - d_L fresh normals (``split_normals``; the root's own d_H normals have level H + 1, index
0), and when bit L - 1 of s is set the left half is a block of the prefix (0, s] and adds w(s - e)^T R_{L-1}^T y_left.
Every release whose path crosses a node regenerates the same node.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dpstream.counters.philox import philox4x64

SPLIT_TAG = np.uint64(0x424C54) << np.uint64(40)
"""High bits of the Philox counter word c1 of the BLT's splits ("BLT"), apart from the derived tree's (level alone)."""
_S11 = np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2^-53


@njit(cache=True, inline="always")
def split_tag(level: int, block: int) -> np.uint64:
    """Counter word c1 of Philox block ``block`` (normals 4 block..4 block + 3) of a level-``level`` node's split."""
    return SPLIT_TAG | (np.uint64(block) << np.uint64(8)) | np.uint64(level)


@njit(cache=True)
def split_normals(key: np.ndarray, cell: int, level: int, node: int, count: int, out: np.ndarray) -> None:
    """``count`` N(0, 1) values of the split of node (``level``, ``node``) of counter ``cell`` into ``out[:count]``.

    Philox block j, counter (node, split_tag(level, j), cell, 0), gives normals 4j..4j+3: Box-Muller (cos and sin) on
    two pairs of 53-bit uniforms (u1 in (0, 1], so the logarithm is finite), words (0, 1) and (2, 3).
    """
    for block in range((count + 3) // 4):
        words = philox4x64(np.uint64(node), split_tag(level, block), np.uint64(cell), np.uint64(0), key[0], key[1])
        for pair in range(2):
            u1 = (np.float64(words[2 * pair] >> _S11) + 1.0) * _TWO_M53
            u2 = np.float64(words[2 * pair + 1] >> _S11) * _TWO_M53
            radius, angle = math.sqrt(-2.0 * math.log(u1)), 2.0 * math.pi * u2
            i = 4 * block + 2 * pair
            if i < count:
                out[i] = radius * math.cos(angle)
            if i + 1 < count:
                out[i + 1] = radius * math.sin(angle)


@njit(cache=True, inline="always")
def split(key: np.ndarray, cell: int, level: int, node: int, v: np.ndarray, d: int,
          child: int, splits: np.ndarray, complements: np.ndarray, g: np.ndarray, both: np.ndarray) -> None:
    """Halves (y_left; y_right) of node (``level``, ``node``) with coordinates v[:d], into ``both[:2 child]``.

    G v + G_perp g, g the node's 2 child - d fresh normals (``blt_tree``, ``split_normals``).
    """
    fresh = 2 * child - d
    split_normals(key, cell, level, node, fresh, g)
    for row in range(2 * child):
        acc = 0.0
        for i in range(d):
            acc += splits[level, row, i] * v[i]
        for i in range(fresh):
            acc += complements[level, row, i] * g[i]
        both[row] = acc


@njit(cache=True, inline="always")
def block_noise(y: np.ndarray, dim: int, factor: np.ndarray, lag: int, weights: np.ndarray,
                log_decay: np.ndarray, w: np.ndarray) -> float:
    """w(lag)^T R^T y of a prefix block with coordinates y[:dim] and factor R (``factor``), ``lag`` = s - its end.

    ``w`` is scratch of length k + 1.
    """
    w[0] = weights[0]
    for j in range(log_decay.shape[0]):
        w[j + 1] = -weights[j + 1] * math.exp(lag * log_decay[j])
    total = 0.0
    for i in range(dim):
        coef = 0.0
        for j in range(w.shape[0]):
            coef += w[j] * factor[i, j]
        total += coef * y[i]
    return total


@njit(cache=True)
def cell_noise(key: np.ndarray, cell: int, s: int, factors: np.ndarray, splits: np.ndarray,
               complements: np.ndarray, dims: np.ndarray, weights: np.ndarray, log_decay: np.ndarray,
               scratch: np.ndarray, memo: np.ndarray, known: int) -> float:
    """Unit-sigma BLT noise N_s of counter ``cell`` at step ``s`` (0 <= s < 2^H): the prefix's block vectors.

    ``scratch``: 3 K float64 of work space. ``memo`` (H + 1, 2 K) holds the path of step ``known`` (none when
    ``known`` <= 0): row 0 the root's coordinates, row L the halves of node (L, known >> L); a node this release shares
    with it (s >> L == known >> L) is read, not regenerated (the same floats), and the row is rewritten otherwise, so
    ``memo`` ends holding the path of ``s``.
    """
    if s <= 0:
        return 0.0
    top = dims.shape[0] - 1
    width = factors.shape[1]
    v, g, w = scratch[:width], scratch[width:2 * width], scratch[2 * width:]
    d = dims[top]
    if known <= 0:
        split_normals(key, cell, top + 1, 0, d, memo[0])
    v[:d] = memo[0, :d]
    total = 0.0
    for level in range(top, 0, -1):
        child = dims[level - 1]
        both = memo[level]
        if known <= 0 or (known >> level) != (s >> level):
            split(key, cell, level, s >> level, v, d, child, splits, complements, g, both)
        right = (s >> (level - 1)) & 1
        if right:  # the left half (level - 1, (s >> (level - 1)) - 1) is a block of the prefix (0, s]
            lag = s - ((s >> (level - 1)) << (level - 1))
            total += block_noise(both, child, factors[level - 1], lag, weights, log_decay, w)
        for i in range(child):
            v[i] = both[i + right * child]
        d = child
    return total


@njit(cache=True)
def release(exact: np.ndarray, key: np.ndarray, scale: float, cells: np.ndarray, steps: np.ndarray,
            factors: np.ndarray, splits: np.ndarray, complements: np.ndarray, dims: np.ndarray, weights: np.ndarray,
            log_decay: np.ndarray) -> np.ndarray:
    """Exact prefix count of each cell plus ``scale`` times its BLT noise at its step (``cell_noise``, no memo)."""
    out = np.empty(cells.shape[0], dtype=np.float64)
    width = factors.shape[1]
    scratch, memo = np.zeros(3 * width), np.zeros((dims.shape[0], 2 * width))
    for k in range(cells.shape[0]):
        noise = cell_noise(key, cells[k], steps[k], factors, splits, complements, dims, weights, log_decay, scratch,
                           memo, 0)
        out[k] = np.float64(exact[0, cells[k]]) + scale * noise
    return out


@njit(cache=True)
def release_all_cached(exact: np.ndarray, key: np.ndarray, scale: float, steps: np.ndarray, factors: np.ndarray,
                       splits: np.ndarray, complements: np.ndarray, dims: np.ndarray, weights: np.ndarray,
                       log_decay: np.ndarray, memo: np.ndarray, known: np.ndarray) -> np.ndarray:
    """``release`` of every cell (cell j at ``steps[j]``) with the path memo of each, (n, H + 1, 2 K) and (n,).

    The same floats as ``release``; a release regenerates only the levels where its path leaves the memo's (from step
    s to s + 1: as many levels as s has trailing one bits, one on average, instead of all H).
    """
    n = steps.shape[0]
    out = np.empty(n, dtype=np.float64)
    scratch = np.zeros(3 * factors.shape[1])
    for cell in range(n):
        s = steps[cell]
        noise = cell_noise(key, cell, s, factors, splits, complements, dims, weights, log_decay, scratch, memo[cell],
                           known[cell])
        if s > 0:
            known[cell] = s
        out[cell] = np.float64(exact[0, cell]) + scale * noise
    return out
