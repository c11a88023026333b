"""The searching auditor: flags every negative control at claimed eps = 1, passes every shipped mechanism.

All verdicts use fixed seeds. ``search_audit`` certifies on runs independent of its search, so a
correct mechanism is flagged with probability <= alpha = 0.05 per audit; the controls' margins are
recorded in the notes (power table). Run counts per case are the ones in ``svt_cases`` (chosen for power).
"""

import math

import numpy as np
import pandas as pd
import pytest

from dpstream.audit.search import _Search, fit_logistic, search_audit
from dpstream.audit.svt_cases import svt_case, svt_cases
from dpstream.audit.tester import clopper_pearson, directed_lower_bound
from dpstream.claims.audit import audit_claims, power_claims, smallest_flagged_ratio
from dpstream.noise import NoiseSource

HEAVY = {"numeric_sparse_shifted", "lyu_alg3_same_noise_shifted"}  # 2.4 million runs per input: ~5-10 s each


def _marks(name):
    return [pytest.mark.slow] if name in HEAVY else []


CONTROLS = [pytest.param(c.name, marks=_marks(c.name)) for c in svt_cases() if c.broken]
SHIPPED = [pytest.param(c.name, marks=_marks(c.name)) for c in svt_cases() if not c.broken]


def laplace_sampler(epsilon):
    return lambda x, n, seed: x + NoiseSource(seed).laplace(1.0 / epsilon, n)


@pytest.mark.parametrize("name", CONTROLS)
def test_search_audit_flags_every_negative_control(name):
    res = svt_case(name).search(seed=0)
    assert res.fails, res.row()


@pytest.mark.parametrize("name", SHIPPED)
def test_search_audit_passes_every_shipped_mechanism(name):
    res = svt_case(name).search(seed=0)
    assert not res.fails, res.row()


def test_every_control_names_a_shipped_pair_with_the_same_inputs_and_runs():
    cases = {c.name: c for c in svt_cases()}
    controls = [c for c in cases.values() if c.broken]
    assert {"lyu_alg3_same_noise_shifted", "broken_threshold_monitor_uncalibrated"} <= {c.name for c in controls}
    for c in controls:
        pair = cases[c.pair]
        assert not pair.broken and pair.runs == c.runs and pair.delta == c.delta
        assert np.array_equal(pair.data_1, c.data_1) and np.array_equal(pair.data_2, c.data_2)


def test_certified_bound_stays_below_the_truth_across_seeds():
    # Laplace(1) claimed at its true eps = 1: the searched event's ratio is at most e, so every certified
    # bound must stay <= 1 (a bound leaking the search half's selection would overshoot on some seed).
    bounds = [
        search_audit(laplace_sampler(1.0), 1.0, 0.0, n_runs=40_000, claimed_epsilon=1.0, seed=s).epsilon_lower
        for s in range(8)
    ]
    assert max(bounds) <= 1.0, bounds
    assert min(bounds) > 0.5, bounds  # and the search finds a strong tail event every time


def test_search_audit_flags_an_understated_laplace_epsilon():
    res = search_audit(laplace_sampler(1.0), 1.0, 0.0, n_runs=40_000, claimed_epsilon=0.5, seed=1)
    assert res.fails and res.n_runs == 20_000 and res.n_search == 20_000
    assert res.event.endswith(res.direction)  # the chosen event and its order are reported


def test_certify_half_is_independent_of_the_search_half():
    # Same certify seed, different search seed: the certify counts of one fixed event do not move.
    calls = []

    def sampler(x, n, seed):
        calls.append((n, seed.entropy, seed.spawn_key))
        return x + NoiseSource(seed).laplace(1.0, n)

    search_audit(sampler, 1.0, 0.0, n_runs=1000, claimed_epsilon=1.0, seed=5)
    keys = [k for _, _, k in calls]
    assert len(set(keys)) == 4  # four distinct streams: (search, certify) x (D1, D2)
    assert {k[:1] for k in keys} == {(0,), (1,)}  # spawned from two independent children of the seed


def test_directed_bound_uses_one_sided_bounds_at_half_alpha():
    eps = directed_lower_bound(500, 100, 10_000, delta=0.01, alpha=0.05)
    low, _ = clopper_pearson(500, 10_000, 0.05)
    _, high = clopper_pearson(100, 10_000, 0.05)
    assert eps == pytest.approx(math.log((low - 0.01) / high))
    assert directed_lower_bound(100, 500, 10_000, 0.0, 0.05) == 0.0


def test_logistic_score_separates_shifted_gaussians():
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(1.0, 1.0, (2000, 2)), rng.normal(0.0, 1.0, (2000, 2))
    x2[:, 1] = x1[:, 1] = rng.normal(0.0, 1.0, 2000)  # the second coordinate carries no signal
    score = fit_logistic(x1, x2)
    assert score.weights[0] == pytest.approx(1.0, abs=0.15)  # the log-likelihood ratio is x_0 - 1/2
    assert abs(score.weights[1]) < 0.15


def test_search_audit_rejects_bad_arguments():
    s = laplace_sampler(1.0)
    with pytest.raises(ValueError, match="n_runs must be an integer >= 20"):
        search_audit(s, 1.0, 0.0, n_runs=10, claimed_epsilon=1.0)
    with pytest.raises(ValueError, match="claimed_epsilon must be a finite number > 0"):
        search_audit(s, 1.0, 0.0, n_runs=100, claimed_epsilon=0.0)
    with pytest.raises(ValueError, match=r"alpha must be in the open interval \(0.0, 1.0\)"):
        search_audit(s, 1.0, 0.0, n_runs=100, claimed_epsilon=1.0, alpha=0.0)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        search_audit(s, 1.0, 0.0, n_runs=100, claimed_epsilon=1.0, delta=1.0)
    with pytest.raises(ValueError, match="one output per run"):
        search_audit(lambda x, n, seed: np.zeros(n + 1), 1.0, 0.0, n_runs=100, claimed_epsilon=1.0)
    with pytest.raises(ValueError, match="has no hand-picked event"):
        svt_case("lyu_alg3_same_noise_shifted").run(100)


