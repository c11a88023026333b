"""The watcher's LazyHH loop: derived nodes, a period of one sketch width, every cell's release kept by level.

Holland, "Private Count-Min and Count Sketch under continual observation" (Alg. 5 and 6), as ``_lazy_hh.lazy_hh_run``
computes it, for ``dpstream watch`` (``LazyHH.use_line_rate``). A LazyHH refresh every k~ = w items releases every
cell of its d x w sketch after one push each: with the binary tree's nodes derived from a key (``DerivedBinary``,
Philox), one new node a cell (``release_suffix``). The nodes are ``DerivedBinary``'s, so the noise and the privacy
statement are unchanged; the releases equal the node cache's up to the order of the float additions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from dpstream.counters.philox import node_normal
from dpstream.hashing import canonical_keys, canonical_words, hash_rows
from dpstream.heavy_hitters._lazy_hh import Refreshes, compiled
from dpstream.sketches.kernels import hash_keys


@njit(cache=True, inline="always")
def _lowest_bit(s: int) -> int:
    """The index of the lowest set bit of s > 0."""
    level = 0
    while not (s >> level) & 1:
        level += 1
    return level


@njit(cache=True)
def release_suffix(exact: np.ndarray, key: np.ndarray, scale: float, s: int, sums: np.ndarray, valid: np.ndarray,
                   out: np.ndarray) -> None:
    """Every cell's binary-tree release at step s (all cells at s), each cell's sum kept by level from the top.

    out[cell] = exact + scale * (sum of the nodes Z(cell, l, s >> l) over the set bits l of s), the nodes
    ``node_normal`` as ``DerivedBinary``'s, so the same values up to the order of the float additions. sums[l, cell]
    holds the nodes' sum over the set bits >= l of the step ``valid[0]``, added from the highest bit down. From step
    s - 1 to s the bits below the lowest set bit l of s clear and l sets, the bits above stay: one new node a cell,
    added to the kept sum of the next set bit above l. At another step every node of s is derived again. Level by
    level across the cells: one sequential pass.
    """
    n = out.shape[0]
    if s == 0:
        for cell in range(n):
            out[cell] = np.float64(exact[0, cell])
        valid[0] = 0
        return
    low = _lowest_bit(s)
    if valid[0] == s - 1:
        rest = s >> (low + 1)
        above = low + 1 + _lowest_bit(rest) if rest else -1
        for cell in range(n):
            total = node_normal(key[0], key[1], np.uint64(s >> low), np.uint64(low), np.uint64(cell))
            if above >= 0:
                total += sums[above, cell]
            sums[low, cell] = total
            out[cell] = np.float64(exact[0, cell]) + scale * total
    else:
        top = 63
        while not (s >> top) & 1:
            top -= 1
        for cell in range(n):
            total = 0.0
            first = True
            for level in range(top, low - 1, -1):
                if (s >> level) & 1:
                    node = node_normal(key[0], key[1], np.uint64(s >> level), np.uint64(level), np.uint64(cell))
                    total = node if first else node + total
                    first = False
                    sums[level, cell] = total
            out[cell] = np.float64(exact[0, cell]) + scale * total
    valid[0] = s


@njit(cache=True)
def keep_first_top(estimates: np.ndarray, capacity: int) -> np.ndarray:
    """Bool mask of the ``capacity`` largest estimates; ties at the cut kept in candidate (key) order."""
    cut = -np.partition(-estimates, capacity - 1)[capacity - 1]
    room = capacity
    for v in estimates:
        room -= v > cut
    keep = np.empty(estimates.shape[0], dtype=np.bool_)
    for k in range(estimates.shape[0]):
        v = estimates[k]
        keep[k] = v > cut or (v == cut and room > 0)
        room -= v == cut and room > 0
    return keep


@njit(cache=True)
def first_of_each(block: np.ndarray) -> np.ndarray:
    """The index of each distinct key's first occurrence in ``block``, in block order (an open-addressing set).

    Linear probing in a table of at least twice the block's size, slots hashed by the multiplicative (Fibonacci)
    hash of the key: one probe or two a key, so a period of many repeats sorts only its distinct keys.
    """
    m = block.shape[0]
    bits = 1
    while (1 << bits) < 2 * m:
        bits += 1
    mask = (1 << bits) - 1
    slots = np.full(1 << bits, -1, dtype=np.int64)
    out = np.empty(m, dtype=np.int64)
    u = 0
    for k in range(m):
        x = block[k]
        h = np.int64((np.uint64(x) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))
        while slots[h] >= 0 and block[slots[h]] != x:
            h = (h + 1) & mask
        if slots[h] < 0:
            slots[h] = k
            out[u] = k
            u += 1
    return out[:u]


@njit(cache=True)
def union_hashed(cand: np.ndarray, cand_cols: np.ndarray, block: np.ndarray,
                 cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """unique(cand u block), sorted, with each key's d columns (a row each).

    A candidate's columns are kept, a block item's taken from ``cols`` (d, len(block)), the block's hashes: no key is
    hashed twice. Only the block's distinct keys are sorted (``first_of_each``); the keys are merged first, then the
    block items' columns gathered row by row of ``cols`` (each row read in one place, not d rows per item).
    """
    depth = cols.shape[0]
    firsts = first_of_each(block)
    order = firsts[np.argsort(block[firsts])]
    n0, m = cand.shape[0], order.shape[0]
    out = np.empty(n0 + m, dtype=np.int64)
    source = np.empty(n0 + m, dtype=np.int64)  # a candidate's index i as -(i + 1), a block item's index k as k
    i, j, u = 0, 0, 0
    while i < n0 or j < m:
        if j == m or (i < n0 and cand[i] <= block[order[j]]):
            x = cand[i]
            if u == 0 or out[u - 1] != x:
                out[u] = x
                source[u] = -(i + 1)
                u += 1
            i += 1
        else:
            k = order[j]
            x = block[k]
            if u == 0 or out[u - 1] != x:
                out[u] = x
                source[u] = k
                u += 1
            j += 1
    out_cols = np.empty((u, depth), dtype=np.int64)
    for v in range(u):
        if source[v] < 0:
            out_cols[v] = cand_cols[-source[v] - 1]
    for r in range(depth):
        row = cols[r]
        for v in range(u):
            if source[v] >= 0:
                out_cols[v, r] = row[source[v]]
    return out[:u], out_cols


@njit(cache=True)
def flush_count(keys: np.ndarray, params: np.ndarray, first: int, flush_every: int, exact: np.ndarray,
                pending: np.ndarray, cols: np.ndarray, incs: np.ndarray) -> None:
    """Alg. 5's counts over one period of B w items from keys[first], B = ``flush_every``, w the width.

    Column c's push falls after the period's item c B + B - 1 (one push a column a period; B = 1: after item c). The
    pending counts of every column move to the exact counts first (the period pushes every column once), then item k
    adds to column c of each row, in the exact count if c >= k // B (its push comes at or after it) or pending if
    not: no branch on the column. ``exact``: the counters' exact counts (1, d w). The period's hashes are left in
    ``cols`` and ``incs`` (d, B w).
    """
    depth, width = pending.shape
    period = cols.shape[1]
    counts = exact[0].reshape((depth, width))
    hash_rows(params, keys, first, period, width, False, cols, incs)
    for i in range(depth):
        row, held = counts[i], pending[i]
        for c in range(width):
            row[c] += held[c]
            held[c] = 0
        k = 0
        for group in range(width):  # items k of the group k // B = group
            for _ in range(flush_every):
                c = cols[i, k]
                inc = incs[i, k]
                inside = c >= group
                row[c] += inc * inside
                held[c] += inc * (not inside)
                k += 1


@njit(cache=True)
def flush_refresh(cand: np.ndarray, cand_cols: np.ndarray, block: np.ndarray, cols: np.ndarray, table: np.ndarray,
                  tau: float, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Alg. 6's output step on the released ``table``: (candidates, their columns, reported items, estimates).

    Candidates = unique(C u block) with their columns (``union_hashed``), estimates by Alg. 4 (min over rows of
    ``table``), reported = estimate > ``tau``, then the top ``capacity`` kept (``keep_first_top``).
    """
    depth, width = cols.shape[0], table.shape[0] // cols.shape[0]
    cand, cand_cols = union_hashed(cand, cand_cols, block, cols)
    estimates = np.empty(cand.shape[0], dtype=np.float64)
    for u in range(cand.shape[0]):
        v = table[cand_cols[u, 0]]
        for r in range(1, depth):
            v = min(v, table[r * width + cand_cols[u, r]])
        estimates[u] = v
    reported = estimates > tau
    out_items, out_estimates = cand[reported], estimates[reported]
    if cand.shape[0] > capacity:
        top = keep_first_top(estimates, capacity)
        cand, cand_cols = cand[top], cand_cols[top]
    return cand, cand_cols, out_items, out_estimates


