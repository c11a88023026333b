"""PunctualSketch (Holland, Alg. 3; Epasto et al. 2023): every cell is a counter (GaussBM) stepped at every item."""

from __future__ import annotations

import numpy as np

from dpstream.sketches import _kernels as kernels
from dpstream.sketches.core import COUNT_MIN, COUNT_SKETCH, PrivateSchedule, SketchCore

NOISE_BLOCK = 1 << 18
"""Noises drawn per kernel call: bounds the noise buffer to 2 MB whatever the stream length."""


class PunctualSchedule(PrivateSchedule):
    """O[i][j] = a counter over ``horizon`` steps for all d x w cells (GaussBM by default; m = 2d CMS, 4d CS).

    Theta(d w) work per item with stored nodes; O(d) with derived ones, whose zero pushes change nothing.
    """

    kind = "punctual"

    def cell_horizon(self) -> int:
        """``horizon``: every cell steps at every item."""
        return self.horizon

    def cell_steps(self, t: int | None = None) -> np.ndarray:
        """The item count t (default: now), for every cell."""
        return np.full(self.depth * self.width, self.t if t is None else t, dtype=np.int64)

    def extend(self, keys: np.ndarray, params: np.ndarray, t0: int) -> None:
        """Alg. 3 over ``keys`` (``_kernels.punctual_extend``), noise pre-drawn in blocks of ``NOISE_BLOCK``."""
        cells = self.counters
        draws = cells.n * cells.draws_per_push
        per_block = max(1, NOISE_BLOCK // draws) if draws else max(1, keys.shape[0])
        for start in range(0, keys.shape[0], per_block):
            block = keys[start : start + per_block]
            steps = t0 + start + 1 + np.arange(block.shape[0])
            noise = cells.draw(cells.noise_count(steps) * cells.n)
            loop = kernels.punctual_extend(cells.kind, cells.push_kernel)
            loop(block, params, self.signed, cells.sparse_pushes, t0 + start, noise, *cells.state)
        self.t = t0 + keys.shape[0]
        cells.record_steps(self.cell_steps())


class PunctualCMS(SketchCore):
    """PunctualSketch with Count-Min rows (Holland, Alg. 3 and Alg. 4; Epasto et al. 2023).

    Privacy: (epsilon, delta)-DP under continual observation for replace-one neighbouring streams: a
    replaced item changes the increments of at most 2d cells by 1, so the d*w cell streams are
    2d-neighbouring and every cell is GaussBM(horizon, epsilon, delta, m=2d) (Thm 1; Sec. 4.1).
    """

    _estimator = COUNT_MIN
    _schedule = PunctualSchedule


class PunctualCS(SketchCore):
    """PunctualSketch with Count-Sketch rows (Holland, Alg. 3 and Alg. 4; Epasto et al. 2023).

    Privacy: (epsilon, delta)-DP under continual observation for replace-one neighbouring streams;
    each cell is GaussBM(horizon, epsilon, delta, m=4d) (Thm 1; Sec. 4.1), NOT the paper's m = 2d: when x and
    its replacement x' share a cell of a row with opposite signs that cell moves by 2, a squared L2 change
    of 4 per row (erratum, ``calibration.cell_neighbour_m``).
    """

    _estimator = COUNT_SKETCH
    _schedule = PunctualSchedule
