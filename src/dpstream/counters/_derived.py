"""Compiled releases of the binary tree with derived node noise (``BinaryTree(node_noise="derived")``).

The node of level l that a release at step s uses (bit l of s set) is the dyadic interval ending at
step (s >> l) << l; its noise is sigma * ``node_normal(key, s >> l, l, cell)`` (the ziggurat over the node's Philox
words): the same node, hence the same value, for every release whose step shares the prefix s >> l.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
from numba import njit
from numba.cpython.unsafe import numbers

from dpstream.counters.philox import node_normal

_leading_zeros = cast(Callable[[np.uint64], int], numbers.leading_zeros)  # numba intrinsics (clz, ctz)
_trailing_zeros = cast(Callable[[int], int], numbers.trailing_zeros)


@njit(cache=True)
def release(exact: np.ndarray, key: np.ndarray, scale: float, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Exact prefix count of each cell plus ``scale`` times its nodes' normals.

    The sum runs over the set bits of the cell's step: the binary mechanism's release at that step.
    """
    out = np.empty(cells.shape[0], dtype=np.float64)
    for k in range(cells.shape[0]):
        cell, s = cells[k], steps[k]
        total = 0.0
        level = 0
        while s >> level:
            if (s >> level) & 1:
                total += node_normal(key[0], key[1], np.uint64(s >> level), np.uint64(level), np.uint64(cell))
            level += 1
        out[k] = np.float64(exact[0, cell]) + scale * total
    return out


@njit(cache=True, inline="always")
def _new_levels(s: int, c: int) -> int:
    """Bit mask of the set bits l of step s whose node is not cached step c's.

    c >> l != s >> l exactly for l up to the highest bit where s and c differ (steps are >= 0: at most bit 62).
    """
    x = s ^ c
    if x == 0:
        return 0
    return s & ((1 << (64 - _leading_zeros(np.uint64(x)))) - 1)


@njit(cache=True)
def release_all_cached(exact: np.ndarray, key: np.ndarray, scale: float, steps: np.ndarray, nodes: np.ndarray,
                       cached: np.ndarray) -> np.ndarray:
    """``release`` of every cell (cell j at ``steps[j]``), regenerating only the nodes not already in ``nodes``.

    ``nodes[j, l]`` holds the unscaled normal of cell j's level-l node for step ``cached[j]`` whenever bit l of
    ``cached[j]`` is set; a node of step s is reused when bit l is set in both and s >> l == cached >> l (the same
    node), else regenerated and stored. The sum runs in the same order over the same values as ``release``: the same
    floats. Successive whole-table releases one push apart regenerate one node per cell instead of popcount(s).
    """
    return release_wanted_cached(exact, key, scale, steps, np.ones(steps.shape[0], dtype=np.bool_), nodes, cached)


@njit(cache=True)
def release_wanted_cached(exact: np.ndarray, key: np.ndarray, scale: float, steps: np.ndarray, wanted: np.ndarray,
                          nodes: np.ndarray, cached: np.ndarray) -> np.ndarray:
    """``release_all_cached`` at the cells where ``wanted`` is set, NaN elsewhere (their cache entries untouched).

    A cell skipped now keeps its older cached nodes: a later release regenerates only the nodes that differ, so a
    node no reader asks for is never generated. One pass over the cells: each new node is ``node_normal``, stored in
    the cache, then the cell's sum runs over its set bits from level 0 up, as in ``release`` (its clear bits would add
    0.0, which leaves a sum that is never -0.0 as it is).
    """
    n = steps.shape[0]
    out = np.full(n, np.nan)
    for cell in range(n):
        if not wanted[cell]:
            continue
        s = steps[cell]
        new = _new_levels(s, cached[cell])
        while new:
            level = _trailing_zeros(new)
            nodes[cell, level] = node_normal(key[0], key[1], np.uint64(s >> level), np.uint64(level), np.uint64(cell))
            new &= new - 1
        total = 0.0
        bits = s
        while bits:
            total += nodes[cell, _trailing_zeros(bits)]
            bits &= bits - 1
        cached[cell] = s
        out[cell] = np.float64(exact[0, cell]) + scale * total
    return out
