"""The intervals of ``dpstream watch``'s release lines cover the noiseless sketch's answer, selection included."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstream.hashing import canonical_keys
from dpstream.heavy_hitters import LazyHH
from dpstream.heavy_hitters.epochs import intervals

ARGS = {"k": 8, "k_tilde": 32, "epsilon": 4.0, "delta": 1e-3, "beta": 5e-4, "node_noise": "derived",
        "hash_family": "multiply_shift"}
HORIZON = 32 * 400
TRIALS = 300
CONFIDENCE = 0.9


def near_threshold_stream(tau: float, seed: int, horizon: int = HORIZON, below: int = 0) -> np.ndarray:
    """Three items with round(tau) - below packets each (reported or not by their noise) among light ones, shuffled."""
    rng = np.random.default_rng(seed)
    heavy = np.repeat(np.arange(1, 4), round(tau) - below)
    light = rng.integers(1000, 1 << 30, horizon - heavy.size)
    return rng.permutation(np.concatenate([heavy, light]))


SHIPPED = pytest.param({"flush_every": 64, "node_noise": "discrete_secure"}, 2048 * 25, 100, 1000, 150,
                       id="B64-discrete_secure")
"""The watcher's counter clock B = 64 with exact discrete nodes (the default's noise, drawn in line; seeded): 25
periods of B k~ = 2048 packets. Its light packets lift a heavy item's noiseless Count-Min answer about 100 above its
count (seeds 0-2, before this arm's trials, which start at seed 1000), so the three items sit 100 below tau."""


@pytest.mark.long  # 5-10 s a case (issue 37: make test keeps one warm pipe test; the rest is long)
@pytest.mark.parametrize(("options", "horizon", "below", "first", "trials"),
                         [pytest.param({"flush_every": 1, "node_noise": "derived"}, HORIZON, 0, 0, TRIALS,
                                       id="B1-derived"), SHIPPED])
def test_release_intervals_cover_the_items_the_threshold_selected(options: dict, horizon: int, below: int, first: int,
                                                                  trials: int) -> None:
    """In at least c of the trials every reported item's interval holds the sketch's answer without its noise.

    The reported items are those whose noisy estimate passed tau: three items sit near tau, so which are reported
    depends on their noise (the selection a per-item interval does not cover). The intervals are the release's
    (``epochs.intervals``: joint over the refresh's candidates), under the normal approximation of the counters'
    noise, also for exact discrete nodes. Rule fixed before the run: pass when the trials fully covered are at least
    c n - 3.1 sqrt(n c (1 - c)) (a one-sided binomial bound at p ~ 0.001).
    """
    covered, selected = 0, 0
    for seed in range(first, first + trials):
        hh = LazyHH(horizon=horizon, seed=seed, **{**ARGS, **options})
        if options["flush_every"] == 1:
            hh.use_line_rate()
        hh.extend(near_threshold_stream(hh.thresholds(horizon).tau, seed, horizon, below))
        out = hh.estimate()
        assert out.time == horizon
        bounds = intervals(hh, out.items, CONFIDENCE)
        sketch = hh.sketch
        exact = sketch._state.counters.state[0][0].reshape(sketch.depth, sketch.width)
        noiseless = sketch._rows(canonical_keys(out.items), exact).min(axis=0)
        covered += bool(np.all((bounds[:, 0] <= noiseless) & (noiseless <= bounds[:, 1])))
        selected += 0 < np.isin(out.items, [1, 2, 3]).sum() < 3
    assert selected >= trials // 4, selected  # the threshold did select among the three items
    low = CONFIDENCE * trials - 3.1 * math.sqrt(trials * CONFIDENCE * (1 - CONFIDENCE))
    assert covered >= low, (covered, low)
