"""A toy sparse vector variant written outside the package (docs/harness.md, "Add a mechanism").

``WideQuerySparse`` is Sparse with query noise Lap(3 sigma) instead of Lap(2 sigma). Its spec, registered below, is what
``dpstream.testing.check_mechanism`` runs over.
"""

from __future__ import annotations

import numpy as np

from dpstream.audit.sensitivity_cases import LinearQueryCase, svt_queries
from dpstream.privacy.accounting import sparse_sigma
from dpstream.svt import Sparse
from dpstream.testing import MechanismSpec, register, sparse_noise, svt_audit
from dpstream.testing.shipped import ANSWERS, svt_output


class WideQuerySparse(Sparse):
    """Sparse with wider query noise: threshold Lap(sigma), queries Lap(3 sigma), sigma = ``sparse_sigma``.

    Privacy: (epsilon, delta)-DP for add/remove-one-record neighbours with sensitivity-1 queries (pure if delta = 0),
    as Sparse (Dwork and Roth, "The algorithmic foundations of differential privacy", Alg. 2): the AboveThreshold
    argument charges the query noise for half of each round's budget when its scale is at least 2 sigma, and a
    larger scale charges less.
    """

    def __init__(self, **kwargs):
        """Sparse's construction, then the query scale widened to 3 sigma."""
        super().__init__(**kwargs)
        self.query_scale = 3.0 * self.sigma


def _noise(mech, config):
    sigma = sparse_sigma(config["epsilon"], config["c"], config.get("delta", 0.0))
    return sparse_noise(mech, sigma, 3.0 * sigma, formula="(sigma = sparse_sigma(eps, c, delta))")


def _probe_case():
    return LinearQueryCase("WideQuerySparse", WideQuerySparse(**CONFIG, seed=0), svt_queries(np.random.default_rng(1)))


CONFIG = {"epsilon": 1.0, "threshold": 5.0, "c": 3}
SPEC = register(MechanismSpec(
    "WideQuerySparse", WideQuerySparse, lambda: dict(CONFIG), svt_output, noise=_noise, sensitivity=(_probe_case,),
    audit=svt_audit(WideQuerySparse, CONFIG, ANSWERS, claimed_epsilon=1.0),
))
