"""Claims about the BLT factorisation.

Exact identities against dense matrices, the streaming recurrence, the optimised loss against the binary tree, and the
noise the recurrence adds against its variance formula.
"""

import numpy as np
import pytest
from numba import njit
from scipy import stats
from scipy.linalg import toeplitz
from scipy.signal import fftconvolve

from dpstream.counters.blt_params import (
    _closed_form_loss,
    _prefix_noise_coefs,
    blt_from_decays,
    blt_noise_stream,
    blt_sigma,
    blt_step,
    column_norm,
    inverse_toeplitz_coefs,
    mean_noise_variance,
    noise_variance,
    optimal_blt,
    state_bytes,
    toeplitz_coefs,
)
from dpstream.counters.gauss_bm import popcount
from dpstream.privacy.calibration import gauss_bm_levels

N = 64


def _random_params(seed: int, k: int = 4, n: int = N):
    """Arbitrary (not interlaced) distinct buf_decays in (0, 1): the identities must hold for every BLT."""
    rng = np.random.default_rng(seed)
    return blt_from_decays(rng.uniform(0.01, 0.95, k), rng.uniform(0.01, 0.95, k), n)


def _dense(params):
    c = toeplitz_coefs(params)
    return np.tril(toeplitz(c)), np.tril(np.ones((params.horizon, params.horizon)))


PARAMS = [_random_params(0), _random_params(1, k=3), _random_params(2, k=5), optimal_blt(N, 4)]


@pytest.mark.parametrize("params", PARAMS)
def test_factorisation_is_valid_b_times_c_is_prefix_matrix(params):
    c_mat, a_mat = _dense(params)
    b_mat = a_mat @ np.tril(toeplitz(inverse_toeplitz_coefs(params)))
    np.testing.assert_allclose(b_mat @ c_mat, a_mat, atol=1e-9)


@pytest.mark.parametrize("params", PARAMS)
def test_column_norm_is_dense_max_column_norm(params):
    c_mat, _ = _dense(params)
    assert column_norm(params) == pytest.approx(np.linalg.norm(c_mat, axis=0).max(), rel=1e-12)


@pytest.mark.parametrize("params", PARAMS)
def test_noise_variance_is_dense_squared_row_norms_of_a_c_inverse(params):
    c_mat, a_mat = _dense(params)
    rows = np.sum((a_mat @ np.linalg.inv(c_mat)) ** 2, axis=1)
    np.testing.assert_allclose(noise_variance(params), rows, rtol=1e-9)
    np.testing.assert_allclose(noise_variance(params, np.array([1, 7, N])), rows[[0, 6, N - 1]], rtol=1e-9)
    assert mean_noise_variance(params) == pytest.approx(rows.mean(), rel=1e-9)


@pytest.mark.parametrize("params", PARAMS)
def test_buffer_recurrence_equals_dense_a_c_inverse_z(params):
    c_mat, a_mat = _dense(params)
    z = np.random.default_rng(5).normal(size=N)
    np.testing.assert_allclose(blt_noise_stream(params, z), a_mat @ np.linalg.solve(c_mat, z), rtol=1e-9, atol=1e-9)


@njit
def _columns_kernel(state, theta, omega, js, z):
    """Counters ``js[i]`` in order take one noise step each on columns of a (k + 1, n) state array."""
    for i in range(js.shape[0]):
        blt_step(state[:, js[i]], theta, omega, z[i])


def test_blt_step_on_columns_of_a_counter_array_equals_the_stream():
    params, n, counters = optimal_blt(N, 3), N, 3
    z = np.random.default_rng(6).normal(size=(counters, n))
    state = np.zeros((params.buffers + 1, counters))
    js = np.tile(np.arange(counters), n)
    _columns_kernel(state, params.buf_decay, params.output_scale, js, z.T.ravel())
    expected = [blt_noise_stream(params, z[j])[-1] for j in range(counters)]
    np.testing.assert_allclose(state[-1], expected, rtol=1e-12)


