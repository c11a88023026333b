"""LazyHH with counters stepped once per B k~ items (``flush_every``, the watcher's line rate).

Its counts, the noise it adds, its thresholds and the watcher's configuration.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpstream.data import zipf_stream
from dpstream.hashing import bucket_many, canonical_keys
from dpstream.heavy_hitters import LazyHH
from dpstream.heavy_hitters.epochs import EpochWatcher, Ledger, WatchConfig
from dpstream.heavy_hitters.thresholds import noise_term
from dpstream.privacy.calibration import gauss_bm_levels, gauss_bm_sigma
from dpstream.privacy.discrete_gaussian import discrete_gaussian_sigma2
from dpstream.privacy.heavy_hitters import lazy_hh_depth

ARGS: dict[str, Any] = {"k": 4, "k_tilde": 64, "epsilon": 1.0, "delta": 1e-3, "beta": 5e-4,
                        "hash_family": "multiply_shift"}


def tracker(horizon: int, flush_every: int, node_noise: str = "derived", seed: int = 3) -> LazyHH:
    return LazyHH(horizon=horizon, seed=seed, node_noise=node_noise, flush_every=flush_every, **ARGS)


def candidate_columns(items: np.ndarray, params: np.ndarray, depth: int, width: int) -> np.ndarray:
    """Each item's column in each of the d rows: (n, d)."""
    return bucket_many(params[:depth], canonical_keys(items), width)[0].T


