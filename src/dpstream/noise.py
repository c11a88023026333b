"""Where every mechanism draws its randomness: seeds, and Laplace / Gaussian noise.

Seeds: ``children(seed, n)`` / ``child_seed(seed, k)`` (non-mutating ``seed.spawn``), ``trial_seed`` for the runner.

``NoiseSource`` wraps one ``numpy.random.Generator``. Mechanisms call ``gaussian(sigma, n)`` and
``laplace(scale, n)`` for their privacy noise (already at the calibrated scale) and use ``rng``
only for non-privacy randomness (hash seeds, sampling data). Drawing n values at once gives the
same values as n draws of one, so bulk (``extend``) and item-by-item (``update``) paths agree.

Noise modes (``noise=`` in the config; ``noise_mode`` sets it for a block of code):
- ``numpy`` (default): numpy's samplers. Fast, seeded, reproducible; textbook floating-point noise,
  which is open to Mironov's (2012) floating-point attacks.
- ``secure``: OpenDP's exact samplers (``make_laplace`` / ``make_gaussian`` on a float vector), which
  are safe against those attacks. About 1000x slower, and they draw from the operating system's
  CSPRNG: results are NOT reproducible from the seed (the seed still drives all non-noise randomness).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from dpstream.errors import ConfigError

SeedLike = int | np.random.SeedSequence | None

NOISE_MODES = ("numpy", "secure")
_MODE: contextvars.ContextVar[str] = contextvars.ContextVar("dpstream_noise_mode", default="numpy")


def as_seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """Turn an int (or None, or an existing SeedSequence) into a ``SeedSequence``."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer, a numpy SeedSequence or None, got {seed!r}")
    return np.random.SeedSequence(seed)


def child_seed(seed: SeedLike, k: int) -> np.random.SeedSequence:
    """The k-th child of ``seed``, without mutating it.

    Equal to ``seed.spawn(k + 1)[k]`` on a fresh ``seed`` (same entropy, spawn_key ``(*seed.spawn_key, k)`` and pool
    size), so a caller replays identically when called twice.
    """
    root = as_seed_sequence(seed)
    k = int(k)
    if k < 0:
        raise ValueError(f"child index k must be >= 0, got {k!r}")
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, k), pool_size=root.pool_size)


def children(seed: SeedLike, n: int) -> list[np.random.SeedSequence]:
    """The first ``n`` children of ``seed`` (``child_seed(seed, 0..n-1)``).

    ``seed.spawn(n)`` of a fresh seed, without mutating it. The one seeding helper: every mechanism and trial spawns
    through it, in a fixed order.
    """
    root = as_seed_sequence(seed)
    return [child_seed(root, i) for i in range(int(n))]


def trial_seed(seed: int, trial: int) -> np.random.SeedSequence:
    """The seed of trial ``trial`` of a run seeded ``seed``: equal to ``SeedSequence(seed).spawn(n)[trial]``."""
    return np.random.SeedSequence(seed, spawn_key=(trial,))


def check_noise_mode(mode: str) -> str:
    """``mode`` if it is one of ``NOISE_MODES`` whose library is installed, else a one-line ``ValueError``."""
    if mode not in NOISE_MODES:
        raise ValueError(f"unknown noise mode {mode!r}; allowed: {', '.join(NOISE_MODES)}")
    if mode == "secure" and importlib.util.find_spec("opendp") is None:
        raise ConfigError("noise", mode, "needs opendp, not installed: pip install 'dpstream[secure]'")
    return mode


@contextlib.contextmanager
def noise_mode(mode: str) -> Iterator[None]:
    """Make ``mode`` the default of every ``NoiseSource`` created inside the block."""
    token = _MODE.set(check_noise_mode(mode))
    try:
        yield
    finally:
        _MODE.reset(token)


@lru_cache(maxsize=64)
def _opendp_sampler(kind: str, scale: float, n: int):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n)
    if kind == "gaussian":
        return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale)
    return dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale)


class NoiseSource:
    """Privacy noise and auxiliary randomness from one seeded generator (see the module docstring for modes)."""

    def __init__(self, seed: SeedLike = None, mode: str | None = None) -> None:
        """Build the generator from ``seed``; ``mode`` defaults to the current ``noise_mode``."""
        self.mode = check_noise_mode(mode) if mode is not None else _MODE.get()
        self.rng = np.random.default_rng(as_seed_sequence(seed))

    def _secure(self, kind: str, scale: float, size: int | tuple[int, ...]) -> np.ndarray:
        shape = (size,) if isinstance(size, int | np.integer) else tuple(size)
        n = int(np.prod(shape))
        if n == 0 or scale == 0:
            return np.zeros(shape)
        draws = _opendp_sampler(kind, float(scale), n)([0.0] * n)
        return np.asarray(draws, dtype=np.float64).reshape(shape)

    def gaussian(self, sigma: float, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` independent draws of N(0, sigma^2) as float64."""
        if self.mode == "secure":
            return self._secure("gaussian", sigma, size)
        return self.rng.normal(0.0, sigma, size)

    def laplace(self, scale: float, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` independent draws of Lap(scale) (density exp(-|x|/scale) / (2 scale)) as float64."""
        if self.mode == "secure":
            return self._secure("laplace", scale, size)
        return self.rng.laplace(0.0, scale, size)
