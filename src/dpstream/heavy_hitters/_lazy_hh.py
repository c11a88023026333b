"""LazyHH's refreshes compiled as one loop: Alg. 5's pushes and Alg. 6's output step, many periods per call.

Holland, "Private Count-Min and Count Sketch under continual observation" (Alg. 5 and 6). A heavy-hitter tracker
over a Count-Min ``LazyCMS`` refreshes every ``period`` items: candidates = unique(C u block), estimates by Alg. 4,
reported = estimates above tau(t), C = the ``capacity`` largest. ``refreshes`` (``lazy_hh_run``) does all of it for
whole periods in compiled code with the same integer and float operations as the Python path (``_tracker``, the
sketch's ``extend`` and ``query_many``), so the states and outputs are the same; the Python path then costs only per
call, not per refresh. Which candidates a refresh keeps when estimates tie at the cut is numpy's ``argpartition``'s
choice: the loop stops there and the caller applies ``keep_top``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from dpstream.counters._derived import release_wanted_cached
from dpstream.counters._kernels import DERIVED, cell_push, specialise
from dpstream.counters.binary import DerivedBinary, StoredBinary
from dpstream.counters.philox import node_normal
from dpstream.hashing import _canonical_words, canonical_keys, hash_rows
from dpstream.sketches import LazyCMS
from dpstream.sketches._kernels import block_keys, hash_keys, lazy_block_derived, query_hashed
from dpstream.sketches.lazy import LazySchedule

REFRESH_ITEMS = 1 << 14
"""Items per ``lazy_hh_run`` call (at most d noises each): bounds the noise buffer to d * 128 KB."""
_NO_NOISE = np.empty(0, dtype=np.float64)  # the noise argument for derived nodes (nothing drawn; never written)
_NO_NODES = (np.zeros(2, dtype=np.uint64), 0.0, np.empty((0, 0)), np.empty(0, dtype=np.int64))
"""The derived-node arguments of ``lazy_hh_run`` for stored nodes (unused there)."""


class Refreshes(NamedTuple):
    """What ``refreshes`` leaves: the kept candidates and the last refresh's reported items and estimates."""

    candidates: np.ndarray
    items: np.ndarray
    estimates: np.ndarray


def keep_top(candidates: np.ndarray, estimates: np.ndarray, capacity: int) -> np.ndarray:
    """The ``capacity`` candidates of largest estimate, in candidate order (numpy's choice among ties at the cut)."""
    keep = np.argpartition(-estimates, capacity - 1)[:capacity]
    return candidates[np.sort(keep)]


@njit(cache=True)
def top_mask(estimates: np.ndarray, capacity: int) -> np.ndarray:
    """Bool mask of the ``capacity`` largest estimates, or an empty mask when ties (or NaN) make the set ambiguous."""
    cut = -np.partition(-estimates, capacity - 1)[capacity - 1]
    above = 0
    at = 0
    for v in estimates:
        if np.isnan(v):
            return np.zeros(0, dtype=np.bool_)
        above += v > cut
        at += v == cut
    if above + at != capacity:
        return np.zeros(0, dtype=np.bool_)
    return estimates >= cut


@njit(cache=True)
def sorted_union(candidates: np.ndarray, block: np.ndarray) -> np.ndarray:
    """unique(candidates u block), sorted (int64)."""
    values = np.concatenate((candidates, block))
    values.sort()
    if values.shape[0] == 0:
        return values
    keep = np.empty(values.shape[0], dtype=np.bool_)
    keep[0] = True
    for k in range(1, values.shape[0]):
        keep[k] = values[k] != values[k - 1]
    return values[keep]


