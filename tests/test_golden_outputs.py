"""Refactors change no number.

Every sketch, GaussBM and heavy-hitter tracker reproduces, bit for bit, the outputs recorded before the counter
interface (``tests/golden.py``, ``tests/data/golden_outputs.json``).
"""

import json

from golden import GOLDEN, outputs


def test_outputs_equal_the_recorded_ones():
    recorded = json.loads(GOLDEN.read_text())
    now = outputs()
    assert now.keys() == recorded.keys()
    for name, values in recorded.items():
        assert now[name] == values, name
