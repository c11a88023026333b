"""A toy continual counter written outside the package (docs/harness.md, "Add a mechanism").

``ToyCounter`` is the binary tree with stored node noise under its own name; a sketch or ``GaussBM`` uses it as
``counter="toy_counter:ToyCounter"`` (the module must be importable: put this directory on ``PYTHONPATH``).
"""

from __future__ import annotations

from dpstream.audit.sensitivity_cases import GaussBMCase
from dpstream.counters import BinaryTree
from dpstream.counters.gauss_bm import GaussBM
from dpstream.privacy.calibration import gauss_bm_sigma
from dpstream.testing import MechanismSpec, gauss_bm_noise, register
from dpstream.testing.shipped import gauss_bm_output

COUNTER = "toy_counter:ToyCounter"


class ToyCounter(BinaryTree):
    """The binary mechanism's tree with one noise per closed node, under its own name.

    Privacy (Chan, Shi and Song, "Private and continual release of statistics"): (epsilon, delta)-DP for
    m-neighbouring counter arrays, sigma = ``gauss_bm_sigma``.
    """

    name = "toy_binary"


CONFIG = {"n": 4000, "horizon": 16, "epsilon": 1.0, "delta": 1e-3, "m": 1, "counter": COUNTER}


def _noise(mech, config):
    sigma = gauss_bm_sigma(config["horizon"], config["epsilon"], config["delta"], config["m"])
    return gauss_bm_noise(mech, sigma, "(gauss_bm_sigma)")


def _probe_case():
    return GaussBMCase("GaussBM_toy", GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, counter=COUNTER))


SPEC = register(MechanismSpec("GaussBM_toy", GaussBM, lambda: dict(CONFIG), gauss_bm_output, noise=_noise,
                              sensitivity=(_probe_case,)))
