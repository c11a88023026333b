"""The compiled push of the Toeplitz factorisation counters (``counters.toeplitz``; a kind of ``counters._kernels``)."""

from __future__ import annotations

import numpy as np
from numba import njit


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
