"""Query-release claims: each rule is confirmed on a table where the claim holds and flips where it fails."""

import json

import numpy as np
import pandas as pd
import pytest
from claim_checks import only, verdicts

from dpstream.audit import epsilon_lower_bound
from dpstream.claims.query_release import (
    alg3_feasible,
    analyst_audit_claims,
    audit_power,
    convergence_claims,
    error_vs_eps_claims,
    error_vs_n_claims,
    loglog_slope_ci,
    median_toy_claims,
    theory_claims,
)

NOISE = np.random.default_rng(np.random.SeedSequence(7))


# ---- E0 ---------------------------------------------------------------------------------------------------------

def theory_table(d: int) -> pd.DataFrame:
    return pd.DataFrame({"data.n": [1000, 100000, 100000000], "data.d": d, "epsilon": 1.0, "delta": 1e-6,
                         "alpha_hru": [244.0, 27.7, 1.17], "alpha_pmw": [7.1, 0.79, 0.03],
                         "alpha_laplace": [183.0, 1.8, 0.002]})


def test_alg3_feasibility_is_s_below_n_actions():
    # d = 12: N_Q = 2 * 3^12 = 1.06e6, s = 12 n ln(N_Q) = 167 n -> feasible at n = 1e3, not at 1e5
    assert list(alg3_feasible(theory_table(12))) == [True, False, False]
    assert list(alg3_feasible(theory_table(30))) == [True, True, True]  # N_Q = 4e14


def test_theory_claims_are_never_confirmed_and_alg3_is_na_where_infeasible():
    claims = theory_claims(theory_table(12), {})
    assert "confirmed" not in verdicts(claims).values()  # recomputed theory: a tautology cannot confirm
    assert only(claims, "Alg 3 accuracy bound at n = 1000 ") == "inconclusive"
    assert only(claims, "Alg 3 accuracy bound at n = 100000 ") == "n/a"
    assert only(claims, "Alg 3's bound is vacuous") == "n/a"  # it drops below 1 only where s >= N_Q
    wide = theory_claims(theory_table(30), {})
    assert only(wide, "Alg 3 accuracy bound at n = 100000 ") == "inconclusive"  # feasible: flips from n/a


# ---- E1 ---------------------------------------------------------------------------------------------------------

def convergence_table(errors: list[float], runs: int = 3, rounds=(100, 100000, 1000000)) -> pd.DataFrame:
    # d = 1: L = ln 6, eta = 0.05 -> 4 rho = 5.6, 0.39, 0.26 at the three rounds: the last two can decide
    curve = json.dumps({"round": list(rounds), "max_error": errors})
    return pd.DataFrame({"mechanism.eta": 0.05, "data.d": 1, "curve": [curve] * runs, "uniform_max_error": 0.6,
                         "trial": range(runs)})


def test_convergence_flips_on_deciding_rounds():
    assert convergence_claims(convergence_table([0.6, 0.1, 0.05]), {})[0].verdict == "confirmed"
    assert convergence_claims(convergence_table([0.6, 0.8, 0.05]), {})[0].verdict == "not confirmed"


def test_convergence_bound_above_one_or_one_run_cannot_decide():
    trivial = convergence_table([0.6, 0.5], rounds=(100, 1000))  # 4 rho >= 1 at both rounds
    assert convergence_claims(trivial, {})[0].verdict == "inconclusive"
    assert convergence_claims(convergence_table([0.6, 0.8, 0.05], runs=1), {})[0].verdict == "inconclusive"


def test_convergence_measured_carries_the_effect_with_its_interval():
    # 1 of 3 runs over the bound: exact 95% interval of 1/3 is [0.0084, 0.906]
    runs = pd.concat([convergence_table([0.6, 0.8, 0.05], runs=1), convergence_table([0.6, 0.1, 0.05], runs=2)])
    claim = convergence_claims(runs.assign(trial=range(3)), {})[0]
    assert claim.verdict == "not confirmed"
    assert "runs over the bound 1/3 [0.0084, 0.906] (exact 95%)" in claim.measured
    assert "over the deciding rounds: x" in claim.measured and "log-scale 95% t interval" in claim.measured
    trivial = convergence_claims(convergence_table([0.6, 0.5], rounds=(100, 1000)), {})[0]
    assert "effect: none, no round can decide" in trivial.measured  # no share over a bound that cannot be exceeded
    one = convergence_claims(convergence_table([0.6, 0.8, 0.05], runs=1), {})[0]
    assert "1 run(s): no interval" in one.measured


# ---- E2, E3 -----------------------------------------------------------------------------------------------------

