"""Claims about the counter with no horizon (``counters.unbounded``): its factorisation, sensitivity and noise.

The decoder is checked against numpy's dense inverse of C; the sensitivity against the telescoping sum and the column
norms over long horizons; the noise against the row norms. Statistical tolerance: a sample variance of N independent
normals has relative standard deviation sqrt(2/N); every check allows Z_1E6 of them (two-sided p = 1e-6 per check),
with fixed seeds. Halving the noise scale moves the ratio to 0.25, 75 deviations at N = 20000.
"""

import math

import numpy as np
import pytest
from test_toeplitz import assert_variance_at_steps, dense

from dpstream.counters import counter_class
from dpstream.counters.factorisation import (
    ALPHA,
    R0_SQUARED,
    perturbed_squares,
    series_inverse,
    unbounded_decoder,
    unbounded_encoder,
    unbounded_unit_variances,
)
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.toeplitz import unit_variances
from dpstream.privacy.calibration import gaussian_sigma
from dpstream.sketches import LazyCMS


def test_squares_are_the_differences_of_the_log_power():
    t = np.arange(2000, dtype=np.float64)
    f = np.log(t + math.e) ** (-2 * ALPHA)
    assert np.allclose(perturbed_squares(t[:-1]), f[:-1] - f[1:], rtol=1e-9, atol=0)
    big = np.array([2.0**40])  # no cancellation where the difference is 1e-14 of F
    want = 2 * ALPHA / (big * np.log(big) ** (1 + 2 * ALPHA))
    assert perturbed_squares(big) == pytest.approx(want, rel=1e-3)


def test_sensitivity_bounds_every_column_norm_and_the_norms_approach_it():
    cls, m = counter_class("unbounded"), 3
    bound = cls.l2_sensitivity(10, m)
    assert bound == cls.l2_sensitivity(2**40, m) == pytest.approx(math.sqrt(m / R0_SQUARED))
    for horizon in (1, 100, 2**16, 2**20):
        norm = math.sqrt(m) * float(np.linalg.norm(unbounded_encoder(horizon)))
        tail = (math.log(horizon + math.e) ** (-2 * ALPHA)) * m / R0_SQUARED  # m F(T) / r_0^2
        assert norm < bound and norm**2 == pytest.approx(bound**2 - tail, rel=1e-9)
    columns = np.linalg.norm(dense(unbounded_encoder(100)), axis=0)
    assert columns.argmax() == 0


def test_decoder_is_the_all_ones_triangle_times_the_inverse_encoder():
    horizon = 300
    decoder = np.tril(np.ones((horizon, horizon))) @ np.linalg.inv(dense(unbounded_encoder(horizon)))
    assert np.allclose(decoder[:, 0], unbounded_decoder(horizon), rtol=1e-9, atol=1e-12)
    assert np.allclose(unbounded_unit_variances(horizon), np.sum(decoder**2, axis=1))
    d = unbounded_decoder(2**16)
    # r is log-convex, so 1 / C(x) has non-positive coefficients after the first (Kaluza): d positive, decreasing
    assert d[0] == pytest.approx(1.0, abs=1e-12) and np.all(d > 0) and np.all(np.diff(d) < 1e-12)


@pytest.mark.parametrize("length", [1, 2, 5, 64, 100])
def test_series_inverse_is_the_inverse_triangular_toeplitz(length):
    jitter = np.random.default_rng(length).uniform(0, 0.1, length) / 4.0 ** np.arange(length)
    c = 2.0 / np.arange(1, length + 1) + jitter
    assert np.allclose(series_inverse(c, length), np.linalg.inv(dense(c))[:, 0], rtol=1e-9, atol=1e-13)