def reference_counts(items: np.ndarray, params: np.ndarray, depth: int, width: int,
                     flush_every: int) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 5 item by item with one push every B items: column (t // B) mod w after item t when (t + 1) % B == 0.

    Returns the counts pushed into the counters and the pending P, both (d, w).
    """
    cols = candidate_columns(items, params, depth, width)
    pushed = np.zeros((depth, width), dtype=np.int64)
    pending = np.zeros((depth, width), dtype=np.int64)
    rows = np.arange(depth)
    for t in range(items.size):
        pending[rows, cols[t]] += 1
        if (t + 1) % flush_every == 0:
            pos = (t // flush_every) % width
            pushed[:, pos] += pending[:, pos]
            pending[:, pos] = 0
    return pushed, pending


@pytest.mark.parametrize("node_noise", ["derived", "discrete_secure_ahead"])
def test_flush_schedule_counts_are_alg5_with_a_push_every_b_items(node_noise: str) -> None:
    """Both paths' exact and pending counts are Alg. 5's, item by item, with one column pushed every B items.

    The compiled derived loop and the per-period discrete release; the sketch's clock counts push slots.
    """
    flush_every, width = 4, 64
    stream = zipf_stream(length=width * flush_every * 6, universe=2000, skew=1.1, seed=2)
    fast = tracker(stream.size, flush_every, node_noise)
    for part in np.split(stream, 2):
        fast.extend(part)
    state = fast.sketch._state
    pushed, pending = reference_counts(stream, fast.sketch._params, fast.depth, width, flush_every)
    np.testing.assert_array_equal(state.counters.state[0][0].reshape(fast.depth, width), pushed)
    np.testing.assert_array_equal(state.pending, pending)
    assert fast.t == stream.size and fast.sketch.t == stream.size // flush_every
    assert np.all(state.cell_steps() == 6)  # every cell pushed once a period
    assert fast.candidates.size <= fast.k_tilde


def test_flush_noise_is_calibrated_for_the_coarser_horizon() -> None:
    """Derived nodes at B = 16: the noise added at step s has variance popcount(s) sigma_B^2.

    sigma_B is GaussBM's for ceil(T / (B k~)) steps (6 levels here, 10 at B = 1) and Thm 2's m = 2d.

    The kernel's last release of every cell minus its exact count is the noise it added. Over the d w cells the
    sample variance has relative standard deviation sqrt(2 / n); the tolerance is 5 of them (0.17 here), so noise
    calibrated for B = 1's horizon (variance x 10/6) fails.
    """
    horizon, flush_every, steps = 64 * 16 * 32, 16, 7
    fast = tracker(horizon, flush_every)
    fast.extend(zipf_stream(length=64 * flush_every * steps, universe=800, skew=1.1, seed=1))
    cells = fast.sketch._state.counters
    assert cells.horizon == math.ceil(horizon / (64 * flush_every)) == 32 and cells.levels == gauss_bm_levels(32)
    assert fast._suffix is not None and fast._suffix.valid[0] == steps
    exact = cells.state[0][0].astype(np.float64)
    noise = fast._suffix.table - exact
    reference = cells.release(np.arange(cells.n), np.full(cells.n, steps)) - exact
    np.testing.assert_allclose(noise, reference, rtol=1e-12, atol=1e-9 * cells._noise_scale)
    sigma = gauss_bm_sigma(32, 1.0, 1e-3, 2 * fast.depth)
    expected = bin(steps).count("1") * sigma**2
    assert abs(noise.var() / expected - 1) < 5 * math.sqrt(2 / noise.size), (noise.var(), expected)
    assert fast.privacy is not None and fast.privacy.epsilon == 1.0


def test_flush_exact_discrete_noise_actually_added_is_the_formula(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact discrete nodes at B = 16: a refresh's table minus the exact counts has variance popcount(s) sigma^2.

    sigma^2 is the discrete Gaussian's for the squared sensitivity h m, h the levels of ceil(T / (B k~)) steps and
    m = 2d (tolerance as above; the discrete Gaussian's variance is at most sigma^2).
    """
    horizon, flush_every = 64 * 16 * 32, 16
    fast = tracker(horizon, flush_every, "discrete_secure_ahead")
    cells = fast.sketch._state.counters
    tables: list[tuple[int, np.ndarray]] = []
    release_all = cells.release_all

    def kept(steps: np.ndarray) -> np.ndarray:
        table = release_all(steps)
        tables.append((int(steps[0]), table - cells.state[0][0]))
        return table

    monkeypatch.setattr(cells, "release_all", kept)
    fast.extend(zipf_stream(length=64 * flush_every * 7, universe=800, skew=1.1, seed=1))
    assert [s for s, _ in tables] == list(range(1, 8))
    sigma2 = discrete_gaussian_sigma2(gauss_bm_levels(32) * 2 * fast.depth, 1.0, 1e-3)
    assert cells.sigma2 == sigma2
    for step, noise in tables[3:]:  # steps 4..7: 1, 2, 2, 3 nodes
        expected = bin(step).count("1") * float(sigma2)
        assert abs(noise.var() / expected - 1) < 5 * math.sqrt(2 / noise.size), (step, noise.var(), expected)


def test_lambda1_covers_a_lazy_delay_of_b_periods() -> None:
    """One item repeated: its estimate without noise lags its count by its largest pending cell, up to B k~ - B.

    Here that lag exceeds k~ (so Alg. 6's lambda1 = gamma + k~ would not cover it: a spurious underestimate the
    suppression proof does not allow), and lambda1 - gamma = B k~ covers it. gamma is the noise term at the
    counters' horizon ceil(T / (B k~)): below B = 1's.
    """
    flush_every, width = 8, 64
    horizon = width * flush_every * 8
    fast = tracker(horizon, flush_every)
    item = 12345
    fast.extend(np.full(width * flush_every * 2, item, dtype=np.int64))
    cols = candidate_columns(np.array([item], dtype=np.int64), fast.sketch._params, fast.depth, width)[0]
    pushed = fast.sketch._state.counters.state[0][0].reshape(fast.depth, width)[np.arange(fast.depth), cols]
    lag = fast.t - int(pushed.min())
    bounds = fast.thresholds(fast.t)
    assert bounds.lambda1 == fast.gamma + flush_every * width
    assert width < lag <= flush_every * width, (lag, bounds)
    depth = lazy_hh_depth(horizon, 5e-4)
    assert fast.gamma == noise_term(horizon, width, 1.0, 1e-3, depth, 5e-4, flush_every=flush_every)
    assert fast.gamma < noise_term(horizon, width, 1.0, 1e-3, depth, 5e-4)
    assert bounds.tau == max(fast.t / 4, fast.t / width + bounds.lambda1 + 2 * bounds.lambda2) + 1


def test_flush_every_refuses_what_it_cannot_run() -> None:
    with pytest.raises(ValueError, match="flush_every=2 > 1 needs"):
        LazyHH(horizon=4096, flush_every=2, node_noise="stored", **ARGS)
    with pytest.raises(ValueError, match="flush_every must be an integer >= 1"):
        LazyHH(horizon=4096, flush_every=0, **ARGS)
    fast = tracker(4096, 2)
    with pytest.raises(ValueError, match="whole periods of k_tilde x flush_every = 128"):
        fast.extend(np.arange(64))
    with pytest.raises(ValueError, match="not saved"):
        fast.to_bytes()


def test_watch_line_and_ledger_carry_flush_every(tmp_path: Path) -> None:
    """B is in the saved configuration and every line; a ledger written before the option reads as B = 1."""
    state = tmp_path / "s.json"
    config = WatchConfig(k=4, k_tilde=64, every=64 * 8 * 2, horizon=64 * 8 * 8, node_noise="derived", seed=1,
                         flush_every=8)
    lines: list[dict[str, Any]] = []
    EpochWatcher(config, state, lines.append).feed(zipf_sources(64 * 8 * 4))
    assert len(lines) == 2 and all(line["flush_every"] == 8 for line in lines)
    assert lines[0]["privacy"]["horizon_steps"] == 8 and lines[0]["privacy"]["flush_every"] == 8
    raw = json.loads(state.read_text())
    assert raw["config"]["flush_every"] == 8
    del raw["config"]["flush_every"]
    state.write_text(json.dumps(raw))
    assert Ledger.load(state, WatchConfig(**{**raw["config"], "flush_every": 1})).config.flush_every == 1
    with pytest.raises(ValueError, match=r"flush_every=8 \(the state's 1\) differ"):
        Ledger.load(state, config)
    with pytest.raises(ValueError, match=r"every=2048 \(the state's 1024\), flush_every=16 \(the state's 1\)"):
        Ledger.load(state, WatchConfig(**{**asdict(config), "every": 2048, "flush_every": 16}))
    with pytest.raises(ValueError, match="every must be a positive multiple of k_tilde x flush_every = 512"):
        WatchConfig(k=4, k_tilde=64, every=64 * 4, horizon=64 * 64, flush_every=8)
    with pytest.raises(ValueError, match="flush_every must be a positive integer"):
        WatchConfig(k=4, k_tilde=64, every=64 * 4, horizon=64 * 64, flush_every=0)


def zipf_sources(n: int) -> np.ndarray:
    return zipf_stream(length=n, universe=500, skew=1.2, seed=4).astype(np.int64)


def test_one_replaced_item_moves_at_most_2d_pushes_by_one() -> None:
    """Sensitivity of the flush schedule on adversarial neighbours (Thm 2's m = 2d at B > 1).

    Every position of three periods (B = 4) replaced by an item whose columns differ from the original's in every
    row: the counters' push streams (the exact counts pushed in each period) differ in at most 2d cells, by at most 1,
    at one step each; the bound is reached, so the probe is not vacuous.
    """
    flush_every, width, periods = 4, 64, 3
    stream = zipf_stream(length=width * flush_every * periods, universe=300, skew=1.1, seed=8).astype(np.int64)
    probe = tracker(stream.size, flush_every)
    params, depth = probe.sketch._params, probe.depth

    def pushes(items: np.ndarray) -> np.ndarray:
        fast = tracker(items.size, flush_every)
        exact = fast.sketch._state.counters.state[0][0]
        seen = [exact.copy()]
        for part in np.split(items, periods):
            fast.extend(part)
            seen.append(exact.copy())
        return np.diff(np.array(seen), axis=0)  # (steps, cells): what each push added

    base = pushes(stream)
    common = np.bincount(stream).argmax()
    replacement = next(y for y in range(10**6, 10**6 + 10**4)
                       if np.all(candidate_columns(np.array([y]), params, depth, width)[0]
                                 != candidate_columns(np.array([common]), params, depth, width)[0]))
    largest = 0
    for position in [*np.flatnonzero(stream == common)[::3], *range(1, stream.size, 11)]:
        neighbour = stream.copy()
        if neighbour[position] == replacement:
            continue
        neighbour[position] = replacement
        change = pushes(neighbour) - base
        assert np.abs(change).max() <= 1 and (np.abs(change).sum(axis=0) <= 1).all()
        assert np.count_nonzero(change) <= 2 * depth
        largest = max(largest, np.count_nonzero(change))
    assert largest == 2 * depth


def test_memory_bytes_counts_the_working_buffers() -> None:
    """At B > 1 with derived noise the line-rate node sums (levels x cells + cells + 1 float64) are memory it holds."""
    one, sixteen = tracker(1 << 16, 1), tracker(1 << 16, 16)
    cells = sixteen.sketch._state.counters
    sums = 8 * (cells.levels * cells.n + cells.n + 1)
    assert sixteen.memory_bytes - (one.memory_bytes - one.sketch.memory_bytes + sixteen.sketch.memory_bytes) == sums
