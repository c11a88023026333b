"""One frequency-estimation trial of a sketch on a stream (Holland, Sec. 6, Figure 3).

Builds the stream (data seed) and the sketch (mechanism seed) and feeds the stream in chunks ending
at the release times (``dpstream.metrics.release_times``, T the last). At each release time t it
queries the top-15 items of the prefix x_1..x_t and takes their ARE against the exact prefix counts:
``are_top15`` is the ARE at T (the paper's metric), ``are_top15_mean_t`` / ``are_top15_max_t`` its
mean / max over the release times (continual observation). Only the ``extend`` calls are timed; with a timing
spec the row also gets interleaved A/B ratios against a reference configuration (``dpstream.trials.timing``).
A file source (``data=caida``, ``data=items``) adds the rows it read and skipped (``rows_read``, ``rows_skipped``).
"""

from __future__ import annotations

import functools
import time
from typing import Any, cast

import numpy as np

from dpstream.data.stream import load_stream
from dpstream.metrics import BLOCK, DEFAULT_RELEASE_TIMES, average_relative_error, prefix_top_k, release_times
from dpstream.noise import children
from dpstream.privacy.statement import labels, stated
from dpstream.sketches.core import SketchCore
from dpstream.trials import build, row_columns, timing

TOP_K = 15


OWN_KEYS = ("memory_model", timing.TIMING_KEY)
"""Mechanism keys this trial reads itself: the memory model that turns ``memory_kb`` into a width (default
``default_memory_model``: the paper's for the paper's cells, ``actual`` for any other counter or node noise, which
the paper's model does not describe) and the interleaved timing spec (``dpstream.trials.timing``). Every other
mechanism key is a constructor argument of the sketch (``build.factory``), e.g. its variant ``counter / node_noise /
calibration / hash_family`` (``sketches.core.Variant``)."""


def default_memory_model(mechanism: dict[str, Any]) -> str:
    """``paper`` for the paper's cells (a binary tree with stored nodes), ``actual`` for any other counter or noise."""
    paper = mechanism.get("counter", "binary") == "binary" and mechanism.get("node_noise", "stored") == "stored"
    return "paper" if paper else "actual"


def make_sketch(params: dict[str, Any], horizon: int, seed: np.random.SeedSequence) -> Any:
    """The configured sketch (``build.factory``).

    Sized by ``memory_kb`` through ``from_memory`` (memory model ``mechanism.memory_model``) when set, else by
    ``width``.
    """
    make, size = build.factory(params["mechanism"], OWN_KEYS), build.shared(params)
    kilobytes = size.pop("memory_kb", None)
    if kilobytes is not None:
        size.pop("width", None)
        model = params["mechanism"].get("memory_model", default_memory_model(params["mechanism"]))
        sketch_class = cast(type[SketchCore], make.func)
        make = functools.partial(sketch_class.from_memory, **make.keywords, kilobytes=kilobytes, model=model)
    return build.call(make, **size, horizon=horizon, seed=seed)


def _warm_up(cls: type) -> None:
    """Compile (or load from cache) the sketch's kernels outside the timed region."""
    cls(width=2, depth=1, epsilon=1.0, delta=0.5, horizon=8, seed=0).extend(np.arange(4, dtype=np.int64))


@row_columns("sketch_width", "sketch_depth", "length", "memory_bytes", "are_top15", "are_top15_mean_t",
             "are_top15_max_t", "n_release_times", "seconds", "updates_per_s", "rows_read", "rows_skipped",
             "private", "certified", "deployable", *timing.COLUMNS)
def run_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> dict[str, Any]:
    """One Figure 3 trial: the sketch on the data seed's stream, ARE of the top-15 at the release times."""
    data_seed, mech_seed = children(seed, 2)
    stream, read = load_stream(params["data"], data_seed, params.get("data_dir"))  # read: rows of a file source
    sketch = make_sketch(params, len(stream), mech_seed)
    _warm_up(type(sketch))
    times = release_times(len(stream), params.get("release_times", DEFAULT_RELEASE_TIMES))
    seconds, done, ares = 0.0, 0, []
    for t, (items, counts) in zip(times, prefix_top_k(stream, TOP_K, times), strict=True):
        for block in range(done, int(t), BLOCK):  # a memory-mapped trace is fed a block at a time, never copied whole
            start = time.perf_counter()
            sketch.extend(stream[block:min(block + BLOCK, int(t))])
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
        **labels(sketch),  # from the sketch itself; seeded trials are never deployable (docs/secure-noise.md)
        **stated(sketch),  # its (epsilon, delta), for the privacy ledger (not a row column)
        **read,
        **timing.interleaved_columns(params, lambda p: make_sketch(p, len(stream), mech_seed), stream, OWN_KEYS),
    }
