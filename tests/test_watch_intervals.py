"""The intervals of ``dpstream watch``'s release lines cover the noiseless sketch's answer, selection included."""

from __future__ import annotations

import math

import numpy as np

from dpstream.hashing import canonical_keys
from dpstream.heavy_hitters import LazyHH
from dpstream.heavy_hitters.epochs import intervals

ARGS = {"k": 8, "k_tilde": 32, "epsilon": 4.0, "delta": 1e-3, "beta": 5e-4, "node_noise": "derived",
        "hash_family": "multiply_shift"}
HORIZON = 32 * 400
TRIALS = 300
CONFIDENCE = 0.9


def near_threshold_stream(tau: float, seed: int) -> np.ndarray:
    """Three items with round(tau) packets each (reported or not by their noise) among light ones, shuffled."""
    rng = np.random.default_rng(seed)
    heavy = np.repeat(np.arange(1, 4), round(tau))
    light = rng.integers(1000, 1 << 30, HORIZON - heavy.size)
    return rng.permutation(np.concatenate([heavy, light]))


def test_release_intervals_cover_the_items_the_threshold_selected() -> None:
    """In at least c of the trials every reported item's interval holds the sketch's answer without its noise.

    The reported items are those whose noisy estimate passed tau: three items sit at tau, so which are reported
    depends on their noise (the selection a per-item interval does not cover). The intervals are the release's
    (``epochs.intervals``: joint over the refresh's candidates). Rule fixed before the run: pass when the trials
    fully covered are at least c n - 3.1 sqrt(n c (1 - c)) (a one-sided binomial bound at p ~ 0.001).
    """
    covered, selected = 0, 0
    for seed in range(TRIALS):
        hh = LazyHH(horizon=HORIZON, seed=seed, **ARGS)
        hh.use_line_rate()
        hh.extend(near_threshold_stream(hh.thresholds(HORIZON).tau, seed))
        out = hh.estimate()
        assert out.time == HORIZON
        bounds = intervals(hh, out.items, CONFIDENCE)
        sketch = hh.sketch
        exact = sketch._state.counters.state[0][0].reshape(sketch.depth, sketch.width)
        noiseless = sketch._rows(canonical_keys(out.items), exact).min(axis=0)
        covered += bool(np.all((bounds[:, 0] <= noiseless) & (noiseless <= bounds[:, 1])))
        selected += 0 < np.isin(out.items, [1, 2, 3]).sum() < 3
    assert selected >= TRIALS // 4, selected  # the threshold did select among the three items
    low = CONFIDENCE * TRIALS - 3.1 * math.sqrt(TRIALS * CONFIDENCE * (1 - CONFIDENCE))
    assert covered >= low, (covered, low)