@njit(cache=True)
def lazy_cell_steps(t: int, depth: int, width: int) -> np.ndarray:
    """``LazySchedule.cell_steps`` at t: floor(t / w) + (1 if j < t mod w) for column j, over the d rows."""
    steps = np.full(depth * width, t // width, dtype=np.int64)
    for i in range(depth):
        for j in range(t % width):
            steps[i * width + j] += 1
    return steps


@njit(cache=True, inline="always")
def push_period(kind: int, keys: np.ndarray, params: np.ndarray, pending: np.ndarray, t0: int, first: int,
                period: int, noise: np.ndarray, z: int, cols: np.ndarray, incs: np.ndarray, state: tuple) -> int:
    """Alg. 5 over keys[first : first + period] (stream items t0 + first, ...), as ``_kernels.lazy_extend``: next z."""
    depth, width = pending.shape
    chunk = cols.shape[1]
    pos = (t0 + first) % width
    for start in range(first, first + period, chunk):
        m = min(chunk, first + period - start)
        hash_rows(params, keys, start, m, width, False, cols, incs)
        if kind == DERIVED:
            lazy_block_derived(state[0], pending, cols, incs, m, pos)
            pos = (pos + m) % width
            continue
        for k in range(m):
            step = (t0 + start + k) // width + 1
            for i in range(depth):
                pending[i, cols[i, k]] += incs[i, k]
            for i in range(depth):
                z = cell_push(kind, state, i * width + pos, step, pending[i, pos], noise, z)
                pending[i, pos] = 0
            pos += 1
            if pos == width:
                pos = 0
    return z


@njit(cache=True, inline="always")
def estimates_at(kind: int, candidates: np.ndarray, params: np.ndarray, t: int, depth: int, width: int,
                 derived_key: np.ndarray, scale: float, nodes: np.ndarray, cached: np.ndarray,
                 state: tuple) -> np.ndarray:
    """Alg. 4 (min over rows) of each candidate at t, as ``SketchCore.query_many``.

    The derived tree releases the cells read (``release_wanted_cached``); the stored one reads its released sums.
    """
    cols, incs, wanted = hash_keys(_canonical_words(candidates.view(np.uint64)), params, False, depth, width)
    if kind == DERIVED:
        cells = release_wanted_cached(state[0], derived_key, scale, lazy_cell_steps(t, depth, width), wanted, nodes,
                                      cached)
    else:
        cells = state[1][0]
    return query_hashed(cols, incs, False, cells.reshape((depth, width)))


def _lazy_hh_run(kind: int, external: Any) -> Callable[..., Any]:
    if external is not None:  # cell_push knows the package's counter kinds only
        raise ValueError("lazy_hh_run runs the stored and derived binary trees only, not a counter's own push kernel")

    def lazy_hh_run(items: np.ndarray, keys: np.ndarray, params: np.ndarray, pending: np.ndarray, t0: int,
                    period: int, noise: np.ndarray, taus: np.ndarray, capacity: int, candidates: np.ndarray,
                    derived_key: np.ndarray, scale: float, nodes: np.ndarray, cached: np.ndarray,
                    *state: Any) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Whole periods of ``items`` (canonical ``keys``) from t0: each period's pushes, then its refresh.

        Returns (refreshes done, noises used, candidates, their estimates, reported items, reported estimates). It
        stops after the estimates of a refresh whose cut is ambiguous (``top_mask``): the candidates returned are then
        that refresh's, unpruned, for ``keep_top``. ``derived_key``, ``scale``, ``nodes``, ``cached``: the derived
        counter's key, noise scale and node cache (``DerivedBinary``); unused for stored nodes.
        """
        depth, width = pending.shape
        chunk = min(block_keys(kind, depth), period)
        cols = np.empty((depth, chunk), dtype=np.int64)
        incs = np.empty((depth, chunk), dtype=np.int64)
        cand = candidates
        estimates = np.empty(0, dtype=np.float64)
        out_items = np.empty(0, dtype=np.int64)
        out_estimates = np.empty(0, dtype=np.float64)
        z = 0
        blocks = items.shape[0] // period
        for b in range(blocks):
            first = b * period
            z = push_period(kind, keys, params, pending, t0, first, period, noise, z, cols, incs, state)
            cand = sorted_union(cand, items[first : first + period])  # the refresh (``BlockTracker._refresh``)
            estimates = estimates_at(kind, cand, params, t0 + first + period, depth, width, derived_key, scale, nodes,
                                     cached, state)
            reported = estimates > taus[b]
            out_items, out_estimates = cand[reported], estimates[reported]
            if cand.shape[0] > capacity:
                top = top_mask(estimates, capacity)
                if top.shape[0] == 0:
                    return b, z, cand, estimates, out_items, out_estimates
                cand = cand[top]
        return blocks, z, cand, estimates, out_items, out_estimates

    return lazy_hh_run


lazy_hh_run = specialise(_lazy_hh_run)
"""``lazy_hh_run(kind)(items, keys, params, pending, t0, period, noise, taus, capacity, candidates, derived_key, scale,
nodes, cached, *state)`` for the stored and derived binary trees (``counters._kernels``)."""


def compiled(sketch: Any) -> bool:
    """Whether ``refreshes`` runs for ``sketch``: a ``LazyCMS`` with Alg. 4's estimator over the binary tree.

    Its nodes stored (numpy noise) or derived.
    """
    state = getattr(sketch, "_state", None)
    if not isinstance(sketch, LazyCMS) or sketch.variant.estimator != "alg4" or not isinstance(state, LazySchedule):
        return False
    cells = state.counters
    if type(cells) not in (StoredBinary, DerivedBinary):
        return False
    return cells.node_noise == "derived" or cells._noise.mode == "numpy"


def refreshes(sketch: Any, items: np.ndarray, period: int, taus: np.ndarray, capacity: int,
              candidates: np.ndarray) -> Refreshes | None:
    """A LazyHH tracker's pushes and refreshes over whole periods of ``items`` (int64), compiled; None if not here.

    After each period: candidates = unique(candidates u period's items), their estimates (Alg. 4), the reported
    ones (estimate > ``taus[b]``), and the ``capacity`` largest kept: the same states and outputs as ``extend``
    and ``query_many`` period by period (``_tracker``). Runs where ``compiled`` says so. The noise of all the
    periods is drawn in one call: numpy's generators give the same values drawn at once as drawn period by period.
    """
    if (not compiled(sketch) or items.shape[0] % period
            or (sketch.t + items.shape[0]) // sketch.width + 1 >> sketch._state.counters.levels):
        return None
    if sketch.t + items.shape[0] > sketch.horizon:
        raise ValueError(f"stream length t={sketch.t + items.shape[0]} would exceed horizon={sketch.horizon} of this "
                         f"{type(sketch).__name__}")
    state = sketch._state
    cells, t0 = state.counters, sketch.t
    keys = canonical_keys(items)
    if cells.draws_per_push:
        steps = (t0 + np.arange(items.shape[0])) // state.width + 1
        noise, derived = cells.draw(cells.noise_count(steps) * state.depth), _NO_NODES
    else:
        cache = cells._cache()
        noise, derived = _NO_NOISE, (cells._key, cells._noise_scale, cache[1], cache[2])
    run = lazy_hh_run(cells.kind, None)
    done, used = 0, 0
    while True:
        first = done * period
        ran, z, candidates, estimates, out_items, out_estimates = run(
            items[first:], keys[first:], sketch._params, state.pending, t0 + first, period, noise[used:],
            taus[done:], capacity, candidates, *derived, *cells.state)
        done, used = done + ran, used + z
        if done * period == items.shape[0]:
            break
        candidates = keep_top(candidates, estimates, capacity)  # ties at the cut: numpy's choice, as the tracker
        done += 1
        if done * period == items.shape[0]:
            break
    state.t = sketch.t = t0 + items.shape[0]
    if cells.tracks_steps:
        cells.record_steps(state.cell_steps())
    return Refreshes(candidates, out_items, out_estimates)


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
def union_hashed(cand: np.ndarray, cand_cols: np.ndarray, block: np.ndarray,
                 cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """unique(cand u block), sorted, with each key's d columns (a row each).

    A candidate's columns are kept, a block item's taken from ``cols`` (d, w), the block's hashes: no key is hashed
    twice.
    """
    depth = cols.shape[0]
    order = np.argsort(block)
    n0, m = cand.shape[0], block.shape[0]
    out = np.empty(n0 + m, dtype=np.int64)
    out_cols = np.empty((n0 + m, depth), dtype=np.int64)
    i, j, u = 0, 0, 0
    while i < n0 or j < m:
        if j == m or (i < n0 and cand[i] <= block[order[j]]):
            x = cand[i]
            if u == 0 or out[u - 1] != x:
                out[u] = x
                out_cols[u] = cand_cols[i]
                u += 1
            i += 1
        else:
            k = order[j]
            x = block[k]
            if u == 0 or out[u - 1] != x:
                out[u] = x
                for r in range(depth):
                    out_cols[u, r] = cols[r, k]
                u += 1
            j += 1
    return out[:u], out_cols[:u]


@njit(cache=True)
def line_rate_run(items: np.ndarray, keys: np.ndarray, params: np.ndarray, exact: np.ndarray, pending: np.ndarray,
                  t0: int, taus: np.ndarray, capacity: int, candidates: np.ndarray, key: np.ndarray, scale: float,
                  sums: np.ndarray, valid: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``lazy_hh_run`` for the watcher: derived nodes, a period of one width w, t0 a multiple of w.

    Each period: the pending counts of every column move to the exact counts (every column is pushed once in it),
    then item k adds to column c of each row, in the exact count if c >= k (its push comes later in the period) or
    pending if not: the exact and pending counts of ``lazy_block_derived``, with no branch on the column. The
    release of all d w cells (``release_suffix``, into ``table``) replaces the node cache's sums. Candidates,
    estimates (Alg. 4), the threshold and the top-k~ cut as ``lazy_hh_run``, with the candidates' columns kept from
    the block's hashes (``union_hashed``) and ties at the cut kept in key order (``keep_first_top``). Returns
    (candidates, reported items, reported estimates) after the last period.
    """
    depth, width = pending.shape
    counts = exact[0].reshape((depth, width))
    cols = np.empty((depth, width), dtype=np.int64)
    incs = np.empty((depth, width), dtype=np.int64)
    cand = candidates
    hashed, _, _ = hash_keys(_canonical_words(cand.view(np.uint64)), params, False, depth, width)
    cand_cols = np.ascontiguousarray(hashed.T)
    out_items = np.empty(0, dtype=np.int64)
    out_estimates = np.empty(0, dtype=np.float64)
    for b in range(items.shape[0] // width):
        first = b * width
        hash_rows(params, keys, first, width, width, False, cols, incs)
        for i in range(depth):
            row, held = counts[i], pending[i]
            for c in range(width):
                row[c] += held[c]
                held[c] = 0
            for k in range(width):
                c = cols[i, k]
                inc = incs[i, k]
                inside = c >= k
                row[c] += inc * inside
                held[c] += inc * (not inside)
        release_suffix(exact, key, scale, (t0 + first + width) // width, sums, valid, table)
        cand, cand_cols = union_hashed(cand, cand_cols, items[first : first + width], cols)
        estimates = np.empty(cand.shape[0], dtype=np.float64)
        for u in range(cand.shape[0]):
            v = table[cand_cols[u, 0]]
            for r in range(1, depth):
                v = min(v, table[r * width + cand_cols[u, r]])
            estimates[u] = v
        reported = estimates > taus[b]
        out_items, out_estimates = cand[reported], estimates[reported]
        if cand.shape[0] > capacity:
            top = keep_first_top(estimates, capacity)
            cand, cand_cols = cand[top], cand_cols[top]
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
        items, canonical_keys(items), sketch._params, cells.state[0], state.pending, t0, taus, capacity, candidates,
        cells._key, cells._noise_scale, suffix.sums, suffix.valid, suffix.table)
    state.t = sketch.t = t0 + items.shape[0]
    if cells.tracks_steps:
        cells.record_steps(state.cell_steps())
    return Refreshes(candidates, out_items, out_estimates)
