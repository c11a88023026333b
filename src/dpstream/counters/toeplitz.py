"""Toeplitz factorisation counters: the square-root factorisation and its banded version.

The prefix sums A x of a counter's increments x (A the T x T lower-triangular all-ones matrix) are released as
A x + L z with A = L C, z ~ N(0, sigma^2 I), sigma calibrated for the L2 sensitivity of C x (``l2_sensitivity``):
the Gaussian mechanism on C x followed by the post-processing L = A C^{-1}. Here C is lower-triangular Toeplitz
with first column c_0, ..., c_{b-1} (b bands) and zeros below, and L = A C^{-1} is lower-triangular Toeplitz with
first column d = the coefficients of 1 / ((1 - x) c(x)).

- Square-root factorisation (Fichtenberger, Henzinger, Upadhyay, "Constant matters: fine-grained error bound on
  differentially private continual observation", ICML 2023; Henzinger and Upadhyay, SODA 2025): L = C = A^{1/2},
  c_t = binom(2t, t) / 4^t, the coefficients of (1 - x)^{-1/2} (so c(x)^2 = 1 / (1 - x), A = C^2 and d = c).
  Var(s) = sigma^2 sum_{t < s} c_t^2 and sens^2 = m sum_{t < T} c_t^2, both about 1 + ln(s) / pi.
- Banded square root with b bands (Kalinin and Lampert, "Banded square root matrix factorization for differentially
  private model training", NeurIPS 2024; the O(b)-space streaming regime of Andersson and Pagh, "Streaming private
  continual counting via binning", arXiv 2412.07093): C is the square root truncated to its first b diagonals;
  sens^2 = m sum_{t < min(b, T)} c_t^2 (every column of C holds the same b coefficients, the last ones fewer), and
  L = A C^{-1} from the recursion below. Its variance grows linearly in s once s >> b: d_t tends to 1 / c(1) =
  1 / sum_{t < b} c_t, about sqrt(pi / (4 b)).

Node noise (``node_noise=``). Stored (one noise per push, O(b) work and state): w = C^{-1} z by the recursion
w_s = (z_s - sum_{j=1}^{b-1} c_j w_{s-j}) / c_0 over the last b - 1 values of w (a ring), and the noise released at
step s is (A w)_s, a running total. With b = T (the plain square root) the ring holds T - 1 values a counter: O(T)
state, the factorisation's honest cost; ``counters.blt`` is its O(1)-state rational approximation. Derived: z_u of
counter j is ``philox.node_normal`` at (u, ``toeplitz_push.DERIVED_TAG``, j), and a release at step s sums
d_{s-u} z_u over u <= s (O(s) normals: the state becomes work at release); a counter keeps one count. The square
root and ``banded16`` take both; another band count takes stored noise alone (``DERIVED_BANDS``).
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy.signal import lfilter

from dpstream import serial
from dpstream.counters import _kernels as kernels
from dpstream.counters.base import NOISE_BYTES, FactorisedCounter
from dpstream.counters.factorisation import (
    FULL,
    Factorisation,
    Toeplitz,
    column_norm,
    decoder_coefficients,
    unit_variances,
)
from dpstream.counters.root_rows import sqrt_coefficients
from dpstream.counters.sources import NodeNoise
from dpstream.counters.toeplitz_push import derived_release
from dpstream.counters.tree_noise import PHILOX_NORMALS, STORED_NODES


def encoder_images(increments: np.ndarray, steps: np.ndarray, coefs: np.ndarray) -> np.ndarray:
    """C x of each counter's increments (what the Gaussian noise protects), shape (1, -1).

    Steps after each counter's own step are zeroed: (C x)_s = sum_{u <= s} c_{s-u} x_u.
    """
    horizon = increments.shape[1]
    images = lfilter(coefs, [1.0], increments.astype(np.float64), axis=1)
    images[np.arange(horizon)[None, :] >= np.asarray(steps)[:, None]] = 0.0
    return images.reshape(1, -1)


class ToeplitzState(NamedTuple):
    """Exact counts, the ring of the last values of w = C^{-1} z, the running noise totals and C's coefficients.

    Shapes (1, n), (max(1, b - 1), n), (1, n) and (b,); the coefficients are read by the push, never written.
    """

    exact: np.ndarray
    ring: np.ndarray
    total: np.ndarray
    coef: np.ndarray


class ToeplitzCounter(FactorisedCounter):
    """A counter releasing exact prefix sum + sigma (A C^{-1} z)_s, C the ``bands``-band square root.

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring counter arrays (at most m counters
    change, each by at most 1 at one step), by the Gaussian mechanism on C x (L2 sensitivity sqrt(m) times C's
    largest column norm, ``column_norm``) followed by the post-processing A C^{-1}. Stored noise: the owner pushes
    every counter at every step, zeros included (``sparse_pushes`` False), in step order. Derived noise
    (``node_noise="derived"``): the same privacy COMPUTATIONALLY (the releases have the stored noise's joint law when
    Philox is a random function, ``tree_noise.PhiloxNoise``); the key must stay secret (``seed=None`` takes it from
    the operating system); ``noise=secure`` is refused.
    """

    name: ClassVar[str]
    bands: ClassVar[int]
    """b: C's diagonals (``FULL``: all of them, the plain square root)."""
    NOISES = {"stored": STORED_NODES, "derived": PHILOX_NORMALS}
    stored_kind = kernels.TOEPLITZ

    @classmethod
    @abstractmethod
    def effective_bands(cls, horizon: int) -> int:
        """min(b, T): the diagonals of C inside the horizon (each registered class states its b)."""

    @classmethod
    def encoder(cls, horizon: int) -> np.ndarray:
        """C's first column over ``horizon`` steps: the square root's first min(b, T) coefficients (read-only)."""
        return sqrt_coefficients(cls.effective_bands(horizon))

    @classmethod
    def decoder(cls, horizon: int) -> np.ndarray:
        """L = A C^{-1}'s first column over ``horizon`` steps (``decoder_coefficients``; read-only)."""
        return decoder_coefficients(cls.bands, horizon)

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt(m) ||C e_1||_2: one step of each of m counters moves C x by one column of C, the first the longest."""
        return math.sqrt(m) * column_norm(cls.bands, horizon)

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """Stored noise: the exact count, the ring of b - 1 values (at least one slot) and the running total."""
        return count_bytes + NOISE_BYTES * (max(1, cls.effective_bands(horizon) - 1) + 1)

    @classmethod
    def working_bytes(cls, horizon: int, source: NodeNoise | None = None) -> int:
        """The float64 tables of L's first column and its cumulative squares, with temporaries."""
        return 32 * horizon

    @classmethod
    def unit_variance(cls, horizon: int) -> np.ndarray:
        """Var(s) / sigma^2 for s = 1..horizon (``unit_variances``)."""
        return unit_variances(cls.bands, horizon)

    def _allocate_stored(self) -> None:
        bands = self.effective_bands(self.horizon)
        self._exact: np.ndarray = np.zeros((1, self.n), dtype=self.count_dtype)
        self._ring = np.zeros((max(1, bands - 1), self.n), dtype=np.float64)
        self._total = np.zeros((1, self.n), dtype=np.float64)
        self._coef = np.array(self.encoder(self.horizon), dtype=np.float64)
        self.state = ToeplitzState(self._exact, self._ring, self._total, self._coef)

    def _allocate_derived(self) -> None:
        """C's coefficients (``protected``) and L's first column (the release's weights)."""
        self._coef = np.array(self.encoder(self.horizon), dtype=np.float64)
        self._decoder = np.ascontiguousarray(self.decoder(self.horizon))

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The source's arrays but C's coefficients (a function of the horizon)."""
        return {name: a for name, a in super()._state_arrays().items() if name != "coef"}

    def _constants(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "bands": self.effective_bands(self.horizon), **self.nodes.constants(self)}

    def stored_release(self, cells: np.ndarray | slice) -> np.ndarray:
        """Exact count plus the running noise total of each cell."""
        return self._exact[0, cells] + self._total[0, cells]

    def derived_release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the key-derived noise of each cell at its step (``toeplitz_push.derived_release``)."""
        cells = np.ascontiguousarray(cells, dtype=np.int64)
        steps = self._checked_steps(steps, cells.shape)
        return derived_release(self._exact, self._key, self._noise_scale, self._decoder, cells, steps)

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """C x, the vector the Gaussian noise is added to (``encoder_images``)."""
        return encoder_images(increments, steps, self._coef)

    def factorisation(self) -> Factorisation:
        """C Toeplitz with b bands: variance sigma^2 ||row s of A C^{-1}||^2 (``unit_variances``); 0 at step 0."""
        return Toeplitz(self.horizon, self.bands)


