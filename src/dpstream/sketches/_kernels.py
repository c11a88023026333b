"""Compiled per-update loops of the sketches and the compiled query (Alg. 4) over the released cells.

One update call processes a whole block of canonical keys.

``params`` is the (depth, 4) uint64 hash array of ``dpstream.hashing.draw_hash_params``; ``signed``
selects the CS increment g_i(x) instead of the CMS increment 1. Keys are hashed ``BLOCK`` at a time
(``hash_rows``: vectorised), then processed one by one in stream order. A private schedule's cells are a
``dpstream.counters.Counter``: the loop is compiled once per counter kind (``counters.kernels.specialise``: cached
on disk for the package's counters, with the push inlined), its state arrays go in unpacked (``*counter.state``)
and every cell step is one push. Noise
arrives pre-drawn (already N(0, sigma^2)) in the order the pushes consume it, so a block and item-by-item
calls agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from dpstream.counters.kernels import DERIVED, EXTERNAL, cell_push, specialise
from dpstream.hashing import hash_rows

BLOCK = 256
DERIVED_SCRATCH = 3 << 16
"""Entries of each scratch array of the derived-noise Lazy loop: blocks of 65536 keys at depth 3, 2048 or more deeper.

Only the last w - 1 items of a block need the pending test, so a block far longer than w keeps almost every add on
the Count-Min path: at w 993 derived LazyCMS updates at 0.35x CMS with blocks of 2048 keys and 0.9-1.0x with 65536.
"""


@njit(cache=True, inline="always")
def block_keys(kind: int, depth: int) -> int:
    """Keys per block of the Lazy loops: ``BLOCK``, or the derived loop's ``DERIVED_SCRATCH`` // depth (>= 2048)."""
    if kind == DERIVED:
        return max(DERIVED_SCRATCH // depth, 2048)
    return BLOCK


@njit(cache=True, inline="always")
def add_rows(counts: np.ndarray, cols: np.ndarray, incs: np.ndarray, m: int) -> None:
    """counts[i, cols[i, k]] += incs[i, k] for every row i and k < m (the columns are in [0, w)).

    Three rows per pass over k: a heavy key's cell in one row is a chain of dependent adds, and three independent
    chains overlap. Unsigned indices skip the negative-index wraparound.
    """
    depth = counts.shape[0]
    i = 0
    while i + 3 <= depth:
        r0, r1, r2 = counts[i], counts[i + 1], counts[i + 2]
        c0, c1, c2 = cols[i], cols[i + 1], cols[i + 2]
        g0, g1, g2 = incs[i], incs[i + 1], incs[i + 2]
        for k in range(m):
            r0[np.uint64(c0[k])] += g0[k]
            r1[np.uint64(c1[k])] += g1[k]
            r2[np.uint64(c2[k])] += g2[k]
        i += 3
    for j in range(i, depth):
        row, col, inc = counts[j], cols[j], incs[j]  # one-dimensional views: simpler address arithmetic
        for k in range(m):
            row[np.uint64(col[k])] += inc[k]


@njit(cache=True)
def exact_extend(keys: np.ndarray, params: np.ndarray, signed: bool, counts: np.ndarray) -> None:
    """Non-private CMS / CS: C[i, h_i(x)] += c for every row (Holland, Sec. 2.2)."""
    depth, width = counts.shape
    cols = np.empty((depth, BLOCK), dtype=np.int64)
    incs = np.empty((depth, BLOCK), dtype=np.int64)
    for start in range(0, keys.shape[0], BLOCK):
        m = min(BLOCK, keys.shape[0] - start)
        hash_rows(params, keys, start, m, width, signed, cols, incs)
        add_rows(counts, cols, incs, m)


def _punctual_extend(kind: int, external: Any) -> Callable[..., None]:
    def punctual_extend(keys: np.ndarray, params: np.ndarray, signed: bool, sparse: bool, t0: int,
                        noise: np.ndarray, *state: Any) -> None:
        """PunctualSketch (Alg. 3): at step t every cell (i, j) of the d x w grid takes a counter step.

        c = g_i(x) or 1 at j = h_i(x), else 0; all cells share the step t0 + k + 1. With ``sparse`` (a counter whose
        zero pushes change nothing: derived noise) only the d non-zero cells are pushed.
        """
        depth = params.shape[0]
        width = state[0].shape[1] // depth
        cols = np.empty((depth, BLOCK), dtype=np.int64)
        incs = np.empty((depth, BLOCK), dtype=np.int64)
        z = 0
        for start in range(0, keys.shape[0], BLOCK):
            m = min(BLOCK, keys.shape[0] - start)
            hash_rows(params, keys, start, m, width, signed, cols, incs)
            for k in range(m):
                step = t0 + start + k + 1
                for i in range(depth):
                    if sparse:
                        cell = i * width + cols[i, k]
                        if kind == EXTERNAL:
                            z = external(state, cell, step, incs[i, k], noise, z)
                        else:
                            z = cell_push(kind, state, cell, step, incs[i, k], noise, z)
                        continue
                    for j in range(width):
                        c = incs[i, k] if j == cols[i, k] else 0
                        if kind == EXTERNAL:
                            z = external(state, i * width + j, step, c, noise, z)
                        else:
                            z = cell_push(kind, state, i * width + j, step, c, noise, z)

    return punctual_extend


punctual_extend = specialise(_punctual_extend)
"""``punctual_extend(kind, external)(keys, params, signed, sparse, t0, noise, *state)`` (``counters.kernels``)."""


@njit(cache=True, inline="always")
def lazy_block_derived(exact: np.ndarray, pending: np.ndarray, cols: np.ndarray, incs: np.ndarray, m: int,
                       pos0: int) -> None:
    """Alg. 5 over a block of m hashed items for a counter whose push is exact[cell] += c (derived noise).

    Item k (at column pos0 + k mod w) adds to P[i, c] with c = h_i(x); column c is next pushed at item
    k + ((c - pos0 - k) mod w) of the block. When that push falls inside the block the increment goes straight
    to the exact count (the push would move it there), else it stays pending. A column pushed in the block first
    moves what was pending before it. Integer adds commute: the same exact and pending arrays as item by item,
    with one add per item and row (as Count-Min) instead of an add, a push and a reset.
    """
    depth, width = pending.shape
    for j in range(min(m, width)):  # the columns pushed in this block: pos0, pos0 + 1, ... (mod w)
        c = pos0 + j
        if c >= width:
            c -= width
        for i in range(depth):
            exact[0, i * width + c] += pending[i, c]
            pending[i, c] = 0
    sure = max(0, m - width + 1)  # items k < m - w + 1: the next push of every column is inside the block
    add_rows(exact[0].reshape((depth, width)), cols, incs, sure)  # their adds go straight to the exact counts
    for i in range(depth):
        row = exact[0, i * width : (i + 1) * width]
        pos = (pos0 + sure) % width
        for k in range(sure, m):
            c = cols[i, k]
            ahead = c - pos
            if ahead < 0:
                ahead += width
            if k + ahead < m:
                row[c] += incs[i, k]
            else:
                pending[i, c] += incs[i, k]
            pos += 1
            if pos == width:
                pos = 0


def _lazy_extend(kind: int, external: Any) -> Callable[..., None]:
    def lazy_extend(keys: np.ndarray, params: np.ndarray, signed: bool, pending: np.ndarray, t0: int,
                    noise: np.ndarray, *state: Any) -> None:
        """LazySketch (Alg. 5), t counted from 0.

        P[i, h_i(x)] += c, then column pos = t mod w of every row pushes P[i, pos] into its counter cell
        (step floor(t/w) + 1) and P[i, pos] = 0.
        """
        depth, width = pending.shape
        block = min(block_keys(kind, depth), max(keys.shape[0], 1))  # scratch no larger than needed
        cols = np.empty((depth, block), dtype=np.int64)
        incs = np.empty((depth, block), dtype=np.int64)
        pos = t0 % width
        z = 0
        for start in range(0, keys.shape[0], block):
            m = min(block, keys.shape[0] - start)
            hash_rows(params, keys, start, m, width, signed, cols, incs)
            if kind == DERIVED:
                lazy_block_derived(state[0], pending, cols, incs, m, pos)
                pos = (pos + m) % width
                continue
            for k in range(m):
                step = (t0 + start + k) // width + 1
                for i in range(depth):
                    pending[i, cols[i, k]] += incs[i, k]
                for i in range(depth):
                    if kind == EXTERNAL:
                        z = external(state, i * width + pos, step, pending[i, pos], noise, z)
                    else:
                        z = cell_push(kind, state, i * width + pos, step, pending[i, pos], noise, z)
                    pending[i, pos] = 0
                pos += 1
                if pos == width:
                    pos = 0

    return lazy_extend


lazy_extend = specialise(_lazy_extend)
"""``lazy_extend(kind, external)(keys, params, signed, pending, t0, noise, *state)`` (``counters.kernels``)."""


@njit(cache=True, inline="always")
def _estimates(cells: np.ndarray, cols: np.ndarray, incs: np.ndarray, m: int, signed: bool, rows: np.ndarray,
               out: np.ndarray, first: int) -> None:
    """Alg. 4 for the keys of columns 0..m-1 of ``cols`` / ``incs``, into ``out[first:first + m]``.

    ``rows`` is scratch (depth,). The estimator is chosen once a block, outside the loop over keys: with the choice
    inside it the compiled min loop ran about 30 times slower. The median sorts the depth's few rows by insertion
    (``ndarray.sort`` cost about 450 ns a key); the median is ``np.median``'s, bit for bit (NaN and the sign of zero
    too).
    """
    depth = cells.shape[0]
    half = depth // 2
    if signed:
        for k in range(m):
            nan = False
            for i in range(depth):
                v = incs[i, k] * np.float64(cells[i, cols[i, k]])
                nan |= v != v
                j = i
                while j > 0 and rows[j - 1] > v:
                    rows[j] = rows[j - 1]
                    j -= 1
                rows[j] = v
            # np.median is NaN when a row is, and its mean's +0.0 start turns a -0.0 middle into +0.0
            middle = rows[half] if depth % 2 else (rows[half - 1] + rows[half]) / 2
            out[first + k] = np.nan if nan else 0.0 + middle
    else:
        for k in range(m):
            v = np.float64(cells[0, cols[0, k]])
            for i in range(1, depth):
                v = min(v, np.float64(cells[i, cols[i, k]]))
            out[first + k] = v


@njit(cache=True)
def query_keys(keys: np.ndarray, params: np.ndarray, signed: bool, cells: np.ndarray) -> np.ndarray:
    """Alg. 4 for every canonical key x; reads d cells per key.

    min_i C[i, h_i(x)] (CMS), or median_i g_i(x) C[i, h_i(x)] (``signed``, CS; the mean of the two middle rows when
    the depth is even, as ``np.median``).
    """
    depth, width = cells.shape
    cols = np.empty((depth, BLOCK), dtype=np.int64)
    incs = np.empty((depth, BLOCK), dtype=np.int64)
    rows = np.empty(depth, dtype=np.float64)
    out = np.empty(keys.shape[0], dtype=np.float64)
    for start in range(0, keys.shape[0], BLOCK):
        m = min(BLOCK, keys.shape[0] - start)
        hash_rows(params, keys, start, m, width, signed, cols, incs)
        _estimates(cells, cols, incs, m, signed, rows, out, start)
    return out


@njit(cache=True)
def hash_keys(keys: np.ndarray, params: np.ndarray, signed: bool, depth: int,
              width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """h_i(x) and g_i(x) (or 1) of every key, (d, n) each, and the bool mask of the d w cells they name (i w + h_i(x)).

    For ``query_hashed``: a query that releases only the cells it reads hashes its keys once.
    """
    n = keys.shape[0]
    block_cols = np.empty((depth, BLOCK), dtype=np.int64)
    block_incs = np.empty((depth, BLOCK), dtype=np.int64)
    cols = np.empty((depth, n), dtype=np.int64)
    incs = np.empty((depth, n), dtype=np.int64)
    wanted = np.zeros(depth * width, dtype=np.bool_)
    for start in range(0, n, BLOCK):
        m = min(BLOCK, n - start)
        hash_rows(params, keys, start, m, width, signed, block_cols, block_incs)
        for i in range(depth):
            for k in range(m):
                cols[i, start + k] = block_cols[i, k]
                incs[i, start + k] = block_incs[i, k]
                wanted[i * width + block_cols[i, k]] = True
    return cols, incs, wanted


@njit(cache=True)
def query_hashed(cols: np.ndarray, incs: np.ndarray, signed: bool, cells: np.ndarray) -> np.ndarray:
    """``query_keys`` from the keys' hashes (``hash_keys``): the same floats."""
    rows = np.empty(cells.shape[0], dtype=np.float64)
    out = np.empty(cols.shape[1], dtype=np.float64)
    _estimates(cells, cols, incs, cols.shape[1], signed, rows, out, 0)
    return out
