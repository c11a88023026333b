"""Claims about the normalised square root (``counters.normalised``): its factorisation, its constants and its noise.

The factors are checked against dense matrices built with numpy (S^2 = A, C = S D with unit columns, L = A C^{-1});
the releases against L z with the keyed normals; the noise against the row norms. Statistical tolerance: a sample
variance of N independent normals has relative standard deviation sqrt(2/N); every check allows Z_1E6 of them
(two-sided p = 1e-6 per check), with fixed seeds. Halving the noise scale moves the ratio to 0.25, 75 deviations.
"""

import math

import numpy as np
import pytest
from test_toeplitz import assert_derived_releases, assert_variance_at_steps, dense

from dpstream.counters import counter_class
from dpstream.counters.factorisation import (
    ROW_STEPS_LIMIT,
    NormalisedRoot,
    normalised_unit_variances,
)
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.root_rows import (
    ROW_TABLE_LIMIT,
    ROW_TILE,
    normalised_row,
    root_column_norms,
    root_inverse_coefficients,
)
from dpstream.counters.toeplitz import sqrt_coefficients, unit_variances
from dpstream.privacy.calibration import gaussian_sigma
from dpstream.sketches import LazyCMS


def factors(horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """(L, C) built densely: C = S with unit columns, L = A C^{-1}."""
    root = dense(sqrt_coefficients(horizon))
    encoder = root / np.linalg.norm(root, axis=0)
    return np.tril(np.ones((horizon, horizon))) @ np.linalg.inv(encoder), encoder


def test_factors_multiply_to_the_all_ones_triangle_with_unit_encoder_columns():
    horizon = 200
    decoder, encoder = factors(horizon)
    assert np.allclose(decoder @ encoder, np.tril(np.ones((horizon, horizon))), atol=1e-10)
    assert np.allclose(np.linalg.norm(encoder, axis=0), 1.0)
    assert np.allclose(root_column_norms(horizon), np.linalg.norm(dense(sqrt_coefficients(horizon)), axis=0))
    assert np.allclose(dense(root_inverse_coefficients(horizon)), np.linalg.inv(dense(sqrt_coefficients(horizon))))
    assert np.allclose(normalised_unit_variances(horizon), np.sum(decoder**2, axis=1), rtol=1e-10)
    assert counter_class("nsqrt", "derived").l2_sensitivity(horizon, 3) == pytest.approx(math.sqrt(3))


@pytest.mark.parametrize(("horizon", "gamma_2", "gamma_f"), [(2**8, 0.880, 0.792), (2**11, 0.872, 0.782)])
def test_factorisation_norms_fall_towards_the_stated_constants(horizon, gamma_2, gamma_f):
    # Henzinger, Kalinin, Upadhyay: gamma_2 <= 0.846 + ln(n)/pi + o(1), gamma_F <= 0.748 + ln(n)/pi + o(1); both
    # >= 0.701 + ln(n)/pi + o(1). The plain square root: (ln n + 0.577 + 4 ln 2)/pi = 1.066 + ln(n)/pi for gamma_2.
    unit = normalised_unit_variances(horizon)  # unit columns: gamma_2 = max row norm, gamma_F = root mean row norm^2
    log_term = math.log(horizon) / math.pi
    assert math.sqrt(unit.max()) - log_term == pytest.approx(gamma_2, abs=5e-4)
    assert math.sqrt(unit.mean()) - log_term == pytest.approx(gamma_f, abs=5e-4)
    assert 0.846 < gamma_2 < unit_variances(2**62, horizon)[-1] - log_term
    assert 0.748 < gamma_f


def test_releases_equal_prefix_sums_plus_the_decoder_times_the_keyed_normals():
    horizon, n = 40, 3
    bm = GaussBM(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=8, counter="nsqrt", node_noise="derived")
    assert_derived_releases(bm, np.random.default_rng(2).integers(-1, 3, (horizon, n)), factors(horizon)[0])
    assert bm.counter.memory_bytes == 8 * n + 16


def test_noise_variance_matches_the_row_norms_at_several_steps():
    n, horizon, steps = 20000, 256, (1, 7, 64, 256)
    bm = GaussBM(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, m=2, seed=41, counter="nsqrt", node_noise="derived")
    sigma = gaussian_sigma(math.sqrt(2), 1.0, 1e-3, "classic")
    assert_variance_at_steps(bm, steps, sigma**2 * normalised_unit_variances(horizon))


def test_row_norms_above_the_table_limit_are_the_table_rows():
    # above ROW_TABLE_LIMIT the row norms come from one FFT per step: they must be the recursion's rows
    horizon = ROW_TABLE_LIMIT + 1
    steps = np.array([0, 1, 2, 100, ROW_TABLE_LIMIT, ROW_TABLE_LIMIT + 1])
    table = np.concatenate(([0.0], normalised_unit_variances(horizon)))
    np.testing.assert_allclose(NormalisedRoot(horizon).row_norms_squared(steps), table[steps], rtol=1e-9, atol=0)


def test_every_row_of_the_tiled_recursion_is_its_fft_row():
    # two whole tiles and a part of one: the opening steps, the four-step passes and the steps left after them
    horizon = 2 * ROW_TILE + 7
    fft = [np.sum(normalised_row.__wrapped__(horizon, s) ** 2) for s in range(1, horizon + 1)]
    np.testing.assert_allclose(normalised_unit_variances(horizon), fft, rtol=1e-12, atol=0)


def test_every_step_of_a_long_horizon_is_refused_at_once():
    from dpstream.heavy_hitters import LazyHH

    with pytest.raises(ValueError, match=f"allowed: horizon <= ROW_TABLE_LIMIT = {ROW_TABLE_LIMIT}"):
        NormalisedRoot(2**28).row_norms_squared(np.arange(1, ROW_STEPS_LIMIT + 2))
    with pytest.raises(ValueError, match="make counters-nsqrt"):  # its threshold asks the max of 2^28 / 10 steps
        LazyHH(k=5, k_tilde=10, epsilon=1.0, delta=0.01, beta=0.005, horizon=2**28, seed=5, counter="nsqrt",
               node_noise="derived")


def test_only_derived_noise_is_admitted():
    with pytest.raises(ValueError, match="node_noise='stored' is not available with counter='nsqrt'; allowed: derived"):
        counter_class("nsqrt", "stored")


def test_lazy_cms_state_round_trips_and_continues_identically():
    kw = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 512, "counter": "nsqrt",
          "node_noise": "derived"}
    items = np.random.default_rng(1).integers(0, 20, 512)
    sketch = LazyCMS(**kw, seed=5)
    sketch.extend(items[:300])
    restored = LazyCMS.from_bytes(sketch.to_bytes())
    sketch.extend(items[300:])
    restored.extend(items[300:])
    assert np.array_equal(restored.query_many(np.arange(20)), sketch.query_many(np.arange(20)))
