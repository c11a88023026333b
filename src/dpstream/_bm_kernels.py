"""Compiled kernels of the Gaussian binary mechanism (``GaussBM``): one node per tree level, per counter.

State of n counters: ``exact`` (levels, n) integer partial sums and ``noisy`` (levels, n) float64
released node values; ``steps`` (n,) how many updates each counter has had. The kernels are plain
functions over these arrays so the sketches' kernels call them inline.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def tree_level(step: np.int64) -> np.int64:
    """Level of the node that closes at ``step`` >= 1: the number of trailing zero bits of ``step``."""
    level = 0
    while (step >> level) & 1 == 0:
        level += 1
    return level


@njit(cache=True, inline="always")
def push(exact: np.ndarray, noisy: np.ndarray, j: np.int64, level: np.int64, c: np.int64, z: float) -> None:
    """Counter ``j`` gets ``c`` at a step whose node closes at ``level``; ``z`` is its N(0, sigma^2) noise.

    alpha_level = c + sum_{l < level} alpha_l (the exact count of the dyadic interval ending now), the
    lower alphas are cleared (their intervals are merged), and the released node gets the fresh noise.
    """
    acc = c
    for l in range(level):
        acc += exact[l, j]
        exact[l, j] = 0
    exact[level, j] = acc
    noisy[level, j] = acc + z


@njit(cache=True)
def update_counters(
    exact: np.ndarray, noisy: np.ndarray, steps: np.ndarray, js: np.ndarray, cs: np.ndarray, noise: np.ndarray
) -> None:
    """Counters ``js[k]``, in order, each take one step: value ``cs[k]``, noise ``noise[k]``."""
    for k in range(js.shape[0]):
        j = js[k]
        s = steps[j] + 1
        steps[j] = s
        push(exact, noisy, j, tree_level(s), cs[k], noise[k])


@njit(cache=True)
def prefix_sums(noisy: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Released prefix sum of every counter: sum of ``noisy[l, j]`` over the set bits l of ``steps[j]``."""
    out = np.zeros(steps.shape[0], dtype=np.float64)
    for j in range(steps.shape[0]):
        s = steps[j]
        l = 0
        while s:
            if s & 1:
                out[j] += noisy[l, j]
            s >>= 1
            l += 1
    return out
