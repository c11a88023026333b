"""The shared claim vocabulary and statistics: each rule helper flips on a table where it is false."""

import re

import numpy as np
import pandas as pd
import pytest

from dpstream.claims import (
    VERDICTS,
    Claim,
    all_points,
    flat_claim,
    flat_within,
    mean_below,
    mean_ci,
    mean_within,
    monotone_trend,
    point_means,
    trend_claim,
    trend_two_sided,
    trial_values,
    verdict_of,
)
from dpstream.harness.experiments import claims_table
from dpstream.harness.report import verdict_summary


def test_claim_rejects_a_verdict_outside_the_vocabulary():
    with pytest.raises(ValueError, match="verdict must be one of"):
        Claim("c", "r", "m", "agrees")


def test_claims_table_requires_a_rule():
    with pytest.raises(TypeError):
        claims_table([{"claim": "c", "measured": "m", "verdict": "confirmed"}])
    table = claims_table([Claim("c", "r", "m", "n/a")])
    assert list(table.columns) == ["claim", "rule", "measured", "verdict", "id", "kind", "kind_reason", "sentence",
                                   "setting", "data"]
    assert table["kind"].tolist() == ["unregistered"]  # a claim the pre-registration does not list


def test_verdict_of_and_all_points():
    assert [verdict_of(v) for v in (True, False, None)] == ["confirmed", "not confirmed", "inconclusive"]
    assert all_points([True, True]) is True
    assert all_points([True, None]) is None
    assert all_points([None, False, True]) is False
    assert all_points([]) is None


def test_t_interval_needs_three_trials_and_matches_the_formula():
    assert np.isnan(mean_ci([1.0, 2.0])[0])
    lo, hi = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.7764451051977987 * np.std([1, 2, 3, 4, 5], ddof=1) / np.sqrt(5)  # t(0.975, 4) sd / sqrt(n)
    assert (lo, hi) == pytest.approx((3.0 - half, 3.0 + half))
    assert mean_ci([0.7, 0.7, 0.7]) == (pytest.approx(0.7), pytest.approx(0.7))  # deterministic: zero width


def test_t_interval_covers_at_its_nominal_rate_with_three_trials():
    """Coverage of the true mean over 4000 seeded normal samples of size 3: 0.95 +- 4 binomial SE (0.014)."""
    rng = np.random.default_rng(np.random.SeedSequence(1))
    samples = rng.normal(10.0, 2.0, size=(4000, 3))
    covered = np.mean([lo <= 10.0 <= hi for lo, hi in map(mean_ci, samples)])
    assert abs(covered - 0.95) < 4 * np.sqrt(0.95 * 0.05 / 4000)


def test_mean_below_flips_with_the_order_and_needs_trials():
    trials = pd.Index(range(5), name="trial")
    a = pd.Series([1.0, 1.1, 0.9, 1.05, 0.95], index=trials)
    b = a + 0.5
    assert mean_below(a, b) is True
    assert mean_below(b, a) is False
    assert mean_below(a, a + np.array([0.1, -0.1, 0.1, -0.1, 0.0])) is None  # no difference shown: undecided
    assert mean_below(a.iloc[:2], b.iloc[:2]) is None
    with pytest.raises(ValueError, match="duplicate trials"):
        mean_below(pd.concat([a, a]), pd.concat([b, b]))


def test_monotone_trend_over_trials_needs_three_x_values():
    x, trial = np.repeat([1.0, 2.0], 5), np.tile(np.arange(5), 2)  # a clear rise at 2 points: Page's L cannot test it
    assert monotone_trend(x, x + 0.01 * trial, "increasing", trial)[0] is None


def test_monotone_trend_flips_and_rejects_a_flat_series():
    x = np.repeat([0.1, 0.3, 1.0, 2.0], 5)
    trial = np.tile(np.arange(5), 4)
    noise = np.random.default_rng(np.random.SeedSequence(0)).normal(0, 0.01, x.size)
    falling = 1 / x + noise
    assert monotone_trend(x, falling, "decreasing", trial)[0] is True
    assert monotone_trend(x, falling, "increasing", trial)[0] is False  # the opposite trend is shown
    assert monotone_trend(x, np.full(x.size, 0.113), "decreasing", trial)[0] is False  # constant: no trend
    assert monotone_trend(x, noise, "decreasing", trial)[0] is None  # pure noise: cannot decide
    assert monotone_trend(x[::5], falling[::5], "decreasing", trial[::5])[0] is None  # one trial
    assert monotone_trend(x[::5], falling[::5], "decreasing")[0] is True  # one summary per point: Spearman


