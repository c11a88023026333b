"""The k-ary tree with Laplace noise for pure differential privacy.

Andersson, Pagh, Steiner, Torkamani, "Count on Your Elders: Laplace vs Gaussian Noise" (FORC 2025, arXiv 2408.07021):
a k-ary generalisation of the binary tree mechanism with Laplace node noise; for small delta (delta = O(T^-0.92) at
k = 19) it has lower mean squared error than the best Gaussian factorisation at (epsilon, delta).

Built here: the k-ary tree with NON-NEGATIVE digits. The steps 1..T are the leaves of a k-ary tree of
L = ceil(log_k(T + 1)) levels; the node of level l ending at step e (k^l divides e) holds the exact sum of steps
e - k^l + 1..e and gets Laplace(b) noise when it closes. The release at step s sums, for every level l, the
d_l(s) closed nodes of level l inside the current level-(l + 1) block, d_l(s) the l-th base-k digit of s: variance
2 b^2 sum_l d_l(s) (``kary_digit_sum``). The paper's mechanism also uses NEGATIVE digits (subtracting from an elder
node), which roughly halves the nodes per release at k = 19; that variant is not offered.

Privacy: epsilon-DP (pure, delta = 0) under continual observation for m-neighbouring inputs (one neighbour changes at
most m counters, each by at most 1 at one step): one step lies in exactly one node per level, so the vector of all
node sums has L1 sensitivity L m, and independent Laplace(b) noise with b = L m / epsilon is the Laplace mechanism
on it; every release is a sum of node values (post-processing). The ``delta`` a caller passes is not used: the
counter's ``privacy_delta`` is 0 and its notion "pure". Node noise (``node_noise=``): stored float64 Laplace draws
from the seeded generator ("stored": numpy's Laplace, floating point, the textbook Laplace mechanism, not an exact
sampler), or exact discrete Laplace draws from a keyed ChaCha20 stream ("discrete_secure_stored", below), stored
likewise.

Exact discrete noise (``KeyedLaplaceNodes``): Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential
Privacy" (NeurIPS 2020), Algorithm 2: the discrete Laplace of scale t/s, P(y) proportional to exp(-|y| s / t) on
the integers (``secure.samplers._dlaplace_rational``, the sampler the sparse vector family draws with).

With ``node_noise="discrete_secure_stored"`` every node's noise is one discrete Laplace draw made when the node closes,
draw number i (over the life of the key) from its own ChaCha20 stream (``secure.sequential.laplace_draws``), stored
in the tree as ``LaplaceTree``'s float noise is. The draws are integers (exact in float64 below 2^53), so every node
value and every release is an exact integer.

Scale: the tree's b = L m / epsilon rounded UP to the grid t/s of ``secure.laplace.laplace_grid`` (relative excess
below 2^-31); ``scale`` is t/s, a float64 exactly.

Privacy of exact discrete noise: epsilon'-DP, epsilon' = L m s / t <= epsilon, under continual observation for
m-neighbouring inputs, COMPUTATIONALLY (ChaCha20 as a pseudorandom function): the vector of all node sums is an integer
vector of L1 sensitivity L m (one step lies in one node per level, for each of m counters), and independent discrete
Laplace noise of scale t/s on it has pmf ratio at most exp(L m s / t) at any shift of L1 norm <= L m. The sampler's cap
(|y| < 2^60, ``secure.laplace``) conditions each draw on an event of probability >= 1 - exp(-2^20): stated, not added
(below float precision), as for the sparse vector family. Variance of one draw: 2 q / (1 - q)^2, q = exp(-s / t),
slightly below the continuous 2 (t/s)^2.

Key: ``seed=None`` takes 32 bytes from ``secrets`` (``deployable`` when certified); a seed derives it (NOT
deployable: whoever knows the seed knows the noise). The key and the draw count are written by ``to_bytes`` (SECRET);
a restored counter goes on with fresh streams.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, ClassVar, NamedTuple

import numpy as np

from dpstream import serial
from dpstream.counters import _kernels as kernels
from dpstream.counters._kary_kernels import kary_levels
from dpstream.counters.base import NOISE_BYTES, STEP_BYTES
from dpstream.counters.binary import BinaryTree, prefix_sums, tree_noises
from dpstream.counters.factorisation import Factorisation, KaryTree
from dpstream.counters.factorisation import kary_digit_sum as kary_digit_sum
from dpstream.counters.sources import DISCRETE_SECURE_STORED_LAPLACE, STORED_LAPLACE
from dpstream.counters.tree_noise import StoredNodes
from dpstream.privacy.maps import LaplaceMap, PrivacyMap
from dpstream.secure import sequential
from dpstream.secure.laplace import laplace_grid, seed_key
from dpstream.secure.samplers import new_state
from dpstream.validation import check_positive_int

ARITY = 19
"""The paper's k for small delta."""


