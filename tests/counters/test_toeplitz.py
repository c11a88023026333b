"""Claims about the square-root factorisation counters (``counters.toeplitz``).

The factorisations are checked against dense matrices built independently (numpy's inverse of C); the streaming
recursion against L z with the seed's own normals; the noise against the row norms. Statistical tolerance: a sample
variance of N independent normals has relative standard deviation sqrt(2/N); every check allows Z_1E6 of them
(two-sided p = 1e-6 per check), with fixed seeds. Halving the noise scale moves the ratio to 0.25, 75 deviations.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpstream import serial
from dpstream.counters import counter_class
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.toeplitz import banded_sqrt, decoder_coefficients, sqrt_coefficients, unit_variances
from dpstream.privacy.calibration import gaussian_sigma
from dpstream.sketches import LazyCMS

Z_1E6 = stats.norm.isf(0.5e-6)
NAMES = ["sqrt", "banded4", "banded16", "banded64"]


def dense(first_column: np.ndarray) -> np.ndarray:
    """The lower-triangular Toeplitz matrix with ``first_column``."""
    i, j = np.indices((first_column.size, first_column.size))
    return np.where(i >= j, first_column[np.maximum(i - j, 0)], 0.0)


def dense_encoder(bands: int, horizon: int) -> np.ndarray:
    """C: lower-triangular Toeplitz with the square root's first ``bands`` coefficients, dense."""
    c = np.zeros(horizon)
    k = min(bands, horizon)
    c[:k] = sqrt_coefficients(k)
    return dense(c)


def assert_variance_at_steps(bm: GaussBM, steps: tuple[int, ...], variances: np.ndarray) -> None:
    """At each of ``steps``, the stated variance is ``variances[s - 1]`` and the released one matches it.

    The released noise's sample variance over the ``bm.n`` independent counters may differ from it by at most
    Z_1E6 of its relative standard deviation sqrt(2 / n).
    """
    for s in range(1, max(steps) + 1):
        bm.update_all(np.zeros(bm.n, dtype=np.int64))
        if s in steps:
            want = float(variances[s - 1])
            assert bm.variance()[0] == pytest.approx(want, rel=1e-12)
            assert abs(bm.query_all().var() / want - 1) < Z_1E6 * math.sqrt(2 / bm.n)


def assert_derived_releases(bm: GaussBM, increments: np.ndarray, decoder: np.ndarray) -> None:
    """Each release of ``bm`` (derived noise) is the true count plus sigma (decoder z)_s, z the keyed normals."""
    from dpstream.counters.philox import node_normal
    from dpstream.counters.toeplitz_push import DERIVED_TAG

    horizon, n = increments.shape
    key = bm.counter._key
    z = np.array([[node_normal(key[0], key[1], np.uint64(u), DERIVED_TAG, np.uint64(j)) for j in range(n)]
                  for u in range(1, horizon + 1)])
    for s in range(1, horizon + 1):
        bm.update_all(increments[s - 1])
        want = increments[:s].sum(axis=0) + bm.sigma * decoder[s - 1, :s] @ z[:s]
        assert bm.query_all() == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_square_root_squares_to_the_all_ones_lower_triangle():
    root = dense_encoder(200, 200)
    assert np.allclose(root @ root, np.tril(np.ones((200, 200))), atol=1e-12)


@pytest.mark.parametrize("bands", [1, 4, 16, 300])
def test_decoder_is_the_all_ones_triangle_times_the_inverse_encoder(bands):
    horizon = 200
    decoder = np.tril(np.ones((horizon, horizon))) @ np.linalg.inv(dense_encoder(bands, horizon))
    assert np.allclose(decoder[:, 0], decoder_coefficients(bands, horizon), rtol=1e-9, atol=1e-12)
    assert np.allclose(unit_variances(bands, horizon), np.cumsum(decoder**2, axis=1)[np.arange(horizon), -1])


@pytest.mark.parametrize("name", NAMES)
def test_sensitivity_is_the_largest_column_norm_of_the_encoder(name):
    cls, horizon, m = counter_class(name), 100, 3
    columns = np.linalg.norm(dense_encoder(cls.bands, horizon), axis=0)
    assert cls.l2_sensitivity(horizon, m) == pytest.approx(math.sqrt(m) * columns.max(), rel=1e-12)
    assert columns.argmax() == 0


