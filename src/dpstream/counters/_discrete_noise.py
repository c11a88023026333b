"""Calibration, key and flags shared by the counters with exact discrete Gaussian node noise (``dpstream.secure``).

Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (2020): sigma^2 from
``discrete_gaussian.discrete_gaussian_sigma2`` for the tree's squared L2 sensitivity h m (a rational rounded up; the
counter's ``calibration`` is ignored, the discrete Gaussian has its own bound). The 256-bit ChaCha20 key comes from
``secrets.token_bytes`` when no seed is given (``deployable``) and from the seed otherwise (certified when calibrated,
NOT deployable: whoever knows the seed knows the noise). The key is never in ``repr`` or results; ``to_bytes`` state
files hold it and are SECRET.
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction
from typing import Any

import numpy as np

from dpstream.counters.base import Counter
from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.privacy.discrete_gaussian import discrete_gaussian_sigma2
from dpstream.privacy.maps import DiscreteGaussianMap, PrivacyMap
from dpstream.secure.chacha import KEY_BYTES, MAX_CELLS, key_words
from dpstream.secure.samplers import CHUNKS, gaussian_params, gaussian_table, new_state


class DiscreteFlags(Counter):
    """Base of every counter with exact discrete Gaussian node noise from a keyed generator (put it first).

    The guarantee is computational; ``deployable``: keyed from OS entropy and certified. It is not written by
    ``to_bytes``: a restored counter is never deployable (unverifiable, docs/secure-noise.md), its written key
    replacing the fresh one its rebuild drew.
    """

    deployable: bool

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        """As ``Counter``; the restored counter is not deployable (unverifiable: docs/secure-noise.md)."""
        super()._restore_scalars(scalars)
        self.deployable = False


class KeyedDraws(DiscreteFlags):
    """Base of the counters whose keyed node noise is drawn when a node closes and stored (put it first).

    State beside the tree's: the key ``_key`` (8 uint32) and ``_drawn`` (1 int64), the number of the next draw,
    written by ``to_bytes`` so a restored counter goes on with fresh streams and never repeats one.
    """

    _key: np.ndarray
    _drawn: np.ndarray

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {**super()._state_arrays(), "key": self._key, "drawn": self._drawn}

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        super()._restore_arrays(arrays)
        if self._drawn[0] < 0:
            raise ValueError(f"corrupt state: {type(self).__name__} drawn={int(self._drawn[0])} < 0")


class DiscreteNoise(DiscreteFlags):
    """Base of the counters whose node noise is N_Z(0, sigma^2) drawn by ``secure.samplers`` (put it first).

    ``_discrete_setup`` (called from the counter's ``_allocate``) sets ``sigma2`` (Fraction, calibrated for
    ``calibration_delta``), ``sigma``, the sampler's parameters (``_prepare_sampler``), ``deployable``, the key
    ``_key`` (8 uint32) and the sampler state ``_st``.
    """

    _chunks: int = CHUNKS
    """Bytes of each table entry the exact sampler compares (tests lower it to send many draws to the slow path)."""

    def __init__(self, *, seed: SeedLike = None, **kwargs: Any) -> None:
        """As ``Counter``; the key from OS entropy when ``seed`` is None, else from the seed (not deployable)."""
        self._seeded = seed is not None
        self._seed = seed
        super().__init__(seed=seed, **kwargs)

    def _discrete_setup(self) -> None:
        if self._noise.mode == "secure":
            raise ValueError(f"noise=secure is not available with node_noise={self.node_noise!r} (it has its own "
                             "exact sampler); allowed: noise=numpy")
        if self.n > MAX_CELLS:
            raise ValueError(f"node_noise={self.node_noise!r} takes at most 2^32 counters, got n={self.n}")
        multiplier = self._noise_scale / self.sigma
        self.sigma2 = discrete_gaussian_sigma2(self.squared_sensitivity, self.epsilon, self.calibration_delta)
        scaled = self.sigma2
        if multiplier != 1.0:  # NOT certified (``Counter``): sigma^2 times multiplier^2, rounded up on the same grid
            b = self.sigma2.denominator
            scaled = Fraction(math.ceil(self.sigma2 * Fraction(multiplier) ** 2 * b), b)
        self._noiseless = scaled == 0
        if not self._noiseless:
            self._prepare_sampler(scaled)
        self.sigma = math.sqrt(self.sigma2)
        self._noise_scale = math.sqrt(scaled)
        self.deployable = not self._seeded and self.certified
        if self._seeded:
            # words 8..15 of the seed's state stream: past the 8 that numpy's PCG64 takes from the same seed
            raw = as_seed_sequence(self._seed).generate_state(16, np.uint32)[8:]
            self._key = np.ascontiguousarray(raw, dtype=np.uint32)
        else:
            self._key = key_words(secrets.token_bytes(KEY_BYTES))
        self._st = new_state()

    @property
    def privacy_map(self) -> PrivacyMap:
        """The held N_Z(0, sigma^2) node noise at squared L2 sensitivity h m (``DiscreteGaussianMap``)."""
        return DiscreteGaussianMap(self.squared_sensitivity, self.sigma2)

    @property
    def squared_sensitivity(self) -> int:
        """The integer squared L2 sensitivity sigma^2 is calibrated for: h m, one node per level of the tree."""
        return self.levels * self.m

    @property
    def calibration_delta(self) -> float:
        """The delta sigma^2 is calibrated for: all of ``delta`` (the exact sampler adds nothing)."""
        return self.delta

    @property
    def sampler_delta(self) -> float:
        """What the sampler adds to delta: 0 (exact up to the 2 exp(-2048) truncation ``discrete_gaussian`` states)."""
        return 0.0

    def _prepare_sampler(self, scaled: Fraction) -> None:
        """Parameters of the rejection sampler for N_Z(0, scaled) (range-checked) and its table (cached per sigma^2)."""
        self._abt = np.array(gaussian_params(scaled.numerator, scaled.denominator), dtype=np.int64)
        gaussian_table(int(self._abt[0]), int(self._abt[1]))

    @property
    def table_bytes(self) -> int:
        """Bytes of the exact sampler's table (0 without noise): not part of ``memory_bytes`` (the state).

        The table is public, a function of sigma^2, computed on construction (and so on restore) and shared by the
        counters of one sigma^2 (``samplers.gaussian_table``).
        """
        if self._noiseless:
            return 0
        hi, lo, _, first_v = gaussian_table(int(self._abt[0]), int(self._abt[1]))
        return hi.nbytes + lo.nbytes + first_v.nbytes

    @property
    def words_consumed(self) -> int:
        """32-bit generator words drawn so far (all draws)."""
        return int(self._st[4])

    def _constants(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "sigma2": str(self.sigma2)}