def test_controls_add_the_noise_their_docstrings_state():
    from dpstream.audit.negative_controls import (
        BrokenSparseHalfNoise,
        BrokenSparseQueryNoiseSigma,
        BrokenThresholdMonitorUncalibrated,
        LyuAlg3NumericSparseSameNoise,
    )

    half = BrokenSparseHalfNoise(epsilon=1.0, threshold=0.0, c=2)
    qsig = BrokenSparseQueryNoiseSigma(epsilon=1.0, threshold=0.0, c=2)
    assert (half.threshold_scale, half.query_scale) == (2.0, 4.0)  # sigma = 2c/eps = 4, halved
    assert (qsig.threshold_scale, qsig.query_scale) == (4.0, 4.0)
    alg3 = LyuAlg3NumericSparseSameNoise(epsilon=1.0, threshold=0.0, c=1, seed=3)
    assert (alg3.threshold_scale, alg3.query_scale, alg3.redraw) == (2.0, 4.0, False)
    answers = np.zeros(6)
    res = alg3.run(answers, n_runs=500)
    top = res.outcomes == 1
    assert top.any()
    np.testing.assert_array_equal(res.released[top], (answers + res.noise["query"][:, :6])[top])  # the SAME noise
    tm = BrokenThresholdMonitorUncalibrated(epsilon=1.0, delta=0.05, threshold=0.0, k=10)
    b = math.log(1 / 0.05)  # raw Alg. 3 noise at the claimed (eps, delta): b = ln(1/delta)/eps, w = Lap(10 b ln b)
    assert tm.calibration.v_scale == pytest.approx(b) and tm.calibration.w_scale == pytest.approx(10 * b * math.log(b))
    with pytest.raises(ValueError, match="Alg. 3 needs ln"):
        BrokenThresholdMonitorUncalibrated(epsilon=1.0, delta=0.5, threshold=0.0, k=10)


def _audit_table(control_flagged=True, shipped_flagged=False):
    base = {"claimed_epsilon": 1.0, "alpha": 0.05, "n_runs": 10, "n_search": 10, "event": "e", "audited": "M",
            "epsilon_lower": 0.5}  # fmt: skip
    return pd.DataFrame(
        [
            {**base, "case": "ok", "negative_control": False, "pair": "", "fails": shipped_flagged},
            {**base, "case": "bad", "negative_control": True, "pair": "ok", "fails": control_flagged},
            {**base, "case": "alone", "negative_control": False, "pair": "", "fails": False},
        ]
    )


def test_audit_claims_need_power_to_confirm_a_pass():
    verdicts = lambda df: {c.claim.split(":")[0]: c.verdict for c in audit_claims(df, {})}  # noqa: E731
    assert verdicts(_audit_table()) == {"ok": "confirmed", "bad": "confirmed", "alone": "inconclusive"}
    assert verdicts(_audit_table(control_flagged=False)) == {
        "ok": "not confirmed", "bad": "not confirmed", "alone": "inconclusive"}  # fmt: skip
    assert verdicts(_audit_table(shipped_flagged=True))["ok"] == "not confirmed"
    assert all(set(c.row()) == {"claim", "rule", "measured", "verdict"} for c in audit_claims(_audit_table(), {}))


def test_power_claims_smallest_ratio_and_soundness_rule():
    rows = []
    for trial in range(10):
        for ratio, flagged in ((1.0, trial < 4), (1.5, trial < 5), (2.0, True), (3.0, trial < 8), (4.0, True)):
            rows.append({"case": "c", "ratio": ratio, "fails": flagged, "alpha": 0.05, "trial": trial})
    df = pd.DataFrame(rows)
    assert smallest_flagged_ratio(df) == {"c": 4.0}  # 2.0 reaches 90% but r = 3 (8/10) falls below again
    claims = power_claims(df, {})
    assert claims[0].verdict == "not confirmed"  # 4/10 flagged at r = 1: above Binomial(10, 0.05)'s 99% quantile (2)
    assert claims[1].verdict == "not confirmed" and "seeds: 4" in claims[1].measured  # 8/10 at r = 3 >= 2
    df.loc[(df["ratio"] == 1.0) & (df["trial"] < 2), "fails"] = False
    assert power_claims(df, {})[0].verdict == "inconclusive"  # 2/10 flagged at r = 1: cannot refute soundness
    df.loc[df["ratio"] == 3.0, "fails"] = True
    assert power_claims(df, {})[1].verdict == "confirmed"  # every r >= 2 flagged in >= 90% of seeds


def test_certify_half_removes_the_search_halfs_selection_bias():
    # 60 fair coins that ignore the data: a 0-DP mechanism. Scored on the runs that chose it, the best of the
    # many candidate events "proves" eps > 0.2 on every seed (selection bias); certified on fresh runs it
    # proves nothing (each audit flags with probability <= alpha = 0.05; fixed seeds).
    def coins(data, n, seed):
        return NoiseSource(seed).rng.integers(0, 2, (n, 60))

    for s in range(5):
        s1, s2 = np.random.SeedSequence(s).spawn(2)
        search = _Search(coins(0, 1000, s1).astype(float), coins(1, 1000, s2).astype(float), 0.0, 0.05)
        search.best()
        assert search.best_score > 0.2
        res = search_audit(coins, 0, 1, n_runs=2000, claimed_epsilon=0.2, seed=s)
        assert not res.fails and res.epsilon_lower == 0.0, res.row()