@pytest.mark.parametrize("name", ["sqrt", "banded4"])
def test_releases_equal_prefix_sums_plus_decoder_times_the_seed_normals(name):
    horizon, seed = 150, 11
    increments = np.random.default_rng(3).integers(-1, 3, horizon)
    bm = GaussBM(n=1, horizon=horizon, epsilon=1.0, delta=1e-3, seed=seed, counter=name)
    released = []
    for inc in increments:
        bm.update_all(np.array([inc]))
        released.append(bm.query_all()[0])
    z = np.random.default_rng(np.random.SeedSequence(seed)).normal(0.0, 1.0, horizon)
    decoder = np.tril(np.ones((horizon, horizon))) @ np.linalg.inv(dense_encoder(bm.counter.bands, horizon))
    assert np.array(released) == pytest.approx(np.cumsum(increments) + bm.sigma * decoder @ z, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(("name", "noise"), [*((n, "stored") for n in NAMES), ("sqrt", "derived"),
                                             ("banded16", "derived")])
def test_noise_variance_matches_the_row_norms_at_several_steps(name, noise):
    n, horizon, steps = 20000, 256, (1, 7, 64, 256)
    bm = GaussBM(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, m=2, seed=41, counter=name, node_noise=noise)
    cls = counter_class(name)
    sigma = gaussian_sigma(math.sqrt(2) * math.sqrt(float(np.sum(sqrt_coefficients(min(cls.bands, horizon)) ** 2))),
                           1.0, 1e-3, "classic")
    assert_variance_at_steps(bm, steps, sigma**2 * np.cumsum(decoder_coefficients(cls.bands, horizon) ** 2))


def test_square_root_variance_follows_its_asymptotic_expansion():
    # c_t^2 = 1 / (pi t) - 1 / (4 pi t^2) + O(t^-3) sums to
    # (ln n + Euler's gamma + 4 ln 2) / pi - 1 / (4 pi n) + O(n^-2): 1.066 + ln(n) / pi,
    # above Mathias' 1 + ln(n) / pi that the normalised square root improves on
    for horizon in (2**4, 2**10, 2**16, 2**20):
        expansion = (math.log(horizon) + np.euler_gamma + 4 * math.log(2)) / math.pi - 1 / (4 * math.pi * horizon)
        assert abs(unit_variances(2**62, horizon)[-1] - expansion) < 1 / horizon**2


def test_banded_variance_grows_linearly_at_the_rate_of_its_band_sum():
    bands, horizon = 16, 2**14
    d = decoder_coefficients(bands, horizon)
    assert d[-1] == pytest.approx(1 / float(np.sum(sqrt_coefficients(bands))), rel=1e-6)


def test_state_bytes_are_the_ring_and_the_total():
    assert counter_class("banded16").bytes_per_counter(1000, 4) == 4 + 8 * 16
    assert counter_class("sqrt").bytes_per_counter(1000, 4) == 4 + 8 * 1000
    bm = GaussBM(n=3, horizon=50, epsilon=1.0, delta=1e-3, counter="banded4")
    assert bm.counter.memory_bytes == 3 * (8 + 8 * 4)


def test_banded_factory_makes_one_class_per_band_count_and_refuses_bad_bands():
    assert banded_sqrt(16) is counter_class("banded16").cls
    # (no new b here: every concrete Serialisable in the process needs a serial round-trip case)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="bands="):
            banded_sqrt(bad)
    with pytest.raises(ValueError, match="allowed: stored, derived"):
        counter_class("sqrt", "discrete_secure")


@pytest.mark.parametrize("name", ["sqrt", "banded4"])
def test_lazy_cms_state_round_trips_and_continues_identically(name):
    kw = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 512, "seed": 5, "counter": name}
    items = np.random.default_rng(0).integers(0, 20, 512)
    sketch = LazyCMS(**kw)
    sketch.extend(items[:300])
    restored = LazyCMS.from_bytes(sketch.to_bytes())
    sketch.extend(items[300:])
    restored.extend(items[300:])
    assert np.array_equal(restored.query_many(np.arange(20)), sketch.query_many(np.arange(20)))


OFF_THE_BOARD: dict[tuple[str, str], str] = {}
"""Registered counters the full leaderboard (T up to 2^24) leaves out, each with its reason."""


@pytest.mark.parametrize("experiment", ["counters", "counters_empirical"])
def test_leaderboard_lists_every_registered_counter(experiment):
    from omegaconf import OmegaConf

    from dpstream.counters import COUNTERS
    from dpstream.registry import CONF_DIR

    spec = OmegaConf.load(CONF_DIR / "experiment" / f"{experiment}.yaml")
    listed = set(zip(spec.zip["mechanism.counter"], spec.zip["mechanism.node_noise"], strict=True))
    left_out = set(OFF_THE_BOARD) if experiment == "counters" else set()
    assert listed == set(COUNTERS) - left_out, f"add to experiments/{experiment}.yaml: {sorted(set(COUNTERS) - listed)}"



