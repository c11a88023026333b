"""Frequency sketches under continual observation (Holland): CMS / CS baselines, Punctual and Lazy.

All six share one core (``core.SketchCore``) parameterised by the estimator (Count-Min or Count
Sketch) and the push schedule (exact, Punctual = Alg. 3, Lazy = Alg. 5); kernels in ``_kernels``,
memory models in ``memory``.
"""

from dpstream.sketches.exact import CMS, CS
from dpstream.sketches.lazy import LazyCMS, LazyCS
from dpstream.sketches.punctual import PunctualCMS, PunctualCS

__all__ = ["CMS", "CS", "LazyCMS", "LazyCS", "PunctualCMS", "PunctualCS"]
