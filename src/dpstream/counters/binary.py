"""The binary-tree counter (Holland, Alg. 1), one class whatever its node noise (``node_noise=``, ``tree_noise``).

Stored nodes (``node_noise="stored"``, the paper; ``"discrete_secure_stored"``): one node per level per counter
(exact partial sum + noisy running sum, as in ``_bm_kernels``); a push closes a node and draws its noise. Derived
nodes (``"derived"``, issue "beyond the paper"; ``"discrete_secure"`` and its variants): node noise is a keyed
pseudorandom function of (cell, level, node index), Philox4x64-10 or ChaCha20 keyed from the secret seed, so a
counter holds only its exact count, a push is one integer add, and a release regenerates the popcount(s) node values
of its step. All release exact prefix sum + the noises of the dyadic nodes over the set bits of s: the same joint
distribution of all releases at all times when the generator is a random function (the computational assumption
numpy's own generators rest on as well; ``tree_noise.PhiloxNodes``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np

from dpstream import serial
from dpstream.counters import _kernels as kernels
from dpstream.counters._bm_kernels import popcount as popcount
from dpstream.counters.base import NOISE_BYTES, STEP_BYTES
from dpstream.counters.discrete import (
    AHEAD_NODES,
    CONSTANT_TIME_NODES,
    DISCRETE_NODES,
    KEYED_STORED_NODES,
    DiscreteNodes,
)
from dpstream.counters.factorisation import Dyadic, Factorisation
from dpstream.counters.node_tree import NodeTree
from dpstream.counters.tree_noise import PHILOX_NODES, STORED_NODES, TreeNoise
from dpstream.counters.tree_noise import DerivedState as DerivedState
from dpstream.privacy.calibration import gauss_bm_levels
from dpstream.secure import release as secure_release


def prefix_sums(increments: np.ndarray) -> np.ndarray:
    """Per counter, the exact sums of its first 0..S increments: shape (n, S + 1), int64."""
    prefix = np.zeros((increments.shape[0], increments.shape[1] + 1), dtype=np.int64)
    np.cumsum(increments, axis=1, out=prefix[:, 1:])
    return prefix


def released_nodes(increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Exact value of every node a GaussBM releases, shape (1, n S).

    Counter j's node closing at step s <= steps[j] is the sum of its increments over (s - lowbit(s), s]
    (``_bm_kernels.push``); nodes never closed are 0.
    """
    horizon = increments.shape[1]
    prefix = prefix_sums(increments)
    s = np.arange(1, horizon + 1)
    nodes = prefix[:, s] - prefix[:, s - (s & -s)]
    nodes[s[None, :] > np.asarray(steps)[:, None]] = 0
    return nodes.reshape(1, -1)


class TreeState(NamedTuple):
    """The stored tree, both (levels, n): exact partial sums alpha_l (count dtype) and noisy running sums (float64).

    ``noisy_sums[l, j]`` sums counter j's released nodes at the set bits >= l of its step; row 0 is its release.
    """

    exact: np.ndarray
    noisy_sums: np.ndarray


def tree_noises(*nodes: TreeNoise[Any]) -> Mapping[str, TreeNoise[Any]]:
    """The node noises a tree counter takes, by ``node_noise=`` name (the first is the default)."""
    return {n.source.name: n for n in nodes}


