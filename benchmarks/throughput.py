"""Update throughput of the six sketches over the Figure 3(a) memory grid (Holland, Sec. 6.4).

    python benchmarks/throughput.py [--json] [--length N] [--repeats R]

Each sketch is sized by ``from_memory`` (paper memory model, d = 3, eps = 0.3, delta = 0.001,
T = 2^20) on a seeded Zipf stream (skew 1.3, universe 10^6). Only the ``extend`` call is timed, after
a warm-up that compiles (or loads) the kernels; with ``--repeats`` the best time is kept.
``updates_per_s`` uses wall-clock time; ``cpu_updates_per_s`` the process CPU time, which is less
disturbed on a shared machine; the table shows both.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from omegaconf import OmegaConf

from dpstream.data.zipf import zipf_stream
from dpstream.harness.results import CONF_DIR
from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS

MEMORY_KB = list(OmegaConf.load(CONF_DIR / "experiment" / "fig3a.yaml").grid.memory_kb)  # the Figure 3(a) grid
SKETCHES = [CMS, CS, PunctualCMS, PunctualCS, LazyCMS, LazyCS]
DEPTH, EPSILON, DELTA = 3, 0.3, 0.001


def measure(cls: type, memory_kb: float, stream: np.ndarray, repeats: int) -> dict:
    """Best-of-``repeats`` throughput of ``cls.extend(stream)`` at ``memory_kb``."""
    common = {"depth": DEPTH, "epsilon": EPSILON, "delta": DELTA, "horizon": stream.size}
    cls(width=4, **(common | {"horizon": 64}), seed=0).extend(stream[:64])  # warm-up: compile / load kernels
    best = best_cpu = float("inf")
    for r in range(repeats):
        sketch = cls.from_memory(kilobytes=memory_kb, **common, seed=r)
        start, start_cpu = time.perf_counter(), time.process_time()
        sketch.extend(stream)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
        best = min(best, time.perf_counter() - start)
    return {
        "mechanism": cls.__name__,
        "memory_kb": memory_kb,
        "width": sketch.width,
        "depth": DEPTH,
        "length": int(stream.size),
        "memory_bytes": sketch.memory_bytes,
        "updates_per_s": stream.size / best,
        "cpu_updates_per_s": stream.size / best_cpu,
    }


def print_table(rows: list[dict], key: str = "cpu_updates_per_s") -> None:
    """Updates per second (width) per sketch and memory, and the Punctual / Lazy time ratios, by ``key``."""
    names = [cls.__name__ for cls in SKETCHES]
    by = {(r["mechanism"], r["memory_kb"]): r for r in rows}
    print(f"{key} (width) at d={DEPTH}, T={rows[0]['length']}, eps={EPSILON}, delta={DELTA}")
    print(f"{'KB':>4} " + " ".join(f"{n:>20}" for n in names) + f" {'Punct/Lazy CMS':>15} {'Punct/Lazy CS':>14}")
    for kb in MEMORY_KB:
        cells = " ".join(f"{by[n, kb][key]:>13.3g} ({by[n, kb]['width']:>4})" for n in names)
        ratios = [by[f"Lazy{e}", kb][key] / by[f"Punctual{e}", kb][key] for e in ("CMS", "CS")]
        print(f"{kb:>4} {cells} {ratios[0]:>15.1f} {ratios[1]:>14.1f}")


def main() -> None:
    """Parse the command line, time every sketch at every memory point, print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    parser.add_argument("--length", type=int, default=1 << 20, help="stream length T (default 2^20)")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per point; the best is kept")
    args = parser.parse_args()
    stream = zipf_stream(length=args.length, universe=1_000_000, skew=1.3, seed=0)
    rows = [measure(cls, kb, stream, args.repeats) for kb in MEMORY_KB for cls in SKETCHES]
    if args.json:
        print(json.dumps(rows))
    else:
        print_table(rows, "updates_per_s")
        print_table(rows, "cpu_updates_per_s")


if __name__ == "__main__":
    main()
