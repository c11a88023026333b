"""What the estimates' intervals cover, measured over seeded trials (``dpstream.intervals``).

Each trial is an independent mechanism (its own seed), so the number of trials whose interval covers is binomial;
every bound below is a binomial quantile at probability ``ALPHA`` (or 1 - ``ALPHA``), fixed before the trials ran.

- A ``GaussBM`` prefix sum: the interval covers the exact sum with probability c, exactly (counters independent).
- A sketch (min over rows for Count-Min, median for Count Sketch): the interval covers the sketch's noise-free answer
  (the same sketch with the noise off, ``_uncertified_noiseless``: same hashes) with probability at least c. It does
  not cover the true count under collisions: for Count-Min without lag (Punctual) the noise-free answer is >= the
  count, so the true count lies above the interval no more often than the noise alone puts it there (1 - c).
- Selection: per-item intervals of the items chosen for their large estimates undercover; intervals at confidence
  1 - (1 - c) / n over the n candidates cover all of them, and so any chosen ones, in at least a fraction c.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from dpstream.counters.gauss_bm import GaussBM
from dpstream.sketches import LazyCMS, LazyCS, PunctualCMS

ALPHA = 1e-4
"""Each check fails a correct implementation with probability at most ALPHA."""
CONFIDENCE = 0.9
TRIALS = 300


def at_least(trials: int, p: float) -> float:
    """The smallest count a Binomial(trials, p) falls below with probability <= ALPHA."""
    return float(binom.ppf(ALPHA, trials, p))


def at_most(trials: int, p: float) -> float:
    """The largest count a Binomial(trials, p) exceeds with probability <= ALPHA."""
    return float(binom.isf(ALPHA, trials, p))


@pytest.mark.parametrize("counter", ["binary", "honaker", "blt"])
def test_gauss_bm_interval_covers_the_exact_sum_at_its_confidence(counter: str) -> None:
    n, steps = 4000, 21  # popcount(21) = 3 nodes in every release of the binary tree
    bm = GaussBM(n=n, horizon=32, epsilon=1.0, delta=1e-6, counter=counter, seed=11)
    increments = np.random.default_rng(0).integers(0, 2, size=(steps, n))
    for row in increments:
        bm.update_all(row)
    exact = increments.sum(axis=0)
    interval = bm.query_interval_many(np.arange(n), CONFIDENCE)
    covered = int(np.sum((interval.lower <= exact) & (exact <= interval.upper)))
    assert at_least(n, CONFIDENCE) <= covered <= at_most(n, CONFIDENCE)  # exactly c: neither too wide nor too narrow


STREAM = (np.random.default_rng(1).zipf(1.2, 2000) % 300).astype(np.int64)
COUNTS = np.bincount(STREAM, minlength=300)
LIGHT = np.flatnonzero(COUNTS[20:] > 0) + 20  # items far below the heaviest: their cells are mostly collisions


def _trials(cls: type) -> dict[str, int]:
    """Per trial one light item (the trial's own sketch and hashes); the counts of each outcome over the trials."""
    tally = {"noise_free": 0, "count": 0, "count_above": 0, "chosen_all": 0}
    candidates = np.arange(1, 33)
    for trial in range(TRIALS):
        args = {"width": 8, "depth": 3, "epsilon": 4.0, "delta": 1e-6, "horizon": STREAM.size, "seed": trial}
        sketch, noise_free = cls(**args), cls._uncertified_noiseless(**args)
        sketch.extend(STREAM)
        noise_free.extend(STREAM)
        item = int(LIGHT[trial % LIGHT.size])
        estimate, lower, upper = sketch.query_interval(item, CONFIDENCE)
        tally["noise_free"] += lower <= noise_free.query(item) <= upper
        tally["count"] += lower <= COUNTS[item] <= upper
        tally["count_above"] += COUNTS[item] > upper
        # the top 4 of 32 candidates by estimate, under intervals at 1 - (1 - c) / 32 over all candidates
        wide = sketch.query_interval_many(candidates, 1 - (1 - CONFIDENCE) / candidates.size)
        top = np.argsort(-wide.estimate, kind="stable")[:4]
        truth = noise_free.query_many(candidates[top])
        tally["chosen_all"] += bool(np.all((wide.lower[top] <= truth) & (truth <= wide.upper[top])))
    return tally


@pytest.mark.parametrize("cls", [PunctualCMS, LazyCMS, LazyCS], ids=lambda c: c.__name__)
def test_sketch_interval_covers_the_noise_not_the_collisions(cls: type) -> None:
    tally = _trials(cls)
    assert tally["noise_free"] >= at_least(TRIALS, CONFIDENCE), tally  # min and median alike: at least c
    assert tally["chosen_all"] >= at_least(TRIALS, CONFIDENCE), tally  # chosen items, under the wide intervals
    assert tally["count"] <= at_least(TRIALS, CONFIDENCE), tally  # collisions dominate: the count is not covered
    if cls is PunctualCMS:  # Count-Min without lag: only the noise puts the count above the interval
        assert tally["count_above"] <= at_most(TRIALS, 1 - CONFIDENCE), tally


def test_per_item_intervals_undercover_the_items_chosen_for_their_estimates() -> None:
    n, chosen = 64, 4
    per_item = simultaneous = 0
    for trial in range(TRIALS):
        bm = GaussBM(n=n, horizon=16, epsilon=1.0, delta=1e-6, seed=trial)
        for _ in range(10):
            bm.update_all(np.ones(n, dtype=np.int64))  # every counter's exact sum is 10: ranks are the noise's
        narrow = bm.query_interval_many(np.arange(n), CONFIDENCE)
        top = np.argsort(-narrow.estimate, kind="stable")[:chosen]
        per_item += bool(np.all(narrow.upper[top] >= 10) and np.all(narrow.lower[top] <= 10))
        wide = bm.query_interval_many(top, 1 - (1 - CONFIDENCE) / n)
        simultaneous += bool(np.all((wide.lower <= 10) & (wide.upper >= 10)))
    assert per_item <= at_least(TRIALS, CONFIDENCE)  # about 0.95^64 = 4%: the winners' noise is large
    assert simultaneous >= at_least(TRIALS, CONFIDENCE)


LAPLACE_WIDTH, LAPLACE_STEPS = 4000, 19  # a 19-ary tree over 19 steps: every cell's release is ONE node


@pytest.mark.parametrize("confidence", [0.95, 0.999])
@pytest.mark.parametrize("node_noise", ["stored", "discrete_secure_stored"])
def test_laplace_tree_interval_covers_at_least_its_confidence(node_noise: str, confidence: float) -> None:
    """Laplace trees: each cell's noise is one (discrete) Laplace node, heavier-tailed than a normal of its variance.

    A normal quantile misses about 6% at c = 0.95 and 1% at c = 0.999. The cells of one sketch (depth 1) are
    independent counters, all at the same step, so every cell's interval has key 0's half-width and the number of
    cells whose noise it covers is binomial.
    """
    covered = cells = 0
    for seed in range(10):
        args = {"width": LAPLACE_WIDTH, "depth": 1, "epsilon": 1.0, "delta": 1e-6, "seed": seed,
                "horizon": LAPLACE_WIDTH * LAPLACE_STEPS, "counter": "laplace", "node_noise": node_noise}
        sketch, noise_free = LazyCMS(**args), LazyCMS._uncertified_noiseless(**args)
        stream = np.random.default_rng(seed).integers(0, 10**6, LAPLACE_WIDTH * LAPLACE_STEPS)
        sketch.extend(stream)
        noise_free.extend(stream)
        _, lower, upper = sketch.query_interval(0, confidence)
        noise = sketch._state.cells() - noise_free._state.cells()
        covered += int(np.sum(np.abs(noise) <= (upper - lower) / 2))
        cells += noise.size
    assert covered >= at_least(cells, confidence), (covered, cells)
