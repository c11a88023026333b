"""Outputs of every sketch, GaussBM and heavy-hitter tracker on fixed seeds, as plain numbers: the refactor guard.

``tests/data/golden_outputs.json`` was written by ``python tests/golden.py`` at commit 377c17c, before the
counter interface was introduced; ``test_golden_outputs`` recomputes and compares: floats to a relative 1e-9
(``tolerance.REL_TOL``: rounding differs by an ulp between CPUs and libm builds), everything else exactly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).parent / "data" / "golden_outputs.json"


def outputs() -> dict[str, list[float]]:
    from dpstream.counters.gauss_bm import GaussBM
    from dpstream.heavy_hitters import CMSHeap, LazyHH, PunctualHH
    from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS

    rng = np.random.default_rng(7)
    stream = (rng.zipf(1.3, 3000) % 400).astype(np.int64)
    keys = np.arange(50)
    out: dict[str, list[float]] = {}
    for cls in (CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS):
        sketch = cls(width=20, depth=3, epsilon=0.5, delta=1e-3, horizon=4096, seed=11)
        sketch.extend(stream[:1234])
        first = sketch.query_many(keys)
        sketch.extend(stream[1234:])
        out[cls.__name__] = [*first.tolist(), *sketch.query_many(keys).tolist(), float(sketch.memory_bytes)]
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=2, seed=3)
    for _ in range(37):
        bm.update_all(rng.integers(0, 3, 5))
    bm.extend(np.array([0, 3, 0, 0]), np.array([1, 2, 1, 1]))
    out["GaussBM"] = [*bm.query_all().tolist(), *bm.variance().tolist(), float(bm.memory_bytes)]
    trackers = {
        "LazyHH": LazyHH(k=5, k_tilde=10, epsilon=1.0, delta=0.01, beta=0.005, horizon=3000, seed=5),
        "PunctualHH": PunctualHH(k=5, universe_size=400, width=10, epsilon=1.0, delta=0.01, horizon=3000, seed=5),
        "CMSHeap": CMSHeap(k=5, width=50, depth=3, horizon=3000, seed=5),
    }
    for name, tracker in trackers.items():
        tracker.extend(stream)
        reported = [float(v) for pair in tracker.estimate().pairs() for v in pair]
        out[name] = [*reported, *tracker.candidates.astype(float).tolist(), float(tracker.memory_bytes)]
    return out


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(outputs(), indent=0) + "\n")
    sys.stdout.write(f"wrote {GOLDEN}\n")
