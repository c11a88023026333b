"""Memory models of the sketches: bytes at a given width, and the largest width that fits a budget.

Model "paper" (Holland, Sec. 6.4; inferred, it reproduces the paper's widths 2000 / 55 / 33 at
24 KB, d = 3, T = 2^20): KB = 1000 bytes; a CMS / CS cell is 4 bytes; a private cell is 12 bytes
(int32 count + double noise) per tree level, with floor(log2 T) levels for Punctual and
floor(log2(T / (d w))) levels for Lazy (at least 1).

Model "actual": the bytes the object really holds (``memory_bytes``): each private cell's counter
(``Counter.bytes_per_counter`` over the cell horizon T (Punctual) or ceil(T / w) (Lazy); for the paper's
stored binary tree the levels actually allocated, ceil(log2(steps + 1)), of 12 bytes, plus an int64
step count), the counter's fixed bytes (a key), Lazy's exact pending array P, and the hash parameters
(``hashing.PARAMS_PER_ROW`` uint64 per row: 4 for mod p, 6 for multiply-shift). Other counters than the paper's have
only this model. The paper's model is the paper's accounting, not the bytes held: it leaves out the hash parameters,
step counts and Lazy's pending array (LazyCMS at 24 KB, d = 3, T = 2^20: width 55 holds 31,776 bytes).
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np

from dpstream.counters import CounterDescriptor, counter_class
from dpstream.hashing import HASH_FAMILIES, PARAMS_PER_ROW
from dpstream.validation import check_allocation, check_choice

BYTES_PER_KB = 1000
COUNTER_BYTES = 4
NODE_BYTES = 12
MODELS = ("paper", "actual")
PAPER_COUNTER = counter_class("binary", "stored")
"""The counter the paper's memory model describes: the binary tree with stored node noise (Holland, Alg. 1)."""
Model = Literal["paper", "actual"]
Schedule = Literal["exact", "punctual", "lazy"]
SCHEDULES = ("exact", "punctual", "lazy")


def bit_length(n: np.ndarray) -> np.ndarray:
    """int.bit_length elementwise for integers 0 <= n < 2^53 (exact, via frexp)."""
    return np.frexp(np.asarray(n, dtype=np.float64))[1].astype(np.int64)


def count_bytes(horizon: int) -> int:
    """Bytes of one exact count: int32 while every count fits (|count| <= horizon < 2^31), else int64."""
    return 4 if horizon < 2**31 else 8


def hash_bytes(depth: int, hash_family: str = "modp") -> int:
    """Bytes of the hash parameters of ``depth`` rows (uint64 each, ``hashing.PARAMS_PER_ROW`` per row)."""
    return 8 * PARAMS_PER_ROW[check_choice(hash_family, "hash_family", HASH_FAMILIES)] * depth


def sketch_bytes(
    schedule: Schedule, widths: np.ndarray, depth: int, horizon: int, model: Model,
    counter: CounterDescriptor = PAPER_COUNTER, hash_family: str = "modp",
) -> np.ndarray:
    """Modelled bytes of a depth x width sketch with the given push schedule, cell counter and hash family."""
    check_choice(schedule, "schedule", SCHEDULES)
    check_choice(model, "memory model", MODELS)
    w = np.asarray(widths, dtype=np.int64)
    cells = depth * w
    if model == "paper" and schedule != "exact" and counter is not PAPER_COUNTER:
        raise ValueError(f"model='paper' describes the paper's stored binary tree, not counter={counter.name!r} "
                         f"node_noise={counter.node_noise!r}; allowed: model='actual'")
    if model == "paper":
        if schedule == "exact":
            return COUNTER_BYTES * cells
        if schedule == "punctual":
            levels = np.maximum(1, bit_length(np.full_like(w, horizon)) - 1)
        else:
            levels = np.maximum(1, bit_length(horizon // cells) - 1)
        return NODE_BYTES * levels * cells
    cb = count_bytes(horizon)
    hashes = hash_bytes(depth, hash_family)
    if schedule == "exact":
        return cb * cells + hashes
    steps_per_cell = np.full_like(w, horizon) if schedule == "punctual" else -(-horizon // w)
    distinct, where = np.unique(steps_per_cell, return_inverse=True)  # few distinct cell horizons, even for many widths
    per_cell = np.array([counter.bytes_per_counter(int(s), cb) for s in distinct], dtype=np.int64)[where]
    pending = cb if schedule == "lazy" else 0
    return (per_cell + pending) * cells + hashes + counter.fixed_bytes


@functools.lru_cache(maxsize=256)
def width_for_memory(
    schedule: Schedule, kilobytes: float, depth: int, horizon: int, model: Model, name: str,
    counter: CounterDescriptor = PAPER_COUNTER, hash_family: str = "modp",
) -> int:
    """The largest width whose modelled bytes fit in ``kilobytes`` (KB = 1000 bytes): one more column would not.

    For Lazy (paper model) this is the largest fixed point of w = floor(B / (12 d floor(log2(T/(d w))))).
    Raises ``ValueError`` naming the memory and the minimum when not even one column fits, or when the budget is more
    than this machine's memory. Memoised (the arguments are values; ``CounterDescriptor`` is frozen): a run builds the
    same sketch once a trial, and the search asks the counter's size at each distinct cell horizon (about 1,500
    Python calls at 24 KB, T = 2^20).
    """
    budget = kilobytes * BYTES_PER_KB
    check_allocation(budget, f"{name} with memory kilobytes={kilobytes!r}")
    widest = max(1, int(budget // (COUNTER_BYTES * depth)))  # no cell is smaller than one 4-byte count
    widths = np.arange(1, widest + 2)  # one past the widest: it never fits, so the search is not cut short
    fits = np.flatnonzero(sketch_bytes(schedule, widths, depth, horizon, model, counter, hash_family) <= budget)
    if fits.size == 0:
        minimum = int(sketch_bytes(schedule, np.array([1]), depth, horizon, model, counter, hash_family)[0])
        raise ValueError(
            f"memory kilobytes={kilobytes!r} is too small for one column of a depth-{depth} {name} "
            f"(horizon={horizon}, model={model!r}); the minimum is {minimum / BYTES_PER_KB} KB"
        )
    return int(widths[fits[-1]])
