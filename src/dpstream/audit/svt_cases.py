"""The SVT audit: correct mechanisms and negative controls, each with neighbouring inputs chosen for power.

Pinning inputs (Lyu et al. Sec. 4 counterexamples): m queries answered BOTTOM then c answered TOP.
The BOTTOMs bound the noisy threshold from below, the TOPs from above; the neighbour moves every
BOTTOM query up by 1 and every TOP query down by 1, so the threshold noise cannot absorb the change
and each query's own noise pays. Correct SVT charges the TOPs only (<= c of them); a variant whose
query noise ignores c, or that has no cutoff, pays more than it claims. "Crossed" pinning puts the
BOTTOM answers at the TOP answers' level (all 0 in D1), so both kinds of query sit in the Laplace
tail where the ratio saturates. The swap event (BOTTOM, TOP) on answers (0, 1) versus (1, 0) is
impossible without query noise. Lyu et al.'s Alg. 3 is audited on answers shifted up by 1 together:
its release caps the threshold, so the BOTTOMs cannot hide behind it. ThresholdMonitor is audited
with add/remove one record on many queries near the threshold and a cap k no run reaches.

Each case names its matching control (``pair``, for controls): the same inputs and runs on a
broken variant; a correct mechanism's pass is informative only if its paired controls are flagged.

``svt_noise="discrete_secure"`` (``svt.discrete``) gives the same cases over exact discrete Laplace noise, named
``<case>_discrete_secure``, every mechanism and control built with that noise: the inputs are already integers,
only the thresholds between two answers (swap, ThresholdMonitor) move up from the half step to the next integer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from dpstream.audit.negative_controls import (
    BrokenSparseHalfNoise,
    BrokenSparseQueryNoiseSigma,
    BrokenSVTNoCutoff,
    BrokenSVTNoQueryNoise,
    BrokenSVTUnscaledQueryNoise,
    BrokenThresholdMonitorUncalibrated,
    LyuAlg3NumericSparseSameNoise,
)
from dpstream.audit.search import search_audit
from dpstream.audit.tester import AuditResult, Sampler, audit
from dpstream.privacy.svt import CONTINUOUS, check_svt_noise
from dpstream.svt import AboveThreshold, NumericSparse, Sparse, SVTRun, ThresholdMonitor
from dpstream.validation import check_choice, check_epsilon

EPSILON = 1.0
M_PIN = 10  # pinning for AboveThreshold / Sparse at c = 1: 10 BOTTOMs then 1 TOP
M_CROSS, C_CROSS = 3, 3  # crossed pinning for Sparse at c = 3 and its controls: 3 BOTTOMs then 3 TOPs
M_SHIFT = 5  # NumericSparse / Lyu Alg. 3: 8 BOTTOMs then 1 TOP, all answers shifted together
TM_QUERIES, TM_DELTA, TM_RECORDS = 2000, 0.05, 100.0  # ThresholdMonitor: m = k queries, delta_total, records


@dataclass(frozen=True)
class AuditCase:
    """One row of the audit: a mechanism (claimed (eps, delta)), two neighbouring inputs, how many runs.

    ``event``: a hand-picked event for ``audit`` (None: only the searched one); ``runs``: runs per input
    of ``search`` (chosen so the paired controls are flagged); ``pair``: for a negative control, the
    correct case with the same inputs and runs.
    """

    name: str
    mechanism: str
    broken: bool
    claimed_epsilon: float
    delta: float
    sampler: Sampler
    data_1: Any
    data_2: Any
    event: Callable[[Any], np.ndarray] | None
    neighbours: str
    runs: int
    pair: str = ""

    def run(self, n_runs: int, seed: np.random.SeedSequence | int = 0, alpha: float = 0.05) -> AuditResult:
        """Audit the hand-picked event with n_runs seeded runs per input."""
        if self.event is None:
            raise ValueError(f"audit case {self.name!r} has no hand-picked event; use search()")
        return audit(
            self.sampler, self.data_1, self.data_2, self.event, n_runs, self.claimed_epsilon, self.delta, alpha, seed
        )

    def search(
        self, n_runs: int | None = None, seed: np.random.SeedSequence | int = 0, alpha: float = 0.05
    ) -> AuditResult:
        """``search_audit`` of this case (``runs`` per input unless n_runs is given)."""
        return search_audit(
            lambda data, n, s: svt_outputs(self.sampler(data, n, s)), self.data_1, self.data_2,
            n_runs=self.runs if n_runs is None else n_runs, claimed_epsilon=self.claimed_epsilon,
            delta=self.delta, alpha=alpha, seed=seed,
        )  # fmt: skip


def svt_outputs(res: SVTRun) -> np.ndarray:
    """The released output of each run as one numeric row: outcomes, then released answers (NaN: none)."""
    return res.outcomes if res.released is None else np.hstack([res.outcomes, res.released])


def _outcomes(factory: Callable[[np.random.SeedSequence], Any]) -> Sampler:
    return lambda data, n, seed: factory(seed).run(data, n_runs=n)


def _pinning(m: int, c: int, crossed: bool = False) -> tuple[np.ndarray, np.ndarray, Callable[[Any], np.ndarray]]:
    """Pattern of m BOTTOM then c TOP queries; D2 = D1 + 1 on the BOTTOMs, - 1 on the TOPs; event: that pattern.

    D1 answers are -1 (BOTTOMs) and +1 (TOPs) around t = 0, or all 0 when ``crossed``.
    """
    d1 = np.zeros(m + c) if crossed else np.concatenate([-np.ones(m), np.ones(c)])
    d2 = d1 + np.concatenate([np.ones(m), -np.ones(c)])

    def event(res: Any) -> np.ndarray:
        o = res.outcomes
        return (o[:, :m] == 0).all(axis=1) & (o[:, m : m + c] == 1).all(axis=1)

    return d1, d2, event


def _swap_event(res: Any) -> np.ndarray:
    return (res.outcomes[:, 0] == 0) & (res.outcomes[:, 1] == 1)


def _just_above(answer: float, svt_noise: str) -> float:
    """The threshold just above ``answer``: answer + 0.5, or answer + 1 with discrete noise (integer thresholds)."""
    return answer + (0.5 if svt_noise == CONTINUOUS else 1.0)


def _monitor_sampler(build: Callable[..., Any], epsilon: float, svt_noise: str) -> Sampler:
    queries = sparse.csr_matrix(np.ones((TM_QUERIES, 1)))  # one atom; f_i(x) = 1 for every record
    threshold = _just_above(TM_RECORDS, svt_noise)

    def sampler(counts: np.ndarray, n: int, seed: np.random.SeedSequence) -> Any:
        tm = build(epsilon=epsilon, delta=TM_DELTA, threshold=threshold, k=TM_QUERIES, seed=seed, svt_noise=svt_noise)
        return tm.run(queries, counts, n_runs=n)

    return sampler


def svt_cases(ratio: float = 1.0, epsilon: float = EPSILON, svt_noise: str = CONTINUOUS) -> list[AuditCase]:
    """Every audited (mechanism, neighbours), claiming ``epsilon``.

    Negative controls are ``broken`` and name their ``pair``.

    ``ratio`` > 1 (power study): every mechanism is BUILT at ratio * epsilon but still CLAIMS epsilon, so a
    correct one has true epsilon up to ratio times its claim. ``svt_noise``: the noise every mechanism and control
    is built with; "discrete_secure" names each case ``<case>_discrete_secure`` (module docstring).
    """
    epsilon = check_epsilon(epsilon)
    eps = ratio * epsilon
    suffix = "" if check_svt_noise(svt_noise) == CONTINUOUS else f"_{svt_noise}"
    swap = (np.array([0.0, 1.0]), np.array([1.0, 0.0]))
    t_swap = _just_above(0.0, svt_noise)
    sens1 = "answers differ by <= 1 per query (sensitivity 1)"
    pin = _pinning(M_PIN, 1)
    cross = _pinning(M_CROSS, C_CROSS, crossed=True)
    shift = (np.zeros(M_SHIFT + 1), np.ones(M_SHIFT + 1))
    records = (np.array([TM_RECORDS + 1.0]), np.array([TM_RECORDS]))
    add_remove = f"add/remove one record; {TM_QUERIES} queries f_i = 1, t = n + 0.5, k = {TM_QUERIES}"

    def case(name, mechanism, broken, factory, inputs, runs, pair="", neighbours=sens1, delta=0.0, sampler=None):
        data_1, data_2, event = inputs if len(inputs) == 3 else (*inputs, None)
        sampler = sampler or _outcomes(factory)
        label = f"{mechanism}, {svt_noise}" if suffix else mechanism
        return AuditCase(name + suffix, label, broken, epsilon, delta, sampler, data_1, data_2, event, neighbours,
                         runs, pair and pair + suffix)

    def make(cls: type, **kw: Any) -> Callable[[np.random.SeedSequence], Any]:
        return lambda s: cls(epsilon=eps, seed=s, svt_noise=svt_noise, **kw)

    return [
        case("above_threshold_swap", "AboveThreshold", False, make(AboveThreshold, threshold=t_swap),
             (*swap, _swap_event), 40_000),
        case("broken_no_query_noise_swap", "BrokenSVTNoQueryNoise (Lyu Alg. 5)", True,
             make(BrokenSVTNoQueryNoise, threshold=t_swap), (*swap, _swap_event), 40_000,
             "above_threshold_swap"),
        case("above_threshold_pinning", "AboveThreshold", False, make(AboveThreshold, threshold=0.0),
             pin, 100_000),
        case("sparse_c1_pinning", "Sparse (c = 1)", False, make(Sparse, threshold=0.0, c=1), pin, 100_000),
        case("broken_sparse_half_noise_pinning", "BrokenSparseHalfNoise (c = 1)", True,
             make(BrokenSparseHalfNoise, threshold=0.0, c=1), pin, 100_000, "sparse_c1_pinning"),
        case("broken_sparse_query_noise_sigma_pinning", "BrokenSparseQueryNoiseSigma (c = 1)", True,
             make(BrokenSparseQueryNoiseSigma, threshold=0.0, c=1), pin, 100_000, "above_threshold_pinning"),
        case("sparse_pinning", "Sparse (c = 3)", False, make(Sparse, threshold=0.0, c=C_CROSS),
             cross, 40_000),
        case("broken_unscaled_query_noise_pinning", "BrokenSVTUnscaledQueryNoise (Lyu Alg. 4, c = 3)", True,
             make(BrokenSVTUnscaledQueryNoise, threshold=0.0, c=C_CROSS), cross, 40_000, "sparse_pinning"),
        case("broken_no_cutoff_pinning", "BrokenSVTNoCutoff (Lyu Alg. 6)", True,
             make(BrokenSVTNoCutoff, threshold=0.0), cross, 40_000, "sparse_pinning"),
        case("numeric_sparse_shifted", "NumericSparse (c = 1)", False,
             make(NumericSparse, threshold=0.0, c=1), shift, 2_400_000,
             neighbours="every answer + 1 (sensitivity 1)"),
        case("lyu_alg3_same_noise_shifted", "LyuAlg3NumericSparseSameNoise (Lyu Alg. 3, c = 1)", True,
             make(LyuAlg3NumericSparseSameNoise, threshold=0.0, c=1), shift, 2_400_000,
             "numeric_sparse_shifted", neighbours="every answer + 1 (sensitivity 1)"),
        case("threshold_monitor_add_remove", "ThresholdMonitor (calibrated)", False, None, records, 4000,
             neighbours=add_remove, delta=TM_DELTA, sampler=_monitor_sampler(ThresholdMonitor, eps, svt_noise)),
        case("broken_threshold_monitor_uncalibrated", "BrokenThresholdMonitorUncalibrated", True, None, records,
             4000, "threshold_monitor_add_remove", add_remove, TM_DELTA,
             _monitor_sampler(BrokenThresholdMonitorUncalibrated, eps, svt_noise)),
    ]  # fmt: skip


def svt_case(name: str, ratio: float = 1.0, epsilon: float = EPSILON, svt_noise: str = CONTINUOUS) -> AuditCase:
    """The audit case called ``name`` of ``svt_cases(ratio, epsilon, svt_noise)``."""
    cases = {c.name: c for c in svt_cases(ratio, epsilon, svt_noise)}
    return cases[check_choice(name, "audit case", list(cases))]
