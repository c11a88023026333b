"""LazyHH: k-heavy hitters under continual observation with a lazily refreshed output (Holland, Alg. 6)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from dpstream import serial
from dpstream.heavy_hitters import _line_rate
from dpstream.heavy_hitters._tracker import BlockTracker, HeavyHitters, as_items
from dpstream.heavy_hitters.thresholds import Thresholds, noise_tail_working_bytes, noise_term, tau_many, thresholds
from dpstream.noise import SeedLike
from dpstream.privacy.heavy_hitters import final_delta, lazy_hh_depth
from dpstream.privacy.statement import Privacy
from dpstream.sketches import LazyCMS
from dpstream.sketches.core import PrivateSchedule
from dpstream.validation import check_delta, check_epsilon, check_open_interval, check_positive_int

FLUSH_NOISE = ("derived", "discrete_secure", "discrete_secure_ahead")
"""Node noise ``flush_every`` > 1 runs with: exact pushes, noise drawn at release (``_line_rate.flushed_refreshes``)."""


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
    ``counters.BinaryTree(node_noise="derived")``: the same output distribution, a computational guarantee, memory d k~
    (4 + 4) bytes)
    , ``hash_family="multiply_shift"``, ``calibration="analytic"`` and ``counter`` (any ``dpstream.counters`` name:
    gamma then bounds that counter's largest release variance, ``thresholds.lazy_cms_noise_tail``). The thresholds
    bound the larger of the two calibrations' noise (``noise_term``): unchanged wherever the analytic sigma is the
    smaller (eps below ~7).

    ``flush_every`` B (beyond the paper; 1 is Alg. 6 exactly): the counters step once per B k~ items, not once per
    k~, and the output is refreshed every B k~ items. Column j of the exact array P is pushed into its counter after
    item j B + B - 1 of each period of B k~ items (Alg. 5 with one push every B items, d pushes per B items). Each
    change below re-runs Holland's proof (Lemmas 6, 10, 11) with the period B k~:
    - Privacy (Thm 2): the push schedule is fixed by the item count alone (public under replace-one neighbours);
      each cell sees ceil(T/(B k~)) pushes and replacing one item changes one push of at most 2d cells by 1, so
      every cell is GaussBM(ceil(T/(B k~)), eps, delta, m = 2d): the LazyCMS is built with horizon ceil(T/B), its
      clock ``sketch.t`` counting push slots (one per B items).
    - Noise (Lemma 4 / 6): n = d k~ counters over |I| = ceil(T/(B k~)) steps, so gamma_B = ``noise_term`` at B
      (fewer levels: gamma_B <= gamma).
    - Lazy delay: at a refresh (t a multiple of B k~) column j's last push followed item j B + B - 1 of the period,
      so at most B k~ - jB - B < B k~ items of a cell are pending: the released count underestimates by at most
      B k~, and lambda1 = gamma_B + B k~ (Alg. 6: gamma + k~).
    - Collisions: lambda2 = 2t/k~ + gamma_B as before (the width is still k~); its union bound runs over the
      ceil(T/(B k~)) refreshes times at most (B + 1) k~ candidates each (k~ kept and a period's B k~ items), at most
      2T pairs as at B = 1, so d = ceil(log2(4T/beta)) still suffices.
    - Lemma 10: an item y out of C at t was cut at the last refresh r <= t after its last occurrence, with f_{y,t} =
      f_{y,r} <= r/k~ + lambda1 + lambda2 (either outside the exact top-k~, f <= r/k~, or displaced by some z outside
      it: f_y - lambda1 <= est(y) <= est(z) <= f_z + lambda2 <= r/k~ + lambda2), with lambda1 at B.
    - Lemma 11: an item in one candidate set only has estimate <= f + 1 + lambda2 <= t/k~ + lambda1 + 2 lambda2 + 1
      = tau2 + 1 <= tau on the neighbour: tau2 = t/k~ + lambda1 + 2 lambda2 with lambda1 and gamma at B.
    So delta~ and the privacy statement are unchanged; what B costs is a release every B k~ items at the soonest and
    the B k~ in lambda1 (``thresholds``). B > 1 needs node noise that is pushed exactly and drawn at release
    (derived, discrete_secure, discrete_secure_ahead: one whole-table release a refresh, ~d/B node draws an item)
    and whole periods of B k~ items per ``extend``; it runs ``_line_rate.flushed_refreshes`` and is never saved
    (``to_bytes`` refuses it: the watcher saves no secret state).
    """

    _repr_attrs: ClassVar[dict[str, str]] = {"node_noise": "sketch.node_noise", "calibration": "sketch.calibration",
                                             "hash_family": "sketch.variant.hash_family"}

    def __init__(self, *, k: int, k_tilde: int, epsilon: float, delta: float, beta: float, horizon: int,
                 seed: SeedLike = None, node_noise: str = "stored", hash_family: str = "modp",
                 calibration: str = "classic", counter: str = "binary", flush_every: int = 1) -> None:
        """Validate the arguments (Lemma 6's ranges), derive d and gamma, and build the d x k~ LazyCMS."""
        self.flush_every = check_positive_int(flush_every, "flush_every")
        if self.flush_every > 1 and (node_noise not in FLUSH_NOISE or counter != "binary"):
            raise ValueError(f"flush_every={flush_every!r} > 1 needs counter='binary' with node_noise one of "
                             f"{', '.join(FLUSH_NOISE)} (pushed exactly, drawn at release), got counter={counter!r}, "
                             f"node_noise={node_noise!r}")
        self.k = check_positive_int(k, "k")
        self.k_tilde = check_positive_int(k_tilde, "k_tilde")
        if self.k_tilde < self.k:
            raise ValueError(f"k_tilde must be an integer >= k = {self.k}, got {k_tilde!r}")
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_open_interval(check_delta(delta), "delta", 0.0, 0.5)
        self.beta = check_open_interval(beta, "beta", 0.0, self.delta)
        horizon = check_positive_int(horizon, "horizon")
        if horizon < self.k_tilde * self.flush_every:
            first = (f"k_tilde = {self.k_tilde}" if self.flush_every == 1
                     else f"k_tilde x flush_every = {self.k_tilde * self.flush_every}")
            raise ValueError(f"horizon must be >= {first} (the first output is at t = {first.split(' = ')[0]}), got "
                             f"{horizon!r}")
        self.depth = lazy_hh_depth(horizon, self.beta)
        self.delta_tilde = final_delta(self.epsilon, self.delta)
        self.private = self.delta_tilde < 1.0  # a delta~ >= 1 states nothing: no privacy theorem at these parameters
        sketch = LazyCMS(width=self.k_tilde, depth=self.depth, epsilon=self.epsilon, delta=self.delta,
                         horizon=-(-horizon // self.flush_every), seed=seed, node_noise=node_noise,
                         hash_family=hash_family, calibration=calibration, counter=counter)
        assert isinstance(sketch._state, PrivateSchedule)  # a LazyCMS is private
        if sketch._state.counters.notion == "pure" and not hasattr(sketch._state.counters, "node_log_mgf"):
            raise ValueError(f"counter={counter!r} is pure DP without a noise tail the thresholds can bound; "
                             "allowed: a counter with Gaussian or Laplace node noise (binary, smooth, laplace, ...)")
        self.gamma = noise_term(horizon, self.k_tilde, self.epsilon, self.delta, self.depth, self.beta, calibration,
                                counter, node_noise, self.flush_every)
        super().__init__(sketch, period=self.k_tilde * self.flush_every, horizon=horizon, capacity=self.k_tilde)
        if self.flush_every > 1 and node_noise == "derived":
            self.use_line_rate()

    def extend(self, items: Any) -> None:
        """Process ``items`` in order (``BlockTracker.extend``); with ``flush_every`` B > 1 whole periods of B k~."""
        if self.flush_every == 1:
            super().extend(items)
            return
        items = as_items(items)
        if self._t + items.size > self.horizon:
            raise ValueError(f"stream longer than horizon={self.horizon}: {self._t} items seen, {items.size} more "
                             "given; set horizon to the stream length T = |X|")
        if items.size % self.period:
            raise ValueError(f"a LazyHH with flush_every={self.flush_every} takes whole periods of k_tilde x "
                             f"flush_every = {self.period} items per extend, got {items.size}")
        if not items.size:
            return
        taus = self._thresholds_many(self._t + self.period * np.arange(1, items.size // self.period + 1))
        result = _line_rate.flushed_refreshes(self.sketch, items, self.flush_every, taus, self.k_tilde,
                                              self._candidates, self._suffix)
        self._t += items.size
        self._candidates = result.candidates
        self._output = HeavyHitters(result.items, result.estimates, self._t)

    def _sketch_time(self, t: int) -> int:
        """The sketch's clock after t items: push slots, one per ``flush_every`` items."""
        return t // self.flush_every

    @property
    def memory_bytes(self) -> int:
        """The tracker's memory plus the line-rate node sums (``use_line_rate``)."""
        return super().memory_bytes + (self._suffix.nbytes if self._suffix is not None else 0)

    def use_line_rate(self) -> None:
        """Refresh through the watcher's kernel (``_line_rate.line_rate_run``) wherever it applies (derived nodes).

        Its releases are the node cache's up to the order of each cell's float additions (the same nodes, so the
        same noise distribution and privacy); the node sums it keeps by level are a speed cache, never saved.
        """
        cells = self.sketch._state.counters
        self._suffix = _line_rate.SuffixSums(cells.levels, cells.n)

    def prefetch_noise(self) -> None:
        """Draw each refresh's exact node noise during the previous period, on a second thread (discrete_secure).

        ``BinaryTree(node_noise="discrete_secure").prefetch_releases``: a refresh releases every cell one push after
        the last, so its
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

    def _state_scalars(self) -> dict[str, Any]:
        if self.flush_every > 1:
            raise ValueError(f"a LazyHH with flush_every={self.flush_every} is not saved (it runs in dpstream watch, "
                             "which saves no secret state); allowed: flush_every=1")
        return super()._state_scalars()

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
        return thresholds(t, self.k, self.k_tilde, self.gamma, self.flush_every)

    def _reported_mask(self, estimates: np.ndarray, t: int) -> np.ndarray:
        return estimates > self.thresholds(t).tau

    def _thresholds_many(self, times: np.ndarray) -> np.ndarray:
        return tau_many(times, self.k, self.k_tilde, self.gamma, self.flush_every)
