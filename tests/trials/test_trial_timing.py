"""Interleaved A/B timing inside a trial (dpstream.trials.timing): the columns timing verdicts are decided by."""

import time

import numpy as np
import pytest

from dpstream.trials import timing


class Sleeper:
    """A stand-in mechanism whose ``extend`` takes a known time per item."""

    def __init__(self, per_item: float) -> None:
        self.per_item = per_item

    def extend(self, items: np.ndarray) -> None:
        time.sleep(self.per_item * items.size)


def params(name: str = "m", **spec: object) -> dict:
    return {"mechanism": {"name": name, "slow": 4, **({"timing": spec} if spec else {})}, "memory_kb": 24}


def build(p: dict) -> Sleeper:
    return Sleeper(1e-6 * p["mechanism"]["slow"])


def test_no_spec_or_another_mechanism_gives_no_columns():
    assert timing.interleaved_columns(params(), build, np.arange(10)) == {}
    spec = {"reference": {"mechanism.slow": 1}, "mechanisms": ["other"]}
    assert timing.interleaved_columns(params(**spec), build, np.arange(10)) == {}


def test_a_reference_four_times_slower_gives_a_ratio_near_four():
    # the candidate sleeps 1 us per item, the reference 4 us: reference time / candidate time ~ 4 (sleep overshoot and
    # load only pull the ratio towards 1, so > 2.5 is a loose bound the true value 4 clears on any machine)
    p = params(reference={"mechanism.slow": 16}, seconds=0.004, repeats=5)
    row = timing.interleaved_columns(p, build, np.arange(1 << 16))
    assert 2.5 < row["interleaved_ratio"] < 6.0
    assert row["interleaved_low"] <= row["interleaved_ratio"] <= row["interleaved_high"]


class Ticker:
    """A fake clock that a stand-in mechanism advances by a known time per item."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Fake:
    """A stand-in mechanism that advances a fake clock by a known time per item."""

    def __init__(self, clock: Ticker, per_item: float) -> None:
        self.clock, self.per_item = clock, per_item

    def extend(self, items: np.ndarray) -> None:
        self.clock.now += self.per_item * items.size


def test_each_arms_items_grow_until_it_takes_the_asked_time():
    clock = Ticker()
    # 1 us per item needs 4096 * 4^2 = 65536 items for 50 ms (16384 give 16 ms); 1 ms per item needs 4096 (4.1 s)
    chunk = timing.calibrated_items(np.arange(1 << 20), lambda: Fake(clock, 1e-6), 0.05, clock)
    assert chunk.size == 65536 and chunk.dtype == np.int64
    assert timing.calibrated_items(np.arange(1 << 20), lambda: Fake(clock, 1e-3), 0.05, clock).size == 4096
    assert timing.calibrated_items(np.arange(100), lambda: Fake(clock, 1e-6), 10.0, clock).size == 100  # whole stream


def test_arms_fed_different_item_counts_give_the_ratio_of_per_item_times():
    # candidate 4 us per item, reference 64 us: at 50 ms a call the candidate is fed 16384 items and the reference
    # 4096, so a call of the reference takes ~4x a call of the candidate; the ratio must be per item, ~16 (sleep
    # overshoot and load pull it towards 4, so > 10 separates the two readings)
    p = params(reference={"mechanism.slow": 64}, seconds=0.05, repeats=5)
    row = timing.interleaved_columns(p, build, np.arange(1 << 16))
    assert 10.0 < row["interleaved_ratio"] < 24.0
    assert row["interleaved_low"] <= row["interleaved_ratio"] <= row["interleaved_high"]


def test_the_reference_overrides_keys_and_drops_its_own_timing_spec():
    p = params(reference={"memory_kb": 8})
    ref = timing.reference_params(p, {"memory_kb": 8})
    assert ref["memory_kb"] == 8 and "timing" not in ref["mechanism"] and p["memory_kb"] == 24
    cms = timing.reference_params({"mechanism": {"name": "lazycms", "memory_model": "actual", "timing": {}}},
                                  {"mechanism": "cms"}, keep=("memory_model",))
    assert cms["mechanism"]["name"] == "cms" and cms["mechanism"]["memory_model"] == "actual"


@pytest.mark.parametrize("spec, bad", [({"reference": 8}, "reference"), ({"reference": {}, "repeats": 3}, "repeats"),
                                       ({"reference": {}, "seconds": 0}, "seconds"),
                                       ({"reference": {}, "items": 5}, "keys among")])
def test_a_bad_timing_spec_is_a_one_line_error(spec, bad):
    with pytest.raises(ValueError, match=bad):
        timing.spec_of(params(**spec))
