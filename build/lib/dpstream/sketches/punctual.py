"""PunctualSketch (seed 004, Alg. 3; Epasto et al. 2023): every cell is a GaussBM updated at every step."""

from __future__ import annotations

import numpy as np

from dpstream.sketches import _kernels as kernels
from dpstream.sketches.core import COUNT_MIN, COUNT_SKETCH, PrivateSchedule, SketchCore

NOISE_BLOCK = 1 << 18
"""Noises drawn per kernel call: bounds the noise buffer to 2 MB whatever the stream length."""


class PunctualSchedule(PrivateSchedule):
    """O[i][j] = GaussBM(horizon, epsilon, delta, m) for all d x w cells (m = 2d CMS, 4d CS); Theta(d w) per item."""

    kind = "punctual"

    def cell_horizon(self) -> int:
        return self.horizon

    def extend(self, keys: np.ndarray, params: np.ndarray, t0: int) -> None:
        bm = self.counters
        per_block = max(1, NOISE_BLOCK // bm.n)
        for start in range(0, keys.shape[0], per_block):
            block = keys[start : start + per_block]
            noise = bm._draw(block.shape[0] * bm.n)
            kernels.punctual_extend(block, params, self.signed, bm._exact, bm._noisy_sums, t0 + start, noise)
        bm._steps[:] = t0 + keys.shape[0]


class PunctualCMS(SketchCore):
    """PunctualSketch with Count-Min rows (seed 004, Alg. 3 and Alg. 4; Epasto et al. 2023).

    Privacy: (epsilon, delta)-DP under continual observation for replace-one neighbouring streams: a
    replaced item changes the increments of at most 2d cells by 1, so the d*w cell streams are
    2d-neighbouring and every cell is GaussBM(horizon, epsilon, delta, m=2d) (Thm 1; Sec. 4.1).
    """

    _estimator = COUNT_MIN
    _schedule = PunctualSchedule


class PunctualCS(SketchCore):
    """PunctualSketch with Count-Sketch rows (seed 004, Alg. 3 and Alg. 4; Epasto et al. 2023).

    Privacy: (epsilon, delta)-DP under continual observation for replace-one neighbouring streams;
    each cell is GaussBM(horizon, epsilon, delta, m=4d) (Thm 1; Sec. 4.1), NOT the paper's m = 2d: when x and
    its replacement x' share a cell of a row with opposite signs that cell moves by 2, a squared L2 change
    of 4 per row (erratum, ``calibration.cell_neighbour_m``).
    """

    _estimator = COUNT_SKETCH
    _schedule = PunctualSchedule
