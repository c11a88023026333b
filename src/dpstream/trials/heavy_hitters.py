"""One heavy-hitter trial (Holland, Sec. 6.5, Figure 4): a tracker (LazyHH or a baseline) on a trace.

Builds the trace (``data`` config) and the tracker (``mechanism`` config, mechanism seed), feeds the
trace in blocks (only the tracker's ``extend`` calls are timed) and measures precision, recall and ARE
of the reported set (``heavy_hitters.metrics``, true heavy hitters = items with f >= t/k in the prefix
x_1..x_t):

- at the last output step (``precision``, ``recall``, ``are``: the paper's metrics);
- under continual observation, at the output step at or before each release time
  (``dpstream.metrics.release_times``; the output there is the set the tracker holds at that time):
  ``precision_mean_t``, ``recall_mean_t``, ``are_mean_t`` over those steps, ``n_release_times`` of them;
- with ``mechanism.metrics_every_output: true``, at every output step too (``*_steps_mean`` /
  ``*_steps_min``).

Precision with nothing reported and recall with no true heavy hitter are NaN (``pr_undefined`` says which).
A file source (``data=caida``, ``data=items``) adds the rows it read and skipped (``rows_read``, ``rows_skipped``).
A generated stream draws from the trial's data seed and is identified by ``trace_xxh3`` (its content hash), so a table
shows which trials shared a trace: the unit of replication of Figure 4 is the trace.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import xxhash

from dpstream.data.stream import load_stream
from dpstream.heavy_hitters import CMSHeap, LazyHH, PunctualHH
from dpstream.heavy_hitters.metrics import BlockPrefixCounts, evaluate_prefix, summarise_release_times, summarise_steps
from dpstream.metrics import DEFAULT_RELEASE_TIMES, release_times
from dpstream.noise import children
from dpstream.privacy.heavy_hitters import check_final_delta
from dpstream.privacy.statement import labels, stated
from dpstream.trials import build, row_columns, timing

OWN_KEYS = ("metrics_every_output", timing.TIMING_KEY)
"""Mechanism keys this trial reads itself; every other one is a constructor argument of the tracker."""
TRACKERS = (LazyHH, CMSHeap, PunctualHH)
"""Trackers swept together (fig4: ``mechanism.k_tilde`` zipped with ``memory_kb`` over LazyHH and CMSHeap): a key one
of them takes is left out of the others (``build.factory`` siblings); a key none takes is an error."""


FEED_BLOCK = 1 << 22
"""Largest block fed at once (items), bounding the int64 copy of a memory-mapped trace."""

TRACE_SEED = 0
"""The data seed of ``load_trace`` called without one (a stream looked at outside a trial).

