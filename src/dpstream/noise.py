"""Where every mechanism draws its randomness: seeds, and Laplace / Gaussian noise.

``NoiseSource`` wraps one ``numpy.random.Generator``. Mechanisms call ``gaussian(sigma, n)`` and
``laplace(scale, n)`` for their privacy noise (already at the calibrated scale) and use ``rng``
only for non-privacy randomness (hash seeds, sampling data). Drawing n values at once gives the
same values as n draws of one, so bulk (``extend``) and item-by-item (``update``) paths agree.
"""

from __future__ import annotations

import numpy as np

SeedLike = int | np.random.SeedSequence | None

NOISE_MODES = ("numpy",)


def as_seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """Turn an int (or None, or an existing SeedSequence) into a ``SeedSequence``."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer, a numpy SeedSequence or None, got {seed!r}")
    return np.random.SeedSequence(seed)


def trial_seed(seed: int, trial: int) -> np.random.SeedSequence:
    """The seed of trial ``trial`` of a run seeded ``seed``: equal to ``SeedSequence(seed).spawn(n)[trial]``."""
    return np.random.SeedSequence(seed, spawn_key=(trial,))


class NoiseSource:
    """Privacy noise and auxiliary randomness from one seeded generator.

    mode "numpy": numpy's samplers (fast, textbook floating-point noise).
    """

    def __init__(self, seed: SeedLike = None, mode: str = "numpy") -> None:
        if mode not in NOISE_MODES:
            raise ValueError(f"unknown noise mode {mode!r}; allowed: {', '.join(NOISE_MODES)}")
        self.mode = mode
        self.rng = np.random.default_rng(as_seed_sequence(seed))

    def gaussian(self, sigma: float, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` independent draws of N(0, sigma^2) as float64."""
        return self.rng.normal(0.0, sigma, size)

    def laplace(self, scale: float, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` independent draws of Lap(scale) (density exp(-|x|/scale) / (2 scale)) as float64."""
        return self.rng.laplace(0.0, scale, size)
