"""The binary tree with derived EXACT discrete Gaussian node noise from a keyed ChaCha20 stream.

Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (2020) for the noise and its privacy;
``dpstream.secure`` for the generator, the integer-only samplers and the calibration.
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction
from typing import Any

import numpy as np

from dpstream.counters import _kernels as kernels
from dpstream.counters.binary import BinaryTree, DerivedState
from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.secure import release as secure_release
from dpstream.secure.chacha import KEY_BYTES, MAX_CELLS, key_words
from dpstream.secure.privacy import discrete_gaussian_sigma2
from dpstream.secure.samplers import gaussian_params, new_state


class DiscreteSecureBinary(BinaryTree):
    """Binary tree, node noise N_Z(0, sigma^2) derived from (key, cell, level, node index) by ChaCha20.

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring inputs (at most m counters change,
    each by at most 1 at one step), COMPUTATIONALLY (ChaCha20 as a pseudorandom function): the node sums have integer
    L2 sensitivity sqrt(h m), and independent discrete Gaussian noise on them has the delta bound of
    ``secure.privacy.discrete_gaussian_delta`` (the exact Gaussian curve at sigma^2 - s^2 plus a total-variation
    term, or Canonne-Kamath-Steinke's zCDP conversion when smaller); ``secure.privacy.discrete_gaussian_sigma2``
    gives sigma^2 as a rational rounded up (``calibration`` is ignored: the discrete Gaussian has its own bound).
    Every release is an integer.

    Key: ``seed=None`` takes 32 bytes from ``secrets.token_bytes`` (``deployable``); a seed derives it
    reproducibly from the seed (certified when calibrated, NOT deployable: whoever knows the seed knows the noise).
    The key is never shown in ``repr`` or results; ``to_bytes`` state files hold it and are SECRET.
    """

    node_noise = "discrete_secure"
    kind = kernels.DERIVED  # pushes as the derived tree (the exact sums only); the noise differs at release
    sparse_pushes = True
    tracks_steps = False
    draws_per_push = 0
    fixed_bytes = KEY_BYTES
    notion = "computational"

    def __init__(self, *, seed: SeedLike = None, **kwargs: Any) -> None:
        """As ``Counter``; the key from OS entropy when ``seed`` is None, else from the seed (not deployable)."""
        self._seeded = seed is not None
        self._seed = seed
        super().__init__(seed=seed, **kwargs)

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """The exact count alone (the key is ``fixed_bytes``)."""
        return count_bytes

    def _allocate(self) -> None:
        if self._noise.mode == "secure":
            raise ValueError("noise=secure is not available with node_noise='discrete_secure' (it has its own exact "
                             "sampler); allowed: noise=numpy")
        if self.n > MAX_CELLS:
            raise ValueError(f"node_noise='discrete_secure' takes at most 2^32 counters, got n={self.n}")
        multiplier = self._noise_scale / self.sigma
        self.sigma2 = discrete_gaussian_sigma2(self.levels * self.m, self.epsilon, self.delta)
        scaled = self.sigma2
        if multiplier != 1.0:  # NOT certified (base class): sigma^2 times multiplier^2, rounded up on the same grid
            b = self.sigma2.denominator
            scaled = Fraction(math.ceil(self.sigma2 * Fraction(multiplier) ** 2 * b), b)
        self._noiseless = scaled == 0
        if not self._noiseless:
            self._abt = np.array(gaussian_params(scaled.numerator, scaled.denominator), dtype=np.int64)
        self.sigma = math.sqrt(self.sigma2)
        self._noise_scale = math.sqrt(scaled)
        self.deployable = not self._seeded and self.certified
        if self._seeded:
            # words 8..15 of the seed's state stream: past the 8 that numpy's PCG64 takes from the same seed
            raw = as_seed_sequence(self._seed).generate_state(16, np.uint32)[8:]
            self._key = np.ascontiguousarray(raw, dtype=np.uint32)
        else:
            self._key = key_words(secrets.token_bytes(KEY_BYTES))
        self._exact: np.ndarray = np.zeros((1, self.n), dtype=self.count_dtype)
        self.state = DerivedState(self._exact)
        self._st = new_state()

    def __repr__(self) -> str:
        """Dimensions and calibration, never the key."""
        return (f"DiscreteSecureBinary(n={self.n}, horizon={self.horizon}, epsilon={self.epsilon}, delta={self.delta}, "
                f"m={self.m}, sigma2={self.sigma2}, deployable={self.deployable})")

    def noise_count(self, steps: np.ndarray) -> int:
        """No draws at push time: the noise is derived at release."""
        return 0

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {**super()._state_arrays(), "key": self._key}

    def _constants(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "sigma2": str(self.sigma2)}

    def variance(self, steps: np.ndarray | int) -> np.ndarray:
        """popcount(s) sigma^2: an upper bound (the discrete Gaussian's variance is slightly below sigma^2)."""
        return super().variance(steps)

    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the nodes' discrete Gaussian noise (integers, returned as float64)."""
        cells = np.asarray(cells, dtype=np.int64)
        steps = np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), cells.shape))
        exact = self._exact[0, cells].astype(np.int64)
        if self._noiseless:
            return exact.astype(np.float64)
        a, b, t = self._abt
        noise = secure_release.noise_sums(self._key, a, b, t, np.ascontiguousarray(cells), steps, self._st)
        return (exact + noise).astype(np.float64)

    @property
    def words_consumed(self) -> int:
        """32-bit generator words drawn so far (all releases)."""
        return int(self._st[4])

    @property
    def memory_bytes(self) -> int:
        """Bytes of the exact counts and the key."""
        return self._exact.nbytes + self._key.nbytes