def error_table(x: str, xs: list[float], trials: int, hru_learns: bool, fixed: dict) -> pd.DataFrame:
    rows = []
    for i, v in enumerate(xs):
        for t in range(trials):
            uniform = 0.6 + 0.01 * NOISE.standard_normal()
            gap = -0.1 * (i + 1) if hru_learns else 0.1 * i  # D^ against the uniform distribution
            synopsis = uniform + gap + 0.005 * NOISE.standard_normal()
            lap = (2.0 / v if x == "epsilon" else 2000.0 / v) * (1 + 0.01 * NOISE.standard_normal())
            common = {x: v, "trial": t, "uniform_max_error": uniform, "eps_data": 1.0, **fixed}
            rows.append({**common, "mechanism.name": "qr_hru_private", "synopsis_max_error": synopsis,
                         "max_error": synopsis if hru_learns else uniform + 0.3})  # else: clean-up dominated
            rows.append({**common, "mechanism.name": "qr_laplace", "max_error": lap, "laplace_scale": lap / 10})
    return pd.DataFrame(rows)


def test_error_vs_n_claims_flip():
    good = error_vs_n_claims(error_table("data.n", [250, 1000, 4000], 5, True, {"epsilon": 1.0}), {})
    bad = error_vs_n_claims(error_table("data.n", [250, 1000, 4000], 5, False, {"epsilon": 1.0}), {})
    verdicts(good), verdicts(bad)
    for start in ("qr_hru_private beats the uniform", "qr_hru_private: the game's error decreases",
                  "Alg 3 (T = n/6.4) beats independent Laplace"):
        assert only(good, start) == "confirmed", start
        assert only(bad, start) == "not confirmed", start
    assert only(good, "qr_laplace beats the uniform") == "not confirmed"  # 2000/n = 8, 2: above 0.6 at small n


def test_error_vs_n_two_trials_cannot_decide():
    claims = error_vs_n_claims(error_table("data.n", [250, 1000, 4000], 2, True, {"epsilon": 1.0}), {})
    assert set(verdicts(claims).values()) == {"inconclusive"}
    assert all("2 trials" in c.measured for c in claims)  # the reason is printed


def test_error_vs_n_counts_bit_identical_eps_once():
    one = error_table("data.n", [250, 1000, 4000], 5, True, {"epsilon": 30.0})
    df = pd.concat([one, one.assign(epsilon=100.0)], ignore_index=True)  # capped eta: the same game
    claims = error_vs_n_claims(df, {})
    game = [c for c in claims if c.claim.startswith("qr_hru_private: the game's error")][0]
    assert "eps=100 bit-identical to eps=30" in game.measured and game.measured.count("Page L") == 1
    assert only(claims, "qr_hru_private beats the uniform") == "confirmed"


def test_error_vs_n_straddling_points_are_inconclusive():
    df = error_table("data.n", [250, 1000, 4000], 5, True, {"epsilon": 1.0})
    hru = df["mechanism.name"] == "qr_hru_private"
    df.loc[hru, "max_error"] = df.loc[hru, "uniform_max_error"] + np.tile([0.05, -0.05, 0.04, -0.04, 0.0], 3)
    assert only(error_vs_n_claims(df, {}), "qr_hru_private beats the uniform") == "inconclusive"


def test_error_vs_eps_claims_flip():
    eps = [0.5, 10.0, 300.0]
    good = error_table("epsilon", eps, 5, True, {"data.n": 1000})
    good.loc[(good["mechanism.name"] == "qr_hru_private") & (good["epsilon"] == 0.5), "max_error"] += 0.5
    claims = error_vs_eps_claims(good, {})
    verdicts(claims)
    assert only(claims, "Alg 3 needs large eps") == "confirmed"
    assert only(claims, "Laplace error ~ 1/eps") == "confirmed"
    bad = error_table("epsilon", eps, 5, False, {"data.n": 1000})
    bad.loc[bad["mechanism.name"] == "qr_laplace", "max_error"] **= 0.5  # slope -1/2
    claims = error_vs_eps_claims(bad, {})
    assert only(claims, "Alg 3 needs large eps") == "not confirmed"
    assert only(claims, "Laplace error ~ 1/eps") == "not confirmed"


def test_alg3_needs_large_eps_requires_the_low_end_shown_above_uniform():
    eps = [0.5, 10.0, 300.0]
    df = error_table("epsilon", eps, 5, True, {"data.n": 1000})
    low = (df["mechanism.name"] == "qr_hru_private") & (df["epsilon"] == 0.5)
    df.loc[low, "max_error"] = df.loc[low, "uniform_max_error"] + [0.05, -0.05, 0.04, -0.04, 0.0]  # straddles
    assert only(error_vs_eps_claims(df, {}), "Alg 3 needs large eps") == "inconclusive"  # not shown is not shown