class BinaryTree(NodeTree):
    """Alg. 1 of Holland: h = ceil(log2(T + 1)) levels, sigma for L2 sensitivity sqrt(h m); node noise ``node_noise``.

    ``node_noise`` names one of ``NOISES`` (``tree_noise``, ``counters.discrete``): "stored" (the paper: one
    preallocated node per level, ``_bm_kernels.push``, one N(0, sigma^2) draw per push), "derived" (Philox nodes at
    release), "discrete_secure" (exact discrete Gaussian nodes at release from a ChaCha20 key), "discrete_secure_ahead"
    (the same keeping a block's nodes drawn ahead), "discrete_secure_ct" (the same with a constant-time sampler) or
    "discrete_secure_stored" (exact discrete Gaussian nodes drawn when they close and stored). Each source's privacy
    statement, key and caches are in its class doc. The trees built on this one (Honaker's estimates, the smooth,
    hybrid and k-ary Laplace trees) narrow ``NOISES`` and give their stored layout (``stored_kind``,
    ``_allocate_stored``, ``stored_noise_count``, ``stored_release``) and, for derived nodes, their tree steps
    (``tree_steps``).

    What a caller reads before building one (memory, draws per push, the kernel) is the pair's, not the class's:
    ``counters.counter_class(counter, node_noise)`` gives it (``registry.CounterDescriptor``); an instance carries
    its own (``source``, ``kind``, ``draws_per_push``, ...).
    """

    name = "binary"
    NOISES: ClassVar[Mapping[str, TreeNoise[Any]]] = tree_noises(STORED_NODES, PHILOX_NODES, DISCRETE_NODES,
                                                                 AHEAD_NODES, CONSTANT_TIME_NODES, KEYED_STORED_NODES)
    """The node noises this tree takes, by name; the first is the default."""
    stored_kind: ClassVar[int] = kernels.STORED
    stored_tracks_steps = True
    _release_row: np.ndarray | None = None
    """Stored nodes: the read-only view ``released_view`` returns, made by its first call."""
    _noisy_sums: np.ndarray  # set by the stored layout (``_allocate_stored``)

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt(h m): one step of each of m counters moves h node values (one per level) by at most 1."""
        return math.sqrt(gauss_bm_levels(horizon) * m)

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """The stored tree: one exact partial sum and one noisy sum per level, and the step count."""
        return gauss_bm_levels(horizon) * (count_bytes + NOISE_BYTES) + STEP_BYTES

    @property
    def squared_sensitivity(self) -> int:
        """The integer squared L2 sensitivity exact discrete noise is calibrated for: h m, one node per level."""
        return self.levels * self.m

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The released nodes: the one node closing at each step (``released_nodes``)."""
        return released_nodes(increments, steps)

    def factorisation(self) -> Factorisation:
        """The dyadic tree: variance popcount(s) sigma^2, one independent node noise per set bit of s."""
        return Dyadic(self.horizon)

    # -- the stored layout (node noise drawn at push) ----------------------------------------------------------
    def _allocate(self) -> None:
        self.nodes.allocate(self)

    def _allocate_stored(self) -> None:
        """The stored tree: exact partial sums (count dtype) and float64 noisy running sums, both (levels, n)."""
        self._exact = np.zeros((self.levels, self.n), dtype=self.count_dtype)
        self._noisy_sums = np.zeros((self.levels, self.n), dtype=np.float64)
        self.state = TreeState(self._exact, self._noisy_sums)

    def released_view(self) -> np.ndarray:
        """Read-only view of every counter's released prefix sum (stored nodes; changes with pushes).

        Made once and kept (``_release_row``): marking a view read-only costs more than the rest of a whole-table
        release. A copy or a pickle leaves it out (``__getstate__``) and makes its own on demand. Every call returns
        the same live array: copy it to keep a release past the next push, and never mark it writable (that would
        make every later release writable, and a write would change the counter's noisy sums).
        """
        view = self._release_row
        if view is None:
            view = self._noisy_sums[0]
            view.flags.writeable = False
            self._release_row = view
        return view

    def stored_release(self, cells: np.ndarray | slice) -> np.ndarray:
        """Release of the stored tree: a gather of the level-0 noisy sums."""
        return self._noisy_sums[0, cells]

    stored_release_all = released_view
    """Every counter's stored release: the read-only ``released_view``."""

    def __getstate__(self) -> dict[str, Any]:
        """The instance's attributes but the kept ``released_view``, a view a copy would detach from its sums."""
        state = dict(self.__dict__)
        state.pop("_release_row", None)
        return state

    # -- derived nodes (``NodeTree``: tree steps, caches) -----------------------------------------------------
    def _cache(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Philox nodes' cache of whole-table releases (key, nodes (n, levels), cached steps (n,)), made on demand."""
        return PHILOX_NODES.cache(self)

    def _sampler(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Derived discrete nodes: the draws' sampler for ``secure.lanes`` (sampler, hi, lo) and the timing block k."""
        return self._discrete_nodes().sampler(self)

    @property
    def keeps_block(self) -> bool:
        """Whether whole-table releases keep a block's nodes drawn ahead (``discrete.AheadNodes``)."""
        return bool(getattr(self.nodes, "keeps_block", False))

    def _discrete_nodes(self) -> DiscreteNodes:
        """The node noise, when it derives discrete nodes at release; else an error naming it."""
        if not isinstance(self.nodes, DiscreteNodes):
            raise ValueError(f"node_noise={self.node_noise!r} derives no discrete nodes at release; allowed: "
                             "discrete_secure, discrete_secure_ahead, discrete_secure_ct")
        return self.nodes

    def prefetch_releases(self) -> None:
        """Draw each whole-table release's successor (every step + 1) on a second thread (``release.Prefetch``).

        Derived discrete nodes only. For a caller whose whole-table releases move one step at a time (a LazyHH
        refresh): the same values, drawn while the caller works on the next items. The draws land in the node cache
        and ``_st`` only.
        """
        if not isinstance(self.nodes, DiscreteNodes):
            raise ValueError("prefetch_noise() needs node_noise discrete_secure, discrete_secure_ahead or "
                             f"discrete_secure_ct, not {self.node_noise!r}")
        self._prefetch = secure_release.Prefetch()

    # -- what the node noise answers ----------------------------------------------------------------------
    @property
    def calibration_delta(self) -> float:
        """The delta sigma is calibrated for: ``delta``, less a constant-time sampler's share."""
        return self.nodes.calibration_delta(self)

    @property
    def sampler_delta(self) -> float:
        """What the sampler adds to delta (0 but for the constant-time sampler)."""
        return self.nodes.sampler_delta(self)

    @property
    def table_bytes(self) -> int:
        """Bytes of a discrete sampler's public table (not state; 0 without one)."""
        table_bytes = getattr(self.nodes, "table_bytes", None)
        return 0 if table_bytes is None else int(table_bytes(self))

    @property
    def words_consumed(self) -> int:
        """32-bit generator words a keyed discrete source has drawn so far (all draws)."""
        return int(self._st[4])


# the classes of format 1, one per node noise (``serial.RENAMED``)
serial.rename("StoredBinary", "BinaryTree", 1, node_noise="stored")
serial.rename("DerivedBinary", "BinaryTree", 1, node_noise="derived")
serial.rename("DiscreteSecureBinary", "BinaryTree", 1, node_noise="discrete_secure")
serial.rename("AheadDiscreteBinary", "BinaryTree", 1, node_noise="discrete_secure_ahead")
serial.rename("ConstantTimeDiscreteBinary", "BinaryTree", 1, node_noise="discrete_secure_ct")
serial.rename("StoredDiscreteSecureBinary", "BinaryTree", 1, node_noise="discrete_secure_stored")
