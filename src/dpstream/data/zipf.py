"""Zipf streams over a finite universe (Holland, Sec. 6: synthetic frequency-estimation data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpstream.data.cache import cached_array, seed_token
from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.validation import check_memory, check_positive_int


def zipf_stream(length: int = 2**20, universe: int = 1_000_000, skew: float = 1.3, seed: SeedLike = 0,
                cache_dir: str | Path | None = None) -> np.ndarray:
    """``length`` i.i.d. items with Pr[rank r] proportional to r^-skew, r = 1..universe.

    Item ids are a seeded random permutation of 0..universe-1, so the heaviest items are not
    0, 1, 2, .... Returns int64 ids. Cached under ``cache_dir/zipf/`` keyed by every parameter
    and the seed.
    """
    # peak memory of ``build``: 24 bytes an item (uniforms, ranks, ids) and 24 an id of the universe
    length = check_memory(check_positive_int(length, "length"), "length", 24, "stream items")
    universe = check_memory(check_positive_int(universe, "universe"), "universe", 24, "universe ids")
    if not (isinstance(skew, int | float) and skew > 0):
        raise ValueError(f"skew must be a number > 0, got {skew!r}")
    seq = as_seed_sequence(seed)

    def build() -> np.ndarray:
        rng = np.random.default_rng(seq)
        weights = np.arange(1, universe + 1, dtype=np.float64) ** -float(skew)
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        ranks = np.searchsorted(cdf, rng.random(length), side="right")
        np.minimum(ranks, universe - 1, out=ranks)
        ids = rng.permutation(universe).astype(np.int64)
        return ids[ranks]

    params = {"length": length, "universe": universe, "skew": float(skew), "seed": seed_token(seq)}
    return cached_array(cache_dir, "zipf", params, build)
