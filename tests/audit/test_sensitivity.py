"""The sensitivity probe: protected values move by at most the calibrated sensitivity.

Every private mechanism's protected values move by at most the sensitivity its calibration assumes, and the probe finds
the Count Sketch erratum (m = 2d) when it is put back.
"""

import math

import numpy as np
import pytest

import dpstream.testing.shipped  # noqa: F401  (registers the sparse-vector cases from the mechanism specs)
from dpstream.audit.sensitivity import REGISTRY, ProbeResult, Sensitivity, change, probe, register
from dpstream.audit.sensitivity_cases import (
    SketchCase,
    adversarial_key_pairs,
    cases,
    cell_increments,
    sketch_case,
    tree_positions,
)
from dpstream.counters.binary import released_nodes
from dpstream.counters.gauss_bm import GaussBM
from dpstream.hashing import bucket_many
from dpstream.privacy.calibration import analytic_gaussian_delta, cell_neighbour_m, gauss_bm_levels, gauss_bm_sigma
from dpstream.sketches import LazyCMS, LazyCS, PunctualCMS, PunctualCS, core

SHIPPED = {
    "GaussBM", "punctualcms", "punctualcs", "lazycms", "lazycs", "lazyhh", "punctual_hh", "AboveThreshold", "Sparse",
    "NumericSparse", "ThresholdMonitor", "ShiftingHeavyHitters", "HistogramEveryStep", "SparseThenHistogram_sparse",
    "SparseThenHistogram_histogram", "LaplaceRelease", "PMW", "MWEM", "OnlinePMW", "PrivateEquilibriumRelease_cleanup",
    *(f"{n}_discrete_secure" for n in ("AboveThreshold", "Sparse", "Sparse_approx", "NumericSparse", "ThresholdMonitor",
                                       "ThresholdMonitorEvolving")),
}


def test_registry_covers_every_shipped_private_mechanism():
    assert SHIPPED <= set(REGISTRY)


def test_every_private_sketch_class_is_registered():
    # a new private sketch (any SketchCore subclass with a private schedule) fails here until it is registered
    def subclasses(cls):
        return {cls} | {s for sub in cls.__subclasses__() for s in subclasses(sub)}

    # shipped classes only: the check suite's own tests define deliberately broken subclasses
    private = {c.__name__ for c in subclasses(core.SketchCore)
               if c.__module__.startswith("dpstream.") and getattr(c, "_schedule", None) and c._schedule.private}
    assert {"PunctualCMS", "PunctualCS", "LazyCMS", "LazyCS"} <= private  # the search finds the shipped ones
    assert {name.lower() for name in private} <= set(REGISTRY)  # registered under their config names


@pytest.mark.parametrize("name", sorted(cases()))
def test_probe_never_exceeds_the_calibrated_sensitivity(name):
    result = probe(cases()[name](), seed=0)
    assert not result.exceeds, f"{name}: {result}"
    if "unbounded" in name:  # calibrated for a stream of any length: its tightness at the horizon is test_unbounded's
        return
    # the adversarial pairs reach the assumption (every bound here is tight), so the probe is not vacuous
    assert result.worst == pytest.approx(result.assumed, rel=1e-9), f"{name}: {result}"


@pytest.mark.parametrize("cls", [PunctualCS, LazyCS])
def test_probe_finds_the_count_sketch_erratum_with_m_2d(cls, monkeypatch):
    # The paper's calibration (m = 2d for CS too) put back in the ONE place m comes from: the probe finds a pair
    # (keys colliding with opposite signs in every row, at t = 0) whose nodes move by sqrt(4 h d) > sqrt(2 h d).
    monkeypatch.setattr(core, "cell_neighbour_m", lambda signed, depth: 2 * depth)
    case = sketch_case(cls)
    depth, horizon = case.sketch.depth, case.sketch._state.cell_horizon()
    assert case.sketch._state.counters.m == 2 * depth
    result = probe(case, seed=0)
    h = gauss_bm_levels(horizon)
    assert result.exceeds
    assert result.assumed == pytest.approx(math.sqrt(2 * h * depth), rel=1e-12)
    assert result.worst == pytest.approx(math.sqrt(4 * h * depth), rel=1e-12)
    assert result.ratio == pytest.approx(math.sqrt(2), rel=1e-12)
    assert f"opposite in {depth}/{depth} rows" in result.worst_label and result.worst_label.endswith("t=0")


def test_probe_finds_an_undercounted_gauss_bm_m():
    # A GaussBM calibrated for m = 1 while its inputs are 3-neighbouring (the case's relation uses bm.m = 3,
    # the noise is set as if m = 1): the probe reports sqrt(3) times the assumption.
    case = REGISTRY["GaussBM"]()
    case.bm.sigma = gauss_bm_sigma(case.bm.horizon, case.bm.epsilon, case.bm.delta, 1)
    result = probe(case, seed=0)
    assert result.exceeds and result.ratio == pytest.approx(math.sqrt(3), rel=1e-12)


