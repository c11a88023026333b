"""LazyHH: k-heavy hitters under continual observation with a lazily refreshed output (Holland, Alg. 6)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from dpstream import serial
from dpstream.heavy_hitters import _line_rate
from dpstream.heavy_hitters._tracker import BlockTracker
from dpstream.heavy_hitters.thresholds import Thresholds, noise_tail_working_bytes, noise_term, tau_many, thresholds
from dpstream.noise import SeedLike
from dpstream.privacy.heavy_hitters import final_delta, lazy_hh_depth
from dpstream.privacy.statement import Privacy
from dpstream.sketches import LazyCMS
from dpstream.sketches.core import PrivateSchedule
from dpstream.validation import check_delta, check_epsilon, check_open_interval, check_positive_int


class LazyHH(BlockTracker):
    """LazyHH (Holland, Alg. 6) over a d x k~ ``LazyCMS``.

    Privacy: replace-one neighbouring streams (X, X' of the same length T differ in one position
    x_l != x_l'); the whole output sequence (the reported (item, estimate) set after every update) is
    (epsilon, delta~)-DP under continual observation with delta~ = 2 delta (3/2 + e^eps + delta)
    (``final_delta``; Sec. 6.5), given beta in (0, delta) and delta < 1/2 (Lemma 6). The LazyCMS is
    itself (epsilon, delta)-DP (Thm 2: inputs 2d-neighbouring); the candidate set is not released, and
    the threshold tau2 suppresses, except with probability beta <= delta, every item whose presence in
    the candidate set depends on the neighbour. Where delta~ >= 1 (a large epsilon: ``check_final_delta``) the
    theorem guarantees nothing: such a LazyHH is not ``private`` (its ``privacy`` is None, its rows say
    ``certified: False``) and the command line refuses it.

    Algorithm: d = ceil(log2(4T/beta)) and gamma from ``calibration`` (log base 2 for the unannotated
    logs, see there). Every update goes into the sketch and into C; at t = k~, 2k~, ... (t counted from
    1) the output becomes {(y, v): y in C, v = sk.query(y) > max(tau1, tau2) + 1} (``thresholds``) and C
    keeps its top-k~ items by estimate; in between the output is held (lazy). The paper asks k~ > k;
    its experiments use k~ = k at their smallest memory, so k~ >= k is accepted.

    Beyond the paper: ``node_noise="derived"`` (its LazyCMS's node noise from a keyed Philox function,
    ``counters.DerivedBinary``: the same output distribution, a computational guarantee, memory d k~ (4 + 4) bytes)
    , ``hash_family="multiply_shift"``, ``calibration="analytic"`` and ``counter`` (any ``dpstream.counters`` name:
    gamma then bounds that counter's largest release variance, ``thresholds.lazy_cms_noise_tail``). The thresholds
    bound the larger of the two calibrations' noise (``noise_term``): unchanged wherever the analytic sigma is the
    smaller (eps below ~7).
    """

    _repr_attrs: ClassVar[dict[str, str]] = {"node_noise": "sketch.node_noise", "calibration": "sketch.calibration",
                                             "hash_family": "sketch.variant.hash_family"}

    def __init__(self, *, k: int, k_tilde: int, epsilon: float, delta: float, beta: float, horizon: int,
                 seed: SeedLike = None, node_noise: str = "stored", hash_family: str = "modp",
                 calibration: str = "classic", counter: str = "binary") -> None:
        """Validate the arguments (Lemma 6's ranges), derive d and gamma, and build the d x k~ LazyCMS."""
        self.k = check_positive_int(k, "k")
        self.k_tilde = check_positive_int(k_tilde, "k_tilde")
        if self.k_tilde < self.k:
            raise ValueError(f"k_tilde must be an integer >= k = {self.k}, got {k_tilde!r}")
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_open_interval(check_delta(delta), "delta", 0.0, 0.5)
        self.beta = check_open_interval(beta, "beta", 0.0, self.delta)
        horizon = check_positive_int(horizon, "horizon")
        if horizon < self.k_tilde:
            raise ValueError(f"horizon must be >= k_tilde = {self.k_tilde} (the first output is at t = k_tilde), "
                             f"got {horizon!r}")
        self.depth = lazy_hh_depth(horizon, self.beta)
        self.delta_tilde = final_delta(self.epsilon, self.delta)
        self.private = self.delta_tilde < 1.0  # a delta~ >= 1 states nothing: no privacy theorem at these parameters
        sketch = LazyCMS(width=self.k_tilde, depth=self.depth, epsilon=self.epsilon, delta=self.delta,
                         horizon=horizon, seed=seed, node_noise=node_noise, hash_family=hash_family,
                         calibration=calibration, counter=counter)
        assert isinstance(sketch._state, PrivateSchedule)  # a LazyCMS is private
        if sketch._state.counters.notion == "pure" and not hasattr(sketch._state.counters, "node_log_mgf"):
            raise ValueError(f"counter={counter!r} is pure DP without a noise tail the thresholds can bound; "
                             "allowed: a counter with Gaussian or Laplace node noise (binary, smooth, laplace, ...)")
        self.gamma = noise_term(horizon, self.k_tilde, self.epsilon, self.delta, self.depth, self.beta, calibration,
                                counter, node_noise)
        super().__init__(sketch, period=self.k_tilde, horizon=horizon, capacity=self.k_tilde)

    def use_line_rate(self) -> None:
        """Refresh through the watcher's kernel (``_line_rate.line_rate_run``) wherever it applies (derived nodes).

        Its releases are the node cache's up to the order of each cell's float additions (the same nodes, so the
        same noise distribution and privacy); the node sums it keeps by level are a speed cache, never saved.
        """
        cells = self.sketch._state.counters
        self._suffix = _line_rate.SuffixSums(cells.levels, cells.n)

    def prefetch_noise(self) -> None:
        """Draw each refresh's exact node noise during the previous period, on a second thread (discrete_secure).

        ``DiscreteSecureBinary.prefetch_releases``: a refresh releases every cell one push after the last, so its
        draws are known a period ahead; the same values, drawn while the next items are counted.
        """
        cells = self.sketch._state.counters
        if not hasattr(cells, "prefetch_releases"):
            raise ValueError(f"prefetch_noise() needs node_noise discrete_secure or discrete_secure_ahead, not "
                             f"{cells.node_noise!r}")
        cells.prefetch_releases()

    @property
    def deployable(self) -> bool:
        """Whether the noise may be deployed: exact discrete noise keyed from OS entropy (``LazyCMS.deployable``)."""
        return self.sketch.deployable

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta~) under continual observation for replace-one neighbouring streams; None if delta~ >= 1.

        Its LazyCMS's (epsilon, delta), read from the sketch's noise, with delta~ = ``final_delta`` of them. Over a
        pure sketch (Laplace nodes) the thresholds still fail with probability beta < delta, so delta~ is
        ``final_delta`` of the configured delta and the guarantee approximate.
        """
        sketch = self.sketch.privacy
        assert sketch is not None  # a LazyCMS at its calibrated noise (LazyHH has no noise multiplier)
        if sketch.delta == 0.0:
            sketch = replace(sketch, delta=self.delta,
                             notion="approximate" if sketch.notion == "pure" else sketch.notion)
        tilde = final_delta(sketch.epsilon, sketch.delta)
        return replace(sketch, delta=tilde) if tilde < 1.0 else None

    def _serial_args(self) -> dict[str, Any]:
        return {"k": self.k, "k_tilde": self.k_tilde, "epsilon": self.epsilon, "delta": self.delta, "beta": self.beta,
                "horizon": self.horizon, "node_noise": self.sketch.node_noise,
                "hash_family": self.sketch.variant.hash_family, "calibration": self.sketch.calibration,
                "counter": self.sketch.counter}

    @classmethod
    def _allocation_bytes(cls, args: dict[str, Any]) -> int:
        horizon = serial.size_arg(args, "horizon")
        depth = lazy_hh_depth(horizon, args["beta"])
        return LazyCMS._allocation_bytes({"width": serial.size_arg(args, "k_tilde"), "depth": depth,
                                          "horizon": horizon, "counter": args.get("counter", "binary"),
                                          "node_noise": args["node_noise"],
                                          "hash_family": args["hash_family"]})

    @classmethod
    def _working_bytes(cls, args: dict[str, Any]) -> int:
        """The sketch's working tables and the threshold's variance scan (``noise_tail_working_bytes``)."""
        horizon, k_tilde = serial.size_arg(args, "horizon"), serial.size_arg(args, "k_tilde")
        counter = args.get("counter", "binary")
        return (LazyCMS._working_bytes({"width": k_tilde, "horizon": horizon, "counter": counter,
                                        "node_noise": args["node_noise"]})
                + noise_tail_working_bytes(horizon, k_tilde, counter, args["node_noise"]))

    def thresholds(self, t: int) -> Thresholds:
        """lambda1, lambda2, tau1, tau2 and tau at output step t (Alg. 6, ``output``)."""
        return thresholds(t, self.k, self.k_tilde, self.gamma)

    def _reported_mask(self, estimates: np.ndarray, t: int) -> np.ndarray:
        return estimates > self.thresholds(t).tau

    def _thresholds_many(self, times: np.ndarray) -> np.ndarray:
        return tau_many(times, self.k, self.k_tilde, self.gamma)
