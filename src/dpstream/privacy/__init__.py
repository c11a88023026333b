"""Privacy and calibration in one package: statements, privacy maps, composition and every noise calibration.

``Privacy`` (``statement``) is what every private mechanism states as ``.privacy``: (epsilon, delta), the
neighbouring ``Relation``, the notion and the analyst budget where it applies. A mechanism computes it from the noise it
holds through a privacy map (``maps``: Gaussian classic or analytic, Laplace, discrete Gaussian, Sparse, composition,
ThresholdMonitor). ``calibrate`` is the one entry point from a target (epsilon, delta) to a noise scale: a search over
the scale until the map meets the target. The closed forms it cross-checks: ``calibration`` (Gaussian and Laplace
scales, the binary tree), ``accounting`` (composition and Sparse), ``svt`` (ThresholdMonitor), ``query_release``
(the iterative construction and Hsu, Roth, Ullman's algorithms), ``heavy_hitters`` (LazyHH) and ``discrete_gaussian``
(the exact discrete Gaussian). ``compose`` / ``compose_advanced`` (``composition``) combine statements.
"""

from dpstream.privacy.composition import compose, compose_advanced
from dpstream.privacy.maps import (
    NOT_CERTIFIED,
    ComposedMap,
    DiscreteGaussianMap,
    GaussianMap,
    LaplaceMap,
    PrivacyMap,
    SparseMap,
    calibrate,
)
from dpstream.privacy.statement import AnalystRelation, Certified, Notion, Privacy, Relation, certify
from dpstream.privacy.svt import MonitorMap

__all__ = ["NOT_CERTIFIED", "AnalystRelation", "Certified", "ComposedMap", "DiscreteGaussianMap", "GaussianMap",
           "LaplaceMap", "MonitorMap", "Notion", "Privacy", "PrivacyMap", "Relation", "SparseMap", "calibrate",
           "certify", "compose", "compose_advanced"]
