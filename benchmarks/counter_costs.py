"""Issue 34's counters at T = 2^20: variance against the stored binary tree, bytes a counter, cost of a step.

The cost of a step (every counter pushed once, then a whole-table release) is an interleaved ratio to the derived tree.

Variances from the counters' own formulas at epsilon = 1, delta = 1e-6, m = 1 (the Laplace tree: pure DP at the same
epsilon, its delta 0). The speed ratio is the derived tree's time over the counter's (> 1: faster), in one process.

    python benchmarks/counter_costs.py [--cells 16384] [--repeats 9] [--json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from dpstream.counters import counter_class
from dpstream.timing import interleaved_ratios

HORIZON = 2**20
ARMS = [("binary", "derived"), ("binary", "stored"), ("binary", "discrete_secure"), ("smooth", "stored"),
        ("smooth", "derived"), ("smooth", "discrete_secure"), ("laplace", "stored"), ("hybrid", "derived"),
        ("honaker", "stored")]


def main() -> None:
    """Print one row per counter (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=2**14)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    steps = np.arange(1, HORIZON + 1)
    rows, arms = {}, {}
    for name, noise in ARMS:
        cls = counter_class(name, noise)
        one = cls(n=1, horizon=HORIZON, epsilon=1.0, delta=1e-6)
        var = one.variance(steps)
        rows[f"{name}/{noise}"] = {"mean": float(var.mean()), "max": float(var.max()),
                                   "bytes": cls.bytes_per_counter(HORIZON, 8), "notion": one.notion,
                                   "deployable": bool(getattr(one, "deployable", False))}
        counter = cls(n=args.cells, horizon=HORIZON, epsilon=1.0, delta=1e-6, seed=1)
        cells, ones, clock = np.arange(args.cells), np.ones(args.cells, dtype=np.int64), [0]

        def step(counter=counter, clock=clock, cells=cells, ones=ones) -> None:
            for _ in range(4):
                clock[0] += 1
                at = np.full(args.cells, clock[0], dtype=np.int64)
                counter.push(cells, at, ones)
                counter.release_all(at)

        step()  # compile and warm
        arms[f"{name}/{noise}"] = step
    ratios = interleaved_ratios(arms, "binary/derived", repeats=args.repeats)
    base = rows["binary/stored"]["mean"]
    for key, row in rows.items():
        row["mean_vs_tree"], row["max_vs_tree"] = row["mean"] / base, row["max"] / rows["binary/stored"]["max"]
        if key in ratios:
            row["speed_vs_derived_tree"] = ratios[key].as_dict()
    if args.json:
        print(json.dumps(rows))
        return
    for key, row in rows.items():
        speed = row.get("speed_vs_derived_tree", {"ratio": 1.0, "low": 1.0, "high": 1.0})
        print(f"{key:24s} mean/tree {row['mean_vs_tree']:.3f} max/tree {row['max_vs_tree']:.3f} "
              f"bytes {row['bytes']:4d} {row['notion']:13s} deployable {row['deployable']!s:5s} "
              f"speed {speed['ratio']:.3g} [{speed['low']:.3g}, {speed['high']:.3g}]")


if __name__ == "__main__":
    main()
