"""The shared claim vocabulary and statistics: each rule helper flips on a table where it is false."""

import numpy as np
import pandas as pd
import pytest

from dpstream.claims import (
    VERDICTS,
    Claim,
    all_points,
    bootstrap_mean_ci,
    flat_claim,
    flat_within,
    mean_below,
    mean_within,
    monotone_trend,
    point_means,
    trend_claim,
    trial_values,
    verdict_of,
)
from dpstream.harness.report import verdict_summary
from dpstream.harness.runner import claims_table


def test_claim_rejects_a_verdict_outside_the_vocabulary():
    with pytest.raises(ValueError, match="verdict must be one of"):
        Claim("c", "r", "m", "agrees")


def test_claims_table_requires_a_rule():
    with pytest.raises(TypeError):
        claims_table([{"claim": "c", "measured": "m", "verdict": "confirmed"}])
    table = claims_table([Claim("c", "r", "m", "n/a")])
    assert list(table.columns) == ["claim", "rule", "measured", "verdict"]


def test_verdict_of_and_all_points():
    assert [verdict_of(v) for v in (True, False, None)] == ["confirmed", "not confirmed", "inconclusive"]
    assert all_points([True, True]) is True
    assert all_points([True, None]) is None
    assert all_points([None, False, True]) is False
    assert all_points([]) is None


def test_bootstrap_interval_needs_three_trials_and_covers_the_mean():
    assert np.isnan(bootstrap_mean_ci([1.0, 2.0])[0])
    lo, hi = bootstrap_mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert lo < 3.0 < hi and lo >= 1.0 and hi <= 5.0


def test_mean_below_flips_with_the_order_and_needs_trials():
    trials = pd.Index(range(5), name="trial")
    a = pd.Series([1.0, 1.1, 0.9, 1.05, 0.95], index=trials)
    b = a + 0.5
    assert mean_below(a, b) is True
    assert mean_below(b, a) is False
    assert mean_below(a, a + np.array([0.1, -0.1, 0.1, -0.1, 0.0])) is False  # no difference shown
    assert mean_below(a.iloc[:2], b.iloc[:2]) is None


def test_monotone_trend_flips_and_rejects_a_flat_series():
    x = np.repeat([0.1, 0.3, 1.0, 2.0], 5)
    noise = np.random.default_rng(np.random.SeedSequence(0)).normal(0, 0.01, x.size)
    falling = 1 / x + noise
    assert monotone_trend(x, falling, "decreasing")[0] is True
    assert monotone_trend(x, falling, "increasing")[0] is False
    assert monotone_trend(x, np.full(x.size, 0.113), "decreasing")[0] is False  # the fig3f PunctualCMS case
    assert monotone_trend(x[:4], falling[:4], "decreasing")[0] is None  # one x value


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
    assert mean_within(x, 0.0, 0.045) is False  # interval straddles the upper bound: not shown inside
    assert mean_within([1.0] * 5, 1.0, 1.0) is True
    assert mean_within([1.0, 1.0, 1.0, 1.0, 8 / 9], 1.0, 1.0) is False  # one trial below 1
    assert mean_within(x[:2], 0.0, 1.0) is None


def test_flat_within_counts_the_trial_noise_and_needs_trials():
    df = pd.DataFrame({"x": np.repeat([1, 2, 3], 5), "y": np.tile([1.0, 1.02, 0.98, 1.01, 0.99], 3)})
    flat, spread = flat_within(point_means(df, "x", "y"), 1.5)
    assert flat is True and 1.0 < spread < 1.1
    rising = df.assign(y=df["y"] * df["x"])
    assert flat_within(point_means(rising, "x", "y"), 1.5)[0] is False
    assert flat_within(point_means(df[df["x"] == 1], "x", "y"), 1.5)[0] is None  # one point
    assert flat_within(point_means(df.groupby("x").head(2), "x", "y"), 1.5)[0] is None  # two trials


def test_trial_values_selects_and_indexes_by_trial():
    df = pd.DataFrame({"m": ["a", "a", "b", "b"], "eps": [0.1, 0.1, 0.3, 0.1], "trial": [0, 1, 0, 0],
                       "y": [1.0, 2.0, 3.0, 4.0]})
    got = trial_values(df, "y", {"m": "a", "eps": 0.1})
    assert list(got.index) == [0, 1] and list(got) == [1.0, 2.0]
    assert list(trial_values(df, "y", {"m": "b", "eps": 0.1 + 1e-12})) == [4.0]


def test_trend_and_flat_claims_cover_every_mechanism():
    x = np.repeat([1.0, 2.0, 4.0], 5)
    noise = 1 + 0.01 * np.random.default_rng(np.random.SeedSequence(1)).standard_normal(x.size)
    df = pd.concat([pd.DataFrame({"mechanism.name": "flat", "x": x, "y": noise}),
                    pd.DataFrame({"mechanism.name": "falls", "x": x, "y": noise / x})])
    assert trend_claim(df, "c", ("falls",), "x", "y", "decreasing").verdict == "confirmed"
    assert trend_claim(df, "c", ("falls", "flat"), "x", "y", "decreasing").verdict == "not confirmed"
    assert trend_claim(df, "c", ("falls", "absent"), "x", "y", "decreasing").verdict == "inconclusive"
    assert flat_claim(df, "c", ("flat",), "x", "y", 1.5).verdict == "confirmed"
    assert flat_claim(df, "c", ("flat", "falls"), "x", "y", 1.5).verdict == "not confirmed"
