"""Speed of the derived-noise paths and of mod-p hashing, as ratios to a reference in the same process.

    python benchmarks/sketch_speed.py [--length N] [--hh-length N] [--repeats R] [--rows NAME ...]
                                      [--clock wall|cpu] [--out PATH]

Every arm runs on the same seeded Zipf stream (skew 1.3, universe 10^6), timed with
``dpstream.timing.interleaved_ratios`` (interleaved A/B repetitions, median ratio and its order-statistic
interval; ratio = reference time / candidate time, so > 1 means the candidate is faster). Each call builds a fresh
sketch and runs ``extend`` over the whole stream (keys canonicalised inside, as a user's call does). Rows:

- LazyCMS, node_noise="derived", multiply-shift hashing (w 55, d 3) against CMS with multiply-shift (w 2000):
  target >= 0.75.
- CMS with mod-p hashing (the default; w 2000, d 3) against the bare compiled mod-p Count-Min loop of
  ``benchmarks/hashing.py:reference_loop_modp`` (the same hash family, width and arithmetic, one key at a time, no
  blocks) over the same keys, canonicalised inside the timed call as ``extend`` does: target >= 0.8. A second row
  keeps the issue's reference, the bare multiply-shift loop (``reference_loop``, the reference of
  ``benchmarks/beyond.py``), with the same target: that ratio also prices the hash family (mod p, four 32-bit limb
  products and an exact mod w, against one multiply-shift word), so it is not a measure of the sketch's overhead.
- LazyHH (k 128, k~ 512: the 80 KB point of Figure 4(b)) with node_noise="derived" against LazyHH with stored noise:
  time <= 1.3x, i.e. ratio >= 1 / 1.3.

Writes ``benchmarks/results/sketch_speed.json`` (shape: ``benchmarks/speed_page.py``) and prints the rows. With
``--rows`` (some of ``lazy_cms``, ``cms_modp``, ``lazy_hh``) only those rows are measured; they replace the rows of
the same candidate and reference in the file, the others are kept. ``--clock cpu`` times the mod-p rows by the
process's CPU time (``time.process_time``) instead of the wall clock: on a machine shared with other jobs the wall
clock also counts the time the process waits for a core, which widens the interval without measuring the code.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from hashing import reference_loop, reference_loop_modp  # benchmarks/hashing.py: the bare compiled loops

from dpstream.data.zipf import zipf_stream
from dpstream.hashing import canonical_keys, draw_hash_params
from dpstream.heavy_hitters import LazyHH
from dpstream.sketches import CMS, LazyCMS
from dpstream.timing import RatioEstimate, interleaved_ratios

DEPTH, EPSILON, DELTA = 3, 0.3, 0.001
MS = {"hash_family": "multiply_shift"}
RESULTS = Path(__file__).with_name("results") / "sketch_speed.json"
ROWS = ("lazy_cms", "cms_modp", "lazy_hh")
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def machine() -> str:
    """CPU model and core count (the page shows where the numbers were taken)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()}"


def row(estimate: RatioEstimate, at_least: float, target: str) -> dict[str, Any]:
    """The estimate's record with its target and whether the whole interval meets it (None: inconclusive)."""
    return {**estimate.as_dict(), "target": target, "met": estimate.decide(at_least)}


def lazy_cms_row(stream: np.ndarray, repeats: int) -> dict[str, Any]:
    """LazyCMS derived against CMS, both with multiply-shift hashing (the same family)."""
    n = stream.size
    private = {"depth": DEPTH, "epsilon": EPSILON, "delta": DELTA, "horizon": n}
    arms = {
        "CMS multiply-shift (w 2000)": lambda: CMS(width=2000, depth=DEPTH, horizon=n, seed=1, **MS).extend(stream),
        "LazyCMS derived multiply-shift (w 55)":
            lambda: LazyCMS(width=55, **private, seed=1, node_noise="derived", **MS).extend(stream),
    }
    for run in arms.values():
        run()  # warm-up: compile or load the kernels
    estimate = interleaved_ratios(arms, "CMS multiply-shift (w 2000)", repeats)["LazyCMS derived multiply-shift (w 55)"]
    return row(estimate, 0.75, ">= 0.75x CMS (multiply-shift)")


