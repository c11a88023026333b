"""Issue 34, item 3: a deployable counter (exact discrete noise, OS key) against the deployable binary tree at T = 2^20.

Goal, fixed before the run: mean variance over steps 1..T at most 0.5x the deployable tree's (``discrete_secure``),
at most 16 bytes of state a counter, release cost at most 2x the tree's. The candidates: the smooth binary mechanism
over the same exact discrete nodes (``smooth``, ``discrete_secure``) and Honaker's estimate over exact discrete nodes
(``honaker``, ``discrete_secure_stored``, the only Honaker with exact noise). Variances come from the counters' own
formulas (``variance``, with the discrete calibration each makes); costs are interleaved ratios in one process
(``dpstream.timing``): whole-table releases one push apart (a LazyHH refresh) and partial releases of random cells at
random steps (sketch queries), each against the deployable tree and the Philox-derived tree.

    python benchmarks/deployable_counter.py [--cells 16384] [--repeats 9] [--json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import numpy as np

from dpstream.counters import counter_class
from dpstream.timing import interleaved_ratios

HORIZON = 2**20
EPSILON, DELTA = 1.0, 1e-6
ARMS = {"tree": ("binary", "discrete_secure"), "derived_tree": ("binary", "derived"),
        "smooth": ("smooth", "discrete_secure"), "smooth_derived": ("smooth", "derived"),
        "honaker": ("honaker", "discrete_secure_stored")}


def variances() -> dict[str, dict[str, float]]:
    """Mean and max variance over steps 1..T, bytes a counter (int64 counts) and deployability of every arm."""
    steps = np.arange(1, HORIZON + 1)
    out = {}
    for arm, (name, noise) in ARMS.items():
        counter = counter_class(name, noise)(n=1, horizon=HORIZON, epsilon=EPSILON, delta=DELTA)
        var = counter.variance(steps)
        out[arm] = {"mean_variance": float(var.mean()), "max_variance": float(var.max()),
                    "bytes_per_counter": counter.bytes_per_counter(HORIZON, 8),
                    "deployable": bool(getattr(counter, "deployable", False))}
    tree = out["tree"]["mean_variance"]
    for row in out.values():
        row["mean_vs_tree"] = row["mean_variance"] / tree
    return out


def release_arms(cells: int, start: int) -> tuple[dict[str, Callable[[], object]], dict[str, Callable[[], object]]]:
    """(whole-table releases one push apart, partial releases at random steps) for the key-derived arms."""
    table, partial = {}, {}
    rng = np.random.default_rng(1)
    query_cells = rng.integers(0, cells, 4096)
    query_steps = rng.integers(1, HORIZON + 1, 4096)
    for arm, (name, noise) in ARMS.items():
        if noise == "discrete_secure_stored":
            continue  # stored nodes: a release reads n stored sums (no derivation), its cost is a push's draws
        counter = counter_class(name, noise)(n=cells, horizon=HORIZON, epsilon=EPSILON, delta=DELTA)
        clock = [start]

        def whole(counter=counter, clock=clock) -> object:
            for _ in range(8):
                clock[0] += 1
                counter.release_all(np.full(cells, clock[0], dtype=np.int64))
            return None

        table[arm] = whole
        partial[arm] = lambda counter=counter: counter.release(query_cells, query_steps)
    return table, partial


def main() -> None:
    """Print the variance table and the two cost ratios (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=2**14)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = variances()
    table, partial = release_arms(args.cells, start=HORIZON // 2 + 12345)
    for arms in (table, partial):  # warm: compile and fill the node caches
        for run in arms.values():
            run()
    costs = {"release_all_8_steps": interleaved_ratios(table, "tree", repeats=args.repeats),
             "release_4096_random": interleaved_ratios(partial, "tree", repeats=args.repeats)}
    derived = {"release_all_8_steps": interleaved_ratios(table, "derived_tree", repeats=args.repeats),
               "release_4096_random": interleaved_ratios(partial, "derived_tree", repeats=args.repeats)}
    if args.json:
        print(json.dumps({"variance": rows, "vs_tree": {k: {a: e.as_dict() for a, e in v.items()}
                                                        for k, v in costs.items()},
                          "vs_derived_tree": {k: {a: e.as_dict() for a, e in v.items()}
                                              for k, v in derived.items()}}))
        return
    for arm, row in rows.items():
        print(f"{arm:15s} mean/tree {row['mean_vs_tree']:.3f}  max {row['max_variance']:.1f}  mean "
              f"{row['mean_variance']:.1f}  bytes {row['bytes_per_counter']}  deployable {row['deployable']}")
    for kind, estimates in (*costs.items(), *derived.items()):
        for estimate in estimates.values():
            print(kind, estimate)


if __name__ == "__main__":
    main()