class SqrtFactorisation(ToeplitzCounter):
    """The square-root factorisation A = A^{1/2} A^{1/2} (Fichtenberger, Henzinger, Upadhyay, ICML 2023): O(T) state.

    Var(s) = sigma^2 sum_{t < s} c_t^2 and sens^2 = m sum_{t < T} c_t^2, c_t = binom(2t, t) / 4^t (module docstring).
    """

    name = "sqrt"
    bands = FULL

    @classmethod
    def effective_bands(cls, horizon: int) -> int:
        """T: every diagonal."""
        return max(1, horizon)


DERIVED_BANDS = (16,)
"""The band counts whose counters also take derived noise (``banded16``, ``counters.registry``); any other b takes
stored noise alone."""


@functools.cache
def banded_sqrt(bands: int) -> type[ToeplitzCounter]:
    """The ``bands``-band square-root counter class (one per b: ``BandedSqrt{b}``, counter name ``banded{b}``).

    Its node noises: stored, and derived for b in ``DERIVED_BANDS``.
    """
    if isinstance(bands, bool) or not isinstance(bands, int) or bands < 1:
        raise ValueError(f"bands={bands!r}; allowed: a positive integer")
    doc = (f"The square root truncated to {bands} bands (Kalinin and Lampert, NeurIPS 2024): O(b) state a counter."
           f"\n\n    sens^2 = m sum_{{t < min({bands}, T)}} c_t^2; Var(s) = sigma^2 sum_{{t < s}} d_t^2, d the "
           "coefficients of 1 / ((1 - x) c_b(x)) (module docstring).\n    ")
    cls = type(f"BandedSqrt{bands}", (ToeplitzCounter,),
               {"name": f"banded{bands}", "bands": bands, "__doc__": doc, "__module__": __name__,
                "NOISES": ToeplitzCounter.NOISES if bands in DERIVED_BANDS else {"stored": STORED_NODES},
                "names_noise": classmethod(lambda cls: True),  # every band count's states name it, as banded16's
                "effective_bands": classmethod(lambda cls, horizon: max(1, min(bands, horizon)))})
    serial.rename(cls.__name__, cls.__name__, 2, node_noise="stored")  # format 2 wrote no node_noise
    return cls


BANDS = (4, 16, 64)
"""The band counts registered as counters ``banded4``, ``banded16`` and ``banded64`` (``banded_sqrt(b)`` any other)."""
BandedSqrt4, BandedSqrt16, BandedSqrt64 = (banded_sqrt(b) for b in BANDS)

# the classes of format 2: one per node noise, the stored one without ``node_noise`` (``serial.RENAMED``)
serial.rename("SqrtFactorisation", "SqrtFactorisation", 2, node_noise="stored")
serial.rename("DerivedSqrtFactorisation", "SqrtFactorisation", 2, node_noise="derived")
serial.rename("DerivedBandedSqrt16", "BandedSqrt16", 2, node_noise="derived")