def test_released_values_do_not_depend_on_the_horizon():
    increments = np.random.default_rng(5).integers(-1, 3, (200, 4))
    runs = {}
    for horizon in (200, 3000):
        bm = GaussBM(n=4, horizon=horizon, epsilon=1.0, delta=1e-3, m=2, seed=9, counter="unbounded",
                     node_noise="derived")
        released = []
        for inc in increments:
            bm.update_all(inc)
            released.append(bm.query_all())
        runs[horizon] = (bm.sigma, np.array(released))
    assert runs[200][0] == runs[3000][0]
    assert np.allclose(runs[200][1], runs[3000][1], rtol=1e-12, atol=1e-9)


def test_releases_equal_prefix_sums_plus_decoder_times_the_seed_normals():
    horizon, seed = 150, 11
    increments = np.random.default_rng(3).integers(-1, 3, horizon)
    bm = GaussBM(n=1, horizon=horizon, epsilon=1.0, delta=1e-3, seed=seed, counter="unbounded")
    released = []
    for inc in increments:
        bm.update_all(np.array([inc]))
        released.append(bm.query_all()[0])
    z = np.random.default_rng(np.random.SeedSequence(seed)).normal(0.0, 1.0, horizon)
    decoder = np.tril(np.ones((horizon, horizon))) @ np.linalg.inv(dense(unbounded_encoder(horizon)))
    assert np.array(released) == pytest.approx(np.cumsum(increments) + bm.sigma * decoder @ z, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("noise", ["stored", "derived"])
def test_noise_variance_matches_the_row_norms_at_several_steps(noise):
    n, horizon, steps = 20000, 256, (1, 7, 64, 256)
    bm = GaussBM(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, m=2, seed=41, counter="unbounded", node_noise=noise)
    sigma = gaussian_sigma(math.sqrt(2 / R0_SQUARED), 1.0, 1e-3, "classic")
    assert_variance_at_steps(bm, steps, sigma**2 * np.cumsum(unbounded_decoder(horizon) ** 2))


def test_mean_variance_is_within_twice_the_square_roots_at_2_to_16():
    horizon = 2**16
    square_root = counter_class("sqrt").l2_sensitivity(horizon, 1) ** 2 * unit_variances(2**62, horizon).mean()
    mine = counter_class("unbounded").l2_sensitivity(horizon, 1) ** 2 * unbounded_unit_variances(horizon).mean()
    assert 1.6 < mine / square_root < 1.8  # the module docstring's "about 1.7x" at this horizon


def test_lazy_cms_state_round_trips_and_continues_identically():
    kw = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 512, "seed": 5, "counter": "unbounded"}
    items = np.random.default_rng(0).integers(0, 20, 512)
    for noise in ("stored", "derived"):
        sketch = LazyCMS(**kw, node_noise=noise)
        sketch.extend(items[:300])
        restored = LazyCMS.from_bytes(sketch.to_bytes())
        sketch.extend(items[300:])
        restored.extend(items[300:])
        assert np.array_equal(restored.query_many(np.arange(20)), sketch.query_many(np.arange(20)))


def test_probe_reaches_the_column_norm_at_the_horizon_below_the_unbounded_calibration():
    import dpstream.audit.sensitivity_cases  # noqa: F401  (registers the cases)
    from dpstream.audit.sensitivity import REGISTRY, probe

    result = probe(REGISTRY["GaussBM_unbounded"](), seed=0)  # GaussBM(horizon=100, m=3)
    assert not result.exceeds
    # sum_{t < T} r_t^2 = 1 - F(T): the calibration covers every horizon, so at T = 100 it has sqrt(1 - F(100)) slack
    assert result.worst == pytest.approx(result.assumed * math.sqrt(1 - math.log(100 + math.e) ** (-2 * ALPHA)),
                                         rel=1e-9)


def test_tables_are_cached_for_a_few_horizons_only():
    from dpstream.counters.root_rows import CACHED_HORIZONS

    for horizon in range(10, 10 + 3 * CACHED_HORIZONS):
        unbounded_unit_variances(horizon)
    for table in (unbounded_encoder, unbounded_decoder, unbounded_unit_variances):
        assert table.cache_info().currsize <= CACHED_HORIZONS
