"""The researcher's own test: the dpstream contract over the two toy mechanisms of this directory.

Run from this directory: ``PYTHONPATH=. python -m pytest test_own_mechanism.py``.
"""

import pytest
import toy_counter
import toy_svt

from dpstream.testing import check_mechanism


@pytest.mark.parametrize("spec", [toy_svt.SPEC, toy_counter.SPEC], ids=lambda s: s.name)
def test_the_contract_holds(spec):
    """Arguments, privacy statement, noise, sensitivity probe, audit (SVT) and seeds."""
    report = check_mechanism(spec)
    assert {"arguments", "privacy", "noise", "sensitivity", "reproducibility"} <= set(report.passed)