def test_trend_two_sided_finds_either_direction_at_half_the_level():
    x = np.repeat([0.1, 0.3, 1.0, 2.0], 5)
    trial = np.tile(np.arange(5), 4)
    noise = np.random.default_rng(np.random.SeedSequence(0)).normal(0, 0.01, x.size)
    assert trend_two_sided(x, 1 / x + noise, trial)[0] is True
    assert trend_two_sided(x, x + noise, trial)[0] is True
    assert trend_two_sided(x, np.full(x.size, 0.113), trial)[0] is False  # constant: no effect at all
    assert trend_two_sided(x, noise, trial)[0] is None
    assert trend_two_sided(x[x < 2], (x + noise)[x < 2], trial[x < 2])[0] is True
    holds, p_up, p_down = trend_two_sided(x[::5], (x + noise)[::5], trial[::5])  # one trial: cannot decide
    assert holds is None and np.isnan(p_up)


def test_monotone_trend_does_not_count_trial_offsets_as_evidence():
    """Trials at different levels but no within-trial trend: pooled Spearman would find one, Page does not."""
    x = np.repeat([1.0, 2.0, 3.0], 5)
    trial = np.tile(np.arange(5), 3)
    level = np.tile([1.0, 2.0, 3.0, 4.0, 5.0], 3)
    wobble = np.array([0.0, 0.1, -0.1, 0.05, -0.05, 0.1, -0.1, 0.0, -0.05, 0.05, -0.1, 0.0, 0.1, 0.0, 0.0])
    assert monotone_trend(x, level + wobble, "increasing", trial)[0] is None


def test_point_means_reports_trials_per_point():
    df = pd.DataFrame({"x": [1, 1, 1, 2, 2], "y": [1.0, 2.0, 3.0, 4.0, np.nan]})
    table = point_means(df, "x", "y")
    assert table.loc[1, "n"] == 3 and table.loc[2, "n"] == 1
    assert np.isnan(table.loc[2, "lo"])


def test_verdict_summary_counts_every_word_and_rejects_others():
    claims = pd.DataFrame({"verdict": ["confirmed", "confirmed", "n/a"]})
    assert verdict_summary(claims) == "2 confirmed, 0 not confirmed, 0 inconclusive, 1 n/a (3 claims)"
    with pytest.raises(ValueError, match="unknown verdicts"):
        verdict_summary(pd.DataFrame({"verdict": ["holds"]}))
    assert len(VERDICTS) == 4


def test_mean_within_flips_at_the_bounds_and_needs_trials():
    x = [0.04, 0.05, 0.06, 0.05, 0.05]
    assert mean_within(x, 0.025, 0.1) is True
    assert mean_within(x, 0.0, 0.045) is None  # interval straddles the upper bound: undecided
    assert mean_within(x, 0.0, 0.03) is False  # interval wholly above: shown outside
    assert mean_within([1.0] * 5, 1.0, 1.0) is True
    assert mean_within(x[:2], 0.0, 1.0) is None


def test_flat_within_is_judged_within_each_trial_and_needs_trials():
    trial_level = np.tile([1.0, 2.0, 3.0, 1.5, 2.5], 3)  # streams differ a lot between trials...
    df = pd.DataFrame({"x": np.repeat([1, 2, 3], 5), "trial": np.tile(np.arange(5), 3),
                       "y": trial_level * np.repeat([1.0, 1.02, 0.99], 5)})  # ...but each trial is flat
    flat, spread = flat_within(df, "x", "y", 1.5)
    assert flat is True and spread == pytest.approx(1.02 / 0.99)
    rising = df.assign(y=df["y"] * df["x"])
    assert flat_within(rising, "x", "y", 1.5)[0] is False
    assert flat_within(df[df["x"] == 1], "x", "y", 1.5)[0] is None  # one point
    assert flat_within(df[df["trial"] < 2], "x", "y", 1.5)[0] is None  # two trials


