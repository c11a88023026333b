"""Compiled push of the k-ary tree (``counters.laplace_tree``) and its level count."""

from __future__ import annotations

import numpy as np
from numba import njit


def kary_levels(horizon: int, arity: int) -> int:
    """L = ceil(log_k(horizon + 1)): the levels whose nodes end at some step <= horizon (at least 1)."""
    levels, span = 1, arity
    while span <= horizon:
        levels += 1
        span *= arity
    return levels



@njit(cache=True, inline="always")
def kary_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
              z: np.int64) -> np.int64:
    """Step ``step`` of ``cell`` closes the node of level L (k^L divides step, k^(L+1) does not); one noise.

    The node is c plus the closed lower nodes of its block (all k - 1 of every level below L, now merged); it joins
    the closed nodes of level L, and every noisy running sum at or below L becomes the sum from L up plus it.
    """
    exact, noisy, arity = state[0], state[1], state[2][0]
    level = 0
    s = step
    while s % arity == 0:
        s //= arity
        level += 1
    acc = c
    for lower in range(level):
        acc += exact[lower, cell]
        exact[lower, cell] = 0
    exact[level, cell] += acc
    released = noisy[level, cell] + (acc + noise[z])
    for lower in range(level + 1):
        noisy[lower, cell] = released
    return z + 1
