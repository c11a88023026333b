"""The binary tree with Honaker's online estimates (Honaker 2015; the math in ``dpstream.counters.honaker_tree``).

Every node of the tree gets its own noise, each closed node is re-estimated from its noisy value and its children's
estimates, and a release sums the estimates over the set bits of its step. Same sigma as ``BinaryTree`` (the h-level
tree's L2 sensitivity sqrt(h m)); the estimates are post-processing, so the privacy is the binary mechanism's.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dpstream import serial
from dpstream.counters import _kernels as kernels
from dpstream.counters.base import NOISE_BYTES, STEP_BYTES
from dpstream.counters.binary import BinaryTree, prefix_sums, tree_noises
from dpstream.counters.discrete import KEYED_STORED_NODES
from dpstream.counters.factorisation import Factorisation, HonakerEstimate
from dpstream.counters.honaker_tree import honaker_draws
from dpstream.counters.tree_noise import STORED_NODES
from dpstream.privacy.calibration import gauss_bm_levels


def all_dyadic_nodes(increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Exact value of EVERY node of the dyadic tree closed by each counter's step.

    Honaker's estimator draws noise for all of them, not only the one closing per step: level l, node ending at q 2^l <=
    steps[j].
    """
    horizon = increments.shape[1]
    prefix = prefix_sums(increments)
    out = []
    for level in range(max(1, horizon.bit_length())):
        ends = np.arange(1, (horizon >> level) + 1) << level
        nodes = prefix[:, ends] - prefix[:, ends - (1 << level)]
        nodes[ends[None, :] > np.asarray(steps)[:, None]] = 0
        out.append(nodes)
    return np.concatenate(out, axis=1).reshape(1, -1)



class HonakerState(NamedTuple):
    """Honaker's tree, each (levels, n): exact partial sums, released sums (row 0 the release), last estimates."""

    exact: np.ndarray
    noisy_sums: np.ndarray
    estimates: np.ndarray


class HonakerTree(BinaryTree):
    """Honaker's estimates on the binary tree; ctz(s) + 1 noises per push (2 on average), stored when drawn.

    State: the stored tree's (levels, n) exact partial sums and released sums (row 0 is the release, read as the
    stored binary tree reads it), plus the last estimate per level, and an int64 step per counter.
    Variance sum_{l in bits(s)} v_l sigma^2, v_l from 1 down to 1/2. Privacy: (epsilon, delta)-DP under continual
    observation for m-neighbouring counter arrays, as the stored binary tree (every node of the h-level tree noised
    at sigma for L2 sensitivity sqrt(h m)); the estimates are post-processing.

    ``node_noise``: "stored" (N(0, sigma^2) from the counter's numpy generator) or "discrete_secure_stored" (exact
    N_Z(0, sigma^2) draws from a ChaCha20 key, ``discrete.KeyedStoredNodes``): then (epsilon, delta)-DP
    COMPUTATIONALLY (ChaCha20 as a pseudorandom function), the discrete Gaussian mechanism on the integer vector of all
    node sums, L2 sensitivity sqrt(h m), sigma^2 from ``discrete_gaussian.discrete_gaussian_sigma2``; the releases
    are real numbers, their variance ``honaker_variance`` times the node variance (at most sigma^2).
    """

    name = "honaker"
    NOISES = tree_noises(STORED_NODES, KEYED_STORED_NODES)
    stored_kind = kernels.HONAKER
    stored_draws = 2

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """One exact partial sum, released sum and estimate per level, and the step count."""
        return gauss_bm_levels(horizon) * (count_bytes + 2 * NOISE_BYTES) + STEP_BYTES

    def _allocate_stored(self) -> None:
        super()._allocate_stored()
        self._estimates = np.zeros((self.levels, self.n), dtype=np.float64)
        self.state = HonakerState(self._exact, self._noisy_sums, self._estimates)

    def stored_noise_count(self, steps: np.ndarray) -> int:
        """ctz(s) + 1 noises per push at step s (``honaker_draws``)."""
        return honaker_draws(steps)

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Every node of the tree, each with its own noise (``all_dyadic_nodes``)."""
        return all_dyadic_nodes(increments, steps)

    def factorisation(self) -> Factorisation:
        """Honaker's estimates: variance sigma^2 times ``honaker_variance`` at each step."""
        return HonakerEstimate(self.horizon)


# the classes of format 1, one per node noise (``serial.RENAMED``)
serial.rename("HonakerTree", "HonakerTree", 1, node_noise="stored")
serial.rename("HonakerDiscreteSecure", "HonakerTree", 1, node_noise="discrete_secure_stored")
