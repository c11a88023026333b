"""Refactors of the harness change no number.

Tiny configs of every family (sketch, heavy hitters, SVT atoms, shifting heavy hitters, SVT theory, query release) give
the trial rows recorded before the Hydra-native construction (``tests/golden_trials.py``,
``tests/data/golden_trials.json``): integers, strings and booleans exactly, floats to a relative 1e-9 (rounding differs
by an ulp between CPUs and libm builds: ``tolerance.REL_TOL``); timing and environment columns (``ENV_COLUMNS``)
left out.
"""

import json

import pytest
from golden_trials import CASES, GOLDEN, row_of
from tolerance import differences

from dpstream.harness.environment import ENV_COLUMNS


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_trial_row_equals_the_recorded_one(name, tmp_path):
    recorded = json.loads(GOLDEN.read_text())[name]
    now = json.loads(json.dumps(row_of(CASES[name], str(tmp_path)), default=float))
    changed = differences(recorded, now, ignore=ENV_COLUMNS)  # where a row was computed is not what it says
    assert not changed, f"{name}: {changed}"


def test_every_case_is_recorded():
    assert sorted(json.loads(GOLDEN.read_text())) == sorted(CASES)
