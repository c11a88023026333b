"""The tree a node noise serves: what the node noises read and write on the counter that holds them.

The sources typed by ``NodeTree`` are ``tree_noise.PhiloxNodes`` and those of ``counters.discrete``; the sources the
trees share with other factorisations are typed by ``FactorisedCounter``. A source keeps no state of its own
(``tree_noise``): its key, sampler state and caches live on the counter. The trees (the binary tree of Holland,
Alg. 1, and those built on it) derive from ``NodeTree``, so a source is typed by the tree it serves without importing
any particular tree.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpstream.counters.base import FactorisedCounter
from dpstream.secure import release as secure_release
from dpstream.secure.samplers import CHUNKS


class NodeTree(FactorisedCounter):
    """A factorisation whose noise sits on tree nodes: a release at step s sums the nodes its tree step names."""

    block_levels = 1
    """Timing level 1 of derived discrete nodes: a release draws every node of its block of 2^k steps."""
    _chunks: int = CHUNKS
    """Bytes of each table entry the exact sampler compares (tests lower it to send many draws to the slow path)."""
    _node_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    """Philox nodes' cache of whole-table releases (``tree_noise.PhiloxNodes``)."""
    _kept_nodes: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
    """Discrete nodes' cache of ``release_all``: (k, key, nodes, blocks), or None (``discrete.DiscreteNodes``)."""
    _prefetch: secure_release.Prefetch | None = None
    """Set by ``BinaryTree.prefetch_releases``: whole-table releases drawn one step ahead on a second thread."""
    # set by the node noise when it allocates (``tree_noise``, ``discrete``)
    _drawn: np.ndarray
    _st: np.ndarray
    _abt: np.ndarray
    _hi: np.ndarray
    _lo: np.ndarray
    _noiseless: bool
    _sampler_delta: float
    sigma2: Fraction
    table_size: int
    deployable: bool

    @property
    def squared_sensitivity(self) -> int:
        """The integer squared L2 sensitivity exact discrete noise is calibrated for."""
        raise NotImplementedError(f"{type(self).__name__} states no integer squared sensitivity")

    def tree_steps(self, steps: np.ndarray) -> np.ndarray:
        """The tree step whose set bits name the nodes of a release at each of ``steps`` (contiguous int64)."""
        return np.ascontiguousarray(steps, dtype=np.int64)

    def _table_steps(self, steps: np.ndarray) -> tuple[np.ndarray, bool]:
        """``steps`` as tree steps, contiguous int64 (n,), and whether all lie in [0, 2^levels) (the caches')."""
        steps = np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), (self.n,)))
        return steps, not (steps.size and (steps.min() < 0 or steps.max() >> self.levels))

    def _settled(self) -> None:
        """Wait for a running prefetch (before anything reads or writes ``_st`` or the node cache)."""
        if self._prefetch is not None:
            self._prefetch.wait()
