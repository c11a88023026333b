"""The auditor over exact discrete Gaussian node noise: it passes the shipped trees and flags an under-noised one.

The shipped specs (``dpstream.testing.shipped``: GaussBM with discrete_secure, discrete_secure_stored, and Honaker's
estimates over discrete_secure_stored) carry a search audit of one counter (increments all 0 against +1 at step 1,
claimed (1, 1e-3)); ``check_mechanism`` runs it in tests/testing/test_mechanism_contract.py. Here the same audit, on
the same inputs and runs, flags ``BrokenGaussBMDiscreteTenthSigma`` (a tenth of the calibrated sigma), so the pass is
informative (at these 4000 runs it also flags sigma x 0.2 and 0.3, with certified bounds 3.0 and 2.8, but not
sigma x 0.5: 0.44; the zCDP conversion bounds their epsilons by 17.4 at sigma x 0.1, 4.2 at x 0.3, 2.3 at x 0.5).
Fixed seeds; a correct mechanism is flagged with probability <= alpha = 0.05 per audit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpstream.audit.negative_controls import BrokenGaussBMDiscreteTenthSigma
from dpstream.audit.search import search_audit
from dpstream.testing import AuditCase, MechanismCheckError, check_mechanism, registered
from dpstream.testing.draws import gauss_bm_audit
from dpstream.testing.shipped import STEP_ONE, TREE_AUDIT

SPECS = ["GaussBM_discrete_secure", "GaussBM_discrete_secure_stored", "GaussBM_honaker_discrete_secure_stored"]


def _control(case: AuditCase, counter: str, node_noise: str) -> AuditCase:
    """The shipped audit with the broken tree in place of GaussBM: same inputs, claim and runs."""
    broken = gauss_bm_audit(BrokenGaussBMDiscreteTenthSigma, {**TREE_AUDIT, "counter": counter,
                                                              "node_noise": node_noise},
                            case.data_1, case.data_2, case.claimed_epsilon, case.delta, case.n_runs)
    assert np.array_equal(broken.data_1, case.data_1) and np.array_equal(broken.data_2, case.data_2)
    return broken


def _run(case: AuditCase):
    return search_audit(case.sampler, case.data_1, case.data_2, n_runs=case.n_runs,
                        claimed_epsilon=case.claimed_epsilon, delta=case.delta, seed=0)


@pytest.mark.parametrize("name", SPECS)
def test_auditor_flags_the_under_noised_tree_and_passes_the_shipped_one(name: str) -> None:
    spec = registered()[name]
    config = spec.config()
    assert spec.audit is not None and np.array_equal(spec.audit.data_2, STEP_ONE)
    shipped = _run(spec.audit)
    assert not shipped.fails, shipped.row()
    control = _run(_control(spec.audit, config["counter"], config["node_noise"]))
    assert control.fails, control.row()
    # the margin: the control's certified bound is well above the claim (recorded for the power table)
    assert control.epsilon_lower > 1.5 * spec.audit.claimed_epsilon, control.row()


def test_check_mechanism_fails_the_under_noised_tree_naming_the_audit() -> None:
    spec = registered()["GaussBM_discrete_secure"]
    broken = dataclasses.replace(spec, name="broken", factory=BrokenGaussBMDiscreteTenthSigma,
                                 audit=_control(spec.audit, "binary", "discrete_secure"))
    with pytest.raises(MechanismCheckError, match="audit: the event .* certifies epsilon >= "):
        check_mechanism(broken, only=("audit",))


def test_the_control_is_the_shipped_tree_with_a_tenth_of_its_noise() -> None:
    control = BrokenGaussBMDiscreteTenthSigma(n=3, horizon=8, epsilon=1.0, delta=1e-3, seed=0)
    assert not control.certified and control.claimed_epsilon == 1.0
    shipped = registered()["GaussBM_discrete_secure"].build(seed=0, n=3, horizon=8)
    assert control.counter.sigma2 == shipped.counter.sigma2
    assert control.counter._noise_scale == pytest.approx(0.1 * shipped.counter.sigma, rel=1e-3)  # grid rounding up
