"""The watcher's line-rate kernel (``heavy_hitters._line_rate.line_rate_run``): its noise and its states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstream.data import zipf_stream
from dpstream.hashing import bucket_many, canonical_keys, draw_hash_params
from dpstream.heavy_hitters import LazyHH
from dpstream.heavy_hitters._line_rate import count_period, estimates_of, refresh
from dpstream.heavy_hitters.epochs import EpochWatcher, WatchConfig
from dpstream.privacy.calibration import gauss_bm_sigma

ARGS = {"k": 4, "k_tilde": 64, "epsilon": 1.0, "delta": 1e-3, "beta": 5e-4, "node_noise": "derived",
        "hash_family": "multiply_shift"}


def trackers(horizon: int, seed: int, **change: float) -> tuple[LazyHH, LazyHH]:
    """The same LazyHH twice, the first on the line-rate kernel."""
    args = {**ARGS, **change}
    fast, slow = LazyHH(horizon=horizon, seed=seed, **args), LazyHH(horizon=horizon, seed=seed, **args)
    fast.use_line_rate()
    return fast, slow


def test_line_rate_noise_is_the_calibrated_sigma_on_every_node() -> None:
    """The noise the kernel adds at step s has variance popcount(s) sigma^2, sigma GaussBM's for Thm 2's m = 2d.

    The kernel's last release of every cell (``SuffixSums.table``) minus the exact counts is its noise. Over the d w
    cells (independent nodes) the sample variance of (released - exact) has relative standard deviation
    sqrt(2 / n); the tolerance is 5 of them, so a scale halved (variance / 4) or doubled fails. The same noise is
    ``BinaryTree(node_noise="derived").release``'s: the same nodes, up to the order of the float additions.
    """
    steps = 7  # three set bits: levels 0, 1 and 2 summed
    horizon = 64 * 512
    fast, _ = trackers(horizon, seed=3)
    fast.extend(zipf_stream(length=64 * steps, universe=500, skew=1.1, seed=1))
    cells = fast.sketch._state.counters
    assert fast._suffix is not None and fast._suffix.valid[0] == steps
    exact = cells.state[0][0].astype(np.float64)
    noise = fast._suffix.table - exact  # the kernel's last release of every cell
    reference = cells.release(np.arange(cells.n), np.full(cells.n, steps)) - exact
    np.testing.assert_allclose(noise, reference, rtol=1e-12, atol=1e-9 * cells._noise_scale)
    sigma = gauss_bm_sigma(math.ceil(horizon / 64), 1.0, 1e-3, 2 * fast.depth)
    expected = bin(steps).count("1") * sigma**2
    n = noise.size
    assert abs(noise.var() / expected - 1) < 5 * math.sqrt(2 / n), (noise.var(), expected, n)


def test_line_rate_counts_and_reports_as_the_node_cache_path() -> None:
    """Exact and pending counts equal the shared loop's; candidates and reports equal up to float rounding.

    Fed in uneven pieces (the kernel runs whole periods; the rest goes through the per-period path and back).
    """
    stream = zipf_stream(length=64 * 300 + 17, universe=3000, skew=1.1, seed=3)
    stream[::3] = 1  # a third of the stream: above tau = t / k + ... for k = 4
    fast, slow = trackers(stream.size, seed=11, epsilon=8.0)  # items near the threshold: reports move if estimates do
    for part in np.array_split(stream, 5):
        fast.extend(part)
        slow.extend(part)
        np.testing.assert_array_equal(fast.estimate().items, slow.estimate().items)
        np.testing.assert_allclose(fast.estimate().estimates, slow.estimate().estimates, rtol=1e-12)
    assert fast.estimate().items.size > 0
    assert fast._suffix is not None and fast._suffix.valid[0] == stream.size // 64
    for a, b in ((fast.sketch._state.counters.state[0], slow.sketch._state.counters.state[0]),
                 (fast.sketch._state.pending, slow.sketch._state.pending)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fast.candidates, slow.candidates)


def test_watcher_runs_derived_noise_on_the_line_rate_kernel() -> None:
    """A derived-noise watcher's epochs use the kernel; the deployable default keeps the shared path."""
    for noise, kernel in (("derived", True), ("discrete_secure_ahead", False)):
        config = WatchConfig(k=4, k_tilde=64, every=64 * 8, horizon=64 * 64, node_noise=noise, seed=1, flush_every=1)
        watcher = EpochWatcher(config, None, lambda line: None)
        assert (watcher.tracker._suffix is not None) == kernel


