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

STORED = 0
"""Binary tree with stored nodes (seed 004, Alg. 1): exact (levels, n), fa = noisy sums (levels, n)."""
DERIVED = 1
"""Binary tree with derived node noise: exact (1, n) is the whole state; releases add the noise later."""


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
    push(exact, fa, cell, tree_level(step), c, noise[z])
    return z + 1


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