class LaplaceNodes(StoredNodes["LaplaceTree"]):
    """Laplace(b) nodes from the counter's numpy generator (``sources.STORED_LAPLACE``), drawn when a node closes."""

    def scaled(self, c: LaplaceTree) -> None:
        """After the tree set its scale b: nothing to adjust."""

    def draw_variance(self, c: LaplaceTree) -> float:
        """2 (b kappa)^2."""
        return self.source.draw_variance(c._noise_scale)

    def log_mgf(self, c: LaplaceTree, lam: np.ndarray) -> np.ndarray:
        """-ln(1 - lam^2 (b kappa)^2), for 0 <= lam < 1/(b kappa)."""
        return -np.log1p(-(np.asarray(lam) * c._noise_scale) ** 2)


class KeyedLaplaceNodes(StoredNodes["LaplaceTree"]):
    """Discrete Laplace nodes of scale t/s >= L m / epsilon, drawn when the node closes (module doc: exact discrete).

    State beside the tree's: the key ``_key`` (8 uint32) and ``_drawn`` (1 int64), the number of the next draw,
    written by ``to_bytes`` so a restored counter goes on with fresh streams and never repeats one. ``deployable``:
    keyed from OS entropy and certified; a restored counter is never deployable (unverifiable, docs/secure-noise.md).
    """

    def allocate(self, c: LaplaceTree) -> None:
        """The stored tree, the key (OS entropy when the seed is None, else from the seed) and the draw count."""
        super().allocate(c)
        c._key = seed_key(c._seed)
        c._drawn = np.zeros(1, dtype=np.int64)
        c._st = new_state()

    def scaled(self, c: LaplaceTree) -> None:
        """Round the tree's b up to the grid t/s (``laplace_grid``): ``scale``, ``sigma``, ``grid``, ``deployable``."""
        self.check_keyed(c)
        t, s = laplace_grid(c.scale)
        c.scale = float(Fraction(t, s))  # exact: t < 2^33 and s a power of two
        c.sigma = math.sqrt(2.0) * c.scale
        c._noise_scale = c.scale * c.kappa
        c.grid = laplace_grid(c._noise_scale) if c._noise_scale > 0 else None
        c.deployable = c._seed is None and c.certified

    def draw(self, c: LaplaceTree, size: int) -> np.ndarray:
        """The next ``size`` node noises (integers as float64), in the order the pushes take them."""
        size = int(size)
        if c.grid is None:
            return np.zeros(size)
        t, s = c.grid
        out = sequential.laplace_draws(c._key, c._drawn[0], np.int64(size), t, s, c._st)
        c._drawn[0] += size
        return out.astype(np.float64)

    def draw_variance(self, c: LaplaceTree) -> float:
        """The source's discrete Laplace variance at the drawn scale t/s (0 without noise)."""
        return 0.0 if c.grid is None else self.source.draw_variance(c.grid[0] / c.grid[1])

    def log_mgf(self, c: LaplaceTree, lam: np.ndarray) -> np.ndarray:
        """The log moment generating function of one node noise, ln((1 - q)^2 / ((1 - q e^lam) (1 - q e^-lam))).

        For 0 <= lam < s/t; q = exp(-s/t).
        """
        lam = np.asarray(lam, dtype=np.float64)
        if c.grid is None:
            return np.zeros_like(lam)
        q = math.exp(-c.grid[1] / c.grid[0])
        return 2.0 * math.log1p(-q) - np.log1p(-q * np.exp(lam)) - np.log1p(-q * np.exp(-lam))

    def state_arrays(self, c: LaplaceTree) -> dict[str, np.ndarray]:
        """The key and the draw count."""
        return {"key": c._key, "drawn": c._drawn}

    def arrays_restored(self, c: LaplaceTree) -> None:
        """Refuse a negative draw count."""
        if c._drawn[0] < 0:
            raise ValueError(f"corrupt state: {type(c).__name__} drawn={int(c._drawn[0])} < 0")

    def scalars_restored(self, c: LaplaceTree) -> None:
        """A restored counter is not deployable (unverifiable: docs/secure-noise.md)."""
        c.deployable = False


KEYED_LAPLACE_NODES = KeyedLaplaceNodes(DISCRETE_SECURE_STORED_LAPLACE)


class KaryState(NamedTuple):
    """The stored k-ary tree: exact sums, noisy running sums (both (levels, n)) and the arity ((1,) int64).

    ``exact[l]`` sums the closed level-l nodes of the current level-(l + 1) block; ``noisy_sums[0]`` is the release.
    """

    exact: np.ndarray
    noisy_sums: np.ndarray
    arity: np.ndarray