def test_leaderboard_lower_bound_is_an_eighth_of_the_tree_at_2_to_20():
    from dpstream.trials.counters import formula_cells

    cells = formula_cells(counter_class("sqrt"), 2**20, {"epsilon": 1.0, "delta": 1e-6})
    assert 0.12 < cells["lower_bound_mean_ratio"] < 0.13  # (0.701 + ln(2^20) / pi)^2 / (21 x mean popcount)
    assert cells["lower_bound_mean_ratio"] < cells["var_mean_ratio"] < 0.14  # the square root: about 1.08x the bound


@pytest.mark.parametrize("name", ["sqrt", "banded4"])
def test_lazy_hh_gamma_covers_its_counters_largest_variance(name):
    from dpstream.heavy_hitters import LazyHH
    from dpstream.heavy_hitters.thresholds import lazy_cms_noise_tail
    from dpstream.privacy.calibration import cell_neighbour_m

    kw = {"k": 4, "k_tilde": 16, "epsilon": 1.0, "delta": 1e-3, "beta": 1e-4, "horizon": 2**14}
    hh = LazyHH(**kw, seed=0, counter=name)
    steps, depth = 2**14 // 16, hh.depth
    cls = counter_class(name)
    sigma = gaussian_sigma(cls.l2_sensitivity(steps, cell_neighbour_m(False, depth)), 1.0, 1e-3, "classic")
    largest = sigma**2 * unit_variances(cls.bands, steps)[-1]  # the row norms grow with s
    tail = math.sqrt(largest * 2 * math.log(4 * steps * 16 * depth / 1e-4))
    assert lazy_cms_noise_tail(2**14, 16, 1.0, 1e-3, depth, 1e-4, counter=name) == pytest.approx(tail, rel=1e-12)
    assert hh.gamma >= tail
    assert hh.sketch.counter == name and LazyHH.from_bytes(hh.to_bytes()).sketch.counter == name
    if name == "banded4":  # 4 bands over 1024 steps: about 30x the tree's variance, so its tail sets gamma
        assert hh.gamma == pytest.approx(tail) and hh.gamma > LazyHH(**kw, seed=0).gamma


def test_derived_releases_are_the_decoder_times_the_keyed_normals():
    horizon, n = 40, 3
    bm = GaussBM(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=8, counter="banded16", node_noise="derived")
    increments = np.random.default_rng(2).integers(-1, 3, (horizon, n))
    decoder = np.tril(np.ones((horizon, horizon))) @ np.linalg.inv(dense_encoder(16, horizon))
    assert_derived_releases(bm, increments, decoder)
    assert bm.counter.memory_bytes == 8 * n + 16


def test_derived_state_round_trips_and_a_key_change_changes_every_release():
    kw = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 512, "counter": "sqrt",
          "node_noise": "derived"}
    items = np.random.default_rng(1).integers(0, 20, 512)
    sketch, other = LazyCMS(**kw, seed=5), LazyCMS(**kw, seed=6)
    sketch.extend(items[:300])
    other.extend(items[:300])
    restored = LazyCMS.from_bytes(sketch.to_bytes())
    assert np.array_equal(restored.query_many(np.arange(20)), sketch.query_many(np.arange(20)))
    assert np.all(other.query_many(np.arange(20)) != sketch.query_many(np.arange(20)))


@pytest.mark.parametrize("owner", ["counter", "GaussBM", "LazyCMS"])
@pytest.mark.parametrize("counter", ["sqrt", "binary", "blt"])
def test_a_stored_state_relabelled_derived_is_refused_by_its_arrays(owner, counter):
    # a state of stored noise whose header names derived noise holds the stored layout's arrays: it is refused for
    # them, by name, not sent to an older dpstream for a node transform it never had
    kw = {"epsilon": 1.0, "delta": 1e-3, "seed": 3}
    if owner == "LazyCMS":
        obj = LazyCMS(width=4, depth=2, horizon=64, counter=counter, node_noise="stored", **kw)
        obj.extend(np.arange(10))
    elif owner == "GaussBM":
        obj = GaussBM(n=3, horizon=64, counter=counter, node_noise="stored", **kw)
        obj.update_all(np.array([1, 0, 2]))
    else:
        obj = counter_class(counter, "stored")(n=3, horizon=64, **kw)
        obj.push(np.arange(3), np.ones(3, dtype=np.int64), np.array([1, 0, 2]))
    header, arrays = serial.unpack(obj.to_bytes())
    assert header["args"]["node_noise"] == "stored"
    edited = serial.pack(header["class"], {**header["args"], "node_noise": "derived"}, header["state"], arrays)
    with pytest.raises(serial.SerialError, match=r"state arrays do not match: missing \[[^]]*key'[^]]*\], "
                                                 r"unexpected \[.+\]") as refused:
        type(obj).from_bytes(edited)
    assert "node transform" not in str(refused.value)
