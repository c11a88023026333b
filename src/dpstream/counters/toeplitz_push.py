"""The compiled push of the Toeplitz factorisation counters (``counters.toeplitz``; a kind of ``counters._kernels``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.counters.philox import node_normal


@njit(cache=True, inline="always")
def toeplitz_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
                  z: np.int64) -> np.int64:
    """Step ``step`` (1-based, every step pushed) of counter ``cell``; one noise.

    w_s = (z_s - sum_{j=1}^{b-1} c_j w_{s-j}) / c_0 into the ring, and total += w_s (``counters.toeplitz``).
    """
    exact, ring, total, coef = state[0], state[1], state[2], state[3]
    exact[0, cell] += c
    rows = ring.shape[0]
    x = noise[z]
    for j in range(1, min(coef.shape[0], step)):
        x -= coef[j] * ring[(step - j - 1) % rows, cell]
    x /= coef[0]
    if coef.shape[0] > 1:
        ring[(step - 1) % rows, cell] = x
    total[0, cell] += x
    return z + 1


DERIVED_TAG = np.uint64(0x5351_5254) << np.uint64(8)
"""Philox counter word c1 of the derived Toeplitz noise ("SQRT"), apart from the derived tree's (its level, < 64)."""


@njit(cache=True)
def derived_release(exact: np.ndarray, key: np.ndarray, scale: float, decoder: np.ndarray, cells: np.ndarray,
                    steps: np.ndarray) -> np.ndarray:
    """Exact count of each cell plus ``scale`` sum_{u=1}^{s} d_{s-u} z_u, z_u = node_normal(key; u, tag, cell)."""
    out = np.empty(cells.shape[0], dtype=np.float64)
    for k in range(cells.shape[0]):
        cell, s = cells[k], steps[k]
        total = 0.0
        for u in range(1, s + 1):
            total += decoder[s - u] * node_normal(key[0], key[1], np.uint64(u), DERIVED_TAG, np.uint64(cell))
        out[k] = np.float64(exact[0, cell]) + scale * total
    return out