class LaplaceTree(BinaryTree):
    """k-ary tree with stored Laplace(b) node noise, b = L m / epsilon (module doc); ``arity`` k >= 2 (default 19).

    State: per level the exact sum of its closed nodes and a noisy running sum (count dtype and float64), and the
    step per counter; with discrete Laplace nodes the key and the draw count too. ``sigma`` is the node noise's
    standard deviation sqrt(2) b; ``scale`` is b (rounded up to the discrete sampler's grid t/s for discrete nodes).
    """

    name = "laplace"
    NOISES = tree_noises(LaplaceNodes(STORED_LAPLACE), KEYED_LAPLACE_NODES)
    grid: tuple[int, int] | None
    """Discrete nodes: the scale t/s of the draws (None without noise)."""
    stored_kind = kernels.KARY
    default_arity: ClassVar[int] = ARITY
    """The arity of the class-level memory model and of ``counter="laplace"``."""

    def __init__(self, *, arity: int = ARITY, **kwargs: Any) -> None:
        """As ``Counter``, with the arity k (>= 2); the ``delta`` given is kept as an argument and not used."""
        self.arity = check_positive_int(arity, "arity", minimum=2)
        super().__init__(**kwargs)
        self.levels = kary_levels(self.horizon, self.arity)
        self.scale = self.levels * self.m / self.epsilon
        self.sigma = math.sqrt(2.0) * self.scale
        self._noise_scale = self.scale * self.kappa
        self.nodes.scaled(self)

    @classmethod
    def tree_levels(cls, horizon: int) -> int:
        """L at the class's arity (an instance's ``levels`` is at its own)."""
        return kary_levels(horizon, cls.default_arity)

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """Not used for the noise (the Laplace scale comes from the L1 sensitivity L m); sqrt(L) m bounds the L2."""
        return math.sqrt(kary_levels(horizon, cls.default_arity)) * m

    @property
    def privacy_delta(self) -> float:
        """0: the Laplace mechanism is pure epsilon-DP (the ``delta`` argument is not used)."""
        return 0.0

    @property
    def privacy_map(self) -> PrivacyMap:
        """The held Laplace(b) node noise at L1 sensitivity L m (``LaplaceMap``)."""
        return LaplaceMap(self.l1_sensitivity(), self._noise_scale)

    def l1_sensitivity(self) -> float:
        """L m: one step lies in one node per level, for each of m counters."""
        return float(self.levels * self.m)

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """One exact sum and one noisy sum per level, and the step count (at the class's arity)."""
        return kary_levels(horizon, cls.default_arity) * (count_bytes + NOISE_BYTES) + STEP_BYTES

    def _allocate_stored(self) -> None:
        levels = kary_levels(self.horizon, self.arity)
        self._exact: np.ndarray = np.zeros((levels, self.n), dtype=self.count_dtype)
        self._noisy_sums = np.zeros((levels, self.n), dtype=np.float64)
        self._arity = np.array([self.arity], dtype=np.int64)
        self.state = KaryState(self._exact, self._noisy_sums, self._arity)

    def factorisation(self) -> Factorisation:
        """The k-ary tree: variance 2 b^2 times the base-k digit sum of s, one Laplace node per digit unit."""
        return KaryTree(self.horizon, self.arity)

    @property
    def draw_variance(self) -> float:
        """The variance of one node noise: 2 (b kappa)^2, or the discrete Laplace's at its scale t/s."""
        return float(self.nodes.draw_variance(self))

    def node_log_mgf(self, lam: np.ndarray) -> np.ndarray:
        """The log moment generating function of one node noise (the source's: Laplace(b kappa) or discrete).

        With the digit sum it bounds the release noise's tail (Chernoff) for LazyHH.
        """
        return np.asarray(self.nodes.log_mgf(self, lam))

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Every node closed by each counter's step (0 for the others), shape (1, -1)."""
        horizon = increments.shape[1]
        prefix = prefix_sums(increments)
        out = []
        for level in range(kary_levels(horizon, self.arity)):
            span = self.arity**level
            ends = np.arange(1, horizon // span + 1) * span
            nodes = prefix[:, ends] - prefix[:, ends - span]
            nodes[ends[None, :] > np.asarray(steps)[:, None]] = 0
            out.append(nodes)
        return np.concatenate(out, axis=1).reshape(1, -1)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the state arrays but the arity (a parameter)."""
        return sum(a.nbytes for name, a in self._state_arrays().items() if name != "arity")

    def _factorisation_args(self) -> dict[str, Any]:
        return {"arity": self.arity}

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        super()._restore_arrays(arrays)
        if int(self._arity[0]) != self.arity:
            raise ValueError(f"corrupt state: LaplaceTree arity {int(self._arity[0])} is not {self.arity}")

    @classmethod
    def _rebuild(cls, args: dict[str, Any]) -> LaplaceTree:
        arity = args.get("arity")
        if not isinstance(arity, int) or arity < 2:
            raise ValueError(f"arity={arity!r}; allowed: an integer >= 2")
        return super()._rebuild(args)

    def _constants(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "scale": self.scale}


# the classes of format 2: one per node noise, the stored one without ``node_noise`` (``serial.RENAMED``)
serial.rename("LaplaceTree", "LaplaceTree", 2, node_noise="stored")
serial.rename("DiscreteLaplaceTree", "LaplaceTree", 2, node_noise="discrete_secure_stored")
