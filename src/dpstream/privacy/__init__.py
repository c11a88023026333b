"""Privacy as data: statement, generic noise calibration and composition.

The statement every private mechanism exposes (``statement``), the generic noise calibration (``calibration``) and
composition (``accounting``).

Per-family noise-scale formulas live beside their family (``svt.calibration``, ``query_release.calibration``,
``heavy_hitters.calibration``) and are built on the functions here.
"""
