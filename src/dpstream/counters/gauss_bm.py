"""GaussBM: the Gaussian binary mechanism for an array of n counters (Holland, Sec. 3, Alg. 1 and 2)."""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np

from dpstream import serial
from dpstream.counters import counter_class, popcount
from dpstream.intervals import Interval, normal_halfwidth
from dpstream.noise import SeedLike, noise_mode
from dpstream.privacy.statement import Certified, Privacy

__all__ = ["GaussBM", "popcount"]


def next_steps(steps: np.ndarray, js: np.ndarray) -> np.ndarray:
    """The step each push ``js[k]`` takes, pushes applied in order: steps[j] + (pushes of j up to k)."""
    order = np.argsort(js, kind="stable")
    ranked = js[order]
    idx = np.arange(js.size)
    first = np.concatenate(([True], ranked[1:] != ranked[:-1])) if js.size else np.zeros(0, dtype=bool)
    out = np.empty(js.size, dtype=np.int64)
    out[order] = steps[ranked] + idx - np.maximum.accumulate(np.where(first, idx, 0)) + 1
    return out


class GaussBM(Certified, serial.Serialisable):
    """n independent Gaussian binary-mechanism counters, each with one preallocated node per tree level.

    Privacy (Thm 1): for m-neighbouring inputs (one neighbour changes at most ``m`` counters, each by at
    most 1 in total over the stream) the whole sequence of released prefix sums is (epsilon, delta)-DP
    under continual observation. h = ceil(log2(horizon + 1)) levels and
    sigma = sqrt(2 h m ln(1.25/delta)) / epsilon (``calibration="classic"``, the paper's) or the exact smallest
    sigma for L2 sensitivity sqrt(h m) (``"analytic"``, Balle and Wang 2018), both from
    ``dpstream.privacy.calibration``.

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

    ``node_noise="derived"`` (beyond the paper; ``counters.BinaryTree(node_noise="derived")``): the node noises are a
    keyed
    Philox function of (counter, level, node), so a counter holds its exact count and its step only; the
    releases have the same joint distribution when Philox is a random function, and the guarantee becomes
    computational (``privacy.notion``). ``counter="honaker"`` (Honaker's online estimates on the same tree,
    post-processing) and ``counter="blt"`` (buffered linear Toeplitz, sigma for its own sensitivity) are the
    other counters of ``dpstream.counters``. The state lives in ``counter``; ``to_bytes`` / ``from_bytes``
    (``dpstream.serial``) write it with the arguments and the steps (SECRET, see ``serial.Serialisable.to_bytes``).
    """

    _repr_attrs: ClassVar[dict[str, str]] = {"counter": "_counter_arg", "node_noise": "counter.node_noise"}
    fixed_arrays = True

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta) for m-neighbouring counter arrays, from its counter's noise; computational if derived."""
        return self.counter.privacy

    def __init__(
        self,
        *,
        n: int,
        horizon: int,
        epsilon: float,
        delta: float,
        m: int = 1,
        seed: SeedLike = None,
        counter: str = "binary",
        node_noise: str = "stored",
        calibration: str = "classic",
    ) -> None:
        """Validate the parameters and build the counter array ``counter`` with its calibrated sigma."""
        self._setup(n, horizon, epsilon, delta, m, seed, counter, node_noise, calibration, kappa=1.0)

    @classmethod
    def _uncertified_noiseless(
        cls, *, n: int, horizon: int, epsilon: float, delta: float, m: int = 1, seed: SeedLike = None,
        counter: str = "binary", node_noise: str = "stored", calibration: str = "classic",
    ) -> GaussBM:
        """TEST ONLY, NOT privacy-certified: the same counters with the noise switched off (exact sums)."""
        self = cls.__new__(cls)
        self._setup(n, horizon, epsilon, delta, m, seed, counter, node_noise, calibration, kappa=0.0)
        return self

    def _setup(
        self, n: int, horizon: int, epsilon: float, delta: float, m: int, seed: SeedLike, counter: str,
        node_noise: str, calibration: str, kappa: float,
    ) -> None:
        self.counter = counter_class(counter, node_noise)(
            n=n, horizon=horizon, epsilon=epsilon, delta=delta, m=m, seed=seed, calibration=calibration,
            kappa=kappa,
        )
        c = self.counter
        self.kappa = kappa
        self._counter_arg = counter  # as given: a package name, or "module:Class" for a counter of one's own
        self.n, self.horizon, self.epsilon, self.delta, self.m = c.n, c.horizon, c.epsilon, c.delta, c.m
        self.calibration = c.calibration
        self.levels, self.sigma = c.levels, c.sigma
        self.deployable = bool(getattr(c, "deployable", False))  # exact discrete noise keyed from OS entropy only
        self._steps = c._steps if c.tracks_steps else np.zeros(self.n, dtype=np.int64)

    @property
    def steps(self) -> np.ndarray:
        """Number of updates each counter has received (its current step s)."""
        return self._steps.copy()

    @property
    def memory_bytes(self) -> int:
        """Bytes of the state arrays: the counter's (stored: exact partial sums, noisy sums, steps) and steps."""
        own = 0 if self.counter.tracks_steps else self._steps.nbytes
        return self.counter.memory_bytes + own

    def _check_horizon(self, new_steps: np.ndarray) -> None:
        over = np.flatnonzero(new_steps > self.horizon)
        if over.size:
            j = int(over[0])
            raise ValueError(f"counter {j} would reach step t={int(new_steps[j])} > horizon={self.horizon}")

    def update(self, j: int, c: int) -> None:
        """Counter ``j`` takes its next step with increment ``c`` (Alg. 1 update)."""
        self.extend(np.array([j]), np.array([c]))

    def extend(self, js: np.ndarray, cs: np.ndarray) -> None:
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
        js = js.astype(np.int64)
        steps = next_steps(self._steps, js)
        self.counter.push(js, steps, cs.astype(np.int64))
        if not self.counter.tracks_steps:
            self._steps[js] = np.maximum(self._steps[js], steps)

    def merge(self, other: GaussBM) -> GaussBM:
        """Not defined: a node's noise is drawn when it closes, so two streams' trees do not add up to one tree."""
        raise ValueError("cannot merge two GaussBM counter arrays: each tree's node noise is drawn when its node "
                         "closes, so the trees of two streams do not add up to the tree of their concatenation")

    def update_all(self, cs: np.ndarray) -> None:
        """Every counter takes one step, counter j with increment ``cs[j]`` (one step of Alg. 2)."""
        self.extend(np.arange(self.n), cs)

    def query(self, j: int) -> float:
        """Released prefix sum of counter ``j`` (Alg. 1 query)."""
        return float(self.counter.release(np.array([j]), self._steps[[j]])[0])

    def query_many(self, js: np.ndarray) -> np.ndarray:
        """Released prefix sums of counters ``js`` (float64)."""
        js = self._indices(js)
        return np.array(self.counter.release(js, self._steps[js]), dtype=np.float64)

    def query_all(self) -> np.ndarray:
        """Released prefix sums of all counters (float64, shape (n,)): the release of Alg. 2."""
        return np.array(self.counter.release(np.arange(self.n), self._steps), dtype=np.float64)

    def query_interval_many(self, js: np.ndarray, confidence: float = 0.95) -> Interval:
        """Released prefix sums of counters ``js`` with intervals covering the noise (``dpstream.intervals``).

        Each holds the exact prefix sum with probability ``confidence``: estimate +- z sqrt(popcount(s) sigma^2)
        at the counter's step s (the counter's ``variance``), z the normal quantile at (1 + confidence) / 2.
        """
        js = self._indices(js)
        estimates = np.array(self.counter.release(js, self._steps[js]), dtype=np.float64)
        half = normal_halfwidth(self.counter.variance(self._steps[js]), confidence)
        return Interval(estimates, estimates - half, estimates + half)

    def query_interval(self, j: int, confidence: float = 0.95) -> Interval:
        """Counter ``j``'s released prefix sum and interval (floats), as ``query_interval_many``."""
        return Interval(*(float(np.asarray(v)[0]) for v in self.query_interval_many(np.array([j]), confidence)))

    def _indices(self, js: np.ndarray) -> np.ndarray:
        js = np.asarray(js)
        if js.ndim != 1 or js.dtype.kind not in "iu" or (js.size and (js.min() < 0 or js.max() >= self.n)):
            raise ValueError(f"js must be a 1-D integer array of counter indices in [0, {self.n}), got {js!r:.80}")
        return js.astype(np.int64)

    def variance(self, step: int | np.ndarray | None = None) -> np.ndarray:
        """Analytic noise variance popcount(step) sigma^2 of a released prefix sum (default: each counter)."""
        return self.counter.variance(self._steps if step is None else step)

    # -- serialisation hooks (``dpstream.serial``) -------------------------------------------------------------
    def _serial_args(self) -> dict[str, Any]:
        c = self.counter
        return {"n": self.n, "horizon": self.horizon, "epsilon": self.epsilon, "delta": self.delta, "m": self.m,
                "counter": self._counter_arg, "node_noise": c.node_noise, "calibration": self.calibration,
                "kappa": self.kappa}

    @classmethod
    def _rebuild(cls, args: dict[str, Any]) -> Self:
        if args["kappa"] not in (0.0, 1.0) or not isinstance(args["kappa"], float):
            raise ValueError(f"kappa={args['kappa']!r}; allowed: 1.0, 0.0 (test only)")
        self = cls.__new__(cls)
        with noise_mode("numpy"):  # the stored mode is restored with the generator state
            self._setup(args["n"], args["horizon"], args["epsilon"], args["delta"], args["m"], None, args["counter"],
                        args["node_noise"], args["calibration"], kappa=args["kappa"])
        return self

    @classmethod
    def _allocation_bytes(cls, args: dict[str, Any]) -> int:
        counter = counter_class(args["counter"], args["node_noise"])
        return counter._allocation_bytes({**args, "count_dtype": "int64"}) + 8 * args["n"]

    @classmethod
    def _working_bytes(cls, args: dict[str, Any]) -> int:
        return counter_class(args["counter"], args["node_noise"])._working_bytes(args)

    def _state_scalars(self) -> dict[str, Any]:
        return self.counter._state_scalars()

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        self.counter._restore_scalars(scalars)
        self.deployable = bool(getattr(self.counter, "deployable", False))  # the counter's: False once restored

    def _state_arrays(self) -> dict[str, np.ndarray]:
        own = {} if self.counter.tracks_steps else {"steps": self._steps}  # else the counter's own steps
        return {**own, **serial.nest("counter", self.counter._state_arrays())}

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self.counter._restore_arrays(serial.part("counter", arrays))
        serial.copy_into(self._state_arrays(), arrays, type(self).__name__)
        if np.any(self._steps < 0) or np.any(self._steps > self.horizon):
            raise ValueError(f"corrupt state: GaussBM steps outside [0, horizon={self.horizon}]")
