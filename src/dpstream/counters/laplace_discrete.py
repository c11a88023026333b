"""EXACT discrete Laplace node noise of the k-ary Laplace tree from a keyed ChaCha20 stream, drawn once and stored.

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
from typing import TYPE_CHECKING

import numpy as np

from dpstream.counters.sources import DISCRETE_SECURE_STORED_LAPLACE
from dpstream.counters.tree_noise import StoredNodes
from dpstream.secure import sequential
from dpstream.secure.chacha import MAX_CELLS
from dpstream.secure.laplace import laplace_grid, seed_key
from dpstream.secure.samplers import new_state

if TYPE_CHECKING:
    from dpstream.counters.laplace_tree import LaplaceTree


def discrete_laplace_variance(t: int, s: int) -> float:
    """Variance of the discrete Laplace of scale t/s: 2 q / (1 - q)^2, q = exp(-s / t) (the source's)."""
    return DISCRETE_SECURE_STORED_LAPLACE.draw_variance(t / s)


class KeyedLaplaceNodes(StoredNodes):
    """Discrete Laplace nodes of scale t/s >= L m / epsilon, drawn when the node closes (module doc).

    State beside the tree's: the key ``_key`` (8 uint32) and ``_drawn`` (1 int64), the number of the next draw,
    written by ``to_bytes`` so a restored counter goes on with fresh streams and never repeats one. ``deployable``:
    keyed from OS entropy and certified; a restored counter is never deployable (unverifiable, docs/secure-noise.md).
    """

    def allocate(self, c: LaplaceTree) -> None:  # type: ignore[override]
        """The stored tree, the key (OS entropy when the seed is None, else from the seed) and the draw count."""
        super().allocate(c)
        c._key = seed_key(c._seed)
        c._drawn = np.zeros(1, dtype=np.int64)
        c._st = new_state()

    def scaled(self, c: LaplaceTree) -> None:
        """Round the tree's b up to the grid t/s (``laplace_grid``): ``scale``, ``sigma``, ``grid``, ``deployable``."""
        if c._noise.mode == "secure":
            raise ValueError(f"noise=secure is not available with counter='laplace', node_noise={c.node_noise!r} "
                             "(it has its own exact sampler); allowed: noise=numpy")
        if c.n > MAX_CELLS:
            raise ValueError(f"node_noise={c.node_noise!r} takes at most 2^32 counters, got n={c.n}")
        t, s = laplace_grid(c.scale)
        c.scale = float(Fraction(t, s))  # exact: t < 2^33 and s a power of two
        c.sigma = math.sqrt(2.0) * c.scale
        c._noise_scale = c.scale * c.kappa
        c.grid = laplace_grid(c._noise_scale) if c._noise_scale > 0 else None
        c.deployable = c._seed is None and c.certified

    def draw(self, c: LaplaceTree, size: int) -> np.ndarray:  # type: ignore[override]
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

    def state_arrays(self, c: LaplaceTree) -> dict[str, np.ndarray]:  # type: ignore[override]
        """The key and the draw count."""
        return {"key": c._key, "drawn": c._drawn}

    def arrays_restored(self, c: LaplaceTree) -> None:  # type: ignore[override]
        """Refuse a negative draw count."""
        if c._drawn[0] < 0:
            raise ValueError(f"corrupt state: {type(c).__name__} drawn={int(c._drawn[0])} < 0")

    def scalars_restored(self, c: LaplaceTree) -> None:  # type: ignore[override]
        """A restored counter is not deployable (unverifiable: docs/secure-noise.md)."""
        c.deployable = False


KEYED_LAPLACE_NODES = KeyedLaplaceNodes(DISCRETE_SECURE_STORED_LAPLACE)
