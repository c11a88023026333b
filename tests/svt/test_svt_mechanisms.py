"""Mechanisms of the sparse vector family: the noise they add, halting, one-sided cap, counters, pruning, bad input."""

import math

import numpy as np
import pytest
from scipy import sparse, stats

from dpstream.svt import (
    AboveThreshold,
    LinearQueries,
    NumericSparse,
    Sparse,
    ThresholdMonitor,
    ThresholdMonitorEvolving,
    calibrate_monitor,
    sparse_sigma,
)
from dpstream.svt._kernels import RELEASE_FRESH, monitor_pass
from dpstream.svt.sparse import GeneralisedSparse

N = 200_000


def assert_laplace_scale(x: np.ndarray, scale: float) -> None:
    """Check x ~ Lap(scale) by its mean |x|, its tail and its variance.

    Mean |x| = scale (sd scale/sqrt(n)), tolerance 5 sd (p ~ 6e-7); tail Pr[|x| > 3 scale] = e^-3, binomial two-sided p
    > 1e-6; variance 2 scale^2 within 5 sd (relative sd of the sample variance is sqrt(5/n) for the Laplace's kurtosis
    6).
    """
    x = np.ravel(x)
    n = x.size
    assert abs(np.abs(x).mean() / scale - 1) < 5 / math.sqrt(n)
    assert x.var() / (2 * scale**2) == pytest.approx(1, abs=5 * math.sqrt(5 / n))
    tail = int((np.abs(x) > 3 * scale).sum())
    assert stats.binomtest(tail, n, math.exp(-3)).pvalue > 1e-6


