"""The k-ary Laplace tree with EXACT discrete Laplace node noise from a keyed ChaCha20 stream, drawn once and stored.

Andersson, Pagh, Steiner, Torkamani, "Count on Your Elders: Laplace vs Gaussian Noise" (FORC 2025) for the tree
(``laplace_tree``); Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020),
Algorithm 2, for the noise: the discrete Laplace of scale t/s, P(y) proportional to exp(-|y| s / t) on the integers
(``secure.samplers._dlaplace_rational``, the sampler the sparse vector family draws with).

``node_noise="discrete_secure_stored"``: every node's noise is one discrete Laplace draw made when the node closes,
draw number i (over the life of the key) from its own ChaCha20 stream (``secure.sequential.laplace_draws``), stored
in the tree as ``LaplaceTree``'s float noise is. The draws are integers (exact in float64 below 2^53), so every node
value and every release is an exact integer.

Scale: the tree's b = L m / epsilon rounded UP to the grid t/s of ``secure.laplace.laplace_grid`` (relative excess
below 2^-31); ``scale`` is t/s, a float64 exactly.

Privacy: epsilon'-DP, epsilon' = L m s / t <= epsilon, under continual observation for m-neighbouring inputs,
COMPUTATIONALLY (ChaCha20 as a pseudorandom function): the vector of all node sums is an integer vector of L1
sensitivity L m (one step lies in one node per level, for each of m counters), and independent discrete Laplace noise
of scale t/s on it has pmf ratio at most exp(L m s / t) at any shift of L1 norm <= L m. The sampler's cap (|y| < 2^60,
``secure.laplace``) conditions each draw on an event of probability >= 1 - exp(-2^20): stated, not added (below
float precision), as for the sparse vector family. Variance of one draw: 2 q / (1 - q)^2, q = exp(-s / t), slightly
below the continuous 2 (t/s)^2.

Key: ``seed=None`` takes 32 bytes from ``secrets`` (``deployable`` when certified); a seed derives it (NOT
deployable: whoever knows the seed knows the noise). The key and the draw count are written by ``to_bytes`` (SECRET);
a restored counter goes on with fresh streams.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpstream.counters._discrete_noise import KeyedDraws
from dpstream.counters.binary import tree_noises
from dpstream.counters.laplace_tree import LaplaceTree
from dpstream.counters.sources import DISCRETE_SECURE_STORED_LAPLACE
from dpstream.counters.tree_noise import StoredNodes
from dpstream.noise import SeedLike
from dpstream.privacy.maps import LaplaceMap, PrivacyMap
from dpstream.secure import sequential
from dpstream.secure.chacha import MAX_CELLS
from dpstream.secure.laplace import laplace_grid, seed_key
from dpstream.secure.samplers import new_state


def discrete_laplace_variance(t: int, s: int) -> float:
    """Variance of the discrete Laplace of scale t/s: 2 q / (1 - q)^2, q = exp(-s / t) (the source's)."""
    return DISCRETE_SECURE_STORED_LAPLACE.draw_variance(t / s)


class DiscreteLaplaceTree(KeyedDraws, LaplaceTree):
    """k-ary tree, node noise discrete Laplace of scale t/s >= L m / epsilon drawn when the node closes (module doc).

    State beside ``LaplaceTree``'s: ``KeyedDraws``'.
    """

    NOISES = tree_noises(StoredNodes(DISCRETE_SECURE_STORED_LAPLACE))

    def __init__(self, *, seed: SeedLike = None, **kwargs: Any) -> None:
        """As ``LaplaceTree``; the key from OS entropy when ``seed`` is None, else from the seed (not deployable)."""
        self._seed = seed
        super().__init__(seed=seed, **kwargs)
        if self._noise.mode == "secure":
            raise ValueError(f"noise=secure is not available with counter='laplace', node_noise={self.node_noise!r} "
                             "(it has its own exact sampler); allowed: noise=numpy")
        if self.n > MAX_CELLS:
            raise ValueError(f"node_noise={self.node_noise!r} takes at most 2^32 counters, got n={self.n}")
        t, s = laplace_grid(self.scale)
        self.scale = float(Fraction(t, s))  # exact: t < 2^33 and s a power of two
        self.sigma = math.sqrt(2.0) * self.scale
        self._noise_scale = self.scale * self.kappa
        self.grid: tuple[int, int] | None = laplace_grid(self._noise_scale) if self._noise_scale > 0 else None
        self.deployable = seed is None and self.certified

    def _allocate(self) -> None:
        super()._allocate()
        self._key = seed_key(self._seed)
        self._drawn = np.zeros(1, dtype=np.int64)
        self._st = new_state()

    def draw(self, size: int) -> np.ndarray:
        """The next ``size`` node noises (integers as float64), in the order the pushes take them."""
        size = int(size)
        if self.grid is None:
            return np.zeros(size)
        t, s = self.grid
        out = sequential.laplace_draws(self._key, self._drawn[0], np.int64(size), t, s, self._st)
        self._drawn[0] += size
        return out.astype(np.float64)

    @property
    def draw_variance(self) -> float:
        """The source's discrete Laplace variance at the drawn scale t/s (0 without noise)."""
        return 0.0 if self.grid is None else self.source.draw_variance(self.grid[0] / self.grid[1])

    def node_log_mgf(self, lam: np.ndarray) -> np.ndarray:
        """The log moment generating function of one node noise, ln((1 - q)^2 / ((1 - q e^lam) (1 - q e^-lam))).

        For 0 <= lam < s/t; q = exp(-s/t).
        """
        lam = np.asarray(lam, dtype=np.float64)
        if self.grid is None:
            return np.zeros_like(lam)
        q = math.exp(-self.grid[1] / self.grid[0])
        return 2.0 * math.log1p(-q) - np.log1p(-q * np.exp(lam)) - np.log1p(-q * np.exp(-lam))

    @property
    def privacy_map(self) -> PrivacyMap:
        """Discrete Laplace at the drawn scale t/s and L1 sensitivity L m: epsilon = L m s / t (``LaplaceMap``)."""
        return LaplaceMap(self.l1_sensitivity(), self._noise_scale)

    @property
    def memory_bytes(self) -> int:
        """``LaplaceTree``'s bytes, the key and the draw count."""
        return super().memory_bytes + self._key.nbytes + self._drawn.nbytes

    @property
    def words_consumed(self) -> int:
        """32-bit generator words drawn so far (all draws)."""
        return int(self._st[4])
