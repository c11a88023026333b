"""Cost of the float-safe noise mode: numpy vs OpenDP samplers, alone and inside a LazyCMS.

Usage:
    python benchmarks/noise.py [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dpstream.noise import NoiseSource, noise_mode
from dpstream.sketches import LazyCMS


def draws_per_s(mode: str, kind: str, n: int) -> float:
    """Draws per second of ``kind`` noise (``gaussian`` / ``laplace``) in noise ``mode``."""
    source = NoiseSource(0, mode=mode)
    start = time.perf_counter()
    getattr(source, kind)(1.0, n)
    return n / (time.perf_counter() - start)


def lazycms_updates_per_s(mode: str, length: int) -> float:
    """Updates per second of a LazyCMS over a Zipf stream of ``length`` items in noise ``mode``."""
    items = np.random.default_rng(1).zipf(1.3, length).astype(np.int64)
    with noise_mode(mode):
        LazyCMS(width=8, depth=1, epsilon=1.0, delta=0.5, horizon=64, seed=0).extend(items[:32])  # compile
        sketch = LazyCMS(width=55, depth=3, epsilon=0.3, delta=0.001, horizon=length, seed=0)
        start = time.perf_counter()
        sketch.extend(items)
    return length / (time.perf_counter() - start)


def main() -> None:
    """Time the samplers and a LazyCMS in both noise modes; print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    args = parser.parse_args()
    rows = []
    for kind in ("gaussian", "laplace"):
        for mode, n in (("numpy", 1_000_000), ("secure", 20_000)):
            rows.append({"what": f"{kind} draws", "mode": mode, "per_s": draws_per_s(mode, kind, n)})
    for mode, length in (("numpy", 1 << 20), ("secure", 1 << 13)):
        rows.append({"what": "LazyCMS updates (w=55, d=3)", "mode": mode, "per_s": lazycms_updates_per_s(mode, length)})
    if args.json:
        print(json.dumps(rows))
        return
    for row in rows:
        print(f"{row['what']:<30} {row['mode']:<7} {row['per_s']:>14,.0f} /s")
    for what in dict.fromkeys(r["what"] for r in rows):
        rate = {r["mode"]: r["per_s"] for r in rows if r["what"] == what}
        fast, slow = rate["numpy"], rate["secure"]
        print(f"secure mode costs {fast / slow:,.0f}x on {what}")


if __name__ == "__main__":
    main()