@pytest.mark.parametrize("params", [_random_params(3, n=5000), optimal_blt(2**14, 4), optimal_blt(2**20, 5)])
def test_closed_form_loss_equals_direct_sums(params):
    direct = column_norm(params) ** 2 * mean_noise_variance(params)
    assert _closed_form_loss(params.distance, params.inv_distance, params.horizon) == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("horizon", [2**14, 2**20])
def test_optimal_blt_mean_variance_at_most_quarter_of_binary_tree(horizon):
    # Like with like, per unit calibration factor kappa = sqrt(m) sqrt(2 ln(1.25/delta)) / eps:
    # binary tree sigma^2 = h kappa^2 and Var(s) = popcount(s) sigma^2, so mean = kappa^2 h mean_s popcount(s);
    # BLT sigma^2 = column_norm^2 kappa^2 and Var(s) = noise_variance(s) sigma^2.
    params = optimal_blt(horizon, 4)
    binary = gauss_bm_levels(horizon) * popcount(np.arange(1, horizon + 1)).mean()
    blt = column_norm(params) ** 2 * mean_noise_variance(params)
    assert blt <= 0.25 * binary


def test_optimal_blt_is_interlaced_and_cached():
    params = optimal_blt(2**14, 4)
    assert optimal_blt(2**14, 4) is params
    assert np.all(params.output_scale > 0) and np.all(params.inv_output_scale < 0)
    assert np.all((params.inv_buf_decay > 0) & (params.inv_buf_decay < 1))
    assert state_bytes(params.buffers) == 40


def test_stream_noise_variance_matches_formula():
    # 4000 independent streams of z ~ N(0, 1): at each checked step, sum(noise^2) / Var ~ chi2(4000); two-sided
    # p = 1e-6 overall (Bonferroni over the 4 steps).
    params, runs, steps = optimal_blt(256, 3), 4000, np.array([1, 17, 100, 256])
    rng = np.random.default_rng(np.random.SeedSequence(11))
    noise = np.array([blt_noise_stream(params, rng.normal(size=256)) for _ in range(runs)])
    stat = np.sum(noise[:, steps - 1] ** 2, axis=0) / noise_variance(params, steps)
    p = 1e-6 / len(steps)
    assert np.all(stat > stats.chi2.ppf(p / 2, runs)) and np.all(stat < stats.chi2.isf(p / 2, runs))


def test_buffer_recurrence_is_stable_over_a_long_horizon():
    # 2^16 steps of Alg. 3 against the Toeplitz product (b_0..b_{n-1}) * z computed by FFT convolution.
    params = optimal_blt(2**16, 5)
    z = np.random.default_rng(8).normal(size=2**16)
    b = _prefix_noise_coefs(params, 2**16)
    np.testing.assert_allclose(blt_noise_stream(params, z), fftconvolve(b, z)[: z.size], rtol=1e-7, atol=1e-7)


def test_sigma_is_gaussian_calibration_of_sqrt_m_column_norm():
    params, eps, delta, m = optimal_blt(2**14, 4), 0.5, 1e-6, 6
    expected = np.sqrt(m) * column_norm(params) * np.sqrt(2 * np.log(1.25 / delta)) / eps
    assert blt_sigma(params, eps, delta, m) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="m must be"):
        blt_sigma(params, eps, delta, 0)


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="distance"):
        blt_from_decays([0.5, 1.2], [0.1, 0.2], 10)
    with pytest.raises(ValueError, match="distinct"):
        blt_from_decays([0.5, 0.5], [0.1, 0.2], 10)
    with pytest.raises(ValueError, match="steps"):
        noise_variance(_random_params(0), np.array([0]))
    with pytest.raises(ValueError, match="horizon"):
        blt_noise_stream(_random_params(0), np.zeros(N + 1))
    with pytest.raises(ValueError, match="buffers"):
        optimal_blt(100, 0)
