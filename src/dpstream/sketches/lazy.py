"""LazySketch (Holland, Alg. 5): exact pending counts P pushed one column per step into counter cells."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dpstream.counters import Counter
from dpstream.counters.binary import DerivedBinary, StoredBinary
from dpstream.hashing import canonical_keys
from dpstream.sketches import _kernels as kernels
from dpstream.sketches._lazy_hh import keep_top, lazy_hh_run
from dpstream.sketches.core import COUNT_MIN, COUNT_SKETCH, PrivateSchedule, SketchCore

ITEMS_PER_BLOCK = 1 << 16
"""Items per kernel call (at most d noises each for the binary tree): bounds the noise buffer."""
REFRESH_ITEMS = 1 << 14
"""Items per ``refreshes`` kernel call (at most d noises each): bounds the noise buffer to d * 128 KB."""
_NO_NOISE = np.empty(0, dtype=np.float64)  # the kernels' noise argument when nothing is drawn (never written)
_NO_NODES = (np.zeros(2, dtype=np.uint64), 0.0, np.empty((0, 0)), np.empty(0, dtype=np.int64))
"""The derived-node arguments of ``lazy_hh_run`` for stored nodes (unused there)."""


class Refreshes(NamedTuple):
    """What ``LazyCMS.refreshes`` leaves: the kept candidates and the last refresh's reported items and estimates."""

    candidates: np.ndarray
    items: np.ndarray
    estimates: np.ndarray


