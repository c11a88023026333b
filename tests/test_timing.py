"""The interleaved A/B protocol: the median ratio, its order-statistic interval and the decision rule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpstream.timing import interleaved_ratios, log_ratio_interval, median_interval


def test_median_interval_covers_95_percent_from_six_values_on():
    # 1 - 2 P(Bin(6, 1/2) = 0) = 0.96875 >= 0.95; at 5 values [min, max] covers only 0.9375
    _, low, high, coverage = median_interval(np.array([1.0, 2, 3, 4, 5, 6]))
    assert (low, high) == (1.0, 6.0) and coverage == pytest.approx(0.96875, rel=1e-12)
    _, _, _, cov5 = median_interval(np.arange(1.0, 6.0))
    assert cov5 == pytest.approx(0.9375, rel=1e-12)


def test_median_interval_narrows_with_more_repetitions():
    _, low, high, coverage = median_interval(np.arange(1.0, 21.0))
    assert 1.0 < low and high < 20.0 and coverage >= 0.95


def test_interleaved_ratio_of_a_fake_clock_is_exact_and_decides():
    # a deterministic clock: the reference takes 2 units, the candidate 1, so the candidate is exactly 2x faster
    ticks = itertools.count()
    state = {"t": 0.0}
    costs = {"ref": 2.0, "fast": 1.0, "slow": 4.0}

    def clock() -> float:
        next(ticks)
        return state["t"]

    def work(name: str):
        def run() -> None:
            state["t"] += costs[name]
        return run

    est = interleaved_ratios({n: work(n) for n in costs}, "ref", repeats=7, clock=clock)
    assert est["fast"].ratio == pytest.approx(2.0, rel=1e-12)
    assert est["slow"].ratio == pytest.approx(0.5, rel=1e-12)
    assert est["fast"].decide(1.5) is True and est["slow"].decide(0.8) is False


def test_rejects_fewer_than_five_repetitions_and_unknown_reference():
    with pytest.raises(ValueError, match="repeats must be >= 5"):
        interleaved_ratios({"a": lambda: None}, "a", repeats=3)
    with pytest.raises(ValueError, match="reference 'b'"):
        interleaved_ratios({"a": lambda: None}, "b")


def test_log_ratio_interval_is_symmetric_on_the_log_scale():
    centre, low, high = log_ratio_interval(np.array([0.5, 2.0, 0.5, 2.0]))
    assert centre == pytest.approx(1.0, rel=1e-12)
    assert low * high == pytest.approx(1.0, rel=1e-9)
