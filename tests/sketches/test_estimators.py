"""Claims about the estimators over a key's rows (``sketches.estimators``) and the sketches' ``estimator`` option."""

import numpy as np
import pytest

from dpstream.sketches import CMS, LazyCMS, LazyCS, PunctualCMS
from dpstream.sketches.estimators import TRIM_SPREAD, trimmed_mean


def test_without_noise_it_is_alg4():
    rows = np.random.default_rng(0).integers(0, 50, (4, 300)).astype(float)
    zero = np.zeros_like(rows)
    np.testing.assert_array_equal(trimmed_mean(rows, zero, signed=False), rows.min(axis=0))
    np.testing.assert_array_equal(trimmed_mean(rows, zero, signed=True), np.median(rows, axis=0))


def test_cms_drops_a_row_standing_far_above_the_min_and_weights_the_rest_by_inverse_variance():
    rows = np.array([[100.0], [103.0], [100.0 + TRIM_SPREAD * np.sqrt(8.0) + 1e-6]])
    variances = np.array([[4.0], [4.0], [4.0]])
    assert trimmed_mean(rows, variances, signed=False)[0] == pytest.approx(101.5, rel=1e-12)
    variances = np.array([[1.0], [4.0], [4.0]])  # weights 1 and 1/4
    assert trimmed_mean(rows, variances, signed=False)[0] == pytest.approx((100 + 103 / 4) / 1.25, rel=1e-12)


def test_cs_drops_rows_far_from_the_median_on_either_side():
    rows = np.array([[50.0], [51.0], [52.0], [-40.0], [140.0]])
    assert trimmed_mean(rows, np.ones_like(rows), signed=True)[0] == pytest.approx(51.0, rel=1e-12)


def test_on_gaussian_rows_it_removes_the_mins_bias():
    noise = np.random.default_rng(1).standard_normal((3, 200_000))
    ones = np.ones_like(noise)
    # E min of 3 N(0, 1) = -0.846; the trimmed mean drops the top row only when the range exceeds 3 sqrt(2) (0.77% of
    # columns), a bias of -0.009 (2e6 columns, seed 9); standard error 1 / sqrt(600000) = 1.3e-3: 0.02 is the bias
    # plus 8 standard errors, and 40x below the min's bias
    assert abs(trimmed_mean(noise, ones, signed=False).mean()) < 0.02
    assert noise.min(axis=0).mean() == pytest.approx(-0.8463, abs=0.01)


@pytest.mark.parametrize(("cls", "extra"), [(LazyCMS, {}), (LazyCS, {}), (PunctualCMS, {"node_noise": "derived"}),
                                            (LazyCMS, {"counter": "blt", "node_noise": "derived"})])
def test_sketch_option_answers_the_trimmed_mean_of_its_released_rows(cls, extra):
    keys = np.random.default_rng(2).zipf(1.3, 4000) % 500
    kw = {"width": 32, "depth": 3, "epsilon": 0.5, "delta": 1e-3, "horizon": 4000, "seed": 4, **extra}
    trimmed, alg4 = cls(estimator="trimmed_mean", **kw), cls(**kw)
    trimmed.extend(keys)
    alg4.extend(keys)
    xs = np.arange(40)
    rows = trimmed.row_estimates_many(xs)
    np.testing.assert_array_equal(rows, alg4.row_estimates_many(xs))  # the same released cells
    want = trimmed_mean(rows, trimmed.variance_many(xs), cls._estimator.signed)
    np.testing.assert_array_equal(trimmed.query_many(xs), want)
    assert trimmed.query(7) == want[7]
    assert not np.array_equal(want, alg4.query_many(xs))


def test_non_private_sketch_with_the_option_is_exact_cms():
    keys = np.random.default_rng(3).zipf(1.3, 3000)
    a, b = CMS(width=20, depth=3, seed=0, estimator="trimmed_mean"), CMS(width=20, depth=3, seed=0)
    a.extend(keys)
    b.extend(keys)
    np.testing.assert_array_equal(a.query_many(np.arange(30)), b.query_many(np.arange(30)))


def test_unknown_estimator_is_named():
    with pytest.raises(ValueError, match="unknown estimator 'mean'; allowed: alg4, trimmed_mean"):
        LazyCMS(width=4, depth=2, epsilon=1.0, delta=1e-3, horizon=64, seed=0, estimator="mean")