@njit(cache=True)
def candidate_columns(cand: np.ndarray, params: np.ndarray, depth: int, width: int) -> np.ndarray:
    """The candidates' d columns, a row each (n, d)."""
    hashed, _, _ = hash_keys(canonical_words(cand.view(np.uint64)), params, False, depth, width)
    return np.ascontiguousarray(hashed.T)


@njit(cache=True)
def line_rate_run(items: np.ndarray, keys: np.ndarray, params: np.ndarray, exact: np.ndarray, pending: np.ndarray,
                  t0: int, flush_every: int, taus: np.ndarray, capacity: int, candidates: np.ndarray,
                  key: np.ndarray, scale: float, sums: np.ndarray, valid: np.ndarray, table: np.ndarray,
                  cols: np.ndarray, incs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``lazy_hh_run`` for the watcher: derived nodes, a period of B w items (B = ``flush_every``), t0 a multiple.

    Each period: its counts (``flush_count``), the release of all d w cells at its step (``release_suffix``, into
    ``table``; it replaces the node cache's sums), then the refresh (``flush_refresh``): candidates, estimates
    (Alg. 4), the threshold and the top-k~ cut as ``lazy_hh_run``, with the candidates' columns kept from the block's
    hashes and ties at the cut kept in key order. Returns (candidates, reported items, reported estimates) after the
    last period. ``cols``, ``incs``: (d, B w) int64 buffers for a period's hashes, kept by the caller across calls.
    """
    depth, width = pending.shape
    period = width * flush_every
    cand = candidates
    cand_cols = candidate_columns(cand, params, depth, width)
    out_items = np.empty(0, dtype=np.int64)
    out_estimates = np.empty(0, dtype=np.float64)
    for b in range(items.shape[0] // period):
        first = b * period
        flush_count(keys, params, first, flush_every, exact, pending, cols, incs)
        release_suffix(exact, key, scale, (t0 + first + period) // period, sums, valid, table)
        cand, cand_cols, out_items, out_estimates = flush_refresh(cand, cand_cols, items[first : first + period],
                                                                  cols, table, taus[b], capacity)
    return cand, out_items, out_estimates


class SuffixSums:
    """The watcher's node sums by level (``release_suffix``) and its last release of every cell (``table``).

    A speed cache as secret as the key (the table holds the noisy cells, the candidate set is computed from them);
    never saved.
    """

    def __init__(self, levels: int, cells: int) -> None:
        """Sums of (levels, cells) float64, valid at no step yet."""
        self.sums = np.zeros((levels, cells))
        self.valid = np.full(1, -1, dtype=np.int64)
        self.table = np.zeros(cells)

    @property
    def nbytes(self) -> int:
        """The bytes its arrays hold."""
        return self.sums.nbytes + self.valid.nbytes + self.table.nbytes


def line_rate(sketch: Any, period: int) -> bool:
    """Whether ``line_rate_run`` applies: derived nodes, a period of one width, at a multiple of it."""
    return (compiled(sketch) and sketch.node_noise == "derived" and period == sketch.width
            and sketch.t % period == 0)


def line_rate_refreshes(sketch: Any, items: np.ndarray, taus: np.ndarray, capacity: int, candidates: np.ndarray,
                        suffix: SuffixSums) -> Refreshes | None:
    """``refreshes`` through ``line_rate_run`` (where ``line_rate``), keeping its sums in ``suffix``; else None.

    The releases are ``refreshes``'s up to the order of the float additions of each cell's nodes, and ties at the
    top-k~ cut are kept in key order: the reported items can differ from ``refreshes``'s only where estimates tie
    or lie within that rounding of the threshold or the cut.
    """
    width = sketch.width
    if (not line_rate(sketch, width) or items.shape[0] % width
            or (sketch.t + items.shape[0]) // width + 1 >> sketch._state.counters.levels):
        return None
    if sketch.t + items.shape[0] > sketch.horizon:
        raise ValueError(f"stream length t={sketch.t + items.shape[0]} would exceed horizon={sketch.horizon} of this "
                         f"{type(sketch).__name__}")
    state = sketch._state
    cells, t0 = state.counters, sketch.t
    candidates, out_items, out_estimates = line_rate_run(
        items, canonical_keys(items), sketch._params, cells.state[0], state.pending, t0, 1, taus, capacity, candidates,
        cells._key, cells._noise_scale, suffix.sums, suffix.valid, suffix.table, *period_hashes(state.depth, width))
    state.t = sketch.t = t0 + items.shape[0]
    if cells.tracks_steps:
        cells.record_steps(state.cell_steps())
    return Refreshes(candidates, out_items, out_estimates)


def period_hashes(depth: int, period: int) -> tuple[np.ndarray, np.ndarray]:
    """Buffers for a period's hashes: columns and increments, (d, period) int64 each."""
    return np.empty((depth, period), dtype=np.int64), np.empty((depth, period), dtype=np.int64)


def flushed_refreshes(sketch: Any, items: np.ndarray, flush_every: int, taus: np.ndarray, capacity: int,
                      candidates: np.ndarray, suffix: SuffixSums | None,
                      hashes: tuple[np.ndarray, np.ndarray]) -> Refreshes:
    """Whole periods of B k~ items (B = ``flush_every``) of ``LazyHH(flush_every=B)``: counts, release, refresh.

    The sketch's clock ``t`` counts push slots, one per B items, so its cell steps, releases and variances are those
    of the flush schedule (every cell at step p after p periods). Derived nodes: every period in compiled code
    (``line_rate_run``, its sums in ``suffix``). Exact discrete nodes (``suffix`` None): a period's counts and refresh
    compiled, its whole-table release ``release_all`` (one step a period, so a prefetch draws the next one ahead).
    ``hashes``: ``period_hashes`` of (d, B k~), kept across calls (a fresh 2 x 8 d B k~ bytes a call would be paged
    in again each time).
    """
    state = sketch._state
    cells = state.counters
    depth, width = state.depth, state.width
    period = width * flush_every
    t0 = state.t * flush_every
    keys = canonical_keys(items)
    if suffix is not None:
        candidates, out_items, out_estimates = line_rate_run(
            items, keys, sketch._params, cells.state[0], state.pending, t0, flush_every, taus, capacity, candidates,
            cells._key, cells._noise_scale, suffix.sums, suffix.valid, suffix.table, *hashes)
    else:
        cols, incs = hashes
        cand_cols = candidate_columns(candidates, sketch._params, depth, width)
        out_items, out_estimates = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        for b in range(items.shape[0] // period):
            first = b * period
            flush_count(keys, sketch._params, first, flush_every, cells.state[0], state.pending, cols, incs)
            table = cells.release_all(np.full(cells.n, (t0 + first + period) // period, dtype=np.int64))
            candidates, cand_cols, out_items, out_estimates = flush_refresh(
                candidates, cand_cols, items[first : first + period], cols, table, float(taus[b]), capacity)
    state.t = sketch.t = (t0 + items.shape[0]) // flush_every
    if cells.tracks_steps:
        cells.record_steps(state.cell_steps())
    return Refreshes(candidates, out_items, out_estimates)
