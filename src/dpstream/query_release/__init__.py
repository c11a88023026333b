"""Query release: iterative construction, Laplace baseline, private equilibrium query release.

Iterative construction: PMW, median mechanism, MWEM; equilibrium release with analyst privacy (Hsu, Roth, Ullman,
Algorithm 3). Spec: ``shared/specs/query-release.md``.
"""

from dpstream.query_release.data import fair_affairs, histogram, product_mixture
from dpstream.query_release.game import PrivateEquilibriumRelease
from dpstream.query_release.gamma import gamma_projection
from dpstream.query_release.iterative import IterativeConstruction, LaplaceRelease, Release, mwem, pmw
from dpstream.query_release.updates import MedianMechanism, MultiplicativeWeights, MWEMUpdate, size_n_databases
from dpstream.query_release.workloads import (
    Conjunctions,
    KWayMarginals,
    MatrixWorkload,
    assign_analysts,
    make_workload,
    sparse_halfspaces,
    ternary_transform,
)

__all__ = [
    "Conjunctions", "IterativeConstruction", "KWayMarginals", "LaplaceRelease", "MWEMUpdate", "MatrixWorkload",
    "MedianMechanism", "MultiplicativeWeights", "PrivateEquilibriumRelease", "Release", "assign_analysts",
    "fair_affairs", "gamma_projection", "histogram", "make_workload", "mwem", "pmw", "product_mixture",
    "size_n_databases", "sparse_halfspaces", "ternary_transform",
]
