"""dpstream: differential privacy over streams of data and of queries.

Subpackages: ``sketches`` (continual-observation private sketches), ``heavy_hitters`` (LazyHH),
``svt`` (the sparse vector family), ``audit`` (statistical privacy tester), ``query_release``
(iterative construction and private equilibrium query release). ``harness`` runs experiments.
"""

__version__ = "0.1.0"
