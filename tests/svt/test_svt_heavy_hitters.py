"""Shifting heavy hitters (Thm 4.7) and its baselines: weights, report probabilities vs formula, guarantees."""

import math

import numpy as np
import pytest
from scipy import sparse, stats

from dpstream.svt import ThresholdMonitor, calibrate_monitor, sparse_sigma
from dpstream.svt.shifting import (
    PRIVATE,
    HistogramEveryStep,
    ShiftingHeavyHitters,
    SparseThenHistogram,
    heavy_rows,
    monitor_report_probability,
)
from dpstream.svt.theory import alpha_sparse

EPS, DELTA, BETA, DOMAIN = 1.0, 1e-6, 0.05, 10**12


def test_heavy_rows_groups_holders_into_weighted_elements():
    holdings = np.array([[5, 5, PRIVATE], [7, PRIVATE, 5]])
    rows = heavy_rows(holdings, np.array([10.0, 20.0, 30.0]), 100)
    np.testing.assert_array_equal(rows.step, [0, 1, 1])
    np.testing.assert_array_equal(rows.element, [5, 5, 7])
    np.testing.assert_array_equal(rows.weight, [30.0, 30.0, 10.0])
    np.testing.assert_array_equal(rows.private_per_step, [30, 20])
    np.testing.assert_array_equal(rows.zero_per_step, [100 - 1 - 30, 100 - 2 - 20])


def test_heavy_rows_rejects_bad_input():
    with pytest.raises(ValueError, match="element ids"):
        heavy_rows(np.array([[100]]), np.array([1.0]), 100)
    with pytest.raises(ValueError, match="non-negative group sizes"):
        heavy_rows(np.array([[1]]), np.array([-1.0]), 100)


@pytest.mark.parametrize("gap", [0.0, 2e4, 1.5e5])
def test_monitor_report_probability_matches_sampled_noise(gap):
    # 400 000 draws of w + min(v, Delta); binomial two-sided test at p = 1e-6.
    cal = calibrate_monitor(1.0, 1e-6, 1)
    rng = np.random.default_rng(1)
    n = 400_000
    top = rng.laplace(0, cal.w_scale, n) + np.minimum(rng.laplace(0, cal.v_scale, n), cal.cap) >= gap
    assert stats.binomtest(int(top.sum()), n, monitor_report_probability(cal, gap)).pvalue > 1e-6


@pytest.mark.parametrize("epsilon, k", [(1.0, 1), (1.0, 3), (1.0, 10), (0.1, 3), (0.01, 3)])
@pytest.mark.parametrize("gap_over_cap", [-1.0, 0.0, 0.5, 0.99, 1.0, 2.0])
def test_monitor_report_probability_matches_the_mechanism_below_and_above_the_cap(epsilon, k, gap_over_cap):
    # The actual ThresholdMonitor: one linear query f = 1 x counts, threshold t = f + gap, 200 000 seeded runs.
    # Tolerance: 5 binomial standard errors, 5 sqrt(p (1 - p) / n) (two-sided false alarm 5.7e-7 per case).
    counts = np.array([100.0])
    cal = calibrate_monitor(epsilon, DELTA, k)
    gap = gap_over_cap * cal.cap
    tm = ThresholdMonitor(epsilon=epsilon, delta=DELTA, threshold=counts[0] + gap, k=k, seed=7)
    n = 200_000
    top = tm.run(sparse.csr_matrix(np.ones((1, 1))), counts, n_runs=n).outcomes[:, 0] == 1
    p = monitor_report_probability(tm.calibration, gap)
    assert abs(top.mean() - p) <= 5 * math.sqrt(p * (1 - p) / n)


def _design(sizes, m=50, k_star=1):
    holdings = np.full((m, len(sizes)), PRIVATE)
    for g in range(len(sizes)):
        holdings[g * k_star : (g + 1) * k_star, g] = np.arange(g * k_star, (g + 1) * k_star)
    return holdings, np.asarray(sizes, float)


def test_tme_reports_at_the_rate_its_noise_implies():
    # One group at weight t: each TME round is TOP with probability Pr[w + v_bar >= 0] (formula), 4000 runs.
    hh = ShiftingHeavyHitters(epsilon=EPS, delta=DELTA, k_star=1, m=50, domain_size=DOMAIN, beta=BETA, seed=2)
    holdings, sizes = _design([hh.bounds.threshold - 3e4])
    res = hh.run(holdings, sizes, n_runs=4000)
    p = monitor_report_probability(hh.tme.calibration, 3e4)
    assert stats.binomtest(int(res.reported.sum()), 4000, p).pvalue > 1e-6


def test_tme_never_reports_weight_zero_and_finds_every_group_above_tau():
    hh = ShiftingHeavyHitters(epsilon=EPS, delta=DELTA, k_star=2, m=50, domain_size=DOMAIN, beta=BETA, seed=3)
    holdings, sizes = _design([hh.tau, 3 * hh.tau], k_star=2)
    res = hh.run(holdings, sizes, n_runs=500)
    assert res.reported.all()
    assert (res.zero_reports == 0).all() and (res.private_reports == 0).all()


def test_histogram_baseline_noise_matches_its_scale():
    # Weight = threshold - scale: report probability Pr[Lap(scale) >= scale] = e^-1 / 2 (4000 runs, p = 1e-6).
    base = HistogramEveryStep(epsilon=EPS, delta=DELTA, m=50, domain_size=DOMAIN, beta=BETA, seed=4)
    holdings, sizes = _design([base.core.threshold - base.core.scale])
    res = base.run(holdings, sizes, n_runs=4000)
    assert stats.binomtest(int(res.reported.sum()), 4000, math.exp(-1) / 2).pvalue > 1e-6


def test_sparse_baseline_splits_the_budget_and_finds_heavy_steps():
    base = SparseThenHistogram(epsilon=EPS, delta=DELTA, c=3, m=50, domain_size=DOMAIN, beta=BETA, seed=5)
    assert base.sparse.sigma in (sparse_sigma(EPS / 2, 3), sparse_sigma(EPS / 2, 3, DELTA / 2))
    assert base.sparse_threshold == pytest.approx(alpha_sparse(EPS / 2, DELTA / 2, 3, 50, BETA / 2) + 1)
    holdings, sizes = _design([2 * base.tau] * 3)
    res = base.run(holdings, sizes, n_runs=300)
    assert res.reported.mean() > 0.95
