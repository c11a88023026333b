"""caida_like: a SYNTHETIC stand-in for the paper's CAIDA 2019 trace (Holland, Sec. 6.5).

The paper describes its trace only as about 26.6 M packets with about 312 k distinct source IPv4
addresses. This generator draws i.i.d. packets whose sources follow a Zipf law over ``n_sources``
random IPv4 addresses, Pr[rank r] proportional to r^-zipf_exponent (heavy-tailed, as source-IP
popularity is). ``zipf_exponent`` (default 1.0) is an ASSUMPTION, not from the paper; ``n_sources``
is calibrated so that the expected number of distinct sources in ``full_length`` packets is
``distinct_sources`` (the paper's two numbers). ``length`` < ``full_length`` gives a shorter trace
from the same source distribution. It is synthetic data and says so (``data.synthetic``); it has no
flow structure or burstiness, unlike a real trace.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dpstream.data.cache import cached_array, seed_token
from dpstream.noise import SeedLike
from dpstream.validation import check_positive_int

PAPER_PACKETS = 26_600_000
PAPER_DISTINCT_SOURCES = 312_000
_SAMPLE_CHUNK = 1 << 22


def _zipf_probabilities(n: int, exponent: float) -> np.ndarray:
    weights = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    return weights / weights.sum()


def expected_distinct(n_sources: int, exponent: float, length: int) -> float:
    """E[# distinct sources in ``length`` packets] = sum_r 1 - (1 - p_r)^length."""
    p = _zipf_probabilities(n_sources, exponent)
    return float(np.sum(-np.expm1(length * np.log1p(-p))))


def calibrate_sources(exponent: float, full_length: int, distinct_sources: int) -> int:
    """The smallest universe size whose expected distinct count reaches ``distinct_sources``.

    The count is over ``full_length`` packets; found by bisection (the expectation grows with the universe size).
    """
    if expected_distinct(16 * distinct_sources, exponent, full_length) < distinct_sources:
        raise ValueError(f"zipf_exponent={exponent} cannot produce {distinct_sources} distinct sources in "
                         f"{full_length} packets (too steep); lower it")
    lo, hi = distinct_sources, 16 * distinct_sources
    while hi - lo > max(1, distinct_sources // 10_000):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if expected_distinct(mid, exponent, full_length) < distinct_sources else (lo, mid)
    return hi


def synthetic_caida_like(length: int = PAPER_PACKETS, zipf_exponent: float = 1.0,
                      full_length: int = PAPER_PACKETS, distinct_sources: int = PAPER_DISTINCT_SOURCES,
                      trace_seed: int | None = 2019, seed: SeedLike = None,
                      cache_dir: str | Path | None = None) -> np.ndarray:
    """``length`` packets' IPv4 source addresses (uint32) of the synthetic caida_like trace.

    A fixed trace (seeded by ``trace_seed``), like the paper's single real trace: trials differ only
    in the mechanisms' randomness, and ``seed`` (the shared call of every stream source) is ignored.
    ``trace_seed=None``: the trace is drawn from ``seed``, so each trial has its own trace (the trace is then the
    unit of replication). Cached under ``cache_dir/caida_like/`` keyed by every parameter.
    """
    if trace_seed is None:
        if seed is None:
            raise ValueError("trace_seed=None draws the trace from the trial seed, but seed is None: pass a seed")
        sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        return _synthetic(length, zipf_exponent, full_length, distinct_sources, sequence, seed_token(sequence),
                          cache_dir)
    trace_seed = check_positive_int(trace_seed, "trace_seed", minimum=0, maximum=None)
    return _synthetic(length, zipf_exponent, full_length, distinct_sources, np.random.SeedSequence(trace_seed),
                      trace_seed, cache_dir)


def _synthetic(length: int, zipf_exponent: float, full_length: int, distinct_sources: int,
               sequence: np.random.SeedSequence, key: int | str, cache_dir: str | Path | None) -> np.ndarray:
    """The trace of ``synthetic_caida_like`` drawn from ``sequence``; ``key`` names it in the cache."""
    length = check_positive_int(length, "length")
    full_length = check_positive_int(full_length, "full_length")
    distinct_sources = check_positive_int(distinct_sources, "distinct_sources")
    if not (isinstance(zipf_exponent, int | float) and math.isfinite(zipf_exponent) and zipf_exponent > 0):
        raise ValueError(f"zipf_exponent must be a finite number > 0, got {zipf_exponent!r}")

    def build() -> np.ndarray:
        n = calibrate_sources(float(zipf_exponent), full_length, distinct_sources)
        rng = np.random.default_rng(sequence)
        addresses = np.empty(0, dtype=np.uint32)
        while addresses.size < n:  # n distinct random addresses (avoid 0.0.0.0), in random order
            draw = rng.integers(1, 2**32, size=n + n // 8, dtype=np.uint64).astype(np.uint32)
            _, first = np.unique(np.concatenate([addresses, draw]), return_index=True)
            addresses = np.concatenate([addresses, draw])[np.sort(first)]
        addresses = addresses[:n]
        cdf = np.cumsum(_zipf_probabilities(n, float(zipf_exponent)))
        out = np.empty(length, dtype=np.uint32)
        for start in range(0, length, _SAMPLE_CHUNK):
            u = rng.random(min(_SAMPLE_CHUNK, length - start))
            ranks = np.minimum(np.searchsorted(cdf, u, side="right"), n - 1)
            out[start:start + u.size] = addresses[ranks]
        return out

    params = {"length": length, "zipf_exponent": float(zipf_exponent), "full_length": full_length,
              "distinct_sources": distinct_sources, "trace_seed": key}
    return cached_array(cache_dir, "caida_like", params, build)


def plant_band(stream: np.ndarray, near_threshold: int, threshold_k: int, rng: np.random.Generator) -> np.ndarray:
    """``stream`` with exactly ``near_threshold`` sources whose count lies in [t/k, 1.5 t/k).

    t is the stream's length and k the heavy-hitter parameter ``threshold_k``: the band is where a threshold at t/k
    decides recall.

    Missing band sources are the largest sources below t/k, raised to a count drawn uniformly in the band with packets
    taken at random positions from sources below t/(2k); surplus band sources are lowered to 0.8 t/k, their removed
    packets becoming new single-packet sources. Positions stay random, so the stream stays exchangeable.
    """
    t = stream.size
    lo, hi = t / threshold_k, 1.5 * t / threshold_k
    out = stream.copy()
    values, inverse, counts = np.unique(out, return_inverse=True, return_counts=True)
    band = np.nonzero((counts >= lo) & (counts < hi))[0]
    fresh = iter(np.setdiff1d(rng.integers(1, 2**32, size=4 * t, dtype=np.uint64).astype(np.uint32), values))
    if band.size > near_threshold:
        for source in band[np.argsort(counts[band])][: band.size - near_threshold]:
            where = np.nonzero(inverse == source)[0]
            drop = rng.choice(where, size=where.size - int(0.8 * lo), replace=False)
            out[drop] = np.fromiter((next(fresh) for _ in range(drop.size)), dtype=np.uint32, count=drop.size)
    elif band.size < near_threshold:
        below = np.nonzero(counts < lo)[0]
        promote = below[np.argsort(counts[below])[::-1]][: near_threshold - band.size]
        donors = np.nonzero(np.isin(inverse, np.nonzero(counts < lo / 2)[0]) & ~np.isin(inverse, promote))[0]
        donors = rng.permutation(donors)
        used = 0
        for source in promote:
            extra = int(rng.integers(math.ceil(lo), math.ceil(hi))) - int(counts[source])
            if used + extra > donors.size:
                raise ValueError(f"near_threshold={near_threshold}: too few small sources in {t} packets to plant "
                                 "that many band sources; lengthen the stream or plant fewer")
            out[donors[used:used + extra]] = values[source]
            used += extra
    return out


def standin_profile(length: int = 1 << 21, zipf_exponent: float = 1.0, near_threshold: int | None = None,
                    threshold_k: int = 128, full_length: int = PAPER_PACKETS,
                    distinct_sources: int = PAPER_DISTINCT_SOURCES, seed: SeedLike = None,
                    cache_dir: str | Path | None = None) -> np.ndarray:
    """A profile of the synthetic stand-in for the sensitivity analysis of Figure 4 (``experiment=fig4_sensitivity``).

    The ``synthetic_caida_like`` trace drawn from the trial's ``seed`` (one trace per trial) with Zipf exponent
    ``zipf_exponent``, then, unless ``near_threshold`` is None, exactly ``near_threshold`` sources in [t/k, 1.5 t/k)
    (``plant_band``). An exponent too steep to give ``distinct_sources`` distinct sources in ``full_length`` packets
    gets the most distinct sources its calibration can reach (a universe 16 times their number), fewer than asked.
    """
    if seed is None:
        raise ValueError("standin_profile draws its trace from the trial seed, but seed is None: pass a seed")
    sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    target = distinct_sources
    while (reachable := expected_distinct(16 * target, float(zipf_exponent), full_length)) < target:
        target = int(reachable * 0.999)  # the fixed point of "as many distinct sources as the universe gives"
    trace = _synthetic(length, zipf_exponent, full_length, target, sequence, seed_token(sequence), cache_dir)
    if near_threshold is None:
        return trace
    near_threshold = check_positive_int(near_threshold, "near_threshold", minimum=0, maximum=None)
    threshold_k = check_positive_int(threshold_k, "threshold_k")
    return plant_band(trace, near_threshold, threshold_k, np.random.default_rng(sequence.spawn(1)[0]))
