"""The counter interface: n independent continual counters.

The owner (``GaussBM``, a sketch schedule) says which counter takes which step; the counter keeps the state, draws
its noise, releases prefix sums and states its noise variance and its memory.

A counter is calibrated once, here: sigma = ``calibration.gaussian_sigma(l2_sensitivity(horizon, m), eps,
delta, calibration)`` ("classic", the papers', or "analytic", Balle and Wang 2018), where ``l2_sensitivity``
is the counter's own (sqrt(h m) for the binary tree: one step of each of m counters moves h node values by
at most 1; the factorisation's column norm times sqrt(m) for BLT).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from dpstream.counters import _kernels as kernels
from dpstream.noise import NoiseSource, SeedLike
from dpstream.privacy.calibration import gauss_bm_levels, gaussian_sigma
from dpstream.privacy.statement import Notion, certify
from dpstream.validation import check_delta, check_epsilon, check_positive_int

STEP_BYTES = 8
"""An int64 step count (Alg. 1 keeps one per counter)."""
NOISE_BYTES = 8
"""A float64 noise value or noisy sum."""


class Counter(ABC):
    """``n`` continual counters over ``horizon`` steps each.

    Privacy: (epsilon, delta)-DP for m-neighbouring inputs (one neighbour changes at most m counters, each by at
    most 1 at one step) under continual observation.

    ``push_kernel``: its compiled push (``counters._kernels``); ``sparse_pushes``: a push of 0 changes nothing, so
    a schedule may skip it (derived noise); ``tracks_steps``: the counter keeps each
    counter's step (Alg. 1) and ``release`` may ignore the steps it is given; otherwise the owner supplies them.
    """

    name: ClassVar[str]
    node_noise: ClassVar[str]
    push_kernel: ClassVar[Any]
    sparse_pushes: ClassVar[bool] = False
    tracks_steps: ClassVar[bool]
    draws_per_push: ClassVar[int]
    """Noise draws per push (on average, for buffer sizing): 0 when the noise is derived at release time."""
    fixed_bytes: ClassVar[int] = 0
    """Memory model: bytes held once per counter array (a key), on top of ``bytes_per_counter`` each."""
    notion: ClassVar[Notion] = "approximate"
    """The sense of the (epsilon, delta) guarantee (``privacy.Privacy.notion``): computational for derived noise."""

    def __init__(
        self,
        *,
        n: int,
        horizon: int,
        epsilon: float,
        delta: float,
        m: int = 1,
        seed: SeedLike = None,
        calibration: str = "classic",
        count_dtype: type = np.int64,
        kappa: float = 1.0,
    ) -> None:
        """Validate the arguments, calibrate sigma (``gaussian_sigma``) and allocate the state arrays.

        ``kappa`` (the noise multiplier) != 1 scales every noise and is NOT privacy-certified (``certified`` is then
        False).
        """
        self.n = check_positive_int(n, "n")
        self.horizon = check_positive_int(horizon, "horizon")
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.m = check_positive_int(m, "m")
        self.levels = gauss_bm_levels(self.horizon)
        self.calibration = calibration
        self.sigma = gaussian_sigma(self.l2_sensitivity(self.horizon, self.m), self.epsilon, self.delta, calibration)
        self.certified = certify(kappa=kappa)
        self._noise_scale = self.sigma * kappa
        self._noise = NoiseSource(seed)
        self.count_dtype = count_dtype
        self._steps = np.zeros(self.n if self.tracks_steps else 0, dtype=np.int64)
        self._none = np.zeros((0, 0), dtype=np.float64)  # the kernel_state slot a counter does not use
        self._allocate()


    @classmethod
    @abstractmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """L2 change of everything the counters release-generate when m counters change by 1 at one step."""

    @classmethod
    @abstractmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """Memory model: bytes of state per counter (``memory_bytes`` is n times this)."""

    @abstractmethod
    def _allocate(self) -> None:
        """Create the state arrays."""

    @abstractmethod
    def kernel_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(exact, fa, fb, coef): the arrays ``push_kernel`` reads and writes."""

    @abstractmethod
    def noise_count(self, steps: np.ndarray) -> int:
        """How many N(0, sigma^2) draws one push at each of ``steps`` consumes, in all."""

    @abstractmethod
    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Released prefix sums (float64) of ``cells``, each at its current step ``steps``."""

    def release_all(self, steps: np.ndarray) -> np.ndarray:
        """Released prefix sums of every counter, at steps ``steps`` (shape (n,))."""
        return self.release(np.arange(self.n), steps)

    @abstractmethod
    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """What this counter's Gaussian noise protects, from noiseless ``increments`` (n, S) up to ``steps`` (n,).

        The sensitivity probe (``dpstream.audit.sensitivity``) measures the largest L2 change of this vector
        between neighbouring inputs against ``l2_sensitivity``: shape (1, -1).
        """

    @abstractmethod
    def variance(self, steps: np.ndarray | int) -> np.ndarray:
        """Analytic noise variance of a release at each step."""

    @property
    def steps(self) -> np.ndarray:
        """Each counter's step (counters that track them)."""
        return self._steps.copy()

    @property
    def memory_bytes(self) -> int:
        """Bytes of the state arrays."""
        exact, fa, fb, _ = self.kernel_state()
        return exact.nbytes + fa.nbytes + fb.nbytes + self._steps.nbytes

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The live mutable state arrays (``sketches.serial``): the kernel's arrays and the step counts."""
        exact, fa, fb, _ = self.kernel_state()
        return {"exact": exact, "fa": fa, "fb": fb, "steps": self._steps}

    def _constants(self) -> dict[str, Any]:
        """Values recomputed from the arguments that a restored counter must reproduce exactly (JSON)."""
        return {"sigma": self.sigma}

    def _state_scalars(self) -> dict[str, Any]:
        """The noise generator: mode and ``bit_generator.state`` (a dict of ints), and ``_constants``."""
        return {"noise_mode": self._noise.mode, "rng": self._noise.rng.bit_generator.state, **self._constants()}

    def _restore_noise(self, scalars: dict[str, Any]) -> None:
        """Put the noise generator back in the state ``_state_scalars`` recorded."""
        self._noise.mode = scalars["noise_mode"]
        self._noise.rng.bit_generator.state = scalars["rng"]

    def draw(self, size: int) -> np.ndarray:
        """``size`` noises N(0, (sigma * kappa)^2), in the order the pushes consume them."""
        return self._noise.gaussian(self._noise_scale, size)

    def push(self, cells: np.ndarray, steps: np.ndarray, values: np.ndarray) -> None:
        """Cells ``cells[k]``, in order, take steps ``steps[k]`` with increments ``values[k]`` (int64 arrays)."""
        kernels.push_many(self.push_kernel, *self.kernel_state(), cells, steps, values,
                          self.draw(self.noise_count(steps)))
        self.record_steps(steps, cells)

    def record_steps(self, steps: np.ndarray, cells: np.ndarray | None = None) -> None:
        """Counters that track their steps note that ``cells`` (default: all) are now at ``steps``."""
        if not self.tracks_steps:
            return
        if cells is None:
            self._steps[:] = steps
        else:
            np.maximum.at(self._steps, cells, steps)