def test_above_threshold_noise_scales_are_2_over_eps_and_4_over_eps():
    mech = AboveThreshold(epsilon=0.5, threshold=0.0, seed=1)
    res = mech.run(np.full(4, -1e9), n_runs=N // 4)
    assert_laplace_scale(res.noise["threshold"], 2 / 0.5)
    assert_laplace_scale(res.noise["query"], 4 / 0.5)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_sparse_noise_scales_match_sigma(delta):
    mech = Sparse(epsilon=1.0, threshold=0.0, c=5, delta=delta, seed=2)
    sigma = sparse_sigma(1.0, 5, delta)
    res = mech.run(np.full(10, -1e12), n_runs=N // 10)
    assert_laplace_scale(res.noise["threshold"], sigma)
    assert_laplace_scale(res.noise["query"], 2 * sigma)


def test_numeric_sparse_released_answers_carry_lap_sigma_at_half_budget():
    mech = NumericSparse(epsilon=1.0, threshold=-1e12, c=4, seed=3)  # every query is TOP
    answers = np.arange(4.0)
    res = mech.run(answers, n_runs=N // 4)
    assert (res.outcomes == 1).all()
    assert mech.sigma == pytest.approx(sparse_sigma(0.5, 4))
    assert_laplace_scale(res.released - answers, mech.sigma)


def test_sparse_outcomes_are_the_noisy_comparisons_with_threshold_redrawn_after_each_top():
    mech = Sparse(epsilon=1.0, threshold=3.0, c=3, seed=4)
    answers = np.array([0.0, 6.0, 2.0, 5.0, 3.0, 4.0, 1.0, 7.0] * 4)
    res = mech.run(answers, n_runs=2000)
    thr, qn = res.noise["threshold"], res.noise["query"]
    for r in range(50):
        count = 0
        for i, f in enumerate(answers):
            if count == 3:
                assert res.outcomes[r, i] == -1  # halted at the c-th TOP
                continue
            top = f + qn[r, i] >= 3.0 + thr[r, count]
            assert res.outcomes[r, i] == int(top)
            count += top
    assert ((res.outcomes == 1).sum(axis=1) <= 3).all()


def test_sparse_is_reproducible_from_its_seed():
    answers = np.linspace(0, 10, 50)
    a = Sparse(epsilon=1.0, threshold=5.0, c=3, seed=11).run(answers)
    b = Sparse(epsilon=1.0, threshold=5.0, c=3, seed=11).run(answers)
    np.testing.assert_array_equal(a.outcomes, b.outcomes)


def test_sparse_lazy_chunks_stop_drawing_after_halt():
    res = AboveThreshold(epsilon=1.0, threshold=-1e9, seed=5).run(np.zeros(300_000))
    assert res.outcomes[0, 0] == 1 and (res.outcomes[0, 1:] == -1).all()
    assert res.noise["query"].size < 300_000


def test_sparse_accepts_linear_queries_on_counts():
    q = LinearQueries.from_matrix(np.array([[1.0, 0.0], [0.5, 1.0]]))
    res = Sparse(epsilon=1.0, threshold=-1e9, c=2, seed=6).run(q, counts=np.array([4.0, 2.0]))
    assert (res.outcomes == 1).all()


# ThresholdMonitor


@pytest.mark.parametrize(
    ("cls", "cal"),
    [
        (ThresholdMonitor, calibrate_monitor(1.0, 1e-6, 3)),
        (ThresholdMonitorEvolving, calibrate_monitor(0.5, 1e-6 / (1 + math.exp(0.5)), 3)),  # group privacy: eps/2, ...
    ],
)
def test_monitor_noise_scales_are_10_delta_and_b(cls, cal):
    mech = cls(epsilon=1.0, delta=1e-6, threshold=0.0, k=3, seed=7)
    q = sparse.csr_matrix(np.ones((10, 1)))
    res = mech.run(q, np.array([1.0]), n_runs=N // 10)
    assert_laplace_scale(res.noise["w"], cal.w_scale)
    assert_laplace_scale(res.noise["v"], math.log(1 / cal.delta) / cal.epsilon)
    assert cal.w_scale == pytest.approx(10 * cal.cap)


def test_kappa_multiplies_every_noise_scale_and_is_not_certified():
    # tolerance: assert_laplace_scale (5 sd of the mean |x|, variance and tail); kappa = 0.1 against kappa = 1's scale
    kappa, q = 0.1, sparse.csr_matrix(np.ones((10, 1)))
    full, low = calibrate_monitor(1.0, 1e-6, 3), calibrate_monitor(1.0, 1e-6, 3, kappa)
    tm = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=0.0, k=3, seed=7, kappa=kappa)
    res = tm.run(q, np.array([1.0]), n_runs=N // 10)
    assert_laplace_scale(res.noise["w"], kappa * full.w_scale)
    assert_laplace_scale(res.noise["v"], kappa * math.log(1 / full.delta) / full.epsilon)
    assert low.cap == pytest.approx(kappa * full.cap)  # min(kappa v, kappa Delta) = kappa min(v, Delta)
    sv = Sparse(epsilon=1.0, threshold=0.0, c=5, seed=2, kappa=kappa)
    res = sv.run(np.full(10, -1e12), n_runs=N // 10)
    assert_laplace_scale(res.noise["threshold"], kappa * sparse_sigma(1.0, 5))
    assert_laplace_scale(res.noise["query"], 2 * kappa * sparse_sigma(1.0, 5))
    at = AboveThreshold(epsilon=0.5, threshold=0.0, seed=1, kappa=kappa)
    assert at.threshold_scale == pytest.approx(kappa * 2 / 0.5) and at.query_scale == pytest.approx(kappa * 4 / 0.5)
    assert not (tm.certified or sv.certified or at.certified) and tm.kappa == low.kappa == kappa
    tm = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=0.0, k=3)
    assert tm.certified and Sparse(epsilon=1.0, threshold=0.0, c=5).certified and tm.kappa == full.kappa == 1.0


@pytest.mark.parametrize("kappa", [0.0, -0.5, 1.01, float("nan"), "x"])
def test_rejects_kappa_outside_unit_interval(kappa):
    with pytest.raises(ValueError, match=r"kappa must be in \(0, 1\]"):
        Sparse(epsilon=1.0, threshold=0.0, c=5, kappa=kappa)
    with pytest.raises(ValueError, match=r"kappa must be in \(0, 1\]"):
        calibrate_monitor(1.0, 1e-6, 3, kappa)


def test_monitor_outcomes_are_value_plus_w_plus_one_sided_capped_v_against_exact_t():
    mech = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=5e4, k=1000, seed=8)
    q = sparse.csr_matrix(np.ones((20, 1)))
    res = mech.run(q, np.array([3e4]), n_runs=5000)
    cap = mech.calibration.cap
    expect = res.values + res.noise["w"] + np.minimum(res.noise["v"], cap) >= 5e4
    np.testing.assert_array_equal(res.outcomes == 1, expect)


def _kernel(counts, rows, w, v, cap, t, k):
    q = sparse.csr_matrix(np.asarray(rows, dtype=float))
    out = np.empty((1, q.shape[0]), dtype=np.int8)
    values = np.empty((1, q.shape[0]))
    monitor_pass(
        np.asarray(counts, float),
        q.indptr,
        q.indices,
        q.data,
        np.atleast_2d(np.asarray(w, float)),
        np.atleast_2d(np.asarray(v, float)),
        cap,
        t,
        float(k),
        out,
        values,
    )
    return out[0], values[0]


def test_monitor_cap_is_one_sided():
    # Value 0, w = 0, cap 10: v = +1000 is capped to 10, v = -1000 is NOT capped (a two-sided cap gives -10).
    out, _ = _kernel([0.0], [[1.0]] * 3, [0, 0, 0], [1000.0, -1000.0, 5.0], cap=10.0, t=8.0, k=99)
    np.testing.assert_array_equal(out, [1, 0, 0])
    out, _ = _kernel([0.0], [[1.0]] * 2, [0, 0], [-1000.0, -5.0], cap=10.0, t=-500.0, k=99)
    np.testing.assert_array_equal(out, [0, 1])


def test_monitor_counters_move_only_on_top():
    # k = 1: five BOTTOMs (w = -1e9) leave the atom in; the first TOP removes it.
    w = [-1e9] * 5 + [0.0, 0.0]
    out, values = _kernel([7.0], [[1.0]] * 7, w, [0.0] * 7, cap=1.0, t=1.0, k=1)
    np.testing.assert_array_equal(out, [0, 0, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(values, [7, 7, 7, 7, 7, 7, 0])


def test_monitor_prunes_when_counter_reaches_k():
    # f = 0.5 per TOP, k = 1: counter 0.5 keeps the atom, 1.0 >= k removes it; the other atom is untouched.
    rows = [[0.5, 0.0]] * 3 + [[0.0, 1.0]]
    out, values = _kernel([4.0, 9.0], rows, [0.0] * 4, [0.0] * 4, cap=1.0, t=0.0, k=1)
    np.testing.assert_array_equal(out, [1, 1, 1, 1])
    np.testing.assert_array_equal(values, [2.0, 2.0, 0.0, 9.0])


def test_monitor_false_positives_also_increment_counters():
    # Value 0 < t but w pushes it to TOP: the atom's counter still moves and k = 1 removes it.
    out, values = _kernel([3.0], [[1.0]] * 2, [100.0, 100.0], [0.0, 0.0], cap=1.0, t=50.0, k=1)
    np.testing.assert_array_equal(out, [1, 1])
    np.testing.assert_array_equal(values, [3.0, 0.0])


def test_monitor_calibration_is_recorded():
    mech = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=1.0, k=2)
    assert mech.calibration.option == "A"
    assert (mech.privacy.epsilon, mech.privacy.delta, mech.privacy.notion) == (1.0, 1e-6, "approximate")


def test_evolving_calibrates_for_replace_one_by_group_privacy():
    mech = ThresholdMonitorEvolving(epsilon=1.0, delta=1e-6, threshold=1.0, k=2)
    cal = calibrate_monitor(0.5, 1e-6 / (1 + math.exp(0.5)), 2)
    assert mech.calibration == cal


def test_evolving_excludes_users_but_keeps_them_in_the_population():
    # Two users; step inputs change (rows). User 0 reaches k = 1 at step 0 and is excluded afterwards,
    # even when its later input matches the query; user 1 still counts.
    rows = [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    out, values = _kernel([1.0, 1.0], rows, [0.0] * 3, [0.0] * 3, cap=1.0, t=0.5, k=1)
    np.testing.assert_array_equal(out, [1, 1, 0])
    np.testing.assert_array_equal(values, [1.0, 1.0, 0.0])


# Bad input


@pytest.mark.parametrize("eps", [0.0, -1.0, float("inf")])
def test_rejects_nonpositive_epsilon(eps):
    for make in (
        lambda: AboveThreshold(epsilon=eps, threshold=1.0),
        lambda: Sparse(epsilon=eps, threshold=1.0, c=2),
        lambda: NumericSparse(epsilon=eps, threshold=1.0, c=2),
    ):
        with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
            make()
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        ThresholdMonitor(epsilon=eps, delta=1e-6, threshold=1.0, k=1)


@pytest.mark.parametrize("delta", [1.0, -0.5, 1.5])
def test_rejects_delta_outside_unit_interval(delta):
    with pytest.raises(ValueError, match=r"delta must be in the open interval \(0, 1\)"):
        Sparse(epsilon=1.0, threshold=1.0, c=2, delta=delta)
    with pytest.raises(ValueError, match=r"delta must be in the open interval \(0, 1\)"):
        ThresholdMonitor(epsilon=1.0, delta=delta, threshold=1.0, k=1)


@pytest.mark.parametrize("k", [0, -1])
def test_rejects_cap_or_cutoff_below_1(k):
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=1.0, k=k)
    with pytest.raises(ValueError, match="c must be an integer >= 1"):
        Sparse(epsilon=1.0, threshold=1.0, c=k)


def test_generalised_sparse_rejects_fresh_answers_or_redraw_without_cutoff():
    with pytest.raises(ValueError, match="fresh answer noise for each TOP needs a cutoff"):
        GeneralisedSparse(threshold=1.0, cutoff=None, threshold_scale=1.0, query_scale=1.0, answer_scale=1.0,
                          redraw=False, release=RELEASE_FRESH)
    with pytest.raises(ValueError, match="redrawing the threshold after each TOP needs a cutoff"):
        GeneralisedSparse(threshold=1.0, cutoff=None, threshold_scale=1.0, query_scale=1.0, redraw=True)


def test_monitor_rejects_non_linear_queries():
    mech = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=1.0, k=1)
    with pytest.raises(ValueError, match="requires linear queries"):
        mech.run(np.array([1.0, 2.0, 3.0]), np.ones(3))
    with pytest.raises(ValueError, match="requires linear queries"):
        mech.run(lambda s: s.max(), np.ones(3))


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_rejects_linear_query_values_outside_unit_interval(bad):
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=1.0, k=1).run(np.array([[1.0, bad]]), np.ones(2))
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        Sparse(epsilon=1.0, threshold=1.0, c=1).run(np.array([[bad, 0.0]]), counts=np.ones(2))


def test_rejects_negative_counts():
    with pytest.raises(ValueError, match="non-negative"):
        ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=1.0, k=1).run(np.eye(2), np.array([1.0, -1.0]))


def test_sparse_rejects_epsilon_beyond_the_advanced_composition_range():
    with pytest.raises(ValueError, match=r"composes \(advanced composition\) to epsilon"):
        Sparse(epsilon=10.0, threshold=1.0, c=2, delta=0.5)


def test_single_run_reports_queries_processed():
    assert Sparse(epsilon=1.0, threshold=-1e9, c=2, seed=1).run(np.zeros(10)).processed.tolist() == [2]
