"""Compiled per-push step of every counter kind, dispatched on the counter's ``mode``, so that the sketch
kernels (``dpstream.sketches._kernels``) and ``GaussBM`` run one loop whatever counter holds their cells.

A counter's state is always the same four arrays (``Counter.kernel_state``): ``exact`` (integer, (r, n)),
``fa`` and ``fb`` (float64, (r', n)) and ``coef`` (float64 constants). A push gives cell ``cell`` its step
``step`` (1-based) with increment ``c``, consuming pre-drawn N(0, sigma^2) noises from ``noise`` at position
``z``; ``cell_push`` returns the next position. Step counts are kept outside the kernels (``Counter.push``):
a store to a step array inside the per-item loop made the derived-noise Lazy loop 6x slower (measured).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream._bm_kernels import push, tree_level
from dpstream.honaker import honaker_push

STORED = 0
"""Binary tree with stored nodes (seed 004, Alg. 1): exact (levels, n), fa = noisy sums (levels, n)."""
DERIVED = 1
"""Binary tree with derived node noise: exact (1, n) is the whole state; releases add the noise later."""
HONAKER = 2
"""Binary tree with Honaker's online estimates: exact, fa = released sums, fb = last estimate per level."""
BLT = 3
"""Buffered linear Toeplitz: exact (1, n), fa = k buffers and the running noise total (k + 1, n),
coef = (theta; omega) of C, (2, k)."""


@njit(cache=True, inline="always")
def zero_push_free(mode: int) -> bool:
    """Whether a push of 0 leaves the counter's state as it is (so a schedule may skip it): derived noise only."""
    return mode == DERIVED


@njit(cache=True, inline="always")
def cell_push(
    mode: int,
    exact: np.ndarray,
    fa: np.ndarray,
    fb: np.ndarray,
    coef: np.ndarray,
    cell: np.int64,
    step: np.int64,
    c: np.int64,
    noise: np.ndarray,
    z: np.int64,
) -> np.int64:
    """Cell ``cell`` takes step ``step`` with increment ``c``; returns the position of the next unused noise."""
    if mode == DERIVED:
        exact[0, cell] += c
        return z
    if mode == BLT:
        exact[0, cell] += c
        blt_column_step(fa, coef, cell, noise[z])
        return z + 1
    level = tree_level(step)
    if mode == HONAKER:
        honaker_push(exact, fa, fb, cell, level, c, noise[z : z + level + 1])
        return z + level + 1
    push(exact, fa, cell, level, c, noise[z])
    return z + 1


@njit(cache=True, inline="always")
def blt_column_step(state: np.ndarray, coef: np.ndarray, cell: np.int64, z: float) -> None:
    """Alg. 3 of McMahan et al. (arXiv 2408.08868) for counter ``cell`` (``dpstream.blt.blt_step`` on column
    ``cell`` of a (k + 1, n) state): x = z - sum_j omega_j buf_j, buf_j <- theta_j buf_j + x, total += x."""
    k = coef.shape[1]
    x = z
    for j in range(k):
        x -= coef[1, j] * state[j, cell]
    for j in range(k):
        state[j, cell] = coef[0, j] * state[j, cell] + x
    state[k, cell] += x


@njit(cache=True)
def push_many(
    mode: int,
    exact: np.ndarray,
    fa: np.ndarray,
    fb: np.ndarray,
    coef: np.ndarray,
    cells: np.ndarray,
    new_steps: np.ndarray,
    cs: np.ndarray,
    noise: np.ndarray,
) -> None:
    """Cells ``cells[k]``, in order, take steps ``new_steps[k]`` with increments ``cs[k]``."""
    z = 0
    for k in range(cells.shape[0]):
        z = cell_push(mode, exact, fa, fb, coef, cells[k], new_steps[k], cs[k], noise, z)
