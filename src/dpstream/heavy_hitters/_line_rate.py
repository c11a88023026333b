"""The watcher's LazyHH loop: derived nodes, a period of one sketch width, every cell's release kept by level.

Holland, "Private Count-Min and Count Sketch under continual observation" (Alg. 5 and 6), as ``_lazy_hh.lazy_hh_run``
computes it, for ``dpstream watch`` (``LazyHH.use_line_rate``). A LazyHH refresh every k~ = w items releases every
cell of its d x w sketch after one push each: with the binary tree's nodes derived from a key
(``BinaryTree(node_noise="derived")``,
Philox), one new node a cell (``release_suffix``). The nodes are ``BinaryTree(node_noise="derived")``'s, so the noise
and the privacy
statement are unchanged; the releases equal the node cache's up to the order of the float additions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from dpstream.counters.philox import node_normal
from dpstream.hashing import MAX_SHIFT_WIDTH, PARAMS_PER_ROW, canonical_keys, canonical_words, row_columns
from dpstream.heavy_hitters._lazy_hh import Refreshes, compiled

_SHIFT_COLUMNS = PARAMS_PER_ROW["multiply_shift"]


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
    ``node_normal`` as ``BinaryTree(node_noise="derived")``'s, so the same values up to the order of the float
    additions. sums[l, cell]
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


ROWS_AT_ONCE = 4
"""Rows ``count_period`` counts in one pass over a period's keys (four independent add chains, one per row)."""
CHUNK_ITEMS = 256
"""Items whose columns ``count_period`` hashes at once per row (about that many, whole groups of B): L1-resident."""


