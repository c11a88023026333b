"""The leaderboard's speed columns (``trials.counters.speed_cells``): interleaved rounds on the injected clock.

A ratio of two timings on a loaded machine cannot be checked against a tolerance in a fast test, so these tests check
the protocol with a fake clock that only the (fake) counters advance: the arms alternate in an order rotated from round
to round, each round builds a fresh counter of each arm untimed, both arms are timed with the given clock, and a column
is the median of the rounds' ratios (one round slowed 100-fold by "load" does not move it).
"""

import inspect
import math
import time

import numpy as np
import pytest

from dpstream.counters import counter_class
from dpstream.trials import counters as board

PARAMS = {"epsilon": 1.0, "delta": 1e-6, "mechanism": {"speed_counters": 300, "speed_steps": 8}}
TREE = counter_class("binary", "derived")
CANDIDATE = counter_class("smooth", "stored")
# time units a push / a release costs on the fake clock: the candidate 3x the tree's pushes, 0.5x its releases
PUSH = {"counter": 3.0, "tree": 1.0}
RELEASE = {"counter": 5.0, "tree": 10.0}
BUILD = 1e6  # a build advances the clock too: were it timed, every ratio would be about 1


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.now


def install(monkeypatch: pytest.MonkeyPatch, clock: FakeClock, slow_round: int | None = None) -> list[tuple[str, int]]:
    """Replace ``board.build`` by fake counters that advance ``clock``; returns the log of builds (arm, n)."""
    builds: list[tuple[str, int]] = []

    class Fake:
        def __init__(self, arm: str, load: float) -> None:
            self.arm, self.load = arm, load

        def push(self, cells: np.ndarray, steps: np.ndarray, values: np.ndarray) -> None:
            clock.now += PUSH[self.arm] * self.load

        def release_all(self, steps: np.ndarray) -> np.ndarray:
            clock.now += RELEASE[self.arm] * self.load
            return np.zeros(steps.size)

    def fake_build(cls, n, horizon, params, seed=0):
        arm = "tree" if cls is TREE else "counter"
        builds.append((arm, n))
        clock.now += BUILD
        timed = [b for b in builds if b[1] == PARAMS["mechanism"]["speed_counters"]]
        this_round = (len(timed) - 1) // 2 if n == PARAMS["mechanism"]["speed_counters"] else -1
        load = 100.0 if (arm == "counter" and this_round == slow_round) else 1.0
        return Fake(arm, load)

    monkeypatch.setattr(board, "build", fake_build)
    return builds


def test_rounds_interleave_in_rotated_order_each_on_a_fresh_counter_timed_with_the_given_clock(monkeypatch):
    clock = FakeClock()
    builds = install(monkeypatch, clock)
    got = board.speed_cells(CANDIDATE, 2**10, PARAMS, clock=clock)
    assert got == {"update_ratio": pytest.approx(3.0), "release_ratio": pytest.approx(0.5)}
    timed = [arm for arm, n in builds if n == 300]
    rounds = board.SPEED_ROUNDS
    assert 5 <= rounds <= 7
    # a warm-up run of each arm (2 counters), then per round one fresh counter of each arm, the order rotated
    assert builds[:2] == [("counter", 2), ("tree", 2)]
    assert timed == [arm for r in range(rounds) for arm in (("counter", "tree") if r % 2 == 0 else ("tree", "counter"))]
    assert clock.calls == 4 * (2 * rounds + 2)  # push start/end and release start/end of every run, on this clock


def test_a_column_is_the_median_of_the_rounds_ratios_not_moved_by_one_loaded_round(monkeypatch):
    clock = FakeClock()
    install(monkeypatch, clock, slow_round=2)
    got = board.speed_cells(CANDIDATE, 2**10, PARAMS, clock=clock)
    assert got == {"update_ratio": pytest.approx(3.0), "release_ratio": pytest.approx(0.5)}
    seconds = board.interleaved_seconds({"counter": CANDIDATE, "tree": TREE}, 300, 2**10, 8, PARAMS, rounds=3,
                                        clock=clock)
    assert seconds["counter"].shape == (3, 2) and seconds["tree"].shape == (3, 2)
    assert np.allclose(seconds["tree"], [[8.0, 10.0]] * 3)  # 8 pushes, one release; the builds are not in them


def test_the_speed_columns_measure_process_cpu_time_by_default():
    assert inspect.signature(board.speed_cells).parameters["clock"].default is time.process_time
    assert inspect.signature(board.interleaved_seconds).parameters["clock"].default is time.process_time


def test_a_counter_whose_state_leaves_too_few_counters_is_not_timed(monkeypatch):
    clock = FakeClock()
    builds = install(monkeypatch, clock)
    got = board.speed_cells(counter_class("sqrt", "stored"), 2**20, {**PARAMS, "mechanism": {}}, clock=clock)
    assert all(math.isnan(v) for v in got.values()) and builds == [] and clock.calls == 0
