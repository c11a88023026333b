"""Refactors change no number.

Every sketch, GaussBM and heavy-hitter tracker reproduces the outputs recorded before the counter interface
(``tests/golden.py``, ``tests/data/golden_outputs.json``): each value to a relative 1e-9 (``tolerance.REL_TOL``: noise
sums and libm rounding differ by an ulp between CPUs), which any change of seed, noise or method exceeds by far.
"""

import json

from golden import GOLDEN, outputs
from tolerance import differences


def test_outputs_equal_the_recorded_ones():
    recorded = json.loads(GOLDEN.read_text())
    now = outputs()
    assert now.keys() == recorded.keys()
    for name, values in recorded.items():
        assert len(now[name]) == len(values), name
        changed = differences(dict(enumerate(values)), dict(enumerate(now[name])))
        assert not changed, f"{name}: (position: (recorded, now)) {changed}"
