"""Privacy as data: statement, generic noise calibration and composition.

``Privacy`` (``statement``) is what every private mechanism states as ``.privacy``: (epsilon, delta), the
neighbouring ``Relation``, the notion and the analyst budget where it applies. ``compose`` / ``compose_advanced``
(``composition``) combine statements. The generic noise scales are in ``calibration``, the scalar composition
formulas in ``accounting``; per-family noise-scale formulas live beside their family (``svt.calibration``,
``query_release.calibration``, ``heavy_hitters.calibration``) and are built on these.
"""

from dpstream.privacy.composition import compose, compose_advanced
from dpstream.privacy.statement import AnalystRelation, Certified, Notion, Privacy, Relation, certify

__all__ = ["AnalystRelation", "Certified", "Notion", "Privacy", "Relation", "certify", "compose",
           "compose_advanced"]
