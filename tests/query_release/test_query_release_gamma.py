"""Gamma_s projection (HRU Def 2.11): density s, weights <= 1, scale invariance, bad s."""

from __future__ import annotations

import numpy as np
import pytest

from dpstream.query_release.gamma import _log_scale_exact, gamma_projection, gamma_projection_sum


@pytest.mark.parametrize("spread", [0.01, 1.0, 10.0, 1000.0])
def test_gamma_sums_to_s_with_weights_at_most_one(spread: float) -> None:
    log_w = np.random.default_rng(0).normal(size=20_000) * spread
    p = gamma_projection(log_w, 500.0)
    assert p.sum() == pytest.approx(500.0, rel=1e-9)
    assert p.max() <= 1.0
    assert p.min() > 0.0 or spread > 100  # full support unless weights underflow


@pytest.mark.parametrize("spread", [0.5, 30.0])
def test_gamma_is_scale_invariant(spread: float) -> None:
    log_w = np.random.default_rng(1).normal(size=5_000) * spread
    np.testing.assert_allclose(gamma_projection(log_w, 100.0), gamma_projection(log_w + 123.4, 100.0), atol=1e-9)


def test_gamma_is_min_one_c_a_and_preserves_order() -> None:
    log_w = np.random.default_rng(2).normal(size=3_000) * 3
    p = gamma_projection(log_w, 200.0)
    uncapped = p < 1.0
    ratio = p[uncapped] / np.exp(log_w[uncapped])
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)  # one common scale c below the cap
    assert np.all(np.exp(log_w[~uncapped]) >= np.exp(log_w[uncapped]).max() * (1 - 1e-12))


@pytest.mark.parametrize("spread", [0.5, 5.0, 30.0, 100.0])
def test_bucket_solve_agrees_with_exact_sort(spread: float) -> None:
    log_w = np.random.default_rng(3).normal(size=40_000) * spread
    shifted = log_w - log_w.max()
    exact = np.exp(np.minimum(0.0, shifted + _log_scale_exact(shifted, 3000.0)))
    np.testing.assert_allclose(gamma_projection(log_w, 3000.0), exact, atol=1e-10)


def test_uniform_weights_stay_uniform() -> None:
    np.testing.assert_allclose(gamma_projection(np.zeros(10), 4.0), np.full(10, 0.4))


@pytest.mark.parametrize("s", [10, 11, 0, -1])
def test_rejects_s_not_below_number_of_actions(s: float) -> None:
    with pytest.raises(ValueError, match=r"s must satisfy 0 < s < N_Q = 10"):
        gamma_projection(np.zeros(10), s)


def test_writing_into_out_gives_the_same_projection_and_its_sum() -> None:
    log_w = np.random.default_rng(4).normal(size=7_000) * 4
    out = np.full(7_000, np.nan)
    projected, total = gamma_projection_sum(log_w, 600.0, out)
    assert projected is out
    np.testing.assert_array_equal(out, gamma_projection(log_w, 600.0))
    assert total == pytest.approx(600.0, rel=1e-9)
    assert total == float(np.cumsum(out)[-1])  # added in index order, as sample_index adds


@pytest.mark.parametrize("bad", ["alias", "shape", "dtype"])
def test_rejects_an_unusable_out(bad: str) -> None:
    log_w = np.zeros(10)
    out = {"alias": log_w, "shape": np.zeros(9), "dtype": np.zeros(10, dtype=np.float32)}[bad]
    with pytest.raises(ValueError, match=r"out must be a contiguous float64 array of shape \(10,\)"):
        gamma_projection(log_w, 4.0, out)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_rejects_log_weights_that_are_not_finite(bad: float) -> None:
    log_w = np.zeros(10)
    log_w[3] = bad
    with pytest.raises(ValueError, match="log_weights must be finite"):
        gamma_projection(log_w, 4.0)