def reference_refresh(cand: np.ndarray, block: np.ndarray, params: np.ndarray, table: np.ndarray, tau: float,
                      capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alg. 6's output step read off its definition: every item of unique(C u block), all rows, one sort."""
    depth = params.shape[0]
    width = table.size // depth
    union = np.unique(np.concatenate([cand, block]))
    cols = bucket_many(params, canonical_keys(union), width)[0]
    est = table.reshape(depth, width)[np.arange(depth)[:, None], cols].min(axis=0)
    reported = est > tau
    kept = union
    if union.size > capacity:  # the capacity largest, ties at the cut by key
        kept = np.sort(union[np.lexsort((union, -est))[:capacity]])
    return kept, union[reported], est[reported]


@pytest.mark.parametrize("family", ["multiply_shift", "modp"])
def test_refresh_is_the_output_step_with_ties_and_early_drops(family: str) -> None:
    """``refresh`` equals the output step computed from its definition, on tables that force ties at the cut.

    Integer cell values from a small range make many estimates equal (ties at the cut decided by key), C at
    capacity makes the kernel drop new items early, and tau is put among the estimates so that some are reported.
    """
    rng = np.random.default_rng(5)
    depth, width, capacity = 9, 40, 40
    params = draw_hash_params(depth, np.random.SeedSequence(2), family)
    ties = 0
    for trial in range(40):
        table = rng.integers(0, 12 if trial % 2 else 10**6, depth * width).astype(np.float64)
        universe = rng.integers(-(1 << 62), 1 << 62, 400)
        cand = np.sort(rng.choice(universe, capacity if trial % 4 else 17, replace=False))
        block = rng.choice(universe, 300)
        want = reference_refresh(cand, block, params, table, 0.0, capacity)
        tau = float(np.quantile(want[2], 0.9)) if want[2].size else 0.0
        want = reference_refresh(cand, block, params, table, tau, capacity)
        got = refresh(cand, block, canonical_keys(block), params, table, tau, capacity)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
        union = np.unique(np.concatenate([cand, block]))
        est = estimates_of(canonical_keys(union), params, table, width)
        ties += union.size > capacity and np.sum(est == np.sort(est)[-capacity]) > 1
    assert ties > 5  # the key order at the cut was exercised


@pytest.mark.parametrize(("family", "depth", "width", "flush_every"),
                         [("multiply_shift", 7, 100, 5), ("modp", 6, 64, 3), ("multiply_shift", 5, 100, 1),
                          ("modp", 9, 30, 40)])
def test_count_period_is_alg5_for_any_shape(family: str, depth: int, width: int, flush_every: int) -> None:
    """``count_period``'s exact and pending counts equal Alg. 5 item by item (one push every B items).

    Shapes whose depth is not a multiple of the rows counted at once and whose period is not a multiple of the
    hashed chunk (a short last chunk), over two periods so that pending counts carry over.
    """
    params = draw_hash_params(depth, np.random.SeedSequence(4), family)
    period = width * flush_every
    items = zipf_stream(length=2 * period, universe=700, skew=1.1, seed=6).astype(np.int64)
    exact = np.zeros((1, depth * width), dtype=np.int32)
    pending = np.zeros((depth, width), dtype=np.int32)
    count_period(canonical_keys(items), params, 0, flush_every, exact, pending)
    count_period(canonical_keys(items), params, period, flush_every, exact, pending)
    cols = bucket_many(params, canonical_keys(items), width)[0]
    pushed = np.zeros((depth, width), dtype=np.int64)
    held = np.zeros((depth, width), dtype=np.int64)
    for t in range(items.size):
        held[np.arange(depth), cols[:, t]] += 1
        if (t + 1) % flush_every == 0:
            column = (t // flush_every) % width
            pushed[:, column] += held[:, column]
            held[:, column] = 0
    np.testing.assert_array_equal(exact[0].reshape(depth, width), pushed)
    np.testing.assert_array_equal(pending, held)