def test_exact_gaussian_curve_breaks_the_stated_delta_at_eps_2_with_m_2d():
    # The whole node vector gets i.i.d. N(0, sigma^2), so the privacy loss of the worst pair is that of a 1-D
    # Gaussian mechanism with Delta / sigma; h and d cancel. LazyCS at Fig. 3's 24 KB (d = 3, w = 55, T = 2^20):
    # cells see ceil(T / w) = 19066 steps; delta = 1e-3 as in Fig. 3.
    cell_horizon, d, delta = math.ceil(2**20 / 55), 3, 1e-3
    true_l2 = math.sqrt(4 * gauss_bm_levels(cell_horizon) * d)

    def exact_delta(eps: float, m: int) -> float:
        return analytic_gaussian_delta(eps, true_l2, gauss_bm_sigma(cell_horizon, eps, delta, m))

    assert 2.2e-3 < exact_delta(2.0, 2 * d) < 2.3e-3  # the paper's m = 2d: the stated delta = 1e-3 fails
    assert exact_delta(1.0, 2 * d) < delta  # at eps = 1 it still holds (the classical bound is loose)
    assert exact_delta(2.0, cell_neighbour_m(True, d)) < delta


def test_analytic_gaussian_delta_matches_its_limits():
    # sigma -> infinity: delta -> 0; eps = 0: delta = 2 Phi(Delta / (2 sigma)) - 1 (total variation)
    assert analytic_gaussian_delta(1.0, 1.0, 1e6) < 1e-12
    assert analytic_gaussian_delta(0.0, 1.0, 1.0) == pytest.approx(0.38292492254802624, rel=1e-12)
    with pytest.raises(ValueError, match="sigma > 0"):
        analytic_gaussian_delta(1.0, 1.0, 0.0)


@pytest.mark.parametrize("cls", [PunctualCMS, PunctualCS, LazyCMS, LazyCS])
def test_released_nodes_reproduce_the_noiseless_sketch(cls):
    # The probe's numpy node values against the sketch's own compiled kernels (noise off): after every chunk,
    # each cell's released value is the sum of its nodes over the dyadic decomposition of its step count, and the
    # exact partial sum the GaussBM holds at level l is the node that closed at the last level-l step.
    kw = {"width": 5, "depth": 3, "epsilon": 1.0, "delta": 1e-3, "horizon": 300, "seed": 4}
    twin = cls._uncertified_noiseless(**kw)
    stream = np.random.default_rng(5).integers(0, 60, 300)
    for stop in (1, 7, 64, 65, 128, 299, 300):
        twin.extend(stream[twin.t : stop])
        incs, steps = cell_increments(twin, stream[:stop].astype(np.uint64))
        nodes = released_nodes(incs, steps).reshape(incs.shape)
        bm = twin._state.counters
        assert np.array_equal(steps, bm.steps)
        for cell in range(incs.shape[0]):
            s, total = int(steps[cell]), 0
            while s:
                level = (s & -s).bit_length() - 1
                assert bm._exact[level, cell] == nodes[cell, s - 1]
                total += nodes[cell, s - 1]
                s -= s & -s
            assert total == bm.release_all(steps)[cell]


def test_adversarial_pairs_collide_as_labelled():
    sketch = LazyCS(width=4, depth=2, epsilon=1.0, delta=1e-3, horizon=64, seed=3)
    pairs = {label.split(" in ")[0]: (x, y) for label, x, y in adversarial_key_pairs(sketch)}
    cols, signs = bucket_many(sketch._params, np.array(pairs["opposite"], dtype=np.uint64), 4)
    assert (cols[:, 0] == cols[:, 1]).all() and (signs[:, 0] == -signs[:, 1]).all()
    cols, _ = bucket_many(sketch._params, np.array(pairs["apart"], dtype=np.uint64), 4)
    assert (cols[:, 0] != cols[:, 1]).all()


def test_tree_positions_hold_first_last_and_powers_of_two():
    assert tree_positions(20).tolist() == [0, 1, 2, 3, 4, 7, 8, 15, 16, 19]


def test_change_is_the_worst_release_norm():
    first = np.zeros((2, 3))
    second = np.array([[1.0, -2.0, 2.0], [0.0, 0.0, 4.0]])
    assert change(first, second, "l1") == 5.0
    assert change(first, second, "l2") == 4.0
    assert change(first, second, "linf") == 4.0
    with pytest.raises(ValueError, match="one shape"):
        change(first, second[:1], "l1")


def test_probe_result_exceeds_only_beyond_round_off():
    assert not ProbeResult("x", "l2", 2.0, 2.0 * (1 + 1e-12), "", 1).exceeds
    assert ProbeResult("x", "l2", 2.0, 2.0 * (1 + 1e-6), "", 1).exceeds


def test_sensitivity_and_registry_reject_bad_input():
    with pytest.raises(ValueError, match="norm"):
        Sensitivity("l3", 1.0)
    with pytest.raises(ValueError, match="must be > 0"):
        Sensitivity("l2", 0.0)
    with pytest.raises(ValueError, match="already registered"):
        register("lazycs")(lambda: None)


def test_a_new_mechanism_is_probed_by_registering_a_case(monkeypatch):
    # A sketch registered under a new name is probed like the shipped ones (the shared check comes for free).
    sketch = LazyCMS(width=3, depth=2, epsilon=1.0, delta=1e-3, horizon=64, seed=1)
    monkeypatch.setitem(REGISTRY, "_test_only", lambda: SketchCase("t", sketch, 64))
    result = probe(REGISTRY["_test_only"]())
    assert not result.exceeds and result.pairs > 40


def test_gauss_bm_case_uses_the_mechanism_sigma():
    case = REGISTRY["GaussBM"]()
    assert isinstance(case.bm, GaussBM)
    assert case.assumed().value == pytest.approx(math.sqrt(gauss_bm_levels(case.bm.horizon) * case.bm.m), rel=1e-12)
