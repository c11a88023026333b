"""Exact node noise drawn one release ahead on a second thread (``secure.release.Prefetch``): the same values."""

from __future__ import annotations

import concurrent.futures
import threading

import numpy as np
import pytest
from test_secure_noise import _chi_square_p

from dpstream.counters import counter_class
from dpstream.data import zipf_stream
from dpstream.heavy_hitters import LazyHH
from dpstream.heavy_hitters.epochs import WatchConfig
from dpstream.secure import release
from dpstream.secure.release import Prefetch


@pytest.mark.parametrize("node_noise", ["discrete_secure", "discrete_secure_ahead"])
def test_prefetched_releases_equal_the_drawn_ones_at_predicted_and_other_steps(node_noise: str) -> None:
    """Whole-table releases with and without the prefetch, same key: equal at every step.

    Steps + 1 (predicted, the prefetch's values returned), then a repeat, a jump across blocks, a step back and
    per-cell steps (not predicted: drawn from the cache as the prefetch left it), then + 1 again.
    """
    cls = counter_class("binary", node_noise)
    plain, ahead = (cls(n=300, horizon=4096, epsilon=1.0, delta=1e-6, m=8, seed=11) for _ in range(2))
    ahead.prefetch_releases()
    mixed = np.arange(300, dtype=np.int64) % 7 + 40
    schedule = [np.full(300, s, dtype=np.int64) for s in (1, 2, 3, 4, 5, 5, 37, 12)] + [mixed, mixed + 1, mixed + 2]
    for steps in schedule:
        assert np.array_equal(ahead.release_all(steps), plain.release_all(steps))
    assert np.array_equal(ahead.release(np.arange(300), np.full(300, 9)), plain.release(np.arange(300),
                                                                                           np.full(300, 9)))


def test_prefetched_nodes_follow_the_exact_pmf_and_not_half_its_sigma() -> None:
    """A whole-table release drawn on the second thread: its noise at step 2 is one node a cell, N_Z(0, sigma^2).

    Step 1 is drawn in the caller, step 2 (predicted) on the thread; step 2 uses one node (level 1, index 1) per
    cell, so release minus count over 40,000 cells are 40,000 independent draws. Chi-square against the exact pmf
    exp(-x^2 / (2 sigma^2)) (normalised on the support): p > 1e-6 for a correct sampler; with sigma halved the same
    test gives p < 1e-6 (its power checked here on the same draws).
    """
    cls = counter_class("binary", "discrete_secure_ahead")
    cells = cls(n=40_000, horizon=64, epsilon=4.0, delta=1e-6, m=1, seed=7)
    cells.prefetch_releases()
    cells.release_all(np.full(40_000, 1))
    prefetch = cells._prefetch
    assert prefetch is not None and prefetch._future is not None  # step 2 is being drawn on the thread
    draws = cells.release_all(np.full(40_000, 2)).astype(np.int64)  # counts are 0: the release is the noise
    sigma2 = float(cells.sigma2)
    support = np.arange(-int(12 * sigma2 ** 0.5), int(12 * sigma2 ** 0.5) + 1)
    assert _chi_square_p(draws, -support.astype(float) ** 2 / (2 * sigma2), support) > 1e-6
    assert _chi_square_p(draws, -support.astype(float) ** 2 / (2 * sigma2 / 4), support) < 1e-6


@pytest.mark.parametrize(("flush_every", "piece"), [(1, 700), (16, 1024)])
def test_watcher_trackers_prefetch_exact_noise_and_report_as_without(flush_every: int, piece: int) -> None:
    """A deployable watcher's LazyHH prefetches; seeded, its reports equal a LazyHH's without the prefetch.

    B = 1 in pieces that cut periods; B = 16 (one whole-table release a period of 16 k~) a period at a time.
    """
    cfg = WatchConfig(k=4, k_tilde=64, epsilon=1.0, delta=1e-3, beta=5e-4, every=64 * 16, horizon=64 * 64, seed=3,
                      flush_every=flush_every)
    fast = cfg.lazy_hh(0)
    assert isinstance(fast.sketch._state.counters._prefetch, release.Prefetch)
    slow = LazyHH(k=4, k_tilde=64, epsilon=1.0, delta=1e-3, beta=5e-4, horizon=64 * 64,
                  seed=np.random.SeedSequence(3, spawn_key=(0,)), node_noise=cfg.node_noise,
                  hash_family=cfg.hash_family, flush_every=flush_every)
    assert slow.sketch._state.counters._prefetch is None
    items = zipf_stream(64 * 64, 500, 1.3, seed=0)
    for start in range(0, items.size, piece):
        fast.extend(items[start:start + piece])
        slow.extend(items[start:start + piece])
        assert fast.estimate().pairs() == slow.estimate().pairs()
        np.testing.assert_array_equal(fast.candidates, slow.candidates)  # the same estimates picked them


def test_prefetch_refuses_node_noise_it_cannot_draw_in_one_line() -> None:
    with pytest.raises(ValueError, match="prefetch_noise\\(\\) needs node_noise discrete_secure"):
        LazyHH(k=4, k_tilde=64, epsilon=1.0, delta=1e-3, beta=5e-4, horizon=4096, seed=1,
               node_noise="derived").prefetch_noise()


def test_an_interrupted_wait_keeps_the_running_prefetch_for_the_next_wait() -> None:
    started, go = threading.Event(), threading.Event()

    def draws() -> np.ndarray:
        started.set()
        go.wait(10)
        return np.arange(3)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        prefetch = Prefetch()
        future = prefetch._future = pool.submit(draws)
        started.wait(10)

        def interrupted(timeout: float | None = None) -> np.ndarray:
            raise KeyboardInterrupt  # Ctrl-C (or the watch's SIGTERM) while the release waits

        future.result = interrupted  # type: ignore[method-assign]
        with pytest.raises(KeyboardInterrupt):
            prefetch.wait()
        assert not future.done() and prefetch._future is future  # its thread still draws: the next wait waits
        del future.result
        go.set()
        assert np.array_equal(prefetch.wait(), np.arange(3))
        assert prefetch._future is None and prefetch.wait() is None
