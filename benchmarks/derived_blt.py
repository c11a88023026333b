"""Cost of BLT noise derived from a key, as a ratio to the derived binary tree in the same process.

    python benchmarks/derived_blt.py [--length N] [--repeats R] [--out PATH]

One call is one trial's work of the beyond panel at 24 KB (LazyCMS, d 3, eps 0.3, multiply-shift, analytic
calibration, width from the real bytes: 993 at T = 2^20 for both): a fresh sketch fed the seeded Zipf stream (skew
1.3) in the chunks ending at the 16 release times, the top-15 items queried after each chunk. Timed with
``dpstream.timing.interleaved_ratios`` (ratio = reference time / candidate time: < 1 means the candidate is
slower). Arms: the derived tree (reference), the derived BLT, the derived BLT with the trimmed-mean estimator. No
target: a derived BLT release regenerates the levels where its root-to-leaf path leaves the memo's (O(k^2) each),
the derived tree the nodes that changed (one Philox draw each).

Writes ``benchmarks/results/derived_blt.json`` (shape: ``benchmarks/speed_page.py``) and prints the rows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from sketch_speed import machine  # benchmarks/sketch_speed.py

from dpstream.data.zipf import zipf_stream
from dpstream.metrics import prefix_top_k, release_times
from dpstream.sketches import LazyCMS
from dpstream.timing import interleaved_ratios

RESULTS = Path(__file__).with_name("results") / "derived_blt.json"
BEYOND = {"kilobytes": 24, "depth": 3, "epsilon": 0.3, "delta": 1e-3, "model": "actual", "seed": 1,
          "calibration": "analytic", "hash_family": "multiply_shift"}
ARMS = {"LazyCMS derived tree": {"node_noise": "derived"},
        "LazyCMS derived BLT": {"counter": "blt", "node_noise": "derived"},
        "LazyCMS derived BLT, trimmed mean": {"counter": "blt", "node_noise": "derived", "estimator": "trimmed_mean"}}


def trial(stream: np.ndarray, times: np.ndarray, items: list[np.ndarray], options: dict[str, Any]) -> None:
    """Feed ``stream`` up to each release time and query that time's top items."""
    sketch = LazyCMS.from_memory(horizon=stream.size, **BEYOND, **options)
    done = 0
    for t, keys in zip(times, items, strict=True):
        sketch.extend(stream[done:t])
        done = t
        sketch.query_many(keys)


def main() -> None:
    """Measure the rows, print them, write the JSON record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=1 << 20, help="stream length T")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repetitions (>= 5)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    stream = zipf_stream(length=args.length, universe=10**6, skew=1.3, seed=np.random.SeedSequence(0))
    times = release_times(stream.size, 16)
    items = [keys for keys, _ in prefix_top_k(stream, 15, times)]
    arms = {name: (lambda o=options: trial(stream, times, items, o)) for name, options in ARMS.items()}
    for run in arms.values():
        run()  # warm-up: compile or load the kernels, optimise the BLT for the horizon
    estimates = interleaved_ratios(arms, "LazyCMS derived tree", args.repeats)
    rows = [{**e.as_dict(), "target": "none (cost of the lever)", "met": None} for e in estimates.values()]
    command = " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    record = {"title": "BLT noise derived from a key against the derived tree (one beyond-panel trial)",
              "command": command, "machine": machine(), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    for r in rows:
        print(f"{r['name']} / {r['reference']}: {r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}]")


if __name__ == "__main__":
    main()
