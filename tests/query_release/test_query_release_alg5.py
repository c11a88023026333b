"""Algorithm 5 (AnalystPrivateMW).

Printed constants, accounting, noise vs calibration, behaviour; the Alg 3 crossover; the workload adjoint it uses.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf
from scipy import stats

from dpstream.privacy.query_release import (
    alg5_analyst_epsilon,
    alg5_data_epsilon,
    alg5_parameters,
    hru_crossover,
    hru_synopsis_bound,
)
from dpstream.query_release import Conjunctions, MatrixWorkload, histogram, product_mixture
from dpstream.query_release.alg5 import AnalystPrivateMW, AnalystPrivateMWScaledUNCERTIFIED
from dpstream.query_release.workloads import conjunction_subset, make_workload
from dpstream.trials.query_release import crossover_trial, run_trial

CONF = Path(__file__).resolve().parents[2] / "conf"
SCALED = {"c_s": 0.5, "c_n_hat": 32.0, "c_sigma": 1.3e-4, "c_tau": 5.2e-4}


def problem(n: int, d: int, seed: int = 0) -> tuple[Conjunctions, np.ndarray, np.ndarray]:
    work = Conjunctions(d)
    true = work.answers(histogram(product_mixture(n, d, seed=seed), d))
    return work, true, work.answers(np.full(2**d, 2.0**-d))


def test_paper_parameters_match_the_printed_formulas_at_n_4000_d_12() -> None:
    n, eps, delta, beta, k = 4000, 1.0, 1e-6, 0.05, 3**12
    lx, lk = 12 * math.log(2), math.log(4 * k / beta)
    p = alg5_parameters(n, eps, delta, k, 2**12, beta)
    assert p["tau"] == pytest.approx(80000 * lx**0.75 * lk**1.25 * math.log(4 / delta) ** 1.25 / n**0.4, rel=1e-12)
    assert p["sigma"] == pytest.approx(20000 * lx**0.75 * lk**0.25 * math.log(4 / delta) ** 1.25 / n**0.4, rel=1e-12)
    assert p["s"] == pytest.approx(128 * n**0.4 * math.sqrt(lx * lk * math.log(1 / delta)), rel=1e-12)
    assert p["n_hat"] == math.ceil(32 * n**0.8 * lk) and p["T"] == math.ceil(n**0.8 * lx)
    assert p["R"] == math.ceil(2 * p["s"] * p["T"])
    assert 1.4e7 < p["tau"] < 1.6e7 and 2.0e5 < p["sigma"] < 2.3e5  # the "tau ~ 1.5e7, sigma ~ 2e5"


@pytest.mark.parametrize(("n", "d", "eps"), [(250, 8, 1.0), (4000, 12, 1.0), (10**6, 12, 10.0)])
def test_paper_constants_meet_theorem_5_6_and_5_8_at_every_scale(n: int, d: int, eps: float) -> None:
    delta = 1e-6
    p = alg5_parameters(n, eps, delta, 3**d, 2**d)
    # sigma / (1000 sqrt(R) ln(4/delta) / (eps n)) = 1.25 (ln(4/delta) / ln(1/delta))^{1/4} before rounding T, R
    ratio = 1.25 * (math.log(4 / delta) / math.log(1 / delta)) ** 0.25
    assert alg5_data_epsilon(n, delta, p["sigma"], p["R"]) == pytest.approx(eps / ratio, rel=0.01)
    # Claim 5.10 by DRV: a = eps0 sqrt(2 n^ T ln(1/delta)) = eps / 8 before rounding, plus n^ T eps0 (e^eps0 - 1)
    # ~ a^2 / (2 ln(1/delta)); + eps/2 (Claim 5.9). Rounding n^ and T up adds < 1%.
    a = eps / 8
    eps_a = alg5_analyst_epsilon(eps, p["eta"], p["s"], p["n_hat"], p["T"], delta)
    assert eps_a == pytest.approx(eps / 2 + a + a**2 / (2 * math.log(1 / delta)), rel=0.01) and eps_a <= eps


def test_paper_constants_release_the_uniform_distribution() -> None:
    work, true, uniform = problem(500, 8)
    release = AnalystPrivateMW(workload=work, epsilon=1.0, delta=1e-6, n=500, seed=1).run(true)
    assert release.info["bad_rounds"] == 0 and release.info["epochs"] == 0
    assert np.array_equal(release.answers, uniform)
    assert release.eps_data <= 1.0 and release.eps_analyst <= 1.0 and release.info["p_any_bad_bound"] < 1e-12


def test_bad_rounds_add_exactly_the_calibrated_laplace_noise() -> None:
    work, true, _ = problem(1000, 8)
    mech = AnalystPrivateMWScaledUNCERTIFIED(workload=work, epsilon=1.0, delta=1e-6, n=1000, seed=2, **SCALED)
    release = mech.run(true)
    z = release.trace["z"]
    # KS of the 6,561 drawn z_i against Lap(sigma) from privacy.query_release.alg5_parameters, at p > 1e-6
    assert stats.kstest(z / mech.sigma, stats.laplace.cdf).pvalue > 1e-6
    stream = release.trace["order"]
    # bad rounds answer exactly q(D) + z_i (good rounds q(H_t), a multiple of 1/n^, equal to it with probability 0)
    noisy = np.isclose(release.answers[stream], true[stream] + z, rtol=0, atol=1e-12)
    assert noisy.sum() == release.info["bad_rounds"] > 0


def test_epoch_length_is_s_plus_laplace_two_over_eps() -> None:
    work, _, _ = problem(500, 6)
    mech = AnalystPrivateMWScaledUNCERTIFIED(workload=work, epsilon=1.0, delta=1e-6, n=500, seed=3, **SCALED)
    draws = np.array([mech._epoch_length() for _ in range(20000)])
    # Pr[floor(s + L) + 1 <= m] = Pr[L < m - s] = F_Lap(2/eps)(m - s); 5-sigma binomial tolerance over 20,000 draws
    for m in range(math.floor(mech.s) - 2, math.floor(mech.s) + 4):
        p = stats.laplace.cdf(m - mech.s, scale=2.0)
        assert abs(np.mean(draws <= m) - p) <= 5 * math.sqrt(p * (1 - p) / draws.size) + 1e-9


def test_scaled_run_learns_and_every_output_says_uncertified() -> None:
    mech = OmegaConf.to_container(OmegaConf.load(CONF / "mechanism" / "qr_alg5_scaled_UNCERTIFIED.yaml"))
    data = {**OmegaConf.to_container(OmegaConf.load(CONF / "data" / "qr_mixture.yaml")), "n": 1000, "d": 8}
    row = run_trial({"epsilon": 1.0, "delta": 1e-6, "data": data, "mechanism": mech},
                    np.random.SeedSequence(0, spawn_key=(0,)))
    assert row["certified"] is False and row["constants"] == "scaled_UNCERTIFIED"
    assert row["epochs"] >= 1 and row["answered_fraction"] == 1.0
    assert row["max_error"] < row["uniform_max_error"] / 2
    assert row["max_error"] <= row["alpha_bound"]


def test_paper_trial_row_is_certified() -> None:
    mech = OmegaConf.to_container(OmegaConf.load(CONF / "mechanism" / "qr_alg5.yaml"))
    data = {**OmegaConf.to_container(OmegaConf.load(CONF / "data" / "qr_mixture.yaml")), "n": 300, "d": 6}
    row = run_trial({"epsilon": 1.0, "delta": 1e-6, "data": data, "mechanism": mech},
                    np.random.SeedSequence(0, spawn_key=(0,)))
    assert row["certified"] is True and row["max_error"] == row["uniform_max_error"]


@pytest.mark.parametrize(("s", "limit"), [(0.05, "R"), (1.5, "T")])
def test_halts_at_R_bad_rounds_or_T_epochs_leaving_a_stream_suffix_unanswered(s: float, limit: str) -> None:
    """With tau tiny, almost every query is bad (not those with q(D) = q(H_t), e.g. both 0).

    eps = 100 makes s_t ~ s, so an epoch takes floor(s) + 1 bad rounds: s = 0.05 -> 1 per epoch, R = ceil(0.1 T) < T: R
    binds; s = 1.5 -> 2 per epoch, R = 3 T > 2 T: T binds.
    """
    work, true, _ = problem(200, 8)
    base = alg5_parameters(200, 100.0, 1e-6, work.n_queries, 256, constants={"s": 1.0})["s"]
    mech = AnalystPrivateMWScaledUNCERTIFIED(workload=work, epsilon=100.0, delta=1e-6, n=200, c_s=s / base,
                                             c_n_hat=1.0, c_sigma=1e-9,
                                             c_tau=1e-9, seed=4)
    release = mech.run(true)
    answered = np.isfinite(release.answers[release.trace["order"]])
    k_done = int(answered.sum())
    assert release.info["halted"] and answered[:k_done].all() and not answered[k_done:].any()
    assert k_done / 2 < release.info["bad_rounds"] <= k_done
    if limit == "R":
        assert release.info["bad_rounds"] == mech.max_bad < mech.max_epochs
    else:
        assert release.info["epochs"] == mech.max_epochs and release.info["bad_rounds"] < mech.max_bad


def test_rejects_nonpositive_constants() -> None:
    work, _, _ = problem(100, 4)
    with pytest.raises(ValueError, match="constants must be positive"):
        AnalystPrivateMWScaledUNCERTIFIED(workload=work, epsilon=1.0, delta=1e-6, n=100, c_s=0.5, c_n_hat=1.0,
                                          c_sigma=1.0, c_tau=0.0)


def test_crossover_d12_eps1_infeasible_eps10_feasible_near_the_cap() -> None:
    assert not hru_crossover(12, 1.0, 1e-6, 0.6)["feasible"]
    ten = hru_crossover(12, 10.0, 1e-6, 0.6)
    assert ten["feasible"] and ten["T_beat"] <= ten["T_max"] == math.ceil(2 * 3**12 / 24) - 1
    big_l = math.log(2 * 3**12)
    assert hru_synopsis_bound(ten["T_beat"], 10.0, 1e-6, big_l) < 0.6 <= hru_synopsis_bound(ten["T_beat"] - 1, 10.0,
                                                                                              1e-6, big_l)
    for d in (6, 8, 10):  # 16 ln(120) / sqrt(T) alone needs T > 16,300, i.e. N_Q > 24 x 16,300
        assert not hru_crossover(d, 100.0, 1e-6, 0.6)["feasible"]


@pytest.mark.parametrize("index", [None, np.array([0, 5, 17, 40, 80])])
def test_weighted_sum_is_the_adjoint_of_answers(index: np.ndarray | None) -> None:
    work = Conjunctions(4, index)
    weights = np.random.default_rng(np.random.SeedSequence(5)).normal(size=work.n_queries)
    brute = sum(w * work.on_universe(j) for j, w in enumerate(weights))
    assert np.allclose(work.weighted_sum(weights), brute, atol=1e-12)
    matrix = MatrixWorkload(np.stack([work.on_universe(j) for j in range(work.n_queries)]))
    assert np.allclose(matrix.weighted_sum(weights), brute, atol=1e-12)


def test_conjunction_subset_draws_distinct_queries_and_rejects_too_many() -> None:
    work = make_workload("conjunction_subset", 5, n_queries=100, seed=6)
    assert work.n_queries == 100 and np.unique(work.index).size == 100
    with pytest.raises(ValueError, match="n_queries must be <= 3"):
        conjunction_subset(3, 28)


def test_crossover_trial_reports_theory_and_round_cost() -> None:
    data = {**OmegaConf.to_container(OmegaConf.load(CONF / "data" / "qr_mixture.yaml")), "n": 200, "d": 6}
    row = crossover_trial({"epsilon": 10.0, "delta": 1e-6, "data": data, "mechanism": {"timed_rounds": 2}},
                          np.random.SeedSequence(0, spawn_key=(0,)))
    assert row["T_max"] == 60 and not row["feasible"] and row["round_s"] > 0
    assert row["est_T_beat_s"] == pytest.approx(row["T_beat"] * row["round_s"])


def test_other_constants_are_not_certified_even_through_the_base_class() -> None:
    work, true, _ = problem(200, 4)
    paper = AnalystPrivateMW(workload=work, epsilon=1.0, delta=1e-6, n=200, seed=0)
    other = AnalystPrivateMW(workload=work, epsilon=1.0, delta=1e-6, n=200, seed=0, constants={"sigma": 1.0})
    assert paper.certified and paper.privacy is not None
    assert not other.certified and other.privacy is None
    info = other.run(true).info
    assert info["certified"] is False and info["constants"] == "scaled_UNCERTIFIED"