@njit(cache=True)
def count_period(keys: np.ndarray, params: np.ndarray, first: int, flush_every: int, exact: np.ndarray,
                 pending: np.ndarray) -> None:
    """Alg. 5's counts over one period of B w items from keys[first], B = ``flush_every``, w the width.

    Column c's push falls after the period's item c B + B - 1 (one push a column a period; B = 1: after item c). The
    pending counts of every column move to the exact counts first (the period pushes every column once); item k of
    group g = k // B adds to column c of each row, in the exact count if c >= g (its push comes at or after it) or
    pending if not. Counted in int32 tallies of 2w slots a row (slot c + w (c < g): one add an item and row, no
    branch), ``ROWS_AT_ONCE`` rows a pass over the keys so that repeats of a heavy key do not chain one row's adds,
    the columns hashed ``CHUNK_ITEMS`` at a time (``hashing.row_columns``). ``exact``: the counters' exact counts (1,
    d w); ``keys`` canonical.
    """
    depth, width = pending.shape
    if params.shape[1] == _SHIFT_COLUMNS and width > MAX_SHIFT_WIDTH:
        raise ValueError("multiply_shift hashing needs width <= 2^32")
    period = width * flush_every
    chunk = max(1, CHUNK_ITEMS // flush_every) * flush_every
    w = np.uint64(width)
    cols = np.empty((ROWS_AT_ONCE, chunk), dtype=np.uint64)
    tallies = np.empty((ROWS_AT_ONCE, 2 * width), dtype=np.int32)
    c0, c1, c2, c3 = cols[0], cols[1], cols[2], cols[3]
    t0, t1, t2, t3 = tallies[0], tallies[1], tallies[2], tallies[3]
    counts = exact[0].reshape((depth, width))
    for i in range(0, depth, ROWS_AT_ONCE):
        tallies[:] = 0
        for start in range(0, period, chunk):
            block = keys[first + start : first + min(start + chunk, period)]
            for r in range(ROWS_AT_ONCE):  # past the last row: row d - 1 again, its tallies not kept
                row_columns(params, min(i + r, depth - 1), block, width, cols[r])
            group = np.uint64(start // flush_every)
            k = 0
            for _ in range(block.shape[0] // flush_every):
                for _ in range(flush_every):
                    c = c0[k]
                    t0[c + w * (c < group)] += 1
                    c = c1[k]
                    t1[c + w * (c < group)] += 1
                    c = c2[k]
                    t2[c + w * (c < group)] += 1
                    c = c3[k]
                    t3[c + w * (c < group)] += 1
                    k += 1
                group += np.uint64(1)
        for r in range(min(ROWS_AT_ONCE, depth - i)):
            row, held, tally = counts[i + r], pending[i + r], tallies[r]
            for c in range(width):
                row[c] += held[c] + tally[c]
                held[c] = tally[width + c]


@njit(cache=True)
def new_items(candidates: np.ndarray, block: np.ndarray) -> np.ndarray:
    """The index in ``block`` of the first occurrence of each item not among ``candidates``, in block order.

    An open-addressing set (linear probing, at least twice the items' slots, the multiplicative (Fibonacci) hash of
    the item): the candidates go in first, then each block item is probed once or twice.
    """
    n = candidates.shape[0] + block.shape[0]
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    values = np.empty(1 << bits, dtype=np.int64)
    used = np.zeros(1 << bits, dtype=np.bool_)
    out = np.empty(block.shape[0], dtype=np.int64)
    u = 0
    for j in range(n):
        x = candidates[j] if j < candidates.shape[0] else block[j - candidates.shape[0]]
        h = np.int64((np.uint64(x) * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        while used[h] and values[h] != x:
            h = (h + 1) & mask
        if not used[h]:
            used[h] = True
            values[h] = x
            if j >= candidates.shape[0]:
                out[u] = j - candidates.shape[0]
                u += 1
    return out[:u]


@njit(cache=True)
def estimates_of(keys: np.ndarray, params: np.ndarray, table: np.ndarray, width: int) -> np.ndarray:
    """Alg. 4 on the released ``table`` (d w): each canonical key's minimum over the rows of its cells."""
    depth = params.shape[0]
    cols = np.empty(keys.shape[0], dtype=np.int64)
    out = np.full(keys.shape[0], np.inf)
    for i in range(depth):
        row_columns(params, i, keys, width, cols)
        cells = table[i * width : (i + 1) * width]
        for u in range(keys.shape[0]):
            out[u] = min(out[u], cells[cols[u]])
    return out


@njit(cache=True)
def merged(a: np.ndarray, a_values: np.ndarray, b: np.ndarray, b_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The items of two sorted, disjoint arrays in one sorted array, each with its value."""
    n = a.shape[0] + b.shape[0]
    items = np.empty(n, dtype=np.int64)
    values = np.empty(n, dtype=np.float64)
    i, j = 0, 0
    for u in range(n):
        if j == b.shape[0] or (i < a.shape[0] and a[i] < b[j]):
            items[u], values[u] = a[i], a_values[i]
            i += 1
        else:
            items[u], values[u] = b[j], b_values[j]
            j += 1
    return items, values


@njit(cache=True)
def sorted_by_item(items: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``items`` sorted, each with its value."""
    order = np.argsort(items)
    return items[order], values[order]


@njit(cache=True)
def top_cut(first: np.ndarray, first_values: np.ndarray, second: np.ndarray, second_values: np.ndarray,
            capacity: int) -> tuple[float, int]:
    """(cut, last tied item): the ``capacity`` largest values of both groups, ties at the cut taken in item order.

    cut is the capacity-th largest value; an item is among the largest when its value exceeds the cut, or equals it
    and the item is at most the last tied item (the first capacity - #(value > cut) tied items by key).
    """
    values = np.concatenate((first_values, second_values))
    cut = -np.partition(-values, capacity - 1)[capacity - 1]
    room = capacity - np.sum(values > cut)
    tied = np.concatenate((first[first_values == cut], second[second_values == cut]))
    tied.sort()
    return cut, tied[room - 1]


@njit(cache=True)
def refresh(cand: np.ndarray, block: np.ndarray, block_keys: np.ndarray, params: np.ndarray, table: np.ndarray,
            tau: float, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alg. 6's output step on the released ``table``: (candidates, reported items, their estimates).

    Candidates = unique(C u block), estimates by Alg. 4 (min over the rows of ``table``), reported = estimate >
    ``tau`` in key order, then the ``capacity`` largest kept in key order, ties at the cut kept in key order (the
    first ones). ``cand`` is C, sorted; ``block_keys`` the block's canonical keys. C's estimates come first; when C
    holds ``capacity`` items, the capacity-th largest of them, ``bound``, is at most the cut of the union, so a new
    item is dropped as soon as its running minimum over the rows is below ``bound`` and at most ``tau``: its
    estimate is then below the cut and not reported, so neither the kept set nor the report depends on its remaining
    rows. The rows run one at a time over the live new items (compacted after each row); only the reported and the
    kept new items are sorted.
    """
    width = table.shape[0] // params.shape[0]
    own = estimates_of(canonical_words(cand.view(np.uint64)), params, table, width)
    bound = -np.inf
    if cand.shape[0] >= capacity:
        bound = -np.partition(-own, capacity - 1)[capacity - 1]
    firsts = new_items(cand, block)
    m = firsts.shape[0]
    keys = block_keys[firsts]
    fresh = block[firsts]
    est = np.full(m, np.inf)
    cols = np.empty(m, dtype=np.int64)
    live = m
    for i in range(params.shape[0]):
        if live == 0:
            break
        row_columns(params, i, keys[:live], width, cols)
        cells = table[i * width : (i + 1) * width]
        kept = 0
        for j in range(live):
            v = min(est[j], cells[cols[j]])
            if v >= bound or v > tau:
                keys[kept], fresh[kept], est[kept] = keys[j], fresh[j], v
                kept += 1
        live = kept
    fresh, est = fresh[:live], est[:live]
    up, up_fresh = own > tau, est > tau
    out_items, out_estimates = merged(cand[up], own[up], *sorted_by_item(fresh[up_fresh], est[up_fresh]))
    if cand.shape[0] + m <= capacity:
        return merged(cand, own, *sorted_by_item(fresh, est))[0], out_items, out_estimates
    cut, last = top_cut(cand, own, fresh, est, capacity)
    keep = (own > cut) | ((own == cut) & (cand <= last))
    keep_fresh = (est > cut) | ((est == cut) & (fresh <= last))
    return merged(cand[keep], own[keep], *sorted_by_item(fresh[keep_fresh], est[keep_fresh]))[0], out_items, \
        out_estimates


@njit(cache=True)
def line_rate_run(items: np.ndarray, keys: np.ndarray, params: np.ndarray, exact: np.ndarray, pending: np.ndarray,
                  t0: int, flush_every: int, taus: np.ndarray, capacity: int, candidates: np.ndarray,
                  key: np.ndarray, scale: float, sums: np.ndarray, valid: np.ndarray,
                  table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``lazy_hh_run`` for the watcher: derived nodes, a period of B w items (B = ``flush_every``), t0 a multiple.

    Each period: its counts (``count_period``), the release of all d w cells at its step (``release_suffix``, into
    ``table``; it replaces the node cache's sums), then the refresh (``refresh``): candidates, estimates (Alg. 4),
    the threshold and the top-k~ cut as ``lazy_hh_run``, ties at the cut kept in key order. Returns (candidates,
    reported items, reported estimates) after the last period.
    """
    period = pending.shape[1] * flush_every
    cand = candidates
    out_items = np.empty(0, dtype=np.int64)
    out_estimates = np.empty(0, dtype=np.float64)
    for b in range(items.shape[0] // period):
        first = b * period
        count_period(keys, params, first, flush_every, exact, pending)
        release_suffix(exact, key, scale, (t0 + first + period) // period, sums, valid, table)
        cand, out_items, out_estimates = refresh(cand, items[first : first + period], keys[first : first + period],
                                                 params, table, taus[b], capacity)
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
        cells._key, cells._noise_scale, suffix.sums, suffix.valid, suffix.table)
    state.t = sketch.t = t0 + items.shape[0]
    if cells.tracks_steps:
        cells.record_steps(state.cell_steps())
    return Refreshes(candidates, out_items, out_estimates)


def flushed_refreshes(sketch: Any, items: np.ndarray, flush_every: int, taus: np.ndarray, capacity: int,
                      candidates: np.ndarray, suffix: SuffixSums | None) -> Refreshes:
    """Whole periods of B k~ items (B = ``flush_every``) of ``LazyHH(flush_every=B)``: counts, release, refresh.

    The sketch's clock ``t`` counts push slots, one per B items, so its cell steps, releases and variances are those
    of the flush schedule (every cell at step p after p periods). Derived nodes: every period in compiled code
    (``line_rate_run``, its sums in ``suffix``). Exact discrete nodes (``suffix`` None): a period's counts and refresh
    compiled, its whole-table release ``release_all`` (one step a period, so a prefetch draws the next one ahead).
    """
    state = sketch._state
    cells = state.counters
    period = state.width * flush_every
    t0 = state.t * flush_every
    keys = canonical_keys(items)
    if suffix is not None:
        candidates, out_items, out_estimates = line_rate_run(
            items, keys, sketch._params, cells.state[0], state.pending, t0, flush_every, taus, capacity, candidates,
            cells._key, cells._noise_scale, suffix.sums, suffix.valid, suffix.table)
    else:
        out_items, out_estimates = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        for b in range(items.shape[0] // period):
            first = b * period
            count_period(keys, sketch._params, first, flush_every, cells.state[0], state.pending)
            table = cells.release_all(np.full(cells.n, (t0 + first + period) // period, dtype=np.int64))
            candidates, out_items, out_estimates = refresh(candidates, items[first : first + period],
                                                           keys[first : first + period], sketch._params, table,
                                                           float(taus[b]), capacity)
    state.t = sketch.t = (t0 + items.shape[0]) // flush_every
    if cells.tracks_steps:
        cells.record_steps(state.cell_steps())
    return Refreshes(candidates, out_items, out_estimates)
