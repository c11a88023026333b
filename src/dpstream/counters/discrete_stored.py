"""The stored binary tree and Honaker's estimates with EXACT discrete Gaussian node noise, drawn once and stored.

``node_noise="discrete_secure_stored"``: every node's noise is one N_Z(0, sigma^2) draw (Canonne, Kamath, Steinke,
"The Discrete Gaussian for Differential Privacy", 2020) made when the node closes, from a ChaCha20 stream keyed by
the counter's secret key (``secure.sequential``: draw number i has its own stream, batched and compiled), and stored
in the tree as the numpy noise of ``StoredBinary`` / ``HonakerTree`` is. The trees' push kernels are unchanged: the
draws arrive as float64 values that are integers (exact below 2^53), so the stored tree's noisy sums and releases are
exact integers and Honaker's estimates are post-processing of exact integer node values.

Timing: the draws are made at push time, so the time of an update (or of a sketch's block of updates) depends on
the noise values drawn in it (rejection sampling); a release only reads stored values. ``node_noise="discrete_secure"``
(``DiscreteSecureBinary``) draws at release instead; docs/secure-noise.md says what an observer sees in each.
"""

from __future__ import annotations

import numpy as np

from dpstream.counters._discrete_noise import DiscreteNoise, KeyedDraws
from dpstream.counters.binary import StoredBinary
from dpstream.counters.honaker import HonakerTree
from dpstream.counters.sources import DISCRETE_SECURE_STORED
from dpstream.secure import sequential


class StoredDiscreteDraws(KeyedDraws, DiscreteNoise):
    """Base of the stored trees (put it first): ``draw`` gives the next N_Z(0, sigma^2) draws of the keyed stream.

    State beside the tree's: ``KeyedDraws``'.
    """

    source = DISCRETE_SECURE_STORED

    def _allocate(self) -> None:
        super()._allocate()  # type: ignore[safe-super]  # the stored tree after this class in the MRO allocates
        self._discrete_setup()
        self._drawn = np.zeros(1, dtype=np.int64)

    def draw(self, size: int) -> np.ndarray:
        """The next ``size`` node noises N_Z(0, sigma^2) (integers as float64), in the order the pushes take them."""
        size = int(size)
        if self._noiseless:
            return np.zeros(size)
        a, b, t = self._abt
        out = sequential.draws(self._key, self._drawn[0], np.int64(size), a, b, t, self._st, self._chunks)
        self._drawn[0] += size
        return out.astype(np.float64)


class StoredDiscreteSecureBinary(StoredDiscreteDraws, StoredBinary):
    """Binary tree with stored nodes (Holland, Alg. 1), node noise N_Z(0, sigma^2) drawn when the node closes.

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring inputs (at most m counters change,
    each by at most 1 at one step), COMPUTATIONALLY (ChaCha20 as a pseudorandom function): the released nodes have
    integer L2 sensitivity sqrt(h m), and independent discrete Gaussian noise on them is (epsilon, delta)-DP by
    ``discrete_gaussian.discrete_gaussian_delta`` (the exact Gaussian curve at sigma^2 - s^2 plus a total-variation
    term, or Canonne, Kamath, Steinke's zCDP conversion when smaller), sigma^2 from
    ``discrete_gaussian.discrete_gaussian_sigma2``. Every release is an integer. Key and flags: ``DiscreteNoise``.

    Memory (``memory_bytes``): the stored tree's exact partial sums, noisy sums and steps, the key and the draw count.
    ``variance``: popcount(s) sigma^2, an upper bound (the discrete Gaussian's variance is slightly below sigma^2).
    """


class HonakerDiscreteSecure(StoredDiscreteDraws, HonakerTree):
    """Honaker's online estimates over stored N_Z(0, sigma^2) node noise, each drawn when its node closes.

    Honaker 2015, "Efficient use of differentially private binary trees" (``honaker_tree``): ctz(s) + 1 draws per
    push at step s.

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring inputs, COMPUTATIONALLY (ChaCha20
    as a pseudorandom function): the noisy values of every node of the h-level tree are the discrete Gaussian
    mechanism on the integer vector of all node sums, L2 sensitivity sqrt(h m) (one changed step lies in one node
    per level), (epsilon, delta)-DP by ``discrete_gaussian.discrete_gaussian_delta``, sigma^2 from
    ``discrete_gaussian.discrete_gaussian_sigma2``. The estimates and the releases are a fixed linear map
    of those exact integer values (``honaker_tree``), post-processing at no privacy cost, so the releases are real
    numbers; their variance is ``honaker_variance`` times the node variance (at most sigma^2). Key and flags:
    ``DiscreteNoise``.
    """
