"""GaussBM: the Gaussian binary mechanism for an array of n counters (seed 004, Sec. 3, Alg. 1 and 2)."""

from __future__ import annotations

import numpy as np

from dpstream import _bm_kernels as kernels
from dpstream.calibration import gauss_bm_levels, gauss_bm_sigma
from dpstream.noise import NoiseSource, SeedLike
from dpstream.validation import check_delta, check_epsilon, check_positive_int


def popcount(steps: np.ndarray | int) -> np.ndarray:
    """Number of set bits of each (non-negative) step."""
    s = np.asarray(steps, dtype=np.uint64)
    return np.bitwise_count(s).astype(np.int64)


class GaussBM:
    """n independent Gaussian binary-mechanism counters, each with one preallocated node per tree level.

    Privacy (Thm 1): for m-neighbouring inputs (one neighbour changes at most ``m`` counters, each by at
    most 1 in total over the stream) the whole sequence of released prefix sums is (epsilon, delta)-DP
    under continual observation. h = ceil(log2(horizon + 1)) levels and
    sigma = sqrt(2 h m ln(1.25/delta)) / epsilon, both from ``dpstream.calibration``.

    Equivalence with Alg. 1: at a counter's step s (1-based) the node of level i = ctz(s) closes; its
    exact count is alpha_i = c + sum_{l<i} alpha_l (the level-l nodes that Alg. 1 merges into it, which
    are then cleared) and it is released as alpha_i + N(0, sigma^2): ONE fresh draw per update. Alg. 1
    also draws noise for the intermediate nodes it merges away, but those noises are never part of a
    later release, so the set of released nodes at every step (one per set bit of s, each with its own
    independent N(0, sigma^2)) has the same joint distribution. The prefix sum at step s is the sum of
    the noisy nodes over the set bits of s, so its noise variance is popcount(s) sigma^2 (``variance``).
    It is kept up to date at every update instead of being summed at query time: per level l we hold
    the sum of the noisy nodes at the set bits >= l (added from the highest bit down); a step of level i
    sets level i to (its old value, the sum above bit i) + the new node and copies it to levels < i,
    whose bits are cleared. Level 0 is the released prefix sum, bit for bit the from-scratch sum.
    Alg. 1 as printed merges while ``t & (1 << l) != 0``, which gives dyadic nodes for a 0-based t;
    we follow the 1-based steps of Alg. 5 (``floor(t/w) + 1``) and Figure 2 (the release at t = 7 is
    c7 + c5:6 + c1:4), i.e. the node closing at step s has level ctz(s).

    Memory: exact partial sums (int64 here; the sketches use int32, the paper's model: 4 + 8 = 12 bytes
    per level) and float64 noisy sums, both (levels, n), plus an int64 step count per counter.
    """

    def __init__(self, n: int, horizon: int, epsilon: float, delta: float, m: int = 1, seed: SeedLike = None) -> None:
        self._setup(n, horizon, epsilon, delta, m, seed, np.int64, noise_multiplier=1.0)

    @classmethod
    def _uncertified_noiseless(
        cls, n: int, horizon: int, epsilon: float, delta: float, m: int = 1, seed: SeedLike = None
    ) -> GaussBM:
        """TEST ONLY, NOT privacy-certified: the same counters with the noise switched off (exact sums)."""
        return cls._build(n, horizon, epsilon, delta, m, seed, np.int64, noise_multiplier=0.0)

    @classmethod
    def _build(
        cls,
        n: int,
        horizon: int,
        epsilon: float,
        delta: float,
        m: int,
        seed: SeedLike,
        count_dtype: type,
        noise_multiplier: float,
    ) -> GaussBM:
        """Internal constructor for the sketches (int32 partial sums; noise multiplier of the sketch)."""
        self = cls.__new__(cls)
        self._setup(n, horizon, epsilon, delta, m, seed, count_dtype, noise_multiplier)
        return self

    def _setup(
        self,
        n: int,
        horizon: int,
        epsilon: float,
        delta: float,
        m: int,
        seed: SeedLike,
        count_dtype: type,
        noise_multiplier: float,
    ) -> None:
        self.n = check_positive_int(n, "n")
        self.horizon = check_positive_int(horizon, "horizon")
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.m = check_positive_int(m, "m")
        self.levels = gauss_bm_levels(self.horizon)
        self.sigma = gauss_bm_sigma(self.horizon, self.epsilon, self.delta, self.m)
        self.certified = noise_multiplier == 1.0
        self._noise_scale = self.sigma * noise_multiplier
        self._noise = NoiseSource(seed)
        self._exact = np.zeros((self.levels, self.n), dtype=count_dtype)
        self._noisy_sums = np.zeros((self.levels, self.n), dtype=np.float64)
        self._steps = np.zeros(self.n, dtype=np.int64)

    @property
    def steps(self) -> np.ndarray:
        """Number of updates each counter has received (its current step s)."""
        return self._steps.copy()

    @property
    def memory_bytes(self) -> int:
        """Bytes of the state arrays: exact partial sums, noisy sums and step counts."""
        return self._exact.nbytes + self._noisy_sums.nbytes + self._steps.nbytes

    def _draw(self, size: int) -> np.ndarray:
        """``size`` node noises N(0, sigma^2), in the order the updates consume them."""
        return self._noise.gaussian(self._noise_scale, size)

    def _check_horizon(self, new_steps: np.ndarray) -> None:
        over = np.flatnonzero(new_steps > self.horizon)
        if over.size:
            j = int(over[0])
            raise ValueError(f"counter {j} would reach step t={int(new_steps[j])} > horizon={self.horizon}")

    def update(self, j: int, c: int) -> None:
        """Counter ``j`` takes its next step with increment ``c`` (Alg. 1 update)."""
        self.update_many(np.array([j]), np.array([c]))

    def update_many(self, js: np.ndarray, cs: np.ndarray) -> None:
        """Counters ``js[k]`` take one step each with increment ``cs[k]``, in order (``update`` per pair)."""
        js = np.asarray(js)
        cs = np.asarray(cs)
        if js.ndim != 1 or js.shape != cs.shape:
            raise ValueError(f"js and cs must be 1-D of equal length, got shapes {js.shape} and {cs.shape}")
        if js.dtype.kind not in "iu" or cs.dtype.kind not in "iu":
            raise ValueError(f"js and cs must be integer arrays, got dtypes {js.dtype} and {cs.dtype}")
        if js.size and (js.min() < 0 or js.max() >= self.n):
            raise ValueError(f"counter indices must be in [0, {self.n}), got values in [{js.min()}, {js.max()}]")
        self._check_horizon(self._steps + np.bincount(js, minlength=self.n))
        kernels.update_counters(
            self._exact,
            self._noisy_sums,
            self._steps,
            js.astype(np.int64),
            cs.astype(np.int64),
            self._draw(js.size),
        )

    def update_all(self, cs: np.ndarray) -> None:
        """Every counter takes one step, counter j with increment ``cs[j]`` (one step of Alg. 2)."""
        self.update_many(np.arange(self.n), cs)

    def query(self, j: int) -> float:
        """Released prefix sum of counter ``j`` (Alg. 1 query)."""
        return float(self._noisy_sums[0, j])

    def query_all(self) -> np.ndarray:
        """Released prefix sums of all counters (float64, shape (n,))."""
        return self._noisy_sums[0].copy()

    def released_view(self) -> np.ndarray:
        """Read-only view of the released prefix sums (``query_all`` without the copy; changes with updates)."""
        view = self._noisy_sums[0]
        view.flags.writeable = False
        return view

    def variance(self, step: int | np.ndarray | None = None) -> np.ndarray:
        """Analytic noise variance popcount(step) sigma^2 of a released prefix sum (default: each counter)."""
        steps = self._steps if step is None else step
        return popcount(steps) * self._noise_scale**2
