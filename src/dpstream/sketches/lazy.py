"""LazySketch (Holland, Alg. 5): exact pending counts P pushed one column per step into counter cells."""

from __future__ import annotations

import numpy as np

from dpstream.counters import CounterDescriptor
from dpstream.sketches import _kernels as kernels
from dpstream.sketches.core import COUNT_MIN, COUNT_SKETCH, PrivateSchedule, SketchCore

ITEMS_PER_BLOCK = 1 << 16
"""Items per kernel call (at most d noises each for the binary tree): bounds the noise buffer."""
_NO_NOISE = np.empty(0, dtype=np.float64)  # the kernels' noise argument when nothing is drawn (never written)


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
        counter: CounterDescriptor,
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


class LazyCS(SketchCore):
    """LazySketch with Count-Sketch rows (Holland, Alg. 5, queried with Alg. 4).

    Privacy: (epsilon, delta)-DP under continual observation for replace-one neighbouring streams
    (Thm 2, corrected): each cell is GaussBM(ceil(horizon / w), epsilon, delta, m=4d), NOT the paper's m = 2d:
    when x and its replacement x' share a cell of a row with opposite signs, that cell's push moves by 2,
    a squared L2 change of 4 per row (erratum, ``calibration.cell_neighbour_m``).
    """

    _estimator = COUNT_SKETCH
    _schedule = LazySchedule
