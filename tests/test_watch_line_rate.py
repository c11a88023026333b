"""The watcher's line-rate kernel (``heavy_hitters._line_rate.line_rate_run``): its noise and its states."""

from __future__ import annotations

import math

import numpy as np

from dpstream.data import zipf_stream
from dpstream.heavy_hitters import LazyHH
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
    ``DerivedBinary.release``'s: the same nodes, up to the order of the float additions.
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