A trial (and the command line's replay of it, ``harness.console.replay_reported``) passes its own data seed
instead: a real trace and ``caida_like`` with a fixed ``trace_seed`` ignore it (one trace in every trial, like the
paper's), while ``caida_like`` with ``trace_seed: null``, zipf and wordfreq's order draw one stream per trial."""


def load_trace(data: dict[str, Any], data_dir: str | None,
               seed: np.random.SeedSequence | None = None) -> tuple[np.ndarray, dict[str, int]]:
    """The data config's stream and the rows a file source read and skipped.

    Loaded by ``dpstream.data.stream.load_stream`` with ``seed`` (default: the fixed ``TRACE_SEED``).
    """
    return load_stream(data, seed if seed is not None else np.random.SeedSequence(TRACE_SEED), data_dir)


def trace_hash(stream: np.ndarray, read: dict[str, int]) -> str:
    """The xxh3-64 hex digest of a generated stream's items (in blocks); "" for a file source (its file is hashed).

    Equal digests mean the same trace, so a table shows its unit of replication.
    """
    if read:
        return ""
    digest = xxhash.xxh3_64()
    for start in range(0, stream.size, FEED_BLOCK):
        digest.update(np.ascontiguousarray(stream[start:start + FEED_BLOCK]).tobytes())
    return digest.hexdigest()


def make_tracker(params: dict[str, Any], horizon: int, seed: np.random.SeedSequence) -> Any:
    """The configured tracker (``build.factory``).

    It gets the top-level keys its config ``uses`` (epsilon, delta, width, depth, memory_kb) unless its own config
    sets them. A LazyHH whose delta~ is >= 1 (no guarantee: ``check_final_delta``) is refused, not run uncertified.
    """
    make = build.factory(params["mechanism"], OWN_KEYS, siblings=TRACKERS)
    tracker = build.call(make, **build.shared(params), horizon=horizon, seed=seed)
    if isinstance(tracker, LazyHH):
        check_final_delta(tracker.epsilon, tracker.delta)
    return tracker


def _feed(tracker: Any, stream: np.ndarray, stops: np.ndarray,
          prefix: BlockPrefixCounts) -> tuple[float, dict[int, dict]]:
    """Feed ``stream`` in blocks ending at the increasing ``stops`` (the last = its length), at most ``FEED_BLOCK``.

    At each stop that is an output step, take the metrics of the output there, keyed by t. Only ``extend`` is timed.
    A block is converted to int64 on its own, so a memory-mapped trace is never copied whole.
    """
    seconds, done, rows = 0.0, 0, {}
    stops = np.union1d(stops, np.arange(FEED_BLOCK, int(stops[-1]), FEED_BLOCK))
    for stop in stops:
        block = np.asarray(stream[done:stop], dtype=np.int64)
        start = time.perf_counter()
        tracker.extend(block)
        seconds += time.perf_counter() - start
        prefix.advance(block)
        done = int(stop)
        if tracker.estimate().time == tracker.t > 0:
            rows[tracker.t] = prefix.evaluate(tracker.estimate())
    return seconds, rows


@row_columns("precision", "recall", "are", "n_reported", "n_reported_unseen", "n_true", "output_time",
             "pr_undefined", "precision_mean_t", "recall_mean_t", "are_mean_t", "n_release_times", "steps",
             "*_steps_mean", "*_steps_min", "length", "sketch_width", "sketch_depth", "output_period",
             "memory_bytes", "seconds", "us_per_update", "gamma", "delta_tilde", "tau_final", "rows_read",
             "rows_skipped", "private", "certified", "deployable", "trace_xxh3", *timing.COLUMNS)
def run_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> dict[str, Any]:
    """One Figure 4 trial: the tracker on the fixed trace, scored at the release times (module docstring)."""
    data_seed, mech_seed = children(seed, 2)  # fixed order (docs/harness.md)
    stream, read = load_trace(params["data"], params.get("data_dir"), data_seed)  # a memory map, fed block by block
    warm = make_tracker(params, stream.size, mech_seed)  # compile / load kernels outside the timing
    warm.extend(np.asarray(stream[:min(stream.size, 2 * warm.period)], dtype=np.int64))
    tracker = make_tracker(params, stream.size, mech_seed)
    k, period = tracker.k, tracker.period
    times = release_times(stream.size, params.get("release_times", DEFAULT_RELEASE_TIMES))
    at_release = np.unique(times // period * period)
    at_release = at_release[at_release > 0]  # the output step at or before each release time
    stops = np.union1d(at_release, [stream.size])
    per_step = bool(params["mechanism"].get("metrics_every_output", False))
    if per_step:
        stops = np.union1d(stops, np.arange(period, stream.size + 1, period))
    seconds, rows = _feed(tracker, stream, stops, BlockPrefixCounts(k))
    reported = tracker.estimate()
    row: dict[str, Any] = dict(rows[reported.time]) if reported.time else evaluate_prefix(reported, stream, k)
    row.update(summarise_release_times([rows[int(t)] for t in at_release]))
    row.update(summarise_steps(list(rows.values())) if per_step else {})
    row.update({
        "length": int(stream.size),
        "sketch_width": int(tracker.sketch.width),
        "sketch_depth": int(tracker.sketch.depth),
        "output_period": int(tracker.period),
        "memory_bytes": int(tracker.memory_bytes),
        "seconds": seconds,
        "us_per_update": seconds / stream.size * 1e6,
        **labels(tracker),  # from the tracker itself; seeded trials are never deployable (docs/secure-noise.md)
        **stated(tracker),  # its (epsilon, delta~), for the privacy ledger (not a row column)
        "trace_xxh3": trace_hash(stream, read),
        **read,
        **timing.interleaved_columns(params, lambda p: make_tracker(p, stream.size, mech_seed), stream, OWN_KEYS),
    })
    for name in ("gamma", "delta_tilde"):  # LazyHH's calibration, recorded with its results
        if hasattr(tracker, name):
            row[name] = float(getattr(tracker, name))
    if hasattr(tracker, "thresholds") and reported.time > 0:
        row["tau_final"] = float(tracker.thresholds(reported.time).tau)
    return row
