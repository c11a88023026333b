"""Non-private Count-Min and Count sketches (Holland, Sec. 2.2): the baselines of Figure 3."""

from __future__ import annotations

import numpy as np

from dpstream.counters import CounterDescriptor
from dpstream.sketches import _kernels as kernels
from dpstream.sketches.core import COUNT_MIN, COUNT_SKETCH, Schedule, SketchCore


class ExactSchedule(Schedule):
    """Exact d x w counters, released as they are (no privacy); ``epsilon``, ``delta`` and ``counter`` are ignored."""

    kind = "exact"
    private = False

    def _allocate(
        self,
        epsilon: float | None,
        delta: float | None,
        noise_seed: np.random.SeedSequence | None,
        kappa: float,
        counter: CounterDescriptor,
    ) -> None:
        self.counts = np.zeros((self.depth, self.width), dtype=self.count_dtype)

    def extend(self, keys: np.ndarray, params: np.ndarray, t0: int) -> None:
        """Add each key's row increments (1 or g_i(x)) to its d cells (``_kernels.exact_extend``)."""
        kernels.exact_extend(keys, params, self.signed, self.counts)

    def cells(self) -> np.ndarray:
        """The exact counts themselves."""
        return self.counts

    def add(self, other: Schedule) -> None:
        """Add ``other``'s exact counts cell by cell."""
        self.counts += other.cells()

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"counts": self.counts}

    def cell_variances(self, t: int | None = None) -> np.ndarray:
        """Zero everywhere: no noise."""
        return np.zeros(self.counts.shape)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the counts."""
        return self.counts.nbytes


class CMS(SketchCore):
    """Count-Min sketch (Cormode and Muthukrishnan 2005): C[i, h_i(x)] += 1, estimate min_i C[i, h_i(x)].

    NOT private: a baseline. Accepts and ignores ``epsilon`` / ``delta``; never underestimates.
    """

    _estimator = COUNT_MIN
    _schedule = ExactSchedule


class CS(SketchCore):
    """Count sketch (Charikar et al. 2002): C[i, h_i(x)] += g_i(x), estimate median_i g_i(x) C[i, h_i(x)].

    NOT private: a baseline. Accepts and ignores ``epsilon`` / ``delta``; each row is unbiased.
    """

    _estimator = COUNT_SKETCH
    _schedule = ExactSchedule
