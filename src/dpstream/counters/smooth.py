"""The smooth binary mechanism: Andersson and Pagh, "A Smooth Binary Mechanism for Efficient Private Continual ...".

The paper: "A Smooth Binary Mechanism for Efficient Private Continual Observation", NeurIPS 2023, arXiv 2306.09666.

Construction. A binary tree of height h over the leaves 0..2^h - 1, of which only the leaves whose h-bit index has
exactly k set bits are used, in increasing order: t_0 < t_1 < ... < t_T (``smooth_leaf``: the combinatorial number
system; needs C(h, k) >= T + 1). Item s (1-based) of the stream is put at leaf t_{s-1}, and the release at step s is
the prefix sum over the leaves [0, t_s), which holds items 1..s. That prefix is the disjoint union of the dyadic
nodes at the set bits l of t_s (node [(t_s >> l) - 1) 2^l, (t_s >> l) 2^l), a left child), exactly k of them, so
every release sums k independent node noises: the same variance k sigma^2 at every step ("smooth"). A leaf u lies
in a used node of level l only when bit l of u is clear (a used node is a left child), so one item moves at most
h - k of the used node sums by at most its change: squared L2 sensitivity (h - k) m for m-neighbouring counter
arrays. The release at step s is the binary tree's release at tree step t_s, with the tree's node noise.

The paper's full text was not readable from the search corpora; the construction above is derived from its abstract
and its stated variance, (1 + o(1)) log2(T)^2 / (8 rho) for rho-zCDP (k sigma^2 with sigma^2 = (h - k) / (2 rho),
k ~ h / 2), which it reproduces. Beyond the paper, (h, k) is the pair that minimises k (h - k) subject to
C(h, k) >= T + 1 (``smooth_shape``), not k = h / 2: at T = 2^20, h = 23 and k = 10, k (h - k) = 130 against 132.

Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring inputs (one neighbour changes at most m
counters, each by at most 1 at one step): the Gaussian mechanism on the vector of used node sums, L2 sensitivity
sqrt((h - k) m), every node's noise drawn once (stored) or derived from a key (computational). Node noise
(``SmoothBinary``'s ``node_noise``): stored N(0, sigma^2) drawn when a node is first used ("stored"), derived from
Philox ("derived") or exact discrete Gaussian N_Z(0, sigma^2) derived from a ChaCha20 key ("discrete_secure",
deployable with an OS key): the mechanism is integer (a 0/1 factorisation), so exact integer noise certifies it as it
does the tree.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dpstream import serial
from dpstream.counters import _kernels as kernels
from dpstream.counters._smooth_kernels import binomials, push_draws, release_leaves
from dpstream.counters.base import NOISE_BYTES, STEP_BYTES
from dpstream.counters.binary import BinaryTree, prefix_sums, tree_noises
from dpstream.counters.discrete import DISCRETE_NODES
from dpstream.counters.factorisation import MAX_HEIGHT as MAX_HEIGHT
from dpstream.counters.factorisation import Factorisation, Smooth, smooth_shape, used_nodes
from dpstream.counters.tree_noise import PHILOX_NODES, STORED_NODES


class SmoothState(NamedTuple):
    """Stored smooth tree: exact counts (1, n), noisy node sums (h, n), binomials with (h, k) (public constants)."""

    exact: np.ndarray
    noisy_sums: np.ndarray
    table: np.ndarray


class SmoothBinary(BinaryTree):
    """The smooth binary mechanism over n counters, node noise ``node_noise`` (module doc).

    Stored nodes ("stored"): the exact count, h float64 running node-noise sums and the step per counter; a push
    draws the noises of the nodes its release leaf does not share with the last one (``push_draws``; on average a
    small constant). Derived nodes ("derived", "discrete_secure"): the binary tree's release at tree step t_s, the
    exact count plus the k derived nodes; with exact discrete nodes every release draws its k nodes (and, timing level
    1, the other node of its 2-step block of tree steps), so the work of every release is the same function of k,
    sigma^2 calibrated by ``privacy.discrete_gaussian`` for squared sensitivity (h - k) m; 8 bytes a counter (int64
    counts) and the 32-byte key.
    """

    name = "smooth"
    NOISES = tree_noises(STORED_NODES, PHILOX_NODES, DISCRETE_NODES)
    stored_kind = kernels.SMOOTH
    stored_draws = 2

    @classmethod
    def tree_levels(cls, horizon: int) -> int:
        """H of ``smooth_shape``."""
        return smooth_shape(horizon)[0]

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt((h - k) m): an item's leaf has h - k clear bits, the levels where its node is a used left child."""
        h, k = smooth_shape(horizon)
        return math.sqrt((h - k) * m)

    @property
    def squared_sensitivity(self) -> int:
        """(h - k) m, the integer the exact discrete calibration takes."""
        h, k = smooth_shape(self.horizon)
        return (h - k) * self.m

    @property
    def set_bits(self) -> int:
        """k: the nodes of every release."""
        return smooth_shape(self.horizon)[1]

    def leaves(self, steps: np.ndarray) -> np.ndarray:
        """The tree step t_s of each release step s in [0, horizon] (0 at s = 0)."""
        steps = np.ascontiguousarray(np.asarray(steps, dtype=np.int64).reshape(-1))
        if steps.size and (steps.min() < 0 or steps.max() > self.horizon):
            raise ValueError(f"release steps must lie in [0, horizon={self.horizon}], got "
                             f"[{int(steps.min())}, {int(steps.max())}]")
        h, k = smooth_shape(self.horizon)
        return release_leaves(steps, np.int64(h), np.int64(k), binomials(h))

    def factorisation(self) -> Factorisation:
        """The smooth tree: variance k sigma^2 at every step s >= 1 (0 at s = 0), k node noises per release."""
        return Smooth(self.horizon)

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The sums of the used nodes each counter has released by its step (0 for the others), shape (1, -1)."""
        n, length = increments.shape
        h, k = smooth_shape(self.horizon)
        placed = np.zeros((n, 1 << h), dtype=np.int64)
        placed[:, release_leaves(np.arange(length, dtype=np.int64), np.int64(h), np.int64(k), binomials(h))] = (
            increments)  # item s at leaf t_{s-1}
        prefix = prefix_sums(placed)
        level, index, first = used_nodes(self.horizon)
        nodes = prefix[:, (index + 1) << level] - prefix[:, index << level]
        nodes[first[None, :] > np.asarray(steps)[:, None]] = 0
        return nodes.reshape(1, -1)

    def _table_steps(self, steps: np.ndarray) -> tuple[np.ndarray, bool]:
        """The release leaves of ``steps`` (n,): below 2^h, so the node caches of the tree serve them."""
        steps = np.broadcast_to(np.asarray(steps, dtype=np.int64), (self.n,))
        return self.leaves(steps), True


    def tree_steps(self, steps: np.ndarray) -> np.ndarray:
        """The release leaves t_s of ``steps`` (``leaves``)."""
        return self.leaves(steps)

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """Stored nodes: the exact count, one noisy sum per level and the step count."""
        return count_bytes + smooth_shape(horizon)[0] * NOISE_BYTES + STEP_BYTES

    def _allocate_stored(self) -> None:
        h, k = smooth_shape(self.horizon)
        self._exact = np.zeros((1, self.n), dtype=self.count_dtype)
        self._noisy_sums = np.zeros((h, self.n), dtype=np.float64)
        self._table = binomials(h).copy()
        self._table[h, h] = k  # row h is never read as a binomial (p < h): the push reads k there
        self.state = SmoothState(self._exact, self._noisy_sums, self._table)

    def stored_noise_count(self, steps: np.ndarray) -> int:
        """The new nodes of each push (``push_draws``)."""
        h, k = smooth_shape(self.horizon)
        return int(push_draws(np.ascontiguousarray(steps, dtype=np.int64), np.int64(h), np.int64(k), binomials(h)))

    def stored_release(self, cells: np.ndarray | slice) -> np.ndarray:
        """Exact count plus the running node-noise sum of each cell's current leaf."""
        return self._exact[0, cells] + self._noisy_sums[0, cells]

    def stored_release_all(self) -> np.ndarray:
        """Every counter's stored release: the sum of two whole rows (not ``BinaryTree``'s view of one)."""
        return self.stored_release(slice(None))

    @property
    def memory_bytes(self) -> int:
        """Stored nodes: the counts, the noisy sums and the steps (the binomial table is a public constant)."""
        if self.nodes is STORED_NODES:
            return self._exact.nbytes + self._noisy_sums.nbytes + self._steps.nbytes
        return super().memory_bytes

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """As ``BinaryTree``; stored nodes: the binomial table must be the one the horizon gives."""
        if self.nodes is not STORED_NODES:
            super()._restore_arrays(arrays)
            return
        expected = self._table.copy()
        super()._restore_arrays(arrays)
        if not np.array_equal(self._table, expected):
            raise ValueError("corrupt state: SmoothBinary table is not the binomials of its horizon")


# the classes of format 1, one per node noise (``serial.RENAMED``)
serial.rename("SmoothStored", "SmoothBinary", 1, node_noise="stored")
serial.rename("SmoothDerived", "SmoothBinary", 1, node_noise="derived")
serial.rename("SmoothDiscreteSecure", "SmoothBinary", 1, node_noise="discrete_secure")