class LazySchedule(PrivateSchedule):
    """Exact pending P (never released) plus counter cells ``O[i][j]`` over ceil(horizon / w) steps each.

    The cells are GaussBM by default, m = 2d (CMS) or 4d (CS).

    O(d log(T/w)) work per item with stored nodes, O(d) with derived ones. After t items, cell column j has
    received floor(t / w) + (1 if j < t mod w else 0) pushes; a released cell lags its exact count by P[i][j].
    """

    kind = "lazy"

    def cell_horizon(self) -> int:
        """ceil(horizon / w): one push per column every w items."""
        return -(-self.horizon // self.width)

    def _allocate(
        self,
        epsilon: float | None,
        delta: float | None,
        noise_seed: np.random.SeedSequence | None,
        kappa: float,
        counter: type[Counter],
    ) -> None:
        super()._allocate(epsilon, delta, noise_seed, kappa, counter)
        self.pending = np.zeros((self.depth, self.width), dtype=self.count_dtype)

    def cell_steps(self, t: int | None = None) -> np.ndarray:
        """floor(t / w) + (1 if j < t mod w) pushes for column j, repeated over the d rows (read-only, (d w,)).

        ``t``: default now. Computed once per t: a tracker reads it at every refresh, to note the steps and to release.
        """
        t = self.t if t is None else t
        cached = getattr(self, "_steps_at", None)
        if cached is None or cached[0] != t:
            quotient, remainder = divmod(t, self.width)
            steps = np.full((self.depth, self.width), quotient, dtype=np.int64)
            steps[:, :remainder] += 1
            steps.flags.writeable = False
            cached = self._steps_at = (t, steps.reshape(-1))
        return cached[1]

    def extend(self, keys: np.ndarray, params: np.ndarray, t0: int) -> None:
        """Alg. 5 over ``keys``, ``ITEMS_PER_BLOCK`` at a time (``_kernels.lazy_extend``; noise pre-drawn per block)."""
        cells = self.counters
        loop = kernels.lazy_extend(cells.kind, cells.push_kernel)
        for start in range(0, keys.shape[0], ITEMS_PER_BLOCK):
            block = keys[start : start + ITEMS_PER_BLOCK]
            if cells.draws_per_push:
                steps = (t0 + start + np.arange(block.shape[0])) // self.width + 1
                noise = cells.draw(cells.noise_count(steps) * self.depth)
            else:  # noise derived at release time: nothing to draw
                noise = _NO_NOISE
            loop(block, params, self.signed, self.pending, t0 + start, noise, *cells.state)
        self.t = t0 + keys.shape[0]
        if cells.tracks_steps:
            cells.record_steps(self.cell_steps())

    def refreshes_compiled(self) -> bool:
        """Whether ``refreshes`` runs: Count-Min rows over the binary tree, stored (numpy noise) or derived nodes."""
        cells = self.counters
        if self.signed or type(cells) not in (StoredBinary, DerivedBinary):
            return False
        return cells.node_noise == "derived" or cells._noise.mode == "numpy"

    def refreshes(self, items: np.ndarray, params: np.ndarray, t0: int, period: int, taus: np.ndarray,
                  capacity: int, candidates: np.ndarray) -> Refreshes:
        """Whole periods of ``items`` (int64), each pushed and then refreshed (``_lazy_hh.lazy_hh_run``).

        The noise of all the periods is drawn in one call: numpy's generators give the same values drawn at once as
        drawn period by period (``refreshes_compiled`` asks for numpy noise).
        """
        cells = self.counters
        keys = canonical_keys(items)
        if cells.draws_per_push:
            steps = (t0 + np.arange(items.shape[0])) // self.width + 1
            noise, derived = cells.draw(cells.noise_count(steps) * self.depth), _NO_NODES
        else:
            cache = cells._cache()  # type: ignore[attr-defined]  # a DerivedBinary
            noise, derived = _NO_NOISE, (cells._key, cells._noise_scale, cache[1], cache[2])  # type: ignore[attr-defined]
        run = lazy_hh_run(cells.kind, None)
        done, used = 0, 0
        while True:
            first = done * period
            ran, z, candidates, estimates, out_items, out_estimates = run(
                items[first:], keys[first:], params, self.pending, t0 + first, period, noise[used:], taus[done:],
                capacity, candidates, *derived, *cells.state)
            done, used = done + ran, used + z
            if done * period == items.shape[0]:
                break
            candidates = keep_top(candidates, estimates, capacity)  # ties at the cut: numpy's choice, as the tracker
            done += 1
            if done * period == items.shape[0]:
                break
        self.t = t0 + items.shape[0]
        if cells.tracks_steps:
            cells.record_steps(self.cell_steps())
        return Refreshes(candidates, out_items, out_estimates)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the counters' state and the pending array."""
        return self.counters.memory_bytes + self.pending.nbytes

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {**super()._state_arrays(), "pending": self.pending}


class LazyCMS(SketchCore):
    """LazySketch with Count-Min rows (Holland, Alg. 5, queried with Alg. 4).

    Privacy: (epsilon, delta)-DP under continual observation for replace-one neighbouring streams
    (Thm 2): each cell ``O[i][j]`` sees a stream of ceil(horizon / w) pushes, a replaced item changes one
    push of at most 2d cells by 1 (2d-neighbouring), and every cell is
    GaussBM(ceil(horizon / w), epsilon, delta, m=2d). Only O is released; P is never read by a query.
    """

    _estimator = COUNT_MIN
    _schedule = LazySchedule

    def refreshes(self, items: np.ndarray, period: int, taus: np.ndarray, capacity: int,
                  candidates: np.ndarray) -> Refreshes | None:
        """A LazyHH tracker's pushes and refreshes over whole periods of ``items`` (int64), compiled; None if not here.

        After each period: candidates = unique(candidates u period's items), their estimates (Alg. 4), the reported
        ones (estimate > ``taus[b]``), and the ``capacity`` largest kept: the same states and outputs as ``extend``
        and ``query_many`` period by period (``heavy_hitters._tracker``). Runs for the paper's Alg. 4 estimator over
        the binary tree with stored or derived nodes (``LazySchedule.refreshes_compiled``).
        """
        state = self._state
        if (self.variant.estimator != "alg4" or not isinstance(state, LazySchedule) or not state.refreshes_compiled()
                or items.shape[0] % period or (self.t + items.shape[0]) // self.width + 1 >> state.counters.levels):
            return None
        if self.t + items.shape[0] > self.horizon:
            raise ValueError(f"stream length t={self.t + items.shape[0]} would exceed horizon={self.horizon} of this "
                             f"{type(self).__name__}")
        result = state.refreshes(items, self._params, self.t, period, taus, capacity, candidates)
        self.t = state.t
        return result


class LazyCS(SketchCore):
    """LazySketch with Count-Sketch rows (Holland, Alg. 5, queried with Alg. 4).

    Privacy: (epsilon, delta)-DP under continual observation for replace-one neighbouring streams
    (Thm 2, corrected): each cell is GaussBM(ceil(horizon / w), epsilon, delta, m=4d), NOT the paper's m = 2d:
    when x and its replacement x' share a cell of a row with opposite signs, that cell's push moves by 2,
    a squared L2 change of 4 per row (erratum, ``calibration.cell_neighbour_m``).
    """

    _estimator = COUNT_SKETCH
    _schedule = LazySchedule
