"""ThresholdMonitor (Kaplan, Mansour, Stemmer, Alg. 3) and ThresholdMonitorEvolving (Alg. 5) on one compiled core."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Self

import numpy as np

from dpstream import serial
from dpstream.noise import NoiseSource, SeedLike, noise_mode
from dpstream.privacy.maps import group_of_two
from dpstream.privacy.statement import Certified, Notion, Privacy, Relation
from dpstream.privacy.svt import (
    CONTINUOUS,
    DISCRETE_SECURE,
    MonitorCalibration,
    calibrate_evolving,
    calibrate_monitor,
    check_svt_noise,
)
from dpstream.secure.laplace import MAX_CALLS, KeyedLaplace, laplace_grid
from dpstream.svt import _kernels
from dpstream.svt.discrete import integer_counts, integer_linear, integer_value
from dpstream.svt.queries import as_linear_queries, check_counts
from dpstream.svt.sparse import SVTRun
from dpstream.validation import check_delta, check_epsilon, check_positive_int


class MonitorCore(Certified, serial.Serialisable):
    """Alg. 3's loop with noise from ``calibration``: w = Lap(10 Delta), v = Lap(b), v_bar = min(v, Delta).

    No noisy threshold (t is used exactly), fresh w and v per query, v capped from above only, w never
    capped; counters per atom grow by f_i(x) on TOP only; atoms with counter >= k leave the sum.
    Never halts.

    A run's per-atom counters live inside the run (``run_many`` processes a whole query stream); across runs a
    monitor keeps its noise generator only, which ``to_bytes`` / ``from_bytes`` (``dpstream.serial``) write
    with the constructor arguments (SECRET, see ``serial.Serialisable.to_bytes``): a restored monitor's next
    runs draw the same noise as the original's.

    ``svt_noise="discrete_secure"``: f_i(x) in {0, 1}, integer counts and threshold (one-line errors otherwise); w
    and v exact discrete Laplace at the calibrated scales rounded up to rationals t/s (``grids``), from a ChaCha20 key
    (``dpstream.secure.laplace``; nonces (role w or v, run call, run, query)), the cap floor(Delta) (on integers
    min(v, Delta) and min(v, floor(Delta)) decide alike), integer decisions; ``to_bytes`` writes the key and the
    call count. Calibrated with Thm 3.2 redone for discrete noise (``privacy.svt.thm32_xi_discrete``, derivation in
    docs/secure-noise.md: v's tail beyond the cap is e^{-(D+1)/b'} / (1 + e^{-1/b'}) instead of 1/(2b), which
    raises the cost of a special-almost-top); the guarantee is computational (ChaCha20 as a pseudorandom
    function). ``deployable`` when keyed from OS entropy (no seed).
    """

    _args: dict[str, Any]
    _repr_attrs: ClassVar[dict[str, str]] = {"epsilon": "_args.epsilon", "delta": "_args.delta"}

    def __init__(self, calibration: MonitorCalibration, threshold: float, seed: SeedLike,
                 svt_noise: str = CONTINUOUS) -> None:
        """Hold ``calibration``'s noise scales, the exact ``threshold`` t and a generator seeded from ``seed``."""
        self.svt_noise = check_svt_noise(svt_noise)
        if not math.isfinite(threshold):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        self.calibration = calibration
        self.threshold: float | int = float(threshold)
        self.k = calibration.k
        self.noise = NoiseSource(seed)
        self._keyed: KeyedLaplace | None = None
        self.grids: dict[str, tuple[int, int]] = {}
        if self.svt_noise == DISCRETE_SECURE:
            self.threshold = integer_value(threshold, "threshold")
            self.grids = {"w": laplace_grid(calibration.w_scale), "v": laplace_grid(calibration.v_scale)}
            self.int_cap = math.floor(calibration.cap)
            self.paper_constants = calibration.svt_noise == DISCRETE_SECURE  # the discrete proof's constants
            self._keyed = KeyedLaplace(seed)

    @property
    def deployable(self) -> bool:
        """Exact discrete noise keyed from OS entropy (no seed) and a certified setting."""
        return self._keyed is not None and not self._keyed.seeded and self.certified

    @property
    def notion(self) -> Notion | None:
        """"computational" with discrete noise (keyed ChaCha20 as a pseudorandom function), else by delta."""
        return "computational" if self.svt_noise == DISCRETE_SECURE else None

    def draw_noise(self, m: int, n_runs: int = 1) -> dict[str, np.ndarray]:
        """Draw W (R, m) at scale 10 Delta, then v (R, m) at scale b = ln(1/delta)/eps (uncapped; the kernel caps)."""
        if self._keyed is not None:
            call = self._keyed.next_call()
            return {role: self._keyed.draw(role, self.grids[role], call, n_runs, 0, m) for role in ("w", "v")}
        return {
            "w": self.noise.laplace(self.calibration.w_scale, (n_runs, m)),
            "v": self.noise.laplace(self.calibration.v_scale, (n_runs, m)),
        }

    def run(
        self, queries: object, counts: np.ndarray | None = None, *, n_runs: int = 1, noise: dict | None = None
    ) -> SVTRun:
        """R independent runs over linear queries on the database ``counts`` (records per atom; required)."""
        if counts is None:
            raise ValueError(f"{type(self).__name__} runs linear queries on a database: counts is required, got None")
        if self._keyed is not None:
            return self._run_discrete(queries, counts, n_runs, noise)
        linear = as_linear_queries(queries, type(self).__name__)
        counts = check_counts(counts, linear.n_atoms)
        n_runs = check_positive_int(n_runs, "n_runs")
        noise = self.draw_noise(linear.m, n_runs) if noise is None else noise
        out = np.empty((n_runs, linear.m), dtype=np.int8)
        values = np.empty((n_runs, linear.m))
        q = linear.matrix
        _kernels.monitor_pass(
            counts, q.indptr, q.indices, q.data, noise["w"], noise["v"], self.calibration.cap,
            self.threshold, float(self.k), out, values,
        )  # fmt: skip
        return SVTRun(out, noise, values=values)

    def _run_discrete(self, queries: object, counts: np.ndarray, n_runs: int, noise: dict | None) -> SVTRun:
        """``run`` on integers: {0, 1} queries, integer counts, discrete noise, ``_kernels.monitor_pass_int``."""
        linear = integer_linear(queries, type(self).__name__)
        db = integer_counts(counts, linear.n_atoms)
        n_runs = check_positive_int(n_runs, "n_runs")
        noise = self.draw_noise(linear.m, n_runs) if noise is None else noise
        q = linear.matrix.copy()
        q.eliminate_zeros()  # the kernel reads the pattern as the ones
        out = np.empty((n_runs, linear.m), dtype=np.int8)
        values = np.empty((n_runs, linear.m), dtype=np.int64)
        _kernels.monitor_pass_int(db, q.indptr.astype(np.int64), q.indices.astype(np.int64), noise["w"], noise["v"],
                                  np.int64(self.int_cap), np.int64(self.threshold), np.int64(self.k), out, values)
        return SVTRun(out, noise, values=values, deployable=self.deployable)


    # -- serialisation hooks (``dpstream.serial``) -------------------------------------------------------------
    def _serial_args(self) -> dict[str, Any]:
        return dict(self._args)

    @classmethod
    def _rebuild(cls, args: dict[str, Any]) -> Self:
        with noise_mode("numpy"):  # the stored mode is restored with the generator state
            return cls(**args)

    @classmethod
    def _allocation_bytes(cls, args: dict[str, Any]) -> int:
        return 0

    def _state_scalars(self) -> dict[str, Any]:
        keyed = {} if self._keyed is None else {"svt_calls": self._keyed.calls}
        return {**serial.noise_state(self.noise), **keyed}

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        serial.restore_noise(self.noise, scalars)
        if self._keyed is not None:
            self._keyed.calls = serial.int_in(scalars["svt_calls"], "svt_calls", 0, MAX_CALLS)
            self._keyed.seeded = True  # the written key replaces the fresh one: never deployable once restored

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {} if self._keyed is None else {"key": self._keyed.key}


class ThresholdMonitor(MonitorCore):
    """ThresholdMonitor (Kaplan, Mansour, Stemmer, Alg. 3): SVT that never halts, each record answers <= k TOPs.

    Privacy: (epsilon, delta)-DP (the total guarantee, ``calibration.epsilon_total`` / ``delta_total``; the
    calibration's own epsilon, delta are Alg. 3's noise parameters) for add/remove-one-record neighbours, via
    ``calibrate_monitor`` (Thm 3.2 = Option A or Thm 3.8 = Option B, whichever adds less noise; recorded in
    ``calibration.option``). Queries must be linear with f_i(x) in [0, 1]. Accuracy (Thm 3.1) is
    relative to the pruned database S_i. ``kappa`` < 1 scales all noise by kappa: NOT privacy-certified.
    ``svt_noise="discrete_secure"``: the same (epsilon, delta) and neighbours, f_i(x) in {0, 1}, calibrated with
    the discrete constants (``privacy.svt.thm32_xi_discrete``), computationally (see ``MonitorCore``).
    """

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        threshold: float,
        k: int,
        seed: SeedLike = None,
        kappa: float = 1.0,
        svt_noise: str = CONTINUOUS,
    ) -> None:
        """Validate (epsilon, delta) and calibrate_monitor the noise (``calibrate_monitor``, scaled by ``kappa``)."""
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
        super().__init__(calibrate_monitor(epsilon, delta, k, kappa, svt_noise), threshold, seed, svt_noise)
        self.kappa = self.calibration.kappa
        self.paper_constants = self.paper_constants and self.calibration.option in ("A", "B")
        self._args = {"epsilon": epsilon, "delta": delta, "threshold": self.threshold, "k": self.k,
                      "kappa": self.calibration.kappa, "svt_noise": self.svt_noise}

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon_total, delta_total) for add/remove-one-record neighbours; None when kappa < 1 (NOT certified).

        Computational with ``svt_noise="discrete_secure"``.
        """
        return self.calibration.privacy_map.statement(Relation.ADD_REMOVE_RECORD, self.notion)


class ThresholdMonitorEvolving(MonitorCore):
    """ThresholdMonitorEvolving (Alg. 5, "TME"): fresh user inputs each step, counters per user, users excluded.

    Atom a = a group of users that hold equal inputs throughout; row i of the query matrix holds
    f_i(x_{i,j}) per user group, so excluded users (counter >= k) drop out of later sums but are
    never deleted from the population. Privacy: (epsilon, delta)-DP for replace-one-user
    neighbours over the whole stream (Thm 4.4), calibrated through group privacy to be safe:
    calibrate_monitor(eps/2, delta/(1 + e^{eps/2}), k), since replace = remove + add costs (2 eps, (1 + e^eps) delta).
    That step is group privacy (a group of two add/remove neighbours), not a composition of parts' statements, so
    the budget is stated directly, not with ``dpstream.privacy.compose``. ``svt_noise="discrete_secure"``: the same
    (epsilon, delta) and neighbours, f_i in {0, 1}, with ``calibrate_monitor``'s discrete constants, computationally
    (Thm 4.4's reduction to ThresholdMonitor and group privacy do not depend on the noise).
    """

    def __init__(
        self, *, epsilon: float, delta: float, threshold: float, k: int, seed: SeedLike = None,
        svt_noise: str = CONTINUOUS,
    ) -> None:
        """Calibrate by group privacy: ``calibrate_evolving`` = calibrate_monitor(eps/2, delta/(1 + e^{eps/2}), k)."""
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
        super().__init__(calibrate_evolving(epsilon, delta, k, svt_noise), threshold, seed, svt_noise)
        self.epsilon_total, self.delta_total = epsilon, delta
        self._args = {"epsilon": epsilon, "delta": delta, "threshold": self.threshold, "k": self.k,
                      "svt_noise": self.svt_noise}

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon_total, delta_total), replace-one-user neighbours, whole stream (Thm 4.4).

        Group privacy (``maps.group_of_two``) of the guarantee the noise parameters held buy for add/remove-one-record
        neighbours. Computational with ``svt_noise="discrete_secure"``.
        """
        inner = self.calibration.privacy_map.statement(Relation.ADD_REMOVE_RECORD, self.notion)
        return group_of_two(inner, Relation.REPLACE_ONE_USER)
