"""The SVT audit: correct mechanisms and Lyu-Su-Li negative controls, each with neighbours and an event.

Pinning event (Lyu et al. Sec. 4 counterexamples): m queries answered BOTTOM then c answered TOP.
The BOTTOMs bound the noisy threshold from below, the TOPs from above; the neighbour moves every
BOTTOM query up by 1 and every TOP query down by 1, so the threshold noise cannot absorb the change
and each query's own noise pays. Correct SVT charges the TOPs only (<= c of them); a variant whose
query noise ignores c, or that has no cutoff, pays more than it claims. The swap event (BOTTOM, TOP)
on answers (0, 1) versus (1, 0) is impossible without query noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from dpstream.audit.negative_controls import BrokenSVTNoCutoff, BrokenSVTNoQueryNoise, BrokenSVTUnscaledQueryNoise
from dpstream.audit.tester import AuditResult, Sampler, audit
from dpstream.svt import AboveThreshold, NumericSparse, Sparse, ThresholdMonitor
from dpstream.validation import check_choice, check_epsilon

EPSILON = 1.0  # the default claimed epsilon (the audit_svt experiment's)
M_BOTTOM, C_TOP, OFFSET = 8, 3, 1.0  # pinning event: 8 BOTTOMs then 3 TOPs, answers -/+ 1 around t = 0


@dataclass(frozen=True)
class AuditCase:
    """One row of the audit: a mechanism (claimed (eps, delta)), two neighbouring inputs, an event."""

    name: str
    mechanism: str
    broken: bool
    claimed_epsilon: float
    delta: float
    sampler: Sampler
    data_1: Any
    data_2: Any
    event: Callable[[Any], np.ndarray]
    neighbours: str

    def run(self, n_runs: int, seed: np.random.SeedSequence | int = 0, alpha: float = 0.05) -> AuditResult:
        """Audit this case with n_runs seeded runs per input."""
        return audit(
            self.sampler, self.data_1, self.data_2, self.event, n_runs, self.claimed_epsilon, self.delta, alpha, seed
        )


def _outcomes(factory: Callable[[np.random.SeedSequence], Any]) -> Sampler:
    return lambda data, n, seed: factory(seed).run_many(data, n)


def _pinning(m: int, c: int) -> tuple[np.ndarray, np.ndarray, Callable[[Any], np.ndarray]]:
    d1 = np.concatenate([-OFFSET * np.ones(m), OFFSET * np.ones(c)])
    d2 = d1 + np.concatenate([np.ones(m), -np.ones(c)])

    def event(res: Any) -> np.ndarray:
        o = res.outcomes
        return (o[:, :m] == 0).all(axis=1) & (o[:, m : m + c] == 1).all(axis=1)

    return d1, d2, event


def _swap_event(res: Any) -> np.ndarray:
    return (res.outcomes[:, 0] == 0) & (res.outcomes[:, 1] == 1)


def svt_cases(epsilon: float = EPSILON) -> list[AuditCase]:
    """Every audited (mechanism, neighbours, event) at claimed ``epsilon``; negative controls are ``broken``."""
    swap = (np.array([0.0, 1.0]), np.array([1.0, 0.0]))
    sens1 = "answers differ by <= 1 per query (sensitivity 1)"
    d1, d2, pin = _pinning(M_BOTTOM, C_TOP)
    d1_at, d2_at, pin_at = _pinning(M_BOTTOM, 1)

    def numeric_event(res: Any) -> np.ndarray:  # the pattern and the first released answer above t
        return pin(res) & (res.released[:, M_BOTTOM] > 0.0)

    # ThresholdMonitor: add/remove one record of the only atom; linear queries f_i(x) = 1.
    tm_queries = sparse.csr_matrix(np.ones((M_BOTTOM + C_TOP, 1)))

    def tm_sampler(counts: np.ndarray, n: int, seed: np.random.SeedSequence) -> Any:
        return ThresholdMonitor(epsilon, 1e-6, threshold=5.0, k=C_TOP, seed=seed).run_many(tm_queries, counts, n)

    def tm_event(res: Any) -> np.ndarray:
        return (res.outcomes[:, :M_BOTTOM] == 0).all(axis=1)

    return [
        AuditCase(
            "above_threshold_swap",
            "AboveThreshold",
            False,
            epsilon,
            0.0,
            _outcomes(lambda s: AboveThreshold(epsilon, 0.5, seed=s)),
            *swap,
            _swap_event,
            sens1,
        ),
        AuditCase(
            "above_threshold_pinning",
            "AboveThreshold",
            False,
            epsilon,
            0.0,
            _outcomes(lambda s: AboveThreshold(epsilon, 0.0, seed=s)),
            d1_at,
            d2_at,
            pin_at,
            sens1,
        ),
        AuditCase(
            "sparse_pinning",
            "Sparse",
            False,
            epsilon,
            0.0,
            _outcomes(lambda s: Sparse(epsilon, 0.0, C_TOP, seed=s)),
            d1,
            d2,
            pin,
            sens1,
        ),
        AuditCase(
            "numeric_sparse_pinning",
            "NumericSparse",
            False,
            epsilon,
            0.0,
            _outcomes(lambda s: NumericSparse(epsilon, 0.0, C_TOP, seed=s)),
            d1,
            d2,
            numeric_event,
            sens1,
        ),
        AuditCase(
            "threshold_monitor_add_remove",
            "ThresholdMonitor",
            False,
            epsilon,
            1e-6,
            tm_sampler,
            np.array([6.0]),
            np.array([5.0]),
            tm_event,
            "add/remove one record",
        ),
        AuditCase(
            "broken_no_query_noise_swap",
            "BrokenSVTNoQueryNoise (Lyu Alg. 5)",
            True,
            epsilon,
            0.0,
            _outcomes(lambda s: BrokenSVTNoQueryNoise(epsilon, 0.5, seed=s)),
            *swap,
            _swap_event,
            sens1,
        ),
        AuditCase(
            "broken_unscaled_query_noise_pinning",
            "BrokenSVTUnscaledQueryNoise (Lyu Alg. 4)",
            True,
            epsilon,
            0.0,
            _outcomes(lambda s: BrokenSVTUnscaledQueryNoise(epsilon, 0.0, C_TOP, seed=s)),
            d1,
            d2,
            pin,
            sens1,
        ),
        AuditCase(
            "broken_no_cutoff_pinning",
            "BrokenSVTNoCutoff (Lyu Alg. 6)",
            True,
            epsilon,
            0.0,
            _outcomes(lambda s: BrokenSVTNoCutoff(epsilon, 0.0, seed=s)),
            d1,
            d2,
            pin,
            sens1,
        ),
    ]


def svt_case(name: str, epsilon: float = EPSILON) -> AuditCase:
    """The audit case called ``name``, its mechanism run at (and claiming) ``epsilon``."""
    cases = {c.name: c for c in svt_cases(check_epsilon(epsilon))}
    return cases[check_choice(name, "audit case", list(cases))]
