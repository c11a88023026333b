"""Compiled steps of the smooth binary mechanism (``counters.smooth``): release leaves and the stored push."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numba import njit


@cache
def binomials(h: int) -> np.ndarray:
    """C(p, j) for p, j in 0..h, (h + 1, h + 1) int64 (0 for j > p)."""
    return np.array([[math.comb(p, j) for j in range(h + 1)] for p in range(h + 1)], dtype=np.int64)


@njit(cache=True, inline="always")
def smooth_leaf(rank: np.int64, h: np.int64, k: np.int64, binom: np.ndarray) -> np.int64:
    """t_rank: the rank-th smallest (from 0) h-bit integer with exactly k set bits (combinatorial number system)."""
    t = np.int64(0)
    r = rank
    ones = k
    for p in range(h - 1, -1, -1):
        if ones > 0 and r >= binom[p, ones]:
            t |= np.int64(1) << p
            r -= binom[p, ones]
            ones -= 1
    return t


@njit(cache=True)
def release_leaves(steps: np.ndarray, h: np.int64, k: np.int64, binom: np.ndarray) -> np.ndarray:
    """The tree step of each release: t_s for s >= 1, 0 for s = 0 (no item, no noise)."""
    out = np.zeros(steps.shape[0], dtype=np.int64)
    for i in range(steps.shape[0]):
        if steps[i] > 0:
            out[i] = smooth_leaf(steps[i], h, k, binom)
    return out


@njit(cache=True, inline="always")
def new_levels(step: np.int64, h: np.int64, k: np.int64, binom: np.ndarray) -> tuple[np.int64, np.int64]:
    """(t_step, top): the release leaf of ``step`` >= 1 and the highest level whose node sum it must redo.

    The nodes of t_step at levels above the highest bit where t_step and t_{step-1} differ are t_{step-1}'s; at step
    1 every level is new (the release at step 0 used none).
    """
    t = smooth_leaf(step, h, k, binom)
    if step == 1:
        return t, h - 1
    x = t ^ smooth_leaf(step - 1, h, k, binom)
    top = np.int64(0)
    while x >> (top + 1):
        top += 1
    return t, top


@njit(cache=True)
def push_draws(steps: np.ndarray, h: np.int64, k: np.int64, binom: np.ndarray) -> np.int64:
    """Noises the stored pushes at ``steps`` draw: the set bits of t_s at or below the top new level."""
    total = np.int64(0)
    for i in range(steps.shape[0]):
        t, top = new_levels(steps[i], h, k, binom)
        bits = t & ((np.int64(2) << top) - 1)
        while bits:
            total += 1
            bits &= bits - 1
    return total


@njit(cache=True, inline="always")
def smooth_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
                z: np.int64) -> np.int64:
    """Stored smooth push: state (exact (1, n), noisy_sums (h, n), binom (h + 1, h + 1) with shape (h, k) last row).

    ``noisy_sums[l, cell]`` sums the node noises at the set bits >= l of the cell's release leaf; a push redoes the
    levels up to the highest one that changed, drawing one noise for each new node (a set bit there).
    """
    exact, noisy, binom = state[0], state[1], state[2]
    h = np.int64(noisy.shape[0])
    k = binom[h, h]
    exact[0, cell] += c
    t, top = new_levels(step, h, k, binom)
    for level in range(top, -1, -1):
        above = noisy[level + 1, cell] if level + 1 < h else 0.0
        if (t >> level) & 1:
            above += noise[z]
            z += 1
        noisy[level, cell] = above
    return z
