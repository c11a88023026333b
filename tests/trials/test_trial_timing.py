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
    # the candidate sleeps 4 us per item, the reference 16 us: reference time / candidate time ~ 4 (sleep overshoot and
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


def test_the_slowest_arm_sets_the_items_and_a_faster_arm_feeds_more_copies():
    clock = Ticker()
    # 1 ms per item takes 4.1 s at 4096 items (>= 50 ms): those items; the 1 us arm takes 4.1 ms there: 13 copies
    chunk, copies = timing.calibrated_work(np.arange(1 << 20), [lambda: Fake(clock, 1e-6), lambda: Fake(clock, 1e-3)],
                                           0.05, clock)
    assert chunk.size == 4096 and chunk.dtype == np.int64 and copies == [13, 1]
    # two fast arms: 4096 * 4^2 = 65536 items make 65.5 ms (16384 give 16 ms), one copy each
    chunk, copies = timing.calibrated_work(np.arange(1 << 20), [lambda: Fake(clock, 1e-6)] * 2, 0.05, clock)
    assert chunk.size == 65536 and copies == [1, 1]
    # the whole stream is too short: more copies, at most MAX_COPIES
    chunk, copies = timing.calibrated_work(np.arange(100), [lambda: Fake(clock, 1e-6)], 10.0, clock)
    assert chunk.size == 100 and copies == [timing.MAX_COPIES]


class Recorder(Sleeper):
    """A ``Sleeper`` that records how many items each object was fed."""

    fed: list[tuple[float, int]] = []

    def extend(self, items: np.ndarray) -> None:
        Recorder.fed.append((self.per_item, items.size))
        super().extend(items)


def test_arms_of_different_speed_do_the_same_work_per_object_and_report_per_item_times():
    # candidate 4 us per item, reference 64 us: both arms get the 4096 items at which the reference takes 50 ms (the
    # candidate would need 16384 alone) and the candidate feeds them to several objects per call; the ratio is per
    # object, ~16 (sleep overshoot and load pull it towards 1 per call, so > 10 separates the readings)
    Recorder.fed = []
    p = params(reference={"mechanism.slow": 64}, seconds=0.05, repeats=5)
    row = timing.interleaved_columns(p, lambda q: Recorder(1e-6 * q["mechanism"]["slow"]), np.arange(1 << 16))
    assert {size for _, size in Recorder.fed[2:]} == {4096}, "every timed object does the same work"
    timed = Recorder.fed[4:]  # after the two warm-ups and the calibration
    assert sum(1 for per_item, _ in timed if per_item < 1e-5) >= 2 * sum(1 for per_item, _ in timed if per_item > 1e-5)
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