def test_laplace_slope_is_judged_against_the_papers_minus_one_not_the_accounted_scale():
    df = error_table("epsilon", [0.5, 10.0, 300.0], 5, True, {"data.n": 1000})
    lap = df["mechanism.name"] == "qr_laplace"
    df.loc[lap, "laplace_scale"] = df.loc[lap, "epsilon"] ** -0.8  # the accounted scale is reported, not tested
    assert only(error_vs_eps_claims(df, {}), "Laplace error ~ 1/eps") == "confirmed"
    df.loc[lap, "max_error"] = df.loc[lap, "laplace_scale"]  # error follows the accounted slope -0.8, not -1
    assert only(error_vs_eps_claims(df, {}), "Laplace error ~ 1/eps") == "not confirmed"
    noisy = error_table("epsilon", [0.5, 10.0, 300.0], 3, True, {"data.n": 1000})
    lap = noisy["mechanism.name"] == "qr_laplace"
    noisy.loc[lap, "max_error"] *= np.exp(noisy.loc[lap, "trial"].map({0: -0.6, 1: 0.0, 2: 0.6}).to_numpy()
                                          * np.log(noisy.loc[lap, "epsilon"].to_numpy()) / 6)
    assert only(error_vs_eps_claims(noisy, {}), "Laplace error ~ 1/eps") == "inconclusive"  # trial slopes -1 +- 0.1


def test_loglog_slope_ci_needs_three_trials():
    three = error_table("epsilon", [1.0, 10.0, 100.0], 3, True, {})
    slope, lo, hi = loglog_slope_ci(three[three["mechanism.name"] == "qr_laplace"], "epsilon", "max_error")
    assert lo < slope < hi and lo < -1.0 < hi
    df = error_table("epsilon", [1.0, 10.0, 100.0], 2, True, {})
    slope, lo, hi = loglog_slope_ci(df[df["mechanism.name"] == "qr_laplace"], "epsilon", "max_error")
    assert slope == pytest.approx(-1.0, abs=0.02) and np.isnan(lo) and np.isnan(hi)


# ---- E5 ---------------------------------------------------------------------------------------------------------

def test_audit_power_is_the_bound_at_p1_one_p2_zero():
    assert audit_power(1000, 1e-6) == pytest.approx(5.43, abs=0.01)  # the "eps ~ 5.4 at 1000 runs"
    assert audit_power(1000, 1e-6) == epsilon_lower_bound(1000, 0, 1000, 1e-6, 0.05)[0]
    assert audit_power(100000, 1e-6) > audit_power(1000, 1e-6)


@pytest.mark.parametrize("claimed, fails, verdict", [(1.0, False, "inconclusive"), (1.0, True, "not confirmed"),
                                                     (5000.0, False, "inconclusive"), (5000.0, True, "inconclusive")])
def test_analyst_audit_refutes_within_its_power_and_never_confirms(claimed, fails, verdict):
    df = pd.DataFrame({"mechanism.s": [30], "eps_analyst": [claimed], "eps_lower": [2.0 if fails else 0.1],
                       "audit_fails": [fails], "audit_runs": [1000], "delta": [1e-6], "p_with_canary": [0.6],
                       "p_without_canary": [0.4], "synopsis_max_error": [0.3], "uniform_max_error": [0.45]})
    claims = analyst_audit_claims(df, {})
    verdicts(claims)
    assert claims[0].verdict == verdict


# ---- E10 --------------------------------------------------------------------------------------------------------

def toy_table(learns: bool, trials: int = 5) -> pd.DataFrame:
    rows = []
    for n in (5, 10, 20, 30):
        for t in range(trials):
            err = (0.6 / np.sqrt(n) if learns else 0.1 + 0.01 * n) + 0.01 * NOISE.standard_normal()
            rows.append({"mechanism.kind": "median", "data.universe_size": 4, "epsilon": 10.0, "data.n": n,
                         "trial": t, "max_error": err, "nonlinear_max_error": err,
                         "uniform_nonlinear_max_error": 0.35 + 0.01 * NOISE.standard_normal()})
    return pd.DataFrame(rows)


def test_median_toy_claims_flip():
    good, bad = median_toy_claims(toy_table(True), {}), median_toy_claims(toy_table(False), {})
    verdicts(good), verdicts(bad)
    for start in ("The median mechanism handles any", "The median mechanism's error falls with n"):
        assert only(good, start) == "confirmed", start
        assert only(bad, start) == "not confirmed", start
    assert set(verdicts(median_toy_claims(toy_table(True, trials=2), {})).values()) == {"inconclusive"}
