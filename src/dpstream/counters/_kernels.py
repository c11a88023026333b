"""Compiled per-push step of every counter kind, and the factory that compiles a loop once per counter kind.

A counter's state is a tuple of arrays (``Counter.state``) that goes into every kernel unpacked, as plain arrays,
and arrives in the kernel as the tuple ``state``. A push gives cell ``cell`` its step ``step`` (1-based) with
increment ``c``, consuming pre-drawn N(0, sigma^2) noises from ``noise`` at position ``z``, and returns the next
position. Step counts are kept outside the kernels (``Counter.push``).

Specialisation. A loop over pushes (``push_many`` here, the sketches' extend loops in ``sketches._kernels``) is
written once as a factory ``make(kind, push)`` whose inner function calls ``cell_push`` below. ``kind`` is a
constant of the closure: numba prunes every other branch before typing, so the compiled loop holds exactly one
inlined push and no per-item test (a loop that tested the kind per push ran the derived-noise Lazy sketch at 5.6
against 53 million updates/s). The package's counters have integer kinds, and their loops are cached on disk
(``cache=True``; a closure over an int has the same cache key in every process). A counter defined outside the
package has kind ``EXTERNAL`` and its own compiled ``push_kernel``: its loops are compiled once per process and
not cached, since a compiled function inside a cached kernel gets a new cache entry in every process (numba keys
it by a per-process identity) until the cache index breaks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from dpstream.counters._bm_kernels import push, tree_level
from dpstream.counters._kary_kernels import kary_push
from dpstream.counters._smooth_kernels import smooth_push
from dpstream.counters.honaker_tree import honaker_push
from dpstream.counters.toeplitz_push import toeplitz_push

EXTERNAL, STORED, DERIVED, HONAKER, BLT, SMOOTH, KARY, TOEPLITZ = -1, 0, 1, 2, 3, 4, 5, 6
"""Counter kinds: the package's counters with their own push, and a counter defined elsewhere (``push_kernel``)."""
KINDS = (STORED, DERIVED, HONAKER, BLT, SMOOTH, KARY, TOEPLITZ)


@njit(cache=True, inline="always")
def stored_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
                z: np.int64) -> np.int64:
    """Binary tree with stored nodes (Holland, Alg. 1): state (exact, noisy_sums), both (levels, n); one noise."""
    exact, noisy_sums = state[0], state[1]
    push(exact, noisy_sums, cell, tree_level(step), c, noise[z])
    return z + 1


@njit(cache=True, inline="always")
def derived_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
                 z: np.int64) -> np.int64:
    """Binary tree with derived node noise: state (exact (1, n),) is all of it; releases add the noise later."""
    exact = state[0]
    exact[0, cell] += c
    return z


@njit(cache=True, inline="always")
def honaker_cell_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
                      z: np.int64) -> np.int64:
    """Binary tree with Honaker's online estimates (ctz(step) + 1 noises).

    state (exact partial sums, released sums, last estimate per level), each (levels, n).
    """
    level = tree_level(step)
    honaker_push(state[0], state[1], state[2], cell, level, c, noise, z)
    return z + level + 1


@njit(cache=True, inline="always")
def blt_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
             z: np.int64) -> np.int64:
    """Buffered linear Toeplitz, Alg. 3 of McMahan et al. (arXiv 2408.08868), on column ``cell``; one noise.

    state (exact (1, n), buffers (k + 1, n): the k buffers and the running noise total, coef = (theta; omega) of C,
    (2, k)): x = z - sum_j omega_j buf_j, buf_j <- theta_j buf_j + x, total += x (``blt_params.blt_step``).
    """
    exact, buffers, coef = state[0], state[1], state[2]
    exact[0, cell] += c
    k = coef.shape[1]
    x = noise[z]
    for j in range(k):
        x -= coef[1, j] * buffers[j, cell]
    for j in range(k):
        buffers[j, cell] = coef[0, j] * buffers[j, cell] + x
    buffers[k, cell] += x
    return z + 1


@njit(inline="always")
def cell_push(kind: int, state: tuple, cell: Any, step: Any, c: Any, noise: np.ndarray, z: Any) -> Any:
    """The push of the package's counter ``kind``, inlined; a constant ``kind`` leaves one branch after pruning."""
    if kind == STORED:
        return stored_push(state, cell, step, c, noise, z)
    elif kind == DERIVED:
        return derived_push(state, cell, step, c, noise, z)
    elif kind == HONAKER:
        return honaker_cell_push(state, cell, step, c, noise, z)
    elif kind == SMOOTH:
        return smooth_push(state, cell, step, c, noise, z)
    elif kind == KARY:
        return kary_push(state, cell, step, c, noise, z)
    elif kind == TOEPLITZ:
        return toeplitz_push(state, cell, step, c, noise, z)
    return blt_push(state, cell, step, c, noise, z)


def specialise(factory: Callable[[int, Any], Callable[..., Any]]) -> Callable[[int, Any], Any]:
    """``factory(kind, external)`` returns a loop over pushes; this compiles it once per counter kind.

    The package's kinds (``KINDS``) with ``external`` None: ``njit(cache=True)``. A counter's own compiled push
    ``external`` (kind then ``EXTERNAL``): ``njit`` without the cache, compiled once per process and push function.
    ``counter.push_kernel`` read through an instance is a bound method made afresh for each instance (numba's
    ``Dispatcher.__get__``); the key is the dispatcher under it, so every instance shares one compiled loop.
    """
    compiled: dict[tuple[int, Any], Any] = {}

    def get(kind: int, external: Any = None) -> Any:
        if external is not None:
            kind = EXTERNAL  # a counter's own push wins over an inherited kind
            # a dispatcher read through an instance is a new bound method per instance: key on the dispatcher
            external = getattr(external, "__func__", external)
        elif kind not in KINDS:
            raise ValueError(f"counter kind {kind!r} without a push_kernel; allowed: one of {KINDS} or a compiled "
                             "push_kernel (a counter defined outside dpstream)")
        key = (kind, external)
        if key not in compiled:
            compiled[key] = njit(cache=kind != EXTERNAL)(factory(kind, external))
        return compiled[key]

    return get


def _push_many(kind: int, external: Any) -> Callable[..., None]:
    def push_many(cells: np.ndarray, new_steps: np.ndarray, cs: np.ndarray, noise: np.ndarray, *state: Any) -> None:
        """Cells ``cells[k]``, in order, take steps ``new_steps[k]`` with increments ``cs[k]``."""
        z = 0
        for k in range(cells.shape[0]):
            if kind == EXTERNAL:
                z = external(state, cells[k], new_steps[k], cs[k], noise, z)
            else:
                z = cell_push(kind, state, cells[k], new_steps[k], cs[k], noise, z)

    return push_many


push_many = specialise(_push_many)
"""``push_many(kind, external)(cells, new_steps, cs, noise, *state)``."""
