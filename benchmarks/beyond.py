"""Update throughput of the beyond-the-paper sketches against non-private CMS, in one process (issue 10 targets).

    python benchmarks/beyond.py [--json] [--length N] [--repeats R]

Every sketch processes the same T canonical keys (seeded Zipf stream, skew 1.3, universe 10^6), d = 3,
eps = 0.3, delta = 0.001; only ``extend`` is timed, after a warm-up that compiles the kernels; the best process
CPU time over ``repeats`` runs is kept (less disturbed than wall-clock on a shared machine). Ratios: to the
non-private CMS (mod-p hashing, w = 2000) and to a bare compiled multiply-shift Count-Min loop
(``benchmarks/hashing.py:reference_loop``) over the same keys: for the mod-p sketches that ratio also prices the hash
family (the same-family comparison, CMS mod p against a bare mod-p loop, is ``benchmarks/sketch_speed.py``).
Targets (issue 10): derived-noise LazyCMS (w 55) and PunctualCMS (w 500) >= 0.5x CMS; CMS >= 0.5x the bare loop.
LazyHH (k = 128, k~ = 512) is timed per update with stored and derived node noise, against CMS + heap.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
from hashing import reference_loop  # benchmarks/hashing.py: the bare compiled multiply-shift loop

from dpstream.data.zipf import zipf_stream
from dpstream.hashing import canonical_keys
from dpstream.heavy_hitters import CMSHeap, LazyHH
from dpstream.sketches import CMS, LazyCMS, PunctualCMS

DEPTH, EPSILON, DELTA = 3, 0.3, 0.001
MS = {"hash_family": "multiply_shift"}
SKETCHES: list[tuple[str, type, int, dict[str, Any]]] = [
    ("CMS (mod p)", CMS, 2000, {}),
    ("CMS (multiply-shift)", CMS, 2000, MS),
    ("LazyCMS (paper)", LazyCMS, 55, {}),
    ("LazyCMS derived (mod p)", LazyCMS, 55, {"node_noise": "derived"}),
    ("LazyCMS derived", LazyCMS, 55, {"node_noise": "derived"} | MS),
    ("LazyCMS Honaker", LazyCMS, 55, {"counter": "honaker"}),
    ("LazyCMS BLT", LazyCMS, 55, {"counter": "blt"}),
    ("PunctualCMS (paper, w 33)", PunctualCMS, 33, {}),
    ("PunctualCMS derived (w 500)", PunctualCMS, 500, {"node_noise": "derived"} | MS),
]


def best_cpu(run: Any, repeats: int) -> float:
    """Smallest process CPU time of ``run()`` over ``repeats`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def sketch_rate(cls: type, width: int, variant: dict[str, Any], stream: np.ndarray, repeats: int) -> float:
    """Updates per CPU second of ``cls(width, variant).extend(stream)``."""
    common = {"width": width, "depth": DEPTH, "epsilon": EPSILON, "delta": DELTA, "horizon": stream.size} | variant
    cls(**common, seed=0).extend(stream[:1000])  # warm-up: compile / load the kernels
    return stream.size / best_cpu(lambda: cls(**common, seed=1).extend(stream), repeats)


def reference_rate(stream: np.ndarray, repeats: int) -> float:
    """Updates per CPU second of the bare multiply-shift Count-Min loop (w 2000) over the same stream.

    Timed like ``extend``: the keys are canonicalised inside the timed call (``canonical_keys``), so both sides do
    the same work per item except the hashing and the update (``benchmarks/hashing.py`` compares the loops alone).
    """
    rng = np.random.default_rng(0)
    a, b = rng.integers(1, 2**63, DEPTH, dtype=np.uint64) | np.uint64(1), rng.integers(0, 2**63, DEPTH, dtype=np.uint64)
    counts = np.zeros((DEPTH, 2000), dtype=np.int64)
    reference_loop(canonical_keys(stream[:1000]), a, b, counts)
    return stream.size / best_cpu(lambda: reference_loop(canonical_keys(stream), a, b, counts), repeats)


def tracker_us(make: Any, stream: np.ndarray) -> float:
    """CPU microseconds per update of a heavy-hitter tracker over ``stream`` (one run, after a warm-up)."""
    make(stream.size).extend(stream[:4096])
    tracker = make(stream.size)
    return 1e6 * best_cpu(lambda: tracker.extend(stream), 1) / stream.size


def main() -> None:
    """Measure, print the ratio table (and JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=10**6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    stream = zipf_stream(length=args.length, universe=10**6, skew=1.3, seed=np.random.SeedSequence(0))
    reference = reference_rate(stream, args.repeats)
    rates = {name: sketch_rate(cls, w, v, stream, args.repeats) for name, cls, w, v in SKETCHES}
    cms = rates["CMS (mod p)"]
    rows = [{"sketch": name, "updates_per_cpu_s": r, "vs_cms": r / cms, "vs_bare_loop": r / reference}
            for name, r in rates.items()]
    hh = {"k": 128, "k_tilde": 512, "epsilon": 0.5, "delta": 1e-3, "beta": 5e-4, "seed": 1}
    trackers = {
        "CMS + heap (w 6666)": lambda n: CMSHeap(k=128, width=6666, depth=3, horizon=n, seed=1),
        "LazyHH (paper)": lambda n: LazyHH(**hh, horizon=n),
        "LazyHH derived": lambda n: LazyHH(**hh, horizon=n, node_noise="derived", hash_family="multiply_shift"),
    }
    hh_stream = stream[: min(stream.size, 2**21)]
    us = {name: tracker_us(make, hh_stream) for name, make in trackers.items()}
    if args.json:
        print(json.dumps({"length": args.length, "bare_loop": reference, "sketches": rows, "trackers_us": us}))
        return
    print(f"T = {args.length}, d = {DEPTH}, eps = {EPSILON}; bare multiply-shift loop: {reference / 1e6:.1f} M/s (CPU)")
    print(f"{'sketch':<30} {'M updates/s':>12} {'x CMS':>7} {'x bare loop':>12}")
    for r in rows:
        print(f"{r['sketch']:<30} {r['updates_per_cpu_s'] / 1e6:>12.1f} {r['vs_cms']:>7.2f} {r['vs_bare_loop']:>12.2f}")
    base = us["CMS + heap (w 6666)"]
    print(f"\nheavy hitters over {hh_stream.size} updates (k = 128, k~ = 512): us / update (x CMS + heap)")
    for name, v in us.items():
        print(f"{name:<30} {v:>8.3f} ({v / base:.2f}x)")


if __name__ == "__main__":
    main()
