"""Compiled kernels of the Gaussian binary mechanism (``GaussBM``): one node per tree level, per counter.

State of n counters: ``exact`` (levels, n) integer partial sums, ``noisy_sums`` (levels, n) float64 and
``steps`` (n,) how many updates each counter has had. ``noisy_sums[l, j]`` is the sum of counter j's
released noisy nodes at the set bits >= l of its step, added from the highest bit down (for a clear
bit l it equals ``noisy_sums[l + 1, j]``), so row 0 is the released prefix sum of every counter and a
query reads it without recomputing. The kernels are plain functions over these arrays so the sketches'
kernels call them inline.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def popcount(steps: np.ndarray | int) -> np.ndarray:
    """Number of set bits of each (non-negative) step."""
    return np.bitwise_count(np.asarray(steps, dtype=np.uint64)).astype(np.int64)


@njit(cache=True, inline="always")
def tree_level(step: np.int64) -> np.int64:
    """Level of the node that closes at ``step`` >= 1: the number of trailing zero bits of ``step``."""
    level = np.int64(0)
    while (step >> level) & 1 == 0:
        level += 1
    return level


@njit(cache=True, inline="always")
def push(exact: np.ndarray, noisy_sums: np.ndarray, j: np.int64, level: np.int64, c: np.int64, z: float) -> None:
    """Counter ``j`` gets ``c`` at a step s whose node closes at ``level``; ``z`` is its N(0, sigma^2) noise.

    alpha_level = c + sum_{l < level} alpha_l (the exact count of the dyadic interval ending now), the
    lower alphas are cleared (their intervals are merged), and the node is released as alpha_level + z.
    Bit ``level`` is clear in s - 1 and set in s, the bits below it go from set to clear and the bits
    above are unchanged, so the new sum from bit ``level`` up is noisy_sums[level, j] (the sum of the bits
    above it) plus the new node, and every lower level takes that same value.
    """
    acc = c
    for l in range(level):
        acc += exact[l, j]
        exact[l, j] = 0
    exact[level, j] = acc
    released = noisy_sums[level, j] + (acc + z)
    for l in range(level + 1):
        noisy_sums[l, j] = released
