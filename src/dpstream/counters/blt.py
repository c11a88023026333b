"""The buffered-linear-Toeplitz counter (Dvijotham et al. FOCS 2024; McMahan et al. 2024; the math in ``blt_params``).

It releases exact prefix sum + sigma (A C^{-1} z)_s, the noise generated online by Alg. 3 of arXiv 2408.08868 from k
buffers per counter. sigma is calibrated for L2 sensitivity sqrt(m) ||C e_1||_2 (the
largest column norm of C over the horizon), the parameters optimised for the horizon (cached).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from scipy.signal import lfilter

from dpstream.counters import _kernels as kernels
from dpstream.counters import blt_params as blt
from dpstream.counters.base import NOISE_BYTES, Counter
from dpstream.counters.factorisation import BLT, Factorisation

BUFFERS = 4
"""Buffers per counter (the issue's 3-5; ``benchmarks/counters_variance.py`` compares 3, 4 and 5)."""


def toeplitz_images(increments: np.ndarray, steps: np.ndarray, params: blt.BLTParams) -> np.ndarray:
    """C x of each counter's increments (the vector the BLT counter's Gaussian noise protects).

    Steps after each counter's own step are zeroed: (C x)_s = sum_{u <= s} c_{s-u} x_u.
    """
    horizon = increments.shape[1]
    images = lfilter(blt.toeplitz_coefs(params, horizon), [1.0], increments.astype(np.float64), axis=1)
    images[np.arange(horizon)[None, :] >= np.asarray(steps)[:, None]] = 0.0
    return images.reshape(1, -1)



class BLTState(NamedTuple):
    """Exact counts (1, n), the k buffers and the running noise total (k + 1, n), and coef = (theta; omega), (2, k).

    ``coef`` is a constant of the horizon (``_constants``), read by the push, never written.
    """

    exact: np.ndarray
    buffers: np.ndarray
    coef: np.ndarray


class BLTCounter(Counter):
    """Exact count plus k buffers and a running noise total per counter; one noise per push, O(k) work.

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring counter arrays (at most m counters
    change, each by at most 1 at one step), by the Gaussian mechanism on C x with L2 sensitivity sqrt(m) ||C e_1||
    (``l2_sensitivity``) followed by the post-processing A C^{-1} (module docstring of ``blt_params``).
    """

    name = "blt"
    kind = kernels.BLT
    tracks_steps = False
    draws_per_push = 1

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt(m) times the largest column norm of C for the horizon's optimised parameters."""
        return math.sqrt(m) * blt.column_norm(blt.optimal_blt(max(2, horizon), BUFFERS))

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """The exact count, k buffers and the running noise total."""
        return count_bytes + NOISE_BYTES * (BUFFERS + 1)

    @classmethod
    def working_bytes(cls, horizon: int) -> int:
        """The (T, k) float64 tables of the calibration (``blt.column_norm``) and variances, with temporaries."""
        return 16 * (BUFFERS + 2) * horizon

    def _allocate(self) -> None:
        self.params = blt.optimal_blt(max(2, self.horizon), BUFFERS)
        self._exact: np.ndarray = np.zeros((1, self.n), dtype=self.count_dtype)
        self._state = np.zeros((BUFFERS + 1, self.n), dtype=np.float64)
        self._coef = np.vstack((self.params.buf_decay, self.params.output_scale)).astype(np.float64)
        self.state = BLTState(self._exact, self._state, self._coef)

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The exact counts and buffers (``coef`` is a constant, checked through ``_constants``)."""
        return {"exact": self._exact, "buffers": self._state, "steps": self._steps}

    def noise_count(self, steps: np.ndarray) -> int:
        """One noise per push."""
        return int(np.size(steps))

    def _constants(self) -> dict[str, Any]:
        return {**super()._constants(), "coef": self._coef.tolist()}

    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact count plus the running noise total of each cell (``steps`` unused)."""
        return self._exact[0, cells] + self._state[BUFFERS, cells]

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """C x, the vector the Gaussian noise is added to before the post-processing A C^{-1} (``toeplitz_images``)."""
        return toeplitz_images(increments, steps, self.params)

    def factorisation(self) -> Factorisation:
        """The BLT of ``params``: variance sigma^2 times ``blt.noise_variance`` at each step; 0 at step 0."""
        return BLT(self.horizon, self.params)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the exact counts, buffers and noise totals."""
        return self._exact.nbytes + self._state.nbytes
