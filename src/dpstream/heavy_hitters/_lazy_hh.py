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

from dpstream.counters.binary import BinaryTree
from dpstream.counters.kernels import DERIVED, cell_push, release_wanted_cached, specialise
from dpstream.hashing import canonical_keys, canonical_words, hash_rows
from dpstream.sketches import LazyCMS
from dpstream.sketches.kernels import block_keys, hash_keys, lazy_block_derived, query_hashed
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
    cols, incs, wanted = hash_keys(canonical_words(candidates.view(np.uint64)), params, False, depth, width)
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
        counter's key, noise scale and node cache (``BinaryTree`` with Philox nodes); unused for stored nodes.
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
    if type(cells) is not BinaryTree or cells.node_noise not in ("stored", "derived"):
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

