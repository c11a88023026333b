"""Memory models of the sketches: bytes at a given width, and the largest width that fits a budget.

Model "paper" (seed 004, Sec. 6.4; inferred, it reproduces the paper's widths 2000 / 55 / 33 at
24 KB, d = 3, T = 2^20): KB = 1000 bytes; a CMS / CS cell is 4 bytes; a private cell is 12 bytes
(int32 count + double noise) per tree level, with floor(log2 T) levels for Punctual and
floor(log2(T / (d w))) levels for Lazy (at least 1).

Model "actual": the bytes the object really holds (``memory_bytes``): the paper model's cells with
the levels actually allocated, ceil(log2(T + 1)) for Punctual and ceil(log2(ceil(T / w) + 1)) for
Lazy, plus an int64 step count per private cell, Lazy's exact pending array P, and the hash
parameters (4 uint64 per row).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

BYTES_PER_KB = 1000
COUNTER_BYTES = 4
NODE_BYTES = 12
STEP_BYTES = 8
HASH_BYTES_PER_ROW = 32
MODELS = ("paper", "actual")
Model = Literal["paper", "actual"]
Schedule = Literal["exact", "punctual", "lazy"]


def bit_length(n: np.ndarray) -> np.ndarray:
    """int.bit_length elementwise for integers 0 <= n < 2^53 (exact, via frexp)."""
    return np.frexp(np.asarray(n, dtype=np.float64))[1].astype(np.int64)


def count_bytes(horizon: int) -> int:
    """Bytes of one exact count: int32 while every count fits (|count| <= horizon < 2^31), else int64."""
    return 4 if horizon < 2**31 else 8


def sketch_bytes(schedule: Schedule, widths: np.ndarray, depth: int, horizon: int, model: Model) -> np.ndarray:
    """Modelled bytes of a depth x width sketch with the given push schedule, for each width in ``widths``."""
    w = np.asarray(widths, dtype=np.int64)
    cells = depth * w
    if model == "paper":
        if schedule == "exact":
            return COUNTER_BYTES * cells
        if schedule == "punctual":
            levels = np.maximum(1, bit_length(np.full_like(w, horizon)) - 1)
        else:
            levels = np.maximum(1, bit_length(horizon // cells) - 1)
        return NODE_BYTES * levels * cells
    cb = count_bytes(horizon)
    hashes = HASH_BYTES_PER_ROW * depth
    if schedule == "exact":
        return cb * cells + hashes
    steps_per_cell = np.full_like(w, horizon) if schedule == "punctual" else -(-horizon // w)
    levels = np.maximum(1, bit_length(steps_per_cell))
    pending = cb if schedule == "lazy" else 0
    return (levels * (cb + 8) + STEP_BYTES + pending) * cells + hashes


def width_for_memory(schedule: Schedule, kilobytes: float, depth: int, horizon: int, model: Model, name: str) -> int:
    """The largest width whose modelled bytes fit in ``kilobytes`` (KB = 1000 bytes).

    For Lazy (paper model) this is the largest fixed point of w = floor(B / (12 d floor(log2(T/(d w))))).
    Raises ``ValueError`` naming the memory and the minimum when not even one column fits.
    """
    budget = kilobytes * BYTES_PER_KB
    smallest_cell = COUNTER_BYTES if schedule == "exact" else NODE_BYTES  # bytes of a cell in either model
    widest = max(1, int(budget // (smallest_cell * depth)))
    widths = np.arange(1, widest + 1)
    fits = np.flatnonzero(sketch_bytes(schedule, widths, depth, horizon, model) <= budget)
    if fits.size == 0:
        minimum = int(sketch_bytes(schedule, np.array([1]), depth, horizon, model)[0])
        raise ValueError(
            f"memory kilobytes={kilobytes!r} is too small for one column of a depth-{depth} {name} "
            f"(horizon={horizon}, model={model!r}); the minimum is {minimum / BYTES_PER_KB} KB"
        )
    return int(widths[fits[-1]])
