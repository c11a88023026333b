"""The buffered-linear-Toeplitz counter (Dvijotham et al. FOCS 2024; McMahan et al. 2024; the math in ``blt_params``).

It releases exact prefix sum + sigma (A C^{-1} z)_s. sigma is calibrated for L2 sensitivity sqrt(m) ||C e_1||_2 (the
largest column norm of C over the horizon), the parameters optimised for the horizon (cached). Node noise
(``node_noise=``): stored, the noise generated online by Alg. 3 of arXiv 2408.08868 from k buffers per counter; or
derived from a key (Dvijotham, McMahan, Pillutla, Steinke, Thakurta, "Efficient and near-optimal noise generation for
streaming differential privacy", FOCS 2024): a counter keeps only its exact count, and the release at step s
regenerates its noise from the dyadic block vectors of the prefix, derived top down from Philox as the derived binary
tree derives its nodes (``blt_tree``, ``_blt_derived``), with exactly the joint law of the stored noise over all steps
and counters.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from scipy.signal import lfilter

from dpstream import serial
from dpstream.counters import _blt_derived
from dpstream.counters import _kernels as kernels
from dpstream.counters import blt_params as blt
from dpstream.counters.base import NOISE_BYTES, FactorisedCounter
from dpstream.counters.blt_tree import block_tree, tree_bytes
from dpstream.counters.factorisation import BLT, Factorisation
from dpstream.counters.sources import DERIVED, NodeNoise
from dpstream.counters.tree_noise import PHILOX_NOISE, STORED_NODES

BUFFERS = 4
"""Buffers per counter (the issue's 3-5; ``benchmarks/counters_variance.py`` compares 3, 4 and 5)."""
BLOCK_QR = "householder"
"""The QR of the derived noise's generation tables (``blt_tree.householder_qr``): states written before it (LAPACK's
QR, whose noise moved with the CPU) lack it and are refused rather than continued with other noise."""


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


class BLTCounter(FactorisedCounter):
    """Exact count plus the BLT noise: stored in buffers (one noise per push) or derived from a key at release.

    Stored: k buffers and a running total per counter, O(k) work a push. Derived: one count per counter.

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring counter arrays (at most m counters
    change, each by at most 1 at one step), by the Gaussian mechanism on C x with L2 sensitivity sqrt(m) ||C e_1||
    (``l2_sensitivity``) followed by the post-processing A C^{-1} (module docstring of ``blt_params``). Derived noise
    (``node_noise="derived"``): the same, COMPUTATIONALLY: the releases have the stored noise's joint distribution
    exactly when Philox4x64-10 is a random function (``blt_tree``: the block vectors are generated with the joint law
    of the z's); against an observer who cannot tell Philox from random the guarantee holds as stated, against an
    unbounded one it does not. The key must stay secret: ``seed=None`` takes it from the operating system's entropy.
    ``noise=secure`` is refused.

    Derived work: a release costs O(k^2 log T) (one split per level on the path to its step); a push is one integer
    add. Whole-table releases (``release_all``, what a sketch's query reads) keep a path memo per counter,
    (H + 1, 2 (k + 1)) float64: the split halves on its last released step's path, so the next release regenerates
    only the levels where its path differs. It is a speed cache outside the state: not in ``memory_bytes`` (its size
    is ``noise_cache_bytes``), not serialised, rebuilt on demand; it is as secret as the key.
    """

    name = "blt"
    NOISES = {"stored": STORED_NODES, "derived": PHILOX_NOISE}
    stored_kind = kernels.BLT
    _path_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt(m) times the largest column norm of C for the horizon's optimised parameters."""
        return math.sqrt(m) * blt.column_norm(blt.optimal_blt(max(2, horizon), BUFFERS))

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """Stored noise: the exact count, k buffers and the running noise total."""
        return count_bytes + NOISE_BYTES * (BUFFERS + 1)

    @classmethod
    def working_bytes(cls, horizon: int, source: NodeNoise | None = None) -> int:
        """The tables built to calibrate and, for derived noise, to generate it.

        The (T, k) float64 tables of the calibration (``blt.column_norm``) and variances, with temporaries, and with
        noise derived at release (``source`` DERIVED) the generation tables (``tree_bytes``).
        """
        generation = tree_bytes(BUFFERS, max(1, horizon.bit_length())) if source == DERIVED else 0
        return 16 * (BUFFERS + 2) * horizon + generation

    def _coefficients(self) -> None:
        """The horizon's optimised parameters and coef = (theta; omega)."""
        self.params = blt.optimal_blt(max(2, self.horizon), BUFFERS)
        self._coef = np.vstack((self.params.buf_decay, self.params.output_scale)).astype(np.float64)

    def _allocate_stored(self) -> None:
        self._coefficients()
        self._exact: np.ndarray = np.zeros((1, self.n), dtype=self.count_dtype)
        self._state = np.zeros((BUFFERS + 1, self.n), dtype=np.float64)
        self.state = BLTState(self._exact, self._state, self._coef)

    def _allocate_derived(self) -> None:
        """The parameters and the generation tables of the block vectors (``blt_tree.block_tree``)."""
        self._coefficients()
        self.tree = block_tree(self.params, max(1, self.horizon.bit_length()))

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The source's arrays but ``coef`` (a constant, checked through ``_constants``)."""
        return {name: a for name, a in super()._state_arrays().items() if name != "coef"}

    def _constants(self) -> dict[str, Any]:
        """sigma, the coefficients and, with derived noise, the QR its generation tables are built with."""
        qr = {"block_qr": BLOCK_QR} if self.nodes.source == DERIVED else {}
        return {**super()._constants(), "coef": self._coef.tolist(), **qr}

    def stored_release(self, cells: np.ndarray | slice) -> np.ndarray:
        """Exact count plus the running noise total of each cell."""
        return self._exact[0, cells] + self._state[BUFFERS, cells]

    def derived_release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the key-derived BLT noise of each cell at its step (``_blt_derived.release``)."""
        cells = np.ascontiguousarray(cells, dtype=np.int64)
        steps = self._checked_steps(steps, cells.shape)
        t = self.tree
        return _blt_derived.release(self._exact, self._key, self._noise_scale, cells, steps, t.factors, t.splits,
                                    t.complements, t.dims, t.weights, t.log_decay)

    def derived_release_all(self, steps: np.ndarray) -> np.ndarray:
        """Every counter's release at ``steps`` (n,), with the path memo (``_blt_derived.release_all_cached``)."""
        steps = self._checked_steps(steps, (self.n,))
        cache = self._path_cache
        if cache is None or not np.array_equal(cache[0], self._key):  # the paths are a function of the key
            width = 2 * self.tree.factors.shape[1]
            cache = (self._key.copy(), np.zeros((self.n, self.tree.levels + 1, width)), np.zeros(self.n, np.int64))
            self._path_cache = cache
        t = self.tree
        return _blt_derived.release_all_cached(self._exact, self._key, self._noise_scale, steps, t.factors, t.splits,
                                               t.complements, t.dims, t.weights, t.log_decay, cache[1], cache[2])

    @property
    def noise_cache_bytes(self) -> int:
        """Bytes of the path memo of derived whole-table releases (0 without one, or before the first)."""
        cache = self._path_cache
        return 0 if cache is None else cache[1].nbytes + cache[2].nbytes

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """C x, the vector the Gaussian noise is added to before the post-processing A C^{-1} (``toeplitz_images``)."""
        return toeplitz_images(increments, steps, self.params)

    def factorisation(self) -> Factorisation:
        """The BLT of ``params``: variance sigma^2 times ``blt.noise_variance`` at each step; 0 at step 0."""
        return BLT(self.horizon, self.params)


# the classes of format 2: one per node noise, the stored one without ``node_noise`` (``serial.RENAMED``)
serial.rename("BLTCounter", "BLTCounter", 2, node_noise="stored")
serial.rename("DerivedBLT", "BLTCounter", 2, node_noise="derived")