def test_unpaired_flatness_uses_point_intervals_for_independent_timing_noise():
    """Wall-clock times: one slow outlier per trial inflates every per-trial spread, not the point means' spread."""
    x = np.repeat([8, 24, 48], 5)
    trial = np.tile(np.arange(5), 3)
    times = np.full(x.size, 1.0) + 0.02 * np.tile([0.0, 1.0, -1.0, 0.5, -0.5], 3)
    times[[0, 6, 12, 3, 9]] = 1.6  # one hiccup per trial, at x = 8, 24, 48, 8, 24: independent of x
    df = pd.DataFrame({"x": x, "trial": trial, "y": times})
    assert flat_within(df, "x", "y", 1.5, paired=True)[0] is False
    assert flat_within(df, "x", "y", 1.5, paired=False)[0] is None  # the wide intervals cannot decide
    rising = df.assign(y=np.repeat([1.0, 2.0, 4.0], 5) + 0.01 * trial)
    assert flat_within(rising, "x", "y", 1.5, paired=False)[0] is False
    steady = df.assign(y=1.0 + 0.01 * trial)
    assert flat_within(steady, "x", "y", 1.5, paired=False)[0] is True


def test_trial_values_selects_and_indexes_by_trial():
    df = pd.DataFrame({"m": ["a", "a", "b", "b"], "eps": [0.1, 0.1, 0.3, 0.1], "trial": [0, 1, 0, 0],
                       "y": [1.0, 2.0, 3.0, 4.0]})
    got = trial_values(df, "y", {"m": "a", "eps": 0.1})
    assert list(got.index) == [0, 1] and list(got) == [1.0, 2.0]
    assert list(trial_values(df, "y", {"m": "b", "eps": 0.1 + 1e-12})) == [4.0]


def test_trend_and_flat_claims_cover_every_mechanism():
    x = np.repeat([1.0, 2.0, 4.0], 5)
    noise = 1 + 0.01 * np.random.default_rng(np.random.SeedSequence(1)).standard_normal(x.size)
    trial = np.tile(np.arange(5), 3)
    df = pd.concat([pd.DataFrame({"mechanism.name": "flat", "x": x, "y": noise, "trial": trial}),
                    pd.DataFrame({"mechanism.name": "falls", "x": x, "y": noise / x, "trial": trial}),
                    pd.DataFrame({"mechanism.name": "rises", "x": x, "y": noise * x, "trial": trial})])
    assert trend_claim(df, "c", ("falls",), "x", "y", "decreasing").verdict == "confirmed"
    assert trend_claim(df, "c", ("falls", "rises"), "x", "y", "decreasing").verdict == "not confirmed"
    assert trend_claim(df, "c", ("falls", "flat"), "x", "y", "decreasing").verdict == "inconclusive"
    assert trend_claim(df, "c", ("falls", "absent"), "x", "y", "decreasing").verdict == "inconclusive"
    assert flat_claim(df, "c", ("flat",), "x", "y", 1.5).verdict == "confirmed"
    assert flat_claim(df, "c", ("flat", "falls"), "x", "y", 1.5).verdict == "not confirmed"


def test_an_n_a_verdict_survives_the_claims_csv_round_trip(tmp_path):
    from dpstream.harness.report import _claims
    from dpstream.harness.runner import write_csv

    (tmp_path / "tables").mkdir()
    write_csv(claims_table([Claim("c", "r", "m", "n/a"), Claim("d", "r", "m", "confirmed")]),
              tmp_path / "tables" / "x.claims.csv")
    assert verdict_summary(_claims(tmp_path, "x")) == "1 confirmed, 0 not confirmed, 0 inconclusive, 1 n/a (2 claims)"


def test_holm_refutes_only_what_survives_the_family_of_points():
    from dpstream.claims.core import below_at_points, holm_rejects, ratio_ci

    assert holm_rejects([0.001, 0.02, 0.5]) == [True, False, False]  # 0.02 > 0.025 / 2 at the second step
    trials = pd.Index(range(5), name="trial")
    zero = pd.Series(np.zeros(5), index=trials)
    below = pd.Series([-1.0, -1.1, -0.9, -1.05, -0.95], index=trials)
    # one of 20 points "above" at one-sided p ~ 0.007 (t 4.2 over 5 trials): refutes alone, not among 20 points
    weak = pd.Series([0.1, 0.25, 0.05, 0.2, 0.15], index=trials)
    assert below_at_points([(weak, zero)]) == [False]
    assert below_at_points([(weak, zero)] + [(below, zero)] * 19)[0] is None
    strong = pd.Series([5.0, 5.1, 4.9, 5.05, 4.95], index=trials)  # p ~ 1e-7: refutes at any k
    assert below_at_points([(strong, zero)] + [(below, zero)] * 19)[0] is False
    centre, lo, hi = ratio_ci([2.0, 4.0, 8.0])
    assert centre == pytest.approx(4.0, rel=1e-12) and lo < 4.0 < hi  # geometric mean, log-scale interval
    assert lo * hi == pytest.approx(16.0, rel=1e-9)  # symmetric on the log scale


