"""Compiled per-push step of every counter kind, the registry of pushes, and the factory that specialises loops.

A counter's state is a tuple of arrays (``Counter.state``) that goes into every kernel unpacked, as plain arrays,
and arrives in the kernel as the tuple ``state``. A push gives cell ``cell`` its step ``step`` (1-based) with
increment ``c``, consuming pre-drawn noises from ``noise`` at position ``z``, and returns the next position. Step
counts are kept outside the kernels (``Counter.push``).

Registry. Each push is registered under an integer kind where it is written (``register_push(kind, push)``, at
import: here for the stored and derived binary tree, Honaker's tree and BLT, beside their kernels for the smooth,
k-ary and Toeplitz counters). The kind is one push of a (factorisation, noise source) pair: noise derived at release
pushes the exact counts only (``DERIVED``, whatever the factorisation), stored noise has its factorisation's push.

Specialisation. A loop over pushes (``push_many`` here, the sketches' extend loops in ``sketches._kernels``) is
written once as a factory ``make(kind, push)`` whose inner function calls ``cell_push(kind, ...)``. ``kind`` is a
constant of the closure, so ``cell_push`` is typed with it as a literal and resolves, at compile time, to the one
registered push (``_cell_push``): the compiled loop holds exactly one inlined push and no per-item test (a loop that
tested the kind per push ran the derived-noise Lazy sketch at 5.6 against 53 million updates/s). The package's
loops are cached on disk (``cache=True``; a closure over an int has the same cache key in every process, and the
push is looked up by the int, never passed in). A counter defined outside the package has kind ``EXTERNAL`` and its
own compiled ``push_kernel``: its loops are compiled once per process and not cached, since a compiled function
inside a cached kernel gets a new cache entry in every process (numba keys it by a per-process identity) until the
cache index breaks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

from dpstream.counters._bm_kernels import push, tree_level
from dpstream.counters.honaker_tree import honaker_push

EXTERNAL = -1
"""The kind of a counter defined elsewhere, with its own ``push_kernel``."""
PUSHES: dict[int, Any] = {}
"""Every registered push (a compiled ``(state, cell, step, c, noise, z) -> next z``) by kind."""
KINDS = PUSHES.keys()
"""The registered kinds (a live view of ``PUSHES``)."""


def register_push(kind: int, push: Any) -> int:
    """Register the compiled ``push`` of counter kind ``kind`` (>= 0, one push a kind) and return ``kind``."""
    if not isinstance(kind, int) or kind < 0:
        raise ValueError(f"counter kind {kind!r}; allowed: an int >= 0 ({EXTERNAL} is a counter's own push_kernel)")
    if PUSHES.setdefault(kind, push) is not push:
        raise ValueError(f"counter kind {kind} is taken by {PUSHES[kind]}; registered kinds: {sorted(PUSHES)}")
    return kind


def cell_push(kind: int, state: tuple, cell: Any, step: Any, c: Any, noise: np.ndarray, z: Any) -> Any:
    """The push of the registered counter ``kind``, in compiled code only, with ``kind`` a compile-time constant."""
    raise NotImplementedError("cell_push is called from compiled loops only (counters._kernels)")


@overload(cell_push, prefer_literal=True)
def _cell_push(kind: Any, state: Any, cell: Any, step: Any, c: Any, noise: Any, z: Any) -> Any:
    """Resolve ``cell_push`` to the push registered for the literal ``kind``.

    The push is inlined into this implementation (its ``inline="always"``) and LLVM inlines the implementation into
    the loop. Not ``inline="always"`` here as well: numba 0.68's IR inlining of an overload that inlines a push
    lost the push's writes to the state tuple's later arrays (the Toeplitz running totals stayed 0).
    """
    if not isinstance(kind, types.IntegerLiteral):
        raise TypingError(f"cell_push needs a constant kind, got {kind}")
    if kind.literal_value not in PUSHES:
        raise TypingError(f"counter kind {kind.literal_value} has no registered push; registered: {sorted(PUSHES)}")
    registered = PUSHES[kind.literal_value]

    def impl(kind: Any, state: Any, cell: Any, step: Any, c: Any, noise: Any, z: Any) -> Any:
        return registered(state, cell, step, c, noise, z)

    return impl


@njit(cache=True, inline="always")
def stored_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
                z: np.int64) -> np.int64:
    """Binary tree with stored nodes (Holland, Alg. 1): state (exact, noisy_sums), both (levels, n); one noise."""
    exact, noisy_sums = state[0], state[1]
    push(exact, noisy_sums, cell, tree_level(step), c, noise[z])
    return z + 1


STORED = register_push(0, stored_push)


@njit(cache=True, inline="always")
def derived_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
                 z: np.int64) -> np.int64:
    """Binary tree with derived node noise: state (exact (1, n),) is all of it; releases add the noise later."""
    exact = state[0]
    exact[0, cell] += c
    return z


DERIVED = register_push(1, derived_push)
"""Noise derived at release (any factorisation): a push adds to the exact count only, and a push of 0 may be skipped."""


@njit(cache=True, inline="always")
def honaker_cell_push(state: tuple, cell: np.int64, step: np.int64, c: np.int64, noise: np.ndarray,
                      z: np.int64) -> np.int64:
    """Binary tree with Honaker's online estimates (ctz(step) + 1 noises).

    state (exact partial sums, released sums, last estimate per level), each (levels, n).
    """
    level = tree_level(step)
    honaker_push(state[0], state[1], state[2], cell, level, c, noise, z)
    return z + level + 1


HONAKER = register_push(2, honaker_cell_push)


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


BLT = register_push(3, blt_push)


def specialise(factory: Callable[[int, Any], Callable[..., Any]]) -> Callable[[int, Any], Any]:
    """``factory(kind, external)`` returns a loop over pushes; this compiles it once per counter kind.

    The registered kinds (``PUSHES``) with ``external`` None: ``njit(cache=True)``. A counter's own compiled push
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
        elif kind not in PUSHES:
            raise ValueError(f"counter kind {kind!r} without a push_kernel; allowed: one of {sorted(PUSHES)} or a "
                             "compiled push_kernel (a counter defined outside dpstream)")
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
