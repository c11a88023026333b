"""Update throughput of a Count-Min update loop with mod-p and with multiply-shift hashing (issue 10, item 4).

    python benchmarks/hashing.py [--json] [--length N] [--repeats R] [--width W]

All loops run in one process over the same T canonical keys (seeded Zipf stream, skew 1.3, universe 10^6):

- ``reference``: a bare compiled multiply-shift Count-Min loop: per key and row, one 64-bit multiply-add-shift
  H = (a_i x + b_i) >> 32 (universal, not the 2-word strongly universal vector hash), bucket (H w) >> 32,
  counts[i, bucket] += 1; no blocks, no ``hash_rows``.
- ``reference_modp``: the bare loop with mod-p hashing, the reference of the same family as the default:
  per key and row ((a_i x + b_i) mod p) mod w with the sketches' own arithmetic (``affine_mod_p``, then
  ``mod_small_width`` or ``mod_width``),
  counts[i, bucket] += 1; no blocks, no ``hash_rows``.
- ``hash_sum``: one (a x + b) >> 32 per key summed into one word (no table: the compiler vectorises it), the
  speed of the arithmetic alone.
- ``hash_only_<family>``: ``hash_rows`` of all d rows per block of 256 keys, columns only (no counter writes).
- ``cms_<family>``: the non-private Count-Min update, ``hash_rows`` per block then counts[i, col] += 1 for the
  d rows: the sketches' own kernel (``sketches._kernels.exact_extend``).

Each loop is compiled first, then timed ``repeats`` times; the best wall-clock and the best process CPU time
are kept. Ratios are to the reference's updates per second (CPU time).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np
from numba import njit

from dpstream.data.zipf import zipf_stream
from dpstream.hashing import (
    HASH_FAMILIES,
    SMALL_WIDTH,
    affine_mod_p,
    canonical_keys,
    draw_hash_params,
    hash_rows,
    mod_small_width,
    mod_width,
    small_width_constants,
)
from dpstream.sketches._kernels import exact_extend

BLOCK = 256
DEPTH = 3


@njit  # not cached: it calls the package's kernels, whose changes numba's cache would not see here
def reference_loop(keys: np.ndarray, a: np.ndarray, b: np.ndarray, counts: np.ndarray) -> None:
    """counts[i, ((a_i x + b_i) >> 32) w >> 32] += 1 for every key and row: the bare multiply-shift update."""
    depth, width = counts.shape
    w = np.uint64(width)
    for k in range(keys.shape[0]):
        x = keys[k]
        for i in range(depth):
            counts[i, np.int64((((a[i] * x + b[i]) >> np.uint64(32)) * w) >> np.uint64(32))] += 1


@njit  # not cached: it calls the package's kernels, whose changes numba's cache would not see here
def reference_loop_modp(keys: np.ndarray, params: np.ndarray, counts: np.ndarray) -> None:
    """counts[i, ((a_i x + b_i) mod p) mod w] += 1 for every key and row: the bare mod-p update.

    The same hash family and arithmetic as the sketches (``affine_mod_p``: Carter-Wegman mod p = 2^61 - 1 with the
    Mersenne reduction; ``mod_small_width`` up to ``SMALL_WIDTH``, else ``mod_width``: exact, division-free), one
    key at a time: no blocks, no ``hash_rows``.
    """
    depth, width = counts.shape
    if width <= SMALL_WIDTH:
        c32, inv_up = small_width_constants(width)
        for k in range(keys.shape[0]):
            x = keys[k]
            for i in range(depth):
                counts[i, mod_small_width(affine_mod_p(params[i, 0], params[i, 1], x), width, c32, inv_up)] += 1
        return
    inv = 1.0 / width
    for k in range(keys.shape[0]):
        x = keys[k]
        for i in range(depth):
            counts[i, mod_width(affine_mod_p(params[i, 0], params[i, 1], x), width, inv)] += 1


@njit  # not cached: it calls the package's kernels, whose changes numba's cache would not see here
def hash_sum_loop(keys: np.ndarray, a: np.uint64, b: np.uint64) -> np.uint64:
    """Sum over keys of (a x + b) >> 32 (mod 2^64): one multiply-add-shift per key."""
    s = np.uint64(0)
    for k in range(keys.shape[0]):
        s += (a * keys[k] + b) >> np.uint64(32)
    return s


@njit  # not cached: it calls the package's kernels, whose changes numba's cache would not see here
def hash_only_loop(keys: np.ndarray, params: np.ndarray, width: int) -> np.int64:
    """``hash_rows`` over every block of 256 keys; returns a checksum of the columns so nothing is elided."""
    cols = np.empty((params.shape[0], BLOCK), dtype=np.int64)
    incs = np.empty((params.shape[0], BLOCK), dtype=np.int64)
    s = np.int64(0)
    for start in range(0, keys.shape[0], BLOCK):
        m = min(BLOCK, keys.shape[0] - start)
        hash_rows(params, keys, start, m, width, False, cols, incs)
        s += cols[0, 0] + cols[params.shape[0] - 1, m - 1]
    return s


def best_times(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Best wall-clock and best process-CPU seconds of ``run()`` over ``repeats`` calls (after one warm-up)."""
    run()
    wall = cpu = float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        run()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return wall, cpu


