"""The shared claim vocabulary and statistics: each rule helper flips on a table where it is false."""

import numpy as np
import pandas as pd
import pytest

from dpstream.claims import (
    VERDICTS,
    Claim,
    all_points,
    bootstrap_mean_ci,
    mean_below,
    monotone_trend,
    point_means,
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
