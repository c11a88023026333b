"""dpstream: differential privacy over streams of data and of queries.

Subpackages: ``sketches`` (continual-observation private sketches), ``heavy_hitters`` (LazyHH),
``svt`` (the sparse vector family), ``audit`` (statistical privacy tester), ``query_release``
(iterative construction and private equilibrium query release). ``harness`` runs experiments.
"""

import os as _os

from dpstream._numba_cache import clear_stale as _clear_stale

__version__ = "0.1.0"
_clear_stale(cache_dir=_os.environ.get("NUMBA_CACHE_DIR") or None)  # before any kernel loads a stale cache