def test_deciding_effect_reports_the_point_whose_interval_reaches_highest():
    from dpstream.claims.core import deciding_effect, paired_difference_ci

    trials = pd.Index(range(5), name="trial")
    low = pd.Series([1.0, 1.1, 0.9, 1.0, 1.05], index=trials)
    below = (low - 0.5, low)                       # clearly below: interval near -0.5
    near = (low + np.array([0.1, -0.2, 0.05, -0.1, 0.2]), low)  # straddles 0: the point that decides
    text = deciding_effect([below, near], ["x 1", "x 2"])
    mean, lo, hi = paired_difference_ci(*near)
    assert "(x 2)" in text and f"{mean:+.3g} [{lo:+.3g}, {hi:+.3g}]" in text
    assert "(x 1)" in deciding_effect([below, (low - 0.6, low)], ["x 1", "x 2"])  # -0.5 reaches higher than -0.6
    assert "no point has 3 paired trials" in deciding_effect([(low[:2], low[:2])], ["x 1"])


def test_trend_effect_is_the_per_trial_end_ratio_on_the_log_scale_or_a_difference():
    from dpstream.claims.core import trend_effect

    x = [1, 2, 4] * 4
    trial = [t for t in range(4) for _ in range(3)]
    halving = [10.0, 7.0, 5.0, 8.0, 6.0, 4.0, 12.0, 9.0, 6.0, 6.0, 4.0, 3.0]  # every trial ends at half its start
    # zero spread over trials: no zero-width interval, the series is named deterministic
    assert "x0.5 (zero spread over trials: one deterministic series, no interval)" in trend_effect(x, halving, trial)
    signed = [1.0, 0.0, -1.0, 2.0, 0.5, 0.0, 0.5, 0.0, -1.5, 1.0, 1.0, -1.0]  # ends differ by -2 in every trial
    assert "-2 (zero spread over trials: one deterministic series, no interval) (per-trial difference)" in \
        trend_effect(x, signed, trial)
    spread = [10.0, 7.0, 5.0, 8.0, 6.0, 4.0, 12.0, 9.0, 3.0, 6.0, 4.0, 3.0]  # trial 2 ends at 1/4: a real interval
    assert re.search(r"x0\.4\d* \[0\.\d+, 0\.\d+\] \(per-trial ratio", trend_effect(x, spread, trial))


def test_fmt_ci_says_deterministic_instead_of_a_zero_width_interval():
    from dpstream.claims.core import ZERO_SPREAD, fmt_ci

    lo, hi = mean_ci([0.7, 0.7, 0.7])  # copies of one outcome; equal up to rounding (relative 1e-9)
    assert fmt_ci(0.7, lo, hi) == f"0.7 ({ZERO_SPREAD})"
    assert fmt_ci(0.7, 0.7, 0.7 * (1 + 1e-12)) == f"0.7 ({ZERO_SPREAD})"
    assert fmt_ci(0.7, 0.69, 0.71) == "0.7 [0.69, 0.71]"
    assert fmt_ci(-0.5, -0.6, -0.4, sign=True) == "-0.5 [-0.6, -0.4]"
    assert fmt_ci(0.7, np.nan, np.nan) == "0.7 [nan, nan]"  # no interval is not zero spread


def test_flat_claim_prints_the_interval_it_judges_the_spread_by():
    from dpstream.claims.core import spread_interval

    rng = np.random.default_rng(3)
    rows = pd.DataFrame({"mechanism.name": "m", "trial": np.repeat(np.arange(6), 3), "x": np.tile([1, 2, 3], 6),
                         "y": 1.0 + rng.uniform(0, 0.2, 18)})
    lo, hi = spread_interval(rows, "x", "y")
    table = rows.pivot_table(index="trial", columns="x", values="y").to_numpy()
    assert (lo, hi) == pytest.approx(mean_ci(table.max(axis=1) / table.min(axis=1)), rel=1e-12)
    assert f"[{lo:.3g}, {hi:.3g}]" in flat_claim(rows, "c", ("m",), "x", "y", 1.5).measured
