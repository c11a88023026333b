"""Mechanisms of dpstream.query_release: convergence, median halving, noise vs calibration, accounting, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpstream.noise import NoiseSource
from dpstream.privacy.accounting import composed_epsilon, per_step_epsilon
from dpstream.privacy.query_release import (
    hru_analyst_epsilon,
    hru_data_epsilon,
    hru_laplace_scale,
    hru_parameters,
    ic_step_epsilon,
    laplace_answer_scale,
)
from dpstream.query_release import (
    Conjunctions,
    IterativeConstruction,
    LaplaceRelease,
    MedianMechanism,
    MultiplicativeWeights,
    PrivateEquilibriumRelease,
    assign_analysts,
    histogram,
    mwem,
    pmw,
    product_mixture,
    size_n_databases,
)
from dpstream.query_release import game as game_module
from dpstream.query_release import iterative as iterative_module
from dpstream.query_release._kernels import sparse_scan
from dpstream.query_release.iterative import exponential_mechanism

P_REJECT = 1e-6  # every distributional test below rejects only at p < 1e-6


def tiny_problem(d: int = 2, n: int = 1000, seed: int = 0) -> tuple[Conjunctions, np.ndarray]:
    work = Conjunctions(d)
    return work, work.answers(histogram(product_mixture(n, d, seed=seed), d))


# ---- convergence and the median mechanism ----------------------------------------------------------------------

def test_pmw_on_tiny_universe_converges_to_the_data() -> None:
    work, true = tiny_problem()
    release = pmw(workload=work, epsilon=1e4, delta=1e-6, n=1000, alpha=0.1, seed=0).run(true)
    # IC theorem: error <= alpha once the Laplace and EM noise are negligible (eps = 1e4, n = 1000)
    assert np.abs(release.answers - true).max() <= 0.1
    uniform = work.answers(np.full(4, 0.25))
    assert np.abs(release.answers - true).max() < np.abs(uniform - true).max()


def test_median_mechanism_halves_its_candidate_set_at_every_update() -> None:
    net = size_n_databases(4, 10)
    assert net.shape == (math.comb(13, 3), 4)
    rng = np.random.default_rng(0)
    answers = np.column_stack([net @ rng.random(4) for _ in range(6)] + [np.maximum(net[:, 0], net[:, 1])])
    mm = MedianMechanism(answers)
    for _ in range(12):
        before = mm.size()
        j = int(rng.integers(answers.shape[1]))
        cur = mm.current()[j]
        mm.update(j, cur + rng.choice([-0.3, 0.3]), cur)
        assert mm.size() <= before / 2 or (mm.size() == before and mm.skipped > 0)


def test_median_mechanism_learns_nonlinear_query() -> None:
    net = size_n_databases(4, 12)
    data = np.array([6, 1, 0, 5]) / 12
    queries = [lambda h: h @ np.array([1, 0, 1, 0.0]), lambda h: np.maximum(h[..., 0], h[..., 3])]
    answers = np.column_stack([q(net) for q in queries])
    true = np.array([q(data) for q in queries])
    dua = MedianMechanism(answers)
    release = IterativeConstruction(update=dua, epsilon=1e3, delta=1e-6, n=12, alpha=0.2, seed=1).run(true)
    assert np.abs(release.answers - true).max() <= 0.2


# ---- noise against its calibration formula -----------------------------------------------------------------

def test_laplace_release_noise_matches_calibrated_scale() -> None:
    true = np.full(20_000, 0.5)
    release = LaplaceRelease(epsilon=2.0, delta=1e-6, n=500, seed=3).run(true)
    scale = laplace_answer_scale(500, 2.0, 1e-6, 20_000)
    assert release.info["laplace_scale"] == scale
    # KS test of the added noise against Lap(scale), 20 000 draws
    assert stats.kstest(release.answers - true, stats.laplace(scale=scale).cdf).pvalue > P_REJECT
    assert release.eps_data == pytest.approx(2.0, rel=1e-9)


def test_ic_measurement_noise_matches_laplace_one_over_n_eps0() -> None:
    work, true = tiny_problem(d=3)
    ic = IterativeConstruction(update=MultiplicativeWeights(work, eta=0.01), epsilon=5.0, delta=1e-6, n=1000, alpha=0.0,
                               rounds=3000, seed=4)
    release = ic.run(true)
    assert ic.noise_scale == 1 / (1000 * ic_step_epsilon(5.0, 1e-6, 3000))
    noise = release.trace["noisy"] - true[release.trace["chosen"]]
    assert stats.kstest(noise, stats.laplace(scale=ic.noise_scale).cdf).pvalue > P_REJECT
    assert release.eps_data == pytest.approx(5.0, rel=1e-9)


def test_exponential_mechanism_frequencies_match_softmax() -> None:
    scores = np.array([0.0, 0.5, 1.0, 0.2])
    noise = NoiseSource(5)
    draws = np.array([exponential_mechanism(scores, 0.004, 1 / 1000, noise) for _ in range(20_000)])
    logits = 0.004 * scores * 1000 / 2
    expected = np.exp(logits) / np.exp(logits).sum() * draws.size
    # chi-square goodness of fit over 20 000 draws
    assert stats.chisquare(np.bincount(draws, minlength=4), expected).pvalue > P_REJECT


def test_hru_laplace_answers_match_calibrated_scale() -> None:
    work, true = tiny_problem(d=6, n=800)
    owners = assign_analysts(work.n_queries, 5, seed=0)
    noise = []
    eta = math.sqrt(math.log(2 * 3**6) / 50)  # minimises alpha_D^, so many queries pass the noisy threshold
    for seed in range(5):
        mech = PrivateEquilibriumRelease(workload=work, analysts=owners, epsilon=0.2, delta=1e-6, n=800, rounds=50,
                                         s=400.0, eta=eta,
                                         seed=seed)
        release = mech.run(true)
        flagged = release.trace["flagged"]
        np.testing.assert_allclose(release.answers[flagged] - true[flagged], release.trace["laplace_noise"])
        noise.append(release.trace["laplace_noise"])
    scale = hru_laplace_scale(800, 0.2, 1e-6, 400.0)
    assert scale == 3 * math.sqrt(8 * 400 * math.log(3 / 1e-6)) / (0.2 * 800)
    noise = np.concatenate(noise)
    assert noise.size > 300
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > P_REJECT


def test_sparse_scan_follows_the_definition() -> None:
    values = np.array([0.0, 5.0, 0.0, 5.0, 5.0, 5.0])
    q_noise = np.zeros(6)
    t_noise = np.array([0.0, 10.0, 0.0])
    # first TOP at 1, then the redrawn threshold 1 + 10 stops everything; cutoff 3 never reached
    np.testing.assert_array_equal(sparse_scan(values, q_noise, t_noise, 1.0, 3), [1])
    np.testing.assert_array_equal(sparse_scan(values, q_noise, np.zeros(2), 1.0, 2), [1, 3])


# ---- accounting (exact) ----------------------------------------------------------------------------------

def test_composition_is_min_of_basic_and_drv() -> None:
    assert composed_epsilon(0.1, 10, 1e-6) == pytest.approx(1.0)  # basic wins
    k, e0, dp = 10_000, 0.001, 1e-6
    drv = e0 * math.sqrt(2 * k * math.log(1 / dp)) + k * e0 * math.expm1(e0)
    assert composed_epsilon(e0, k, dp) == pytest.approx(drv)
    assert composed_epsilon(per_step_epsilon(3.0, 1e-6, 5000), 5000, 1e-6) == pytest.approx(3.0, rel=1e-9)


def test_hru_paper_rounds_overspend_data_epsilon_and_private_rule_does_not() -> None:
    n, eps, delta, actions, universe = 1000, 1.0, 1e-6, 2 * 3**12, 2**12
    paper = hru_parameters(n, eps, delta, actions, universe)
    assert paper["rounds"] == math.ceil(n * math.log(actions))
    spent = hru_data_epsilon(n, eps, delta, paper["eta"], paper["rounds"], paper["s"])
    assert spent > 2 * eps * paper["L"]  # erratum 2: at least 2 eps L (the first-order term alone)
    private = hru_parameters(n, eps, delta, actions, universe, rounds_rule="data_private")
    assert private["rounds"] == 156
    assert hru_data_epsilon(n, eps, delta, private["eta"], private["rounds"], private["s"]) <= eps


def test_hru_analyst_epsilon_lemma_3_8_value() -> None:
    eta, t, s, delta = 0.01, 100, 2400.0, 1e-6
    ts = t * 2 / s
    expected = eta * ts * math.sqrt(2 * t * math.log(1 / delta)) + 30 * eta**2 * ts * t
    assert hru_analyst_epsilon(eta, t, s, delta) == pytest.approx(expected)
    assert hru_analyst_epsilon(eta, t, 1.0, delta) == eta * t**2  # uncapped: only the trivial bound


# ---- the game ------------------------------------------------------------------------------------------------

def test_uncapped_game_with_large_eps_learns_below_uniform() -> None:
    work, true = tiny_problem(d=5, n=1000)
    owners = assign_analysts(work.n_queries, 4, seed=0)
    release = PrivateEquilibriumRelease(workload=work, analysts=owners, epsilon=1e4, delta=1e-6, n=1000, rounds=1500,
                                        s=1.0,
                                        eta=0.1, seed=0).run(true)
    uniform = work.answers(np.full(32, 1 / 32))
    assert release.info["synopsis_max_error"] < 0.5 * np.abs(uniform - true).max()


def test_game_reports_both_epsilons() -> None:
    work, true = tiny_problem(d=6, n=200)
    release = PrivateEquilibriumRelease(workload=work, analysts=assign_analysts(work.n_queries, 3, seed=0),
                                        epsilon=1.0, delta=1e-6, n=200,
                                        rounds_rule="data_private", seed=0).run(true)
    assert 0 < release.eps_data <= 1.0
    assert release.eps_analyst is not None and release.eps_analyst > 0
    assert release.info["analyst_cleanup_certified"] is False


# ---- bad input ---------------------------------------------------------------------------------------------

def test_rejects_s_not_below_number_of_actions() -> None:
    work, _ = tiny_problem(d=3)
    with pytest.raises(ValueError, match=r"s = .* must be < N_Q = 54"):
        PrivateEquilibriumRelease(workload=work, analysts=np.zeros(27, dtype=int), epsilon=1.0, delta=1e-6,
                                  n=1000)  # paper T: s = 24 n L >> 54


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan")])
def test_rejects_nonpositive_epsilon(epsilon: float) -> None:
    work, _ = tiny_problem()
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        LaplaceRelease(epsilon=epsilon, delta=1e-6, n=100)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        pmw(workload=work, epsilon=epsilon, delta=1e-6, n=100, alpha=0.1)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        PrivateEquilibriumRelease(workload=work, analysts=np.zeros(9, dtype=int), epsilon=epsilon, delta=1e-6, n=100,
                                  rounds=2)


def test_rejects_bad_delta_alpha_and_analysts() -> None:
    work, _ = tiny_problem()
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        mwem(workload=work, epsilon=1.0, delta=1.5, n=100, rounds=3)
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\]"):
        pmw(workload=work, epsilon=1.0, delta=1e-6, n=100, alpha=2.0)
    with pytest.raises(ValueError, match="one analyst id per query"):
        PrivateEquilibriumRelease(workload=work, analysts=np.zeros(3, dtype=int), epsilon=1.0, delta=1e-6, n=100,
                                  rounds=2)


@pytest.mark.parametrize("obj", [LaplaceRelease, IterativeConstruction, pmw, mwem, iterative_module, game_module,
                                 PrivateEquilibriumRelease])
def test_docstrings_state_neighbouring_relation_and_privacy(obj: object) -> None:
    doc = (obj.__doc__ or "").lower()
    assert "neighbour" in doc and ("epsilon" in doc or "eps" in doc) and "delta" in doc


# ---- online version -----------------------------------------------------------------------------------------

def test_online_pmw_answer_noise_matches_numeric_sparse_sigma() -> None:
    from dpstream.query_release.online import online_pmw
    from dpstream.svt import sparse_sigma

    work, true = tiny_problem(d=6, n=1000)
    mech = online_pmw(workload=work, epsilon=20.0, delta=1e-6, n=1000, alpha=0.02, cutoff=400, seed=2)
    release = mech.run(true)
    assert mech.sigma == min(sparse_sigma(10.0, 400), sparse_sigma(10.0, 400, 5e-7)) / 1000
    order, tops = release.trace["order"], release.info["tops"]
    assert tops > 200
    # each TOP's released answer is f(D) + Lap(sigma): KS test over the TOPs
    top_queries = release.trace["top_queries"]
    noise = release.answers[top_queries] - true[top_queries]
    assert stats.kstest(noise, stats.laplace(scale=mech.sigma).cdf).pvalue > P_REJECT
    assert order.size == work.n_queries


def test_online_pmw_on_tiny_universe_beats_uniform() -> None:
    from dpstream.query_release.online import online_pmw

    work, true = tiny_problem(d=3, n=1000)
    release = online_pmw(workload=work, epsilon=1e3, delta=1e-6, n=1000, alpha=0.1, seed=0).run(true)
    uniform = work.answers(np.full(8, 1 / 8))
    assert np.abs(release.answers - true).max() <= 0.1 < np.abs(uniform - true).max()


def test_game_budgets_are_the_composition_of_their_parts_and_equal_the_paper_formulas() -> None:
    # the statements are composed with dpstream.privacy.compose; the formulas add the same terms in another order:
    # equal to float round-off (rel 1e-12)
    from dpstream.query_release.game import AnalystEquilibriumRelease

    work, _ = tiny_problem(d=6, n=200)
    alg3 = PrivateEquilibriumRelease(workload=work, analysts=assign_analysts(work.n_queries, 3, seed=0), epsilon=1.0,
                                     delta=1e-6, n=200, rounds_rule="data_private", seed=0)
    stated = alg3.privacy
    assert stated.epsilon == pytest.approx(hru_data_epsilon(200, 1.0, 1e-6, alg3.eta, alg3.rounds, alg3.s), rel=1e-12)
    assert stated.delta == pytest.approx(1e-6, rel=1e-12)  # delta/3 each: game, Sparse, Laplace answers
    assert stated.eps_analyst == hru_analyst_epsilon(alg3.eta, alg3.rounds, alg3.s, 1e-6)  # Lemma 3.8, not composed
    work4, _ = tiny_problem(d=4, n=300)
    alg4 = AnalystEquilibriumRelease(workload=work4, analysts=assign_analysts(work4.n_queries, 20, seed=0),
                                     epsilon=1.0, delta=1e-6, n=300, rounds=300, s=5.0, eta=0.2, seed=0)
    game = composed_epsilon(2 * 0.2 * 300 / 300, 600, 1e-6 / 3)
    by_hand = game + 1.0 / 3 + composed_epsilon(alg4.mw_epsilon, 5, 1e-6 / 3)
    assert alg4.privacy.epsilon == pytest.approx(by_hand, rel=1e-12)
    assert alg4.privacy.delta == pytest.approx(4e-6 / 3, rel=1e-12)  # 3 x delta/3 + 5 PMW runs at delta/15


# ---- Algorithm 4 --------------------------------------------------------------------------------------------

def test_alg4_rejects_s_not_below_number_of_analysts_and_reports_both_epsilons() -> None:
    from dpstream.query_release.game import AnalystEquilibriumRelease

    work, true = tiny_problem(d=4, n=300)
    owners = assign_analysts(work.n_queries, 20, seed=0)
    with pytest.raises(ValueError, match=r"s = .* must be < m = 20 analysts"):
        AnalystEquilibriumRelease(workload=work, analysts=owners, epsilon=1.0, delta=1e-6,
                                  n=300)  # paper s = 12 T >> 20
    release = AnalystEquilibriumRelease(workload=work, analysts=owners, epsilon=1e3, delta=1e-6, n=300, rounds=300,
                                        s=5.0, eta=0.2, seed=0).run(true)
    assert release.eps_data > 0 and release.eps_analyst > 0 and release.delta_data == pytest.approx(4e-6 / 3)
    uniform = work.answers(np.full(16, 1 / 16))
    assert release.info["synopsis_max_error"] < np.abs(uniform - true).max()


@pytest.mark.parametrize("n_runs", [0, 2, True])
def test_run_is_one_adaptive_pass_and_names_any_other_n_runs(n_runs) -> None:
    work, true = tiny_problem()
    mech = LaplaceRelease(epsilon=2.0, delta=1e-6, n=500, seed=3)
    assert mech.run(true, n_runs=1).answers.shape == true.shape
    with pytest.raises(ValueError, match=rf"n_runs must be 1 .*got {n_runs!r}"):
        mech.run(true, n_runs=n_runs)


def test_query_player_log_weights_are_eta_half_times_the_running_gaps_shifted_to_max_0() -> None:
    from dpstream.query_release.players import QueryPlayer

    work = Conjunctions(3)
    true = work.answers(histogram(product_mixture(50, 3, seed=0), 3))
    player = QueryPlayer(work, true)
    for x in (5, 0, 5):
        player.observe(x)
    out = np.empty(2 * work.n_queries)
    player.log_weights(0.3, out)
    log_w = np.zeros(2 * work.n_queries)
    log_w[:work.n_queries] = (3 * true - sum(work.at_record(x) for x in (5, 0, 5))) * 0.3
    log_w[work.n_queries:] = -log_w[:work.n_queries]
    np.testing.assert_array_equal(out, log_w - log_w.max())  # the same operations: exact
    assert out.max() == 0.0
    with pytest.raises(ValueError, match=r"out must have shape \(54,\)"):
        player.log_weights(0.3, np.empty(27))
