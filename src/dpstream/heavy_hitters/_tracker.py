"""The shared core of every heavy-hitter tracker here.

A frequency sketch, a candidate set and an output refreshed every ``period`` updates and held in between.

One code path processes the stream in blocks aligned to the refresh points (``sketch.extend`` on each
block, compiled), so the Python loop runs over BLOCKS, never over items. At a refresh point t:
candidates = unique(C u block items) (or a fixed universe), estimates = ``sketch.query_many``,
reported = candidates whose estimate passes the variant's threshold at t, and C keeps the top
``capacity`` candidates by estimate. Variants (``LazyHH``, ``CMSHeap``, ``PunctualHH``) supply the
sketch, the period, the capacity and the threshold.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple, Self

import numpy as np

from dpstream import serial
from dpstream.hashing import canonical_int64, canonical_keys
from dpstream.heavy_hitters import _lazy_hh, _line_rate
from dpstream.intervals import Interval, clipped
from dpstream.noise import noise_mode
from dpstream.privacy.statement import Certified
from dpstream.validation import check_positive_int


class HeavyHitters(NamedTuple):
    """The reported set at the last output step: aligned arrays of items and their estimates."""

    items: np.ndarray  # int64
    estimates: np.ndarray  # float64
    time: int  # the output step t at which this set was computed (0 before the first one)

    def pairs(self) -> list[tuple[int, float]]:
        """The (item, estimate) pairs, largest estimate first."""
        order = np.argsort(-self.estimates, kind="stable")
        return [(int(self.items[i]), float(self.estimates[i])) for i in order]


def as_items(items: Any) -> np.ndarray:
    """Stream items as their canonical keys (``hashing.canonical_key``, < 2^61): a 1-D int64 array.

    The keys are what the sketches count, so the candidates, the reported items and the queries are keys: an integer
    in [0, p) (an IPv4 address, a Zipf rank) is its own key; any other integer, str or bytes item is reported by its
    key. The output is then a function of the stream of keys, whose neighbours differ in one key: an item outside
    [0, p) whose key equals a heavy item's merges with that item instead of being reported under its own name. A
    tracker accepts what ``LazyCMS.extend`` accepts.
    """
    return canonical_int64(int64_items(items))


def int64_items(items: Any) -> np.ndarray:
    """Stream items as a 1-D int64 array, integers as given (two's complement), str / bytes as their canonical key."""
    arr = np.asarray(items)
    if arr.ndim == 1 and arr.dtype.kind in "USO" and arr.size:
        return canonical_keys(arr).astype(np.int64)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise ValueError(f"items must be a 1-D array of integers, str or bytes, got shape {arr.shape} "
                         f"dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` for a small int64 array, ~3x faster (in place sort + neighbour compare)."""
    values.sort()
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if values.size else values


class BlockTracker(Certified, serial.Serialisable):
    """Base class: feeds ``sketch`` and refreshes the output every ``period`` updates (see module doc).

    ``to_bytes`` / ``from_bytes`` save and restore the exact state, the sketch's included (SECRET, see
    ``serial.Serialisable.to_bytes``); a variant supplies its constructor arguments (``_serial_args``).
    """

    _repr_attrs: ClassVar[dict[str, str]] = {"width": "sketch.width", "depth": "sketch.depth"}
    _OWN_ARRAYS = {"candidates": np.int64, "pending": np.int64, "output_items": np.int64,
                   "output_estimates": np.float64}

    def __init__(self, sketch: Any, period: int, horizon: int, capacity: int | None,
                 universe: np.ndarray | None = None) -> None:
        self.period = check_positive_int(period, "period")
        self.horizon = check_positive_int(horizon, "horizon")
        self._sketch = sketch
        self._capacity = capacity
        self._universe = universe
        self._candidates = np.empty(0, dtype=np.int64)
        self._pending: list[np.ndarray] = []
        self._t = 0
        self._since_refresh = 0
        self._output = HeavyHitters(np.empty(0, np.int64), np.empty(0, np.float64), 0)
        self._suffix: _line_rate.SuffixSums | None = None  # the line-rate kernel's sums (``LazyHH.use_line_rate``)

    # -- variant hooks -------------------------------------------------------------------------------
    def _reported_mask(self, estimates: np.ndarray, t: int) -> np.ndarray:
        raise NotImplementedError

    def _sketch_time(self, t: int) -> int:
        """The sketch's clock after t updates (its ``t``; a variant whose sketch steps slower says so)."""
        return t

    def _thresholds_many(self, times: np.ndarray) -> np.ndarray | None:
        """Tau at the output steps ``times`` if the variant reports estimates > tau (compiled refreshes), or None."""
        return None

    # -- public API ----------------------------------------------------------------------------------
    @property
    def t(self) -> int:
        """Number of updates processed so far."""
        return self._t

    @property
    def sketch(self) -> Any:
        """The frequency sketch the tracker feeds."""
        return self._sketch

    def update(self, x: int) -> None:
        """Process one stream item (same state as ``extend`` with a one-item array)."""
        self.extend(np.array([x]))

    def extend(self, items: Any) -> None:
        """Process ``items`` in order; one sketch ``extend`` per block between refresh points."""
        items = as_items(items)
        if self._t + items.size > self.horizon:
            raise ValueError(f"stream longer than horizon={self.horizon}: {self._t} items seen, "
                             f"{items.size} more given; set horizon to the stream length T = |X|")
        compiled = self._universe is None and self._capacity is not None and _lazy_hh.compiled(self._sketch)
        pos = 0
        while pos < items.size:
            if compiled and self._since_refresh == 0:
                done = self._refreshes(items[pos:])
                compiled = done > 0
                pos += done
                if pos == items.size:
                    break
            block = items[pos:pos + self.period - self._since_refresh]
            self._sketch.extend(block)
            if self._universe is None:
                self._pending.append(block.copy())  # ``items`` may be the caller's memory, reused after we return
            pos += block.size
            self._t += block.size
            self._since_refresh += block.size
            if self._since_refresh == self.period:
                self._refresh()

    def _refreshes(self, items: np.ndarray) -> int:
        """Whole periods of ``items`` through the compiled refreshes (``_lazy_hh.refreshes``): items consumed.

        0 when there is no whole period or the sketch or the variant has no compiled path.
        """
        periods = items.size // self.period  # the line-rate kernel draws no noise buffer: no bound on the block
        if self._suffix is None:
            periods = min(periods, max(1, _lazy_hh.REFRESH_ITEMS // self.period))
        times = self._t + self.period * np.arange(1, periods + 1)
        taus = self._thresholds_many(times) if periods else None
        if taus is None or self._capacity is None:
            return 0
        whole = periods * self.period
        result = None
        if self._suffix is not None:
            result = _line_rate.line_rate_refreshes(self._sketch, items[:whole], taus, self._capacity,
                                                  self._candidates, self._suffix)
        if result is None:
            result = _lazy_hh.refreshes(self._sketch, items[:whole], self.period, taus, self._capacity,
                                        self._candidates)
        if result is None:
            return 0
        self._t += whole
        self._candidates = result.candidates
        self._output = HeavyHitters(result.items, result.estimates, self._t)
        return whole

    def carry(self, candidates: np.ndarray) -> None:
        """Start from public ``candidates`` (e.g. items released earlier) as C; only before the first update.

        C is never released, and items chosen without reading the stream change no neighbour's output distribution.
        """
        if self._t or self._universe is not None:
            raise ValueError("carry() sets the candidate set C of a fresh tracker that keeps one; this one has "
                             f"t={self._t} or a fixed universe")
        keys = sorted_unique(as_items(candidates).copy())
        if self._capacity is not None and keys.size > self._capacity:
            raise ValueError(f"candidates must number at most {self._capacity}, got {keys.size}")
        self._candidates = keys

    def merge(self, other: BlockTracker) -> BlockTracker:
        """Not defined: the reported set depends on the order of the whole stream (block refreshes, evictions)."""
        raise ValueError(f"cannot merge two {type(self).__name__} trackers: their reports depend on the order of the "
                         f"whole stream (block refreshes and evictions), not on a sum of two states")

    def estimate(self) -> HeavyHitters:
        """The current output: the set computed at the last refresh point (held in between)."""
        return self._output

    def query_many(self, xs: Any, *, clip: bool = False) -> np.ndarray:
        """The estimates the current output holds for ``xs``: NaN for an item it does not report.

        Read from the output alone (post-processing of what the tracker releases). ``clip``: each estimate clipped
        to [0, t] at the output step t (the range of a count).
        """
        keys, out = as_items(xs), self._output
        order = np.argsort(out.items, kind="stable")
        at = np.minimum(np.searchsorted(out.items, keys, sorter=order), max(out.items.size - 1, 0))
        found = out.items[order[at]] == keys if out.items.size else np.zeros(keys.size, dtype=bool)
        estimates = np.where(found, out.estimates[order[at]] if out.items.size else 0.0, np.nan)
        return np.clip(estimates, 0, out.time) if clip else estimates

    def query(self, x: int, *, clip: bool = False) -> float:
        """The estimate the current output holds for ``x`` (NaN when not reported), as ``query_many``."""
        return float(self.query_many(np.array([x]), clip=clip)[0])

    def query_interval_many(self, xs: Any, confidence: float = 0.95, *, clip: bool = False) -> Interval:
        """The output's estimates of ``xs`` with intervals covering the noise (NaN for items not reported).

        The sketch's interval (``SketchCore.query_interval_many``) for its release at the output step: with
        probability at least ``confidence`` it holds what the sketch would have answered there without its noise.
        The reported items were chosen for their estimates (above the threshold), so per-item intervals undercover
        them; ``docs/guide/api.md`` says how to cover every candidate. ``clip``: clipped to [0, t] at the output step.
        """
        keys, out = as_items(xs), self._output
        estimates = self.query_many(keys)
        half = self._sketch._halfwidths(canonical_keys(keys), confidence, self._sketch_time(out.time))
        interval = Interval(estimates, estimates - half, estimates + half)
        return clipped(interval, 0, out.time) if clip else interval

    def query_interval(self, x: int, confidence: float = 0.95, *, clip: bool = False) -> Interval:
        """One item's reported estimate and interval (floats), as ``query_interval_many``."""
        many = self.query_interval_many(np.array([x]), confidence, clip=clip)
        return Interval(*(float(np.asarray(v)[0]) for v in many))

    @property
    def candidates(self) -> np.ndarray:
        """The candidate set C kept after the last refresh (the universe for ``PunctualHH``)."""
        return self._universe if self._universe is not None else self._candidates

    @property
    def memory_bytes(self) -> int:
        """Sketch memory plus the candidate and output arrays (pending block items counted too)."""
        pending = sum(b.nbytes for b in self._pending)
        out = self._output.items.nbytes + self._output.estimates.nbytes
        return int(self._sketch.memory_bytes) + int(self.candidates.nbytes) + pending + out

    # -- the refresh step ----------------------------------------------------------------------------
    def _refresh(self) -> None:
        t = self._t
        if self._universe is not None:
            cand = self._universe
        else:
            cand = sorted_unique(np.concatenate([self._candidates, *self._pending]))
        estimates = np.asarray(self._sketch.query_many(cand), dtype=np.float64)
        mask = self._reported_mask(estimates, t)
        self._output = HeavyHitters(cand[mask], estimates[mask], t)
        if self._universe is None:
            if self._capacity is not None and cand.size > self._capacity:
                cand = _lazy_hh.keep_top(cand, estimates, self._capacity)
            self._candidates = cand
            self._pending = []
        self._since_refresh = 0

    # -- serialisation hooks (``dpstream.serial``) -----------------------------------------------------------
    @classmethod
    def _rebuild(cls, args: dict[str, Any]) -> Self:
        with noise_mode("numpy"):  # the sketch's stored noise mode is restored with its generator state
            return cls(**args)

    def _state_scalars(self) -> dict[str, Any]:
        return {"t": self._t, "since_refresh": self._since_refresh, "output_time": self._output.time,
                "sketch_args": self._sketch._serial_args(), "sketch": self._sketch._state_scalars()}

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        serial.check_same("the sketch's arguments", dict(scalars["sketch_args"]), self._sketch._serial_args())
        self._sketch._restored()  # never deployable once restored (unverifiable: docs/secure-noise.md)
        self._sketch._restore_scalars(scalars["sketch"])
        t = serial.int_in(scalars["t"], "t", 0, self.horizon)
        since = serial.int_in(scalars["since_refresh"], "since_refresh", 0, self.period - 1)
        output_time = serial.int_in(scalars["output_time"], "output_time", 0, t)
        if t != self._sketch.t or since != t % self.period or output_time != t - since:
            raise serial.SerialError(f"corrupt state: t={t}, since_refresh={since}, output_time={output_time} with "
                                     f"the sketch at t={self._sketch.t} and period={self.period}")
        self._t, self._since_refresh = t, since
        self._output = HeavyHitters(self._output.items, self._output.estimates, output_time)

    def _state_arrays(self) -> dict[str, np.ndarray]:
        pending = np.concatenate(self._pending) if self._pending else np.empty(0, np.int64)
        return {"candidates": self._candidates, "pending": pending, "output_items": self._output.items,
                "output_estimates": self._output.estimates, **serial.nest("sketch", self._sketch._state_arrays())}

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self._sketch._restore_arrays(serial.part("sketch", arrays))
        own = {k: v for k, v in arrays.items() if not k.startswith("sketch.")}
        serial.check_vectors(own, self._OWN_ARRAYS, type(self).__name__)
        pending = 0 if self._universe is not None else self._since_refresh
        capacity = own["candidates"].size if self._capacity is None or self._universe is not None else self._capacity
        if (own["output_items"].size != own["output_estimates"].size or own["pending"].size != pending
                or own["candidates"].size > capacity):
            raise serial.SerialError(f"corrupt state: {own['output_items'].size} output items with "
                                     f"{own['output_estimates'].size} estimates, {own['pending'].size} pending items "
                                     f"(expected {pending}), {own['candidates'].size} candidates (at most {capacity})")
        # a state saved when integers outside [0, p) were kept raw: its candidates and pending items become keys
        candidates, waiting = canonical_int64(own["candidates"]), canonical_int64(own["pending"])
        self._candidates = candidates if candidates is own["candidates"] else sorted_unique(candidates.copy())
        self._pending = [waiting] if waiting.size else []
        self._output = HeavyHitters(own["output_items"], own["output_estimates"], self._output.time)
