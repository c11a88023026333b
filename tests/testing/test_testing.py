"""``dpstream.testing.check_mechanism`` can fail: deliberately broken variants of shipped mechanisms.

Each fails the check its breakage concerns, with a message naming what is wrong; the unbroken mechanism passes the
same check (so the failure is the breakage's). The discrete Laplace law of the noise check has its own tests.
"""

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from dpstream.audit.sensitivity import REGISTRY
from dpstream.sketches import LazyCMS, core
from dpstream.svt import AboveThreshold, Sparse
from dpstream.testing import MechanismCheckError, NoiseDraws, check_mechanism, noise_scale_error, registered
from dpstream.testing.check import discrete_laplace_moments


class QuietSparse(Sparse):
    """Sparse drawing its threshold and query noise at 0.7 of the scale it is calibrated for."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.threshold_scale *= 0.7
        self.query_scale *= 0.7


def test_noise_at_0_7_of_its_stated_scale_fails_naming_the_formula():
    sparse = registered()["Sparse"]
    check_mechanism(sparse, only=("noise",))
    quiet = replace(sparse, name="QuietSparse", factory=QuietSparse)
    # sigma = sparse_sigma(1, 3, 0) = 2c/eps = 6; 3999 draws: the ratio is 0.70 +- 0.02 (1 standard error 1/sqrt(n))
    with pytest.raises(MechanismCheckError, match=r"QuietSparse: noise: threshold noise Lap\(6\) \(sigma = "
                                                  r"sparse_sigma\(eps, c, delta\)\): drawn scale is 0\.[67]\d\d x the "
                                                  r"formula's 6 "):
        check_mechanism(quiet, only=("noise",))


def test_sensitivity_understated_on_a_hash_collision_fails_naming_the_colliding_keys(monkeypatch):
    lazy_cs = registered()["lazycs"]
    case = replace(lazy_cs, sensitivity=(REGISTRY["lazycs"],))
    check_mechanism(case, only=("sensitivity",))
    # Count Sketch cells calibrated with Count-Min's m = 2d: a key pair colliding with opposite signs moves one
    # cell by 2, squared L2 change 4 per row, so the worst change is sqrt(2) x the assumed one
    monkeypatch.setattr(core, "cell_neighbour_m", lambda signed, depth: 2 * depth)
    with pytest.raises(MechanismCheckError, match=r"lazycs: sensitivity: LazyCS: the neighbours 'keys \d+, \d+ "
                                                  r"\(opposite in 2/2 rows\) at t=\d+' move .*1\.414 x the"):
        check_mechanism(case, only=("sensitivity",))


class ForgetfulLazyCMS(LazyCMS):
    """LazyCMS whose ``from_bytes`` drops the ``calibration`` option (rebuilds with the default)."""

    @classmethod
    def _rebuild(cls, args):
        return super()._rebuild({**args, "calibration": "classic"})


def test_a_from_bytes_that_drops_an_option_fails_naming_it():
    analytic = replace(registered()["lazycms"], config=lambda: {**registered()["lazycms"].config(),
                                                                "calibration": "analytic"})
    check_mechanism(analytic, only=("serialisation",))
    forgetful = replace(analytic, name="ForgetfulLazyCMS", factory=ForgetfulLazyCMS)
    with pytest.raises(MechanismCheckError, match=r"ForgetfulLazyCMS: serialisation: ForgetfulLazyCMS\.from_bytes\("
                                                  r"to_bytes\(\)\) failed: .*calibration='analytic' read back as "
                                                  r"'classic'"):
        check_mechanism(forgetful, only=("serialisation",))


def test_noise_scale_error_accepts_the_right_scale_and_names_a_wrong_shape():
    rng = np.random.default_rng(0)
    assert noise_scale_error(NoiseDraws("Lap(2)", rng.laplace(0, 2.0, 4000), 2.0, "laplace")) is None
    assert noise_scale_error(NoiseDraws("N(0, 2^2)", rng.normal(0, 2.0, 4000), 2.0, "gaussian")) is None
    # a Gaussian with the Laplace's mean |x| (sigma = 2 sqrt(pi/2)): right scale estimate, wrong shape
    shape = noise_scale_error(NoiseDraws("Lap(2)", rng.normal(0, 2.0 * np.sqrt(np.pi / 2), 4000), 2.0, "laplace"))
    assert shape is not None and "Kolmogorov-Smirnov" in shape


@pytest.mark.parametrize("b", [0.3, 1.0, 2.5, 12.0])
def test_discrete_laplace_moments_are_scipys(b):
    law = stats.dlaplace(1.0 / b)  # pmf proportional to exp(-|y| / b) on the integers
    mean_abs, variance = discrete_laplace_moments(b)
    assert mean_abs == pytest.approx(law.expect(abs), rel=1e-9) and variance == pytest.approx(law.var(), rel=1e-9)


def test_noise_scale_error_on_a_discrete_law_names_scale_shape_and_non_integers():
    # 4000 draws, fixed seed: the right law passes; 0.7 of the scale fails on mean |y| (about 0.67 +- 0.016); a
    # rounded Gaussian with the law's mean |y| fails the chi-square (p about 1e-71); non-integers are refused
    rng, b = np.random.default_rng(0), 4.0
    assert noise_scale_error(NoiseDraws("DLap(4)", stats.dlaplace.rvs(1 / b, size=4000, random_state=rng), b,
                                        "discrete_laplace")) is None
    quiet = stats.dlaplace.rvs(1 / (0.7 * b), size=4000, random_state=rng)
    assert "drawn mean |y| is 0.6" in noise_scale_error(NoiseDraws("DLap(4)", quiet, b, "discrete_laplace"))
    gauss = np.round(rng.normal(0.0, discrete_laplace_moments(b)[0] * np.sqrt(np.pi / 2), 4000))
    assert "chi-square p = " in noise_scale_error(NoiseDraws("DLap(4)", gauss, b, "discrete_laplace"))
    assert "must be integers" in noise_scale_error(NoiseDraws("DLap(4)", rng.laplace(0, b, 4000), b,
                                                              "discrete_laplace"))


class ApproximateAboveThreshold(AboveThreshold):
    """AboveThreshold stating its (epsilon, 0) as "approximate"."""

    @property
    def privacy(self):
        return replace(super().privacy, notion="approximate")


def test_a_notion_that_does_not_fit_delta_fails_but_computational_fits_delta_0():
    check_mechanism(registered()["AboveThreshold_discrete_secure"], only=("privacy",))  # computational, delta = 0
    wrong = replace(registered()["AboveThreshold"], name="ApproximateAboveThreshold",
                    factory=ApproximateAboveThreshold)
    with pytest.raises(MechanismCheckError, match="notion 'approximate' does not fit delta = 0.0"):
        check_mechanism(wrong, only=("privacy",))


def test_unknown_check_names_are_an_error():
    with pytest.raises(ValueError, match=r"unknown check\(s\) \['nosie'\]; allowed: arguments, privacy, noise"):
        check_mechanism(registered()["Sparse"], only=("nosie",))
