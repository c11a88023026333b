"""Noise draws and audit cases of the families a new variant usually builds on (sparse vector, binary tree)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpstream.privacy.svt import CONTINUOUS, DISCRETE_SECURE, check_svt_noise
from dpstream.secure.laplace import laplace_grid
from dpstream.testing.spec import AuditCase, NoiseDraws

DRAWS = 4000
"""Noise values per formula: the scale is then checked to about 5 / sqrt(4000) = 8% (Laplace)."""


def svt_draws(what: str, samples: np.ndarray, scale: float, formula: str = "",
              svt_noise: str = CONTINUOUS) -> NoiseDraws:
    """``samples`` against the law a sparse-vector mechanism draws its calibrated ``scale`` from.

    Laplace(scale); with ``svt_noise="discrete_secure"`` the discrete Laplace at ``scale`` rounded up to the grid t/s
    (``secure.laplace.laplace_grid``, the rounding the mechanism applies). ``what`` and ``formula`` name it in
    messages.
    """
    if check_svt_noise(svt_noise) == DISCRETE_SECURE:
        t, s = laplace_grid(scale)
        return NoiseDraws(f"{what} DLap({t}/{s}) {formula}".strip(), samples, t / s, "discrete_laplace")
    return NoiseDraws(f"{what} Lap({scale:.6g}) {formula}".strip(), samples, scale, "laplace")


def sparse_noise(mechanism: Any, threshold_scale: float, query_scale: float, answer_scale: float | None = None,
                 formula: str = "", svt_noise: str = CONTINUOUS) -> list[NoiseDraws]:
    """Threshold, query (and released answer) noise of a sparse-vector mechanism (``draw_noise``) against scales.

    The scales are those the calibration gives at the configuration (e.g. ``sparse_sigma(eps, c, delta)`` and twice
    it); ``formula`` names the calibration in messages; ``svt_noise`` the law they are drawn from (``svt_draws``).
    """
    n_thr = max(1, DRAWS // max(1, mechanism.cutoff or 1))
    drawn = mechanism.draw_noise(DRAWS, n_runs=n_thr)
    scales = {"threshold": (threshold_scale, drawn["threshold"]), "query": (query_scale, drawn["query"][0])}
    if answer_scale is not None:
        scales["answer"] = (answer_scale, drawn["answer"])
    return [svt_draws(f"{role} noise", samples, scale, formula, svt_noise)
            for role, (scale, samples) in scales.items()]


def gauss_bm_noise(mechanism: Any, sigma: float, formula: str = "") -> list[NoiseDraws]:
    """The first release of every counter of a ``GaussBM`` fed zeros: one node, N(0, sigma^2) each."""
    mechanism.update_all(np.zeros(mechanism.n, dtype=np.int64))
    return [NoiseDraws(f"node noise N(0, {sigma:.6g}^2) {formula}".strip(), mechanism.query_all(), sigma, "gaussian")]


def svt_audit(factory: Callable[..., Any], config: dict[str, Any], answers: np.ndarray, claimed_epsilon: float,
              n_runs: int = 4000) -> AuditCase:
    """A search audit of a sparse-vector mechanism on ``answers`` against every answer + 1 (sensitivity 1)."""

    def sampler(data: np.ndarray, n: int, seed: np.random.SeedSequence) -> np.ndarray:
        return factory(**config, seed=seed).run(data, n_runs=n).outcomes

    return AuditCase(sampler, np.asarray(answers, dtype=np.float64), np.asarray(answers, dtype=np.float64) + 1.0,
                     claimed_epsilon, 0.0, n_runs)


def gauss_bm_audit(factory: Callable[..., Any], config: dict[str, Any], data_1: np.ndarray, data_2: np.ndarray,
                   claimed_epsilon: float, delta: float, n_runs: int = 4000) -> AuditCase:
    """A search audit of a binary-mechanism counter array on one counter's increments ``data_1`` vs ``data_2``.

    One run is one counter: ``factory(**config, n=n, seed=s)`` builds n independent counters (independent node
    noise), every counter takes the same increments, and a run's output is its releases at steps 1..T. The
    increments differ by 1 at one step: neighbours for m >= 1 (``Relation.M_NEIGHBOURING_COUNTERS``).
    """
    data_1, data_2 = np.asarray(data_1, dtype=np.int64), np.asarray(data_2, dtype=np.int64)

    def sampler(data: np.ndarray, n: int, seed: np.random.SeedSequence) -> np.ndarray:
        mechanism = factory(**config, n=n, seed=seed)
        out = np.empty((n, data.shape[0]))
        for step, c in enumerate(data):
            mechanism.update_all(np.full(n, c, dtype=np.int64))
            out[:, step] = mechanism.query_all()
        return out

    return AuditCase(sampler, data_1, data_2, claimed_epsilon, delta, n_runs)