def cms_modp_rows(stream: np.ndarray, repeats: int, clock: Callable[[], float] = time.perf_counter,
                  ) -> list[dict[str, Any]]:
    """CMS mod p against the bare mod-p loop (same family), and against the bare multiply-shift loop (cross-family)."""
    n = stream.size
    rng = np.random.default_rng(0)
    a, b = rng.integers(1, 2**63, DEPTH, dtype=np.uint64) | np.uint64(1), rng.integers(0, 2**63, DEPTH, dtype=np.uint64)
    modp = draw_hash_params(DEPTH, 0)
    counts = np.zeros((DEPTH, 2000), dtype=np.int64)
    bare = "bare mod-p loop (w 2000)"
    arms = {
        bare: lambda: reference_loop_modp(canonical_keys(stream), modp, counts),
        "bare multiply-shift loop (w 2000)": lambda: reference_loop(canonical_keys(stream), a, b, counts),
        "CMS mod p (w 2000)": lambda: CMS(width=2000, depth=DEPTH, horizon=n, seed=1).extend(stream),
    }
    for run in arms.values():
        run()
    vs_modp = interleaved_ratios({k: arms[k] for k in (bare, "CMS mod p (w 2000)")}, bare, repeats, clock)
    cross = interleaved_ratios({k: arms[k] for k in ("bare multiply-shift loop (w 2000)", "CMS mod p (w 2000)")},
                               "bare multiply-shift loop (w 2000)", repeats, clock)
    return [row(vs_modp["CMS mod p (w 2000)"], 0.8, ">= 0.8x the bare loop (mod p)"),
            row(cross["CMS mod p (w 2000)"], 0.8, ">= 0.8x the bare loop (multiply-shift: also prices the family)")]


def lazy_hh_row(stream: np.ndarray, repeats: int) -> dict[str, Any]:
    """LazyHH with derived node noise against stored noise at k~ = 512 (80 KB on the paper's axis)."""
    hh = {"k": 128, "k_tilde": 512, "epsilon": 0.5, "delta": 1e-3, "beta": 5e-4, "horizon": stream.size, "seed": 1}
    arms = {"LazyHH stored (k~ 512)": lambda: LazyHH(**hh).extend(stream),
            "LazyHH derived (k~ 512)": lambda: LazyHH(**hh, node_noise="derived").extend(stream)}
    for run in arms.values():
        run()
    estimate = interleaved_ratios(arms, "LazyHH stored (k~ 512)", repeats)["LazyHH derived (k~ 512)"]
    return row(estimate, 1 / 1.3, "time <= 1.3x LazyHH stored (ratio >= 0.77)")


def merged(path: Path, rows: list[dict[str, Any]], command: str) -> list[dict[str, Any]]:
    """The rows of the results file at ``path`` with those of the same (name, reference) as ``rows`` replaced.

    Every row keeps the command that measured it (``command``: the file's own command names only the last run).
    """
    new = {(r["name"], r["reference"]): {**r, "command": command} for r in rows}
    record = json.loads(path.read_text()) if path.exists() else {"rows": []}
    old = [{"command": record.get("command", "?"), **r} for r in record["rows"]]
    kept = [new.pop((r["name"], r["reference"]), r) for r in old]
    return kept + list(new.values())


def main() -> None:
    """Measure every row, print it, write the JSON record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=1 << 23, help="stream length of the sketch rows")
    parser.add_argument("--hh-length", type=int, default=1 << 19, help="stream length of the LazyHH row")
    parser.add_argument("--repeats", type=int, default=21, help="interleaved repetitions (>= 5)")
    parser.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS), help="which rows to measure")
    parser.add_argument("--clock", choices=CLOCKS, default="wall",
                        help="timer of the mod-p rows: wall clock, or the process's CPU time (less disturbed by a "
                             "loaded machine)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    stream = zipf_stream(length=args.length, universe=10**6, skew=1.3, seed=np.random.SeedSequence(0))
    measure = {"lazy_cms": lambda: [lazy_cms_row(stream, args.repeats)],
               "cms_modp": lambda: cms_modp_rows(stream, args.repeats, CLOCKS[args.clock]),
               "lazy_hh": lambda: [lazy_hh_row(stream[: args.hh_length], args.repeats)]}
    rows = [r for name in ROWS if name in args.rows for r in measure[name]()]
    command = " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    record = {"title": "Derived noise and mod-p hashing against their references", "command": command,
              "machine": machine(),
              "rows": merged(args.out, rows, command) if set(args.rows) != set(ROWS) else rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    for r in rows:
        print(f"{r['name']} / {r['reference']}: {r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}] "
              f"target {r['target']}: {r['met']}")


if __name__ == "__main__":
    main()
