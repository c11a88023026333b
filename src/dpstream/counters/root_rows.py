"""The normalised square root's rows: its coefficients, its column norms and the row norms of its decoder.

The decoder L = A D^{-1} S^{-1} of the normalised square root (Henzinger, Kalinin, Upadhyay, arXiv 2509.14334;
``factorisation.NormalisedRoot``), S = A^{1/2} with the coefficients of (1 - x)^{-1/2} (``sqrt_coefficients``) and D
its column norms (``root_column_norms``). Row s of L is one FFT (``normalised_row``); every row norm at once is the
O(T^2) recursion ``_row_norms``. ``factorisation`` and ``normalised_rows`` (the committed summaries above
``ROW_TABLE_LIMIT``) both read them from here.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit
from scipy.signal import fftconvolve

CACHED_HORIZONS = 4
"""How many horizons' O(T) tables the no-horizon and normalised square roots keep cached (least recently used)."""

ROW_TABLE_LIMIT = 2**16
"""Up to this horizon the normalised square root's row norms come from the O(T^2) table of every row
(``factorisation.normalised_unit_variances``, about a second at 2^16); above it, from one O(s log s) FFT per step asked
(``normalised_row``), at most ``factorisation.ROW_STEPS_LIMIT`` distinct steps a call, and their max and mean over
every step from the committed summary ``make counters-nsqrt`` computes (``counters.normalised_rows``)."""


@functools.cache
def sqrt_coefficients(length: int) -> np.ndarray:
    """c_t = binom(2t, t) / 4^t, t = 0..length - 1: the coefficients of (1 - x)^{-1/2} (read-only)."""
    t = np.arange(1, max(1, length))
    c = np.concatenate(([1.0], np.cumprod((2 * t - 1) / (2 * t))))[:length]
    c.flags.writeable = False
    return c


@functools.lru_cache(maxsize=CACHED_HORIZONS)
def root_column_norms(horizon: int) -> np.ndarray:
    """nu_u = sqrt(sum_{t <= n - u} s_t^2) for u = 1..n: S = A^{1/2}'s column norms over the horizon n (read-only)."""
    nu = np.sqrt(np.cumsum(sqrt_coefficients(horizon) ** 2))[::-1].copy()
    nu.flags.writeable = False
    return nu


@functools.lru_cache(maxsize=CACHED_HORIZONS)
def root_inverse_coefficients(horizon: int) -> np.ndarray:
    """q_t, t < ``horizon``: the coefficients of (1 - x)^{1/2}, S^{-1}'s first column (q_t = q_{t-1} (2t - 3) / 2t)."""
    t = np.arange(1, max(1, horizon))
    q = np.concatenate(([1.0], np.cumprod((2 * t - 3) / (2 * t))))[:horizon]
    q.flags.writeable = False
    return q


ROW_TILE = 1024
"""Columns of L a pass of ``_row_norms`` keeps in cache: 1,024 of row s and of q (16 KB, within a core's L1)."""


@njit(cache=True)
def _row_norms(q: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """sum_j L_{s j}^2 for s = 1..n, L_{s j} = L_{s-1, j} + nu_s q_{s-j} (row s of A D^{-1} S^{-1}).

    Columns j are independent in the recursion, so it runs one tile of ``ROW_TILE`` columns at a time
    (``add_tiles``), adding each tile's part of every row's sum: the same O(n^2) terms, read from cache.
    """
    n = q.shape[0]
    out = np.zeros(n)
    add_tiles(np.ascontiguousarray(q[::-1]), nu, 0, n, out)
    return out


@njit(cache=True)
def add_tiles(q_reversed: np.ndarray, nu: np.ndarray, first: int, end: int, out: np.ndarray) -> None:
    """out[s] += sum_{first <= j <= s} L_{s j}^2 for first <= s < ``end`` (0-based; q_{s-j} = q_reversed[n-1-s+j]).

    The columns from ``first`` on, ``ROW_TILE`` at a time (``_add_tile``), up to the last step asked.
    """
    for start in range(first, end, ROW_TILE):
        _add_tile(q_reversed, nu, start, min(end, start + ROW_TILE), end, out)


@njit(cache=True, fastmath={"reassoc", "contract"})
def _add_tile(q_reversed: np.ndarray, nu: np.ndarray, start: int, stop: int, end: int, out: np.ndarray) -> None:
    """out[s] += sum_{start <= j < min(s + 1, stop)} L_{s j}^2 for start <= s < ``end``.

    Sums are reassociated (vector lanes), so the last bits depend on the CPU. Four steps share a pass over the tile's
    row once every column of the tile has opened (column j joins at step j).
    """
    n = q_reversed.shape[0]
    width = stop - start
    row = np.zeros(width)
    s = start
    while s < end:
        offset = n - 1 - s + start
        if s < stop - 1 or s + 3 >= end:
            out[s] += _step(row, min(s + 1, stop) - start, nu[s], q_reversed, offset)
            s += 1
            continue
        a0, a1, a2, a3 = nu[s], nu[s + 1], nu[s + 2], nu[s + 3]
        t0 = t1 = t2 = t3 = 0.0
        for i in range(width):
            value = row[i] + a0 * q_reversed[offset + i]
            t0 += value * value
            value += a1 * q_reversed[offset - 1 + i]
            t1 += value * value
            value += a2 * q_reversed[offset - 2 + i]
            t2 += value * value
            value += a3 * q_reversed[offset - 3 + i]
            t3 += value * value
            row[i] = value
        out[s] += t0
        out[s + 1] += t1
        out[s + 2] += t2
        out[s + 3] += t3
        s += 4


@njit(cache=True, inline="always")
def _step(row: np.ndarray, columns: int, scale: float, q_reversed: np.ndarray, offset: int) -> float:
    """One step of the recursion over the first ``columns`` of the tile's row: row_i += scale q; its squared norm."""
    total = 0.0
    for i in range(columns):
        value = row[i] + scale * q_reversed[offset + i]
        row[i] = value
        total += value * value
    return total


@functools.lru_cache(maxsize=64)
def normalised_row(horizon: int, step: int) -> np.ndarray:
    """k_t = L_{s, s-t} for t < s = ``step``: row s of L reversed, sum_{t' <= t} q_{t'} nu_{s-t+t'} (read-only).

    One FFT correlation of nu_1..nu_s with q, O(s log s).
    """
    nu, q = root_column_norms(horizon)[:step], root_inverse_coefficients(horizon)[:step]
    k = fftconvolve(nu[::-1], q)[:step] if step else np.zeros(0)
    k.flags.writeable = False
    return k
