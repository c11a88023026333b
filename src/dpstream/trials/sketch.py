"""One frequency-estimation trial of a sketch on a stream (seed 004, Sec. 6, Figure 3).

Builds the stream (data seed) and the sketch (mechanism seed) and feeds the stream in chunks ending
at the release times (``dpstream.metrics.release_times``, T the last). At each release time t it
queries the top-15 items of the prefix x_1..x_t and takes their ARE against the exact prefix counts:
``are_top15`` is the ARE at T (the paper's metric), ``are_top15_mean_t`` / ``are_top15_max_t`` its
mean / max over the release times (continual observation). Only the ``extend`` calls are timed.
A file source (``data=caida``, ``data=items``) adds the rows it read and skipped (``rows_read``, ``rows_skipped``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from hydra.utils import get_class

from dpstream.data.stream import load_stream
from dpstream.metrics import DEFAULT_RELEASE_TIMES, average_relative_error, prefix_top_k, release_times
from dpstream.noise import children

TOP_K = 15


VARIANT_KEYS = ("counter", "node_noise", "calibration", "hash_family")
"""Mechanism-config keys choosing a sketch's beyond-the-paper variant (``sketches.core.Variant``); absent = paper."""


def build_sketch(params: dict[str, Any], horizon: int, seed: np.random.SeedSequence) -> Any:
    """The configured sketch, sized by ``memory_kb`` (memory model ``mechanism.memory_model``, default the paper's)
    or by ``width``; ``mechanism.counter / node_noise / calibration / hash_family`` choose its variant."""
    mechanism = params["mechanism"]
    cls = get_class(mechanism["_target_"])
    common = {"depth": params["depth"], "epsilon": params["epsilon"], "delta": params["delta"],
              "horizon": horizon, "seed": seed, **{k: mechanism[k] for k in VARIANT_KEYS if k in mechanism}}
    if params.get("memory_kb") is not None:
        return cls.from_memory(kilobytes=params["memory_kb"], model=mechanism.get("memory_model", "paper"), **common)
    return cls(width=params["width"], **common)


def _warm_up(cls: type) -> None:
    """Compile (or load from cache) the sketch's kernels outside the timed region."""
    cls(width=2, depth=1, epsilon=1.0, delta=0.5, horizon=8, seed=0).extend(np.arange(4, dtype=np.int64))


def run_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> dict[str, Any]:
    data_seed, mech_seed = children(seed, 2)
    stream, read = load_stream(params["data"], data_seed, params.get("data_dir"))  # read: rows of a file source
    sketch = build_sketch(params, len(stream), mech_seed)
    _warm_up(type(sketch))
    times = release_times(len(stream), params.get("release_times", DEFAULT_RELEASE_TIMES))
    seconds, done, ares = 0.0, 0, []
    for t, (items, counts) in zip(times, prefix_top_k(stream, TOP_K, times), strict=True):
        start = time.perf_counter()
        sketch.extend(stream[done:t])
        seconds += time.perf_counter() - start
        done = t
        ares.append(average_relative_error(counts, sketch.query_many(items)))
    return {
        "sketch_width": int(sketch.width),
        "sketch_depth": int(sketch.depth),
        "length": int(len(stream)),
        "memory_bytes": int(sketch.memory_bytes),
        "are_top15": ares[-1],
        "are_top15_mean_t": float(np.mean(ares)),
        "are_top15_max_t": float(np.max(ares)),
        "n_release_times": int(times.size),
        "seconds": seconds,
        "updates_per_s": len(stream) / seconds if seconds > 0 else float("inf"),
        **read,
    }
