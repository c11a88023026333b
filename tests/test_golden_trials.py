"""Refactors of the harness change no number.

Tiny configs of every family (sketch, heavy hitters, SVT atoms, shifting heavy hitters, SVT theory, query release) give
the trial rows recorded before the Hydra-native construction (``tests/golden_trials.py``,
``tests/data/golden_trials.json``), exactly (timing columns left out).
"""

import json

import pytest
from golden_trials import CASES, GOLDEN, row_of, same


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_trial_row_equals_the_recorded_one(name, tmp_path):
    recorded = json.loads(GOLDEN.read_text())[name]
    now = json.loads(json.dumps(row_of(CASES[name], str(tmp_path)), default=float))
    assert sorted(now) == sorted(recorded), name
    changed = {k: (recorded[k], now[k]) for k in recorded if not same(recorded[k], now[k])}
    assert not changed, changed


def test_every_case_is_recorded():
    assert sorted(json.loads(GOLDEN.read_text())) == sorted(CASES)