def measure(length: int, width: int, repeats: int) -> list[dict]:
    """Updates per second of every loop over the same ``length`` keys."""
    keys = canonical_keys(zipf_stream(length=length, universe=1_000_000, skew=1.3, seed=0))
    ab = draw_hash_params(DEPTH, 0, family="multiply_shift")
    ref_counts = np.zeros((DEPTH, width), dtype=np.int64)
    modp = draw_hash_params(DEPTH, 0)
    runs: dict[str, Callable[[], object]] = {
        "reference": lambda: reference_loop(keys, ab[:, 0].copy(), ab[:, 1].copy(), ref_counts),
        "reference_modp": lambda: reference_loop_modp(keys, modp, ref_counts),
        "hash_sum": lambda: hash_sum_loop(keys, ab[0, 0], ab[0, 1]),
    }
    for family in HASH_FAMILIES:
        params = draw_hash_params(DEPTH, 0, family=family)
        counts = np.zeros((DEPTH, width), dtype=np.int64)
        runs[f"hash_only_{family}"] = lambda p=params: hash_only_loop(keys, p, width)
        runs[f"cms_{family}"] = lambda p=params, c=counts: exact_extend(keys, p, False, c)
    rows = []
    for name, run in runs.items():
        wall, cpu = best_times(run, repeats)
        rows.append({"loop": name, "depth": DEPTH, "width": width, "length": length,
                     "updates_per_s": length / wall, "cpu_updates_per_s": length / cpu})
    ref = rows[0]["cpu_updates_per_s"]
    for row in rows:
        row["ratio_to_reference"] = row["cpu_updates_per_s"] / ref
    return rows


def main() -> None:
    """Parse the command line, time every loop, print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    parser.add_argument("--length", type=int, default=1 << 22, help="stream length T (default 2^22)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per loop; the best is kept")
    parser.add_argument("--width", type=int, default=2000, help="sketch width w (default 2000)")
    args = parser.parse_args()
    rows = measure(args.length, args.width, args.repeats)
    if args.json:
        print(json.dumps(rows))
        return
    print(f"updates/s, d={DEPTH}, w={args.width}, T={args.length}, best of {args.repeats}")
    print(f"{'loop':>24} {'wall M/s':>9} {'CPU M/s':>8} {'CPU ratio to reference':>23}")
    for r in rows:
        print(f"{r['loop']:>24} {r['updates_per_s'] / 1e6:>9.1f} {r['cpu_updates_per_s'] / 1e6:>8.1f} "
              f"{r['ratio_to_reference']:>23.3f}")


if __name__ == "__main__":
    main()
