"""The shipped mechanisms, registered once.

``check_mechanism`` runs over each, and the other registries derive from here: the sensitivity probe's sparse-vector
cases, the noise-test index and the class list of ``tests/testing/test_mechanism_contract.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from scipy import sparse

from dpstream.audit import sensitivity_cases as cases
from dpstream.audit.sensitivity import REGISTRY
from dpstream.audit.sensitivity import register as register_case
from dpstream.counters import counter_class
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.registry import NOISE_TESTS
from dpstream.heavy_hitters import CMSHeap, LazyHH, PunctualHH
from dpstream.privacy.accounting import sparse_sigma
from dpstream.privacy.calibration import gauss_bm_sigma, gaussian_sigma
from dpstream.privacy.heavy_hitters import final_delta
from dpstream.privacy.svt import CONTINUOUS, DISCRETE_SECURE, calibrate_evolving
from dpstream.query_release import Conjunctions, LaplaceRelease, PrivateEquilibriumRelease, histogram, product_mixture
from dpstream.query_release.alg5 import AnalystPrivateMW, AnalystPrivateMWScaledUNCERTIFIED
from dpstream.query_release.game import AnalystEquilibriumRelease
from dpstream.query_release.iterative import IterativeConstruction, mwem, pmw
from dpstream.query_release.online import OnlineIC, online_pmw
from dpstream.query_release.updates import MultiplicativeWeights
from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS
from dpstream.svt import (
    AboveThreshold,
    MonitorCalibration,
    NumericSparse,
    Sparse,
    ThresholdMonitor,
    ThresholdMonitorEvolving,
    calibrate_monitor,
)
from dpstream.svt.shifting import HistogramEveryStep, ShiftingHeavyHitters, SparseThenHistogram
from dpstream.svt.sparse import GeneralisedSparse
from dpstream.testing.draws import gauss_bm_audit, gauss_bm_noise, sparse_noise, svt_audit, svt_draws
from dpstream.testing.spec import MechanismSpec, NoiseDraws, register

# ---- small inputs -------------------------------------------------------------------------------------------------

ANSWERS = np.linspace(0.0, 10.0, 40)  # around the threshold 5: outcomes and noise both vary with the seed
INTEGER_ANSWERS = np.rint(ANSWERS).astype(np.int64)  # the same, rounded: svt_noise="discrete_secure" takes integers
MONITOR_QUERIES = sparse.csr_matrix(np.ones((12, 1)))
WORK = Conjunctions(3)
TRUE = WORK.answers(histogram(product_mixture(200, 3, seed=0), 3))
STREAM = (np.random.default_rng(0).zipf(1.3, 512) % 64).astype(np.int64)
HOLDINGS = np.array([[0, 0, 5], [1, 1, 2], [3, 3, 3], [0, 6, 2], [4, 4, 7], [0, 1, 2]])  # no PRIVATE: sizes scale
SIZES = np.array([0.6, 0.4, 0.02])  # x the threshold: weights 1.0 (steps 0, 1, 4) and 1.02 (step 2)


def svt_output(mech: Any, answers: np.ndarray = ANSWERS) -> np.ndarray:
    """Outcomes and noise of 4 runs over ``answers``."""
    res = mech.run(answers, n_runs=4)
    return np.concatenate([res.outcomes.ravel(), *(v.ravel() for v in res.noise.values())])


def _monitor(mech: Any) -> np.ndarray:
    res = mech.run(MONITOR_QUERIES, np.array([5.0]), n_runs=3)
    return np.concatenate([res.outcomes.ravel(), res.noise["w"].ravel(), res.noise["v"].ravel()])


def _shifting(mech: Any) -> np.ndarray:
    level = mech.sparse_threshold if hasattr(mech, "sparse") else (mech.bounds if hasattr(mech, "bounds")
                                                                   else mech.core).threshold
    res = mech.run(HOLDINGS, level * SIZES, n_runs=50)  # weights around the (first) threshold
    return np.concatenate([res.reported.ravel(), res.zero_reports, res.private_reports])


def _release(mech: Any) -> np.ndarray:
    release = mech.run(TRUE)
    return np.concatenate([np.nan_to_num(release.answers, nan=-1.0),
                           *(np.ravel(v).astype(float) for v in release.trace.values())])


def _accounted(mech: Any) -> tuple[float, float, float | None]:
    release = mech.run(TRUE)
    return release.eps_data, release.delta_data, release.eps_analyst


def _tracker(mech: Any) -> np.ndarray:
    mech.extend(STREAM)
    return mech.sketch.query_many(np.arange(64))


def sketch_output(mech: Any) -> np.ndarray:
    """Point queries of keys 0..63 after ``STREAM``."""
    mech.extend(STREAM)
    return mech.query_many(np.arange(64))


def gauss_bm_output(mech: GaussBM) -> np.ndarray:
    """Releases after three all-ones updates."""
    for _ in range(3):
        mech.update_all(np.ones(mech.n, dtype=np.int64))
    return mech.query_all()


def _named(*names: str) -> tuple:
    return tuple(REGISTRY[n] for n in names)


# ---- sparse vector family: noise from sparse_sigma / calibrate_monitor, probe and audit derived from the spec ------

def _sparse_noise(mech: Any, config: dict[str, Any]) -> list[NoiseDraws]:
    sigma = sparse_sigma(config["epsilon"], config.get("c", 1), config.get("delta", 0.0))
    return sparse_noise(mech, sigma, 2.0 * sigma, formula="(sigma = sparse_sigma(eps, c, delta))",
                        svt_noise=config.get("svt_noise", CONTINUOUS))


def _numeric_noise(mech: Any, config: dict[str, Any]) -> list[NoiseDraws]:
    sigma = sparse_sigma(config["epsilon"] / 2.0, config["c"], config.get("delta", 0.0) / 2.0)
    return sparse_noise(mech, sigma, 2.0 * sigma, sigma, formula="(sigma = sparse_sigma(eps/2, c, delta/2))",
                        svt_noise=config.get("svt_noise", CONTINUOUS))


def _monitor_noise(mech: Any, config: dict[str, Any],
                   calibration: Callable[..., MonitorCalibration] = calibrate_monitor) -> list[NoiseDraws]:
    """The w and v noise against the scales of ``calibration`` (``calibrate_monitor``; ``calibrate_evolving``: TME)."""
    svt_noise = config.get("svt_noise", CONTINUOUS)
    cal = calibration(config["epsilon"], config["delta"], config["k"], svt_noise=svt_noise)
    drawn = mech.draw_noise(4000)
    return [svt_draws(f"{role} noise", drawn[role], scale, f"({calibration.__name__})", svt_noise)
            for role, scale in (("w", cal.w_scale), ("v", cal.v_scale))]


def svt_spec(name: str, factory: Any, config: dict[str, Any], noise: Any, claimed: float | None = None,
             svt_noise: str = CONTINUOUS, **fields: Any) -> MechanismSpec:
    """A sparse-vector mechanism over ``ANSWERS``.

    Its linear-query probe case is registered for the probe under ``name``; with ``claimed``, a search audit
    against that epsilon. With ``svt_noise="discrete_secure"`` (its input rules, ``svt.discrete``): named
    ``<name>_discrete_secure``, over ``INTEGER_ANSWERS``, probed with {0, 1} queries.
    """
    discrete = svt_noise == DISCRETE_SECURE
    if discrete:
        name, config = f"{name}_{svt_noise}", {**config, "svt_noise": svt_noise}
    answers = INTEGER_ANSWERS if discrete else ANSWERS

    def probe_case() -> cases.LinearQueryCase:
        queries = cases.svt_queries(np.random.default_rng(1), binary=discrete)
        return cases.LinearQueryCase(name, factory(**config, seed=0), queries)

    if name not in REGISTRY:
        register_case(name)(probe_case)
    audit = None if claimed is None else svt_audit(factory, config, answers, claimed)
    output = fields.pop("output", partial(svt_output, answers=answers))
    return MechanismSpec(name, factory, lambda: dict(config), output, noise=noise, sensitivity=(probe_case,),
                         audit=audit, **fields)


def svt_family(svt_noise: str) -> list[MechanismSpec]:
    """AboveThreshold, Sparse (pure and approximate), NumericSparse and ThresholdMonitor with ``svt_noise``.

    Search audits of the pure-epsilon ones (AboveThreshold, Sparse with delta = 0) against their epsilon.
    """
    spec = partial(svt_spec, svt_noise=svt_noise)
    return [
        spec("AboveThreshold", AboveThreshold, {"epsilon": 1.0, **THRESHOLD}, _sparse_noise, claimed=1.0),
        spec("Sparse", Sparse, {"epsilon": 1.0, **THRESHOLD, "c": 3}, _sparse_noise, claimed=1.0),
        spec("Sparse_approx", Sparse, {"epsilon": 1.0, **THRESHOLD, "c": 3, "delta": 1e-6}, _sparse_noise),
        spec("NumericSparse", NumericSparse, {"epsilon": 1.0, **THRESHOLD, "c": 3}, _numeric_noise),
        spec("ThresholdMonitor", ThresholdMonitor, {"epsilon": 1.0, "delta": 1e-6, **THRESHOLD, "k": 3},
             _monitor_noise, output=_monitor),
    ]


THRESHOLD = {"threshold": 5.0}  # an integer too (svt_noise="discrete_secure" takes an integral float)
SHIFT = {"m": 6, "domain_size": 1000, "beta": 0.05}
QR = {"epsilon": 1.0, "delta": 1e-6, "n": 200}
SKETCH = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 512}
QR_NOISE = "tests/query_release/test_query_release_mechanisms.py::"
PMF_TEST = "tests/secure/test_secure_noise.py::test_discrete_gaussian_matches_pmf"
STORED_TEST = "tests/counters/test_discrete_stored.py::test_release_covariance_across_times_matches_the_formula"
SMOOTH_TEST = "tests/counters/test_smooth.py::test_release_covariance_across_steps_is_the_factorisations"
LAPLACE_TEST = "tests/counters/test_laplace_exact.py::test_release_variance_matches_the_discrete_laplace_formula"
TREE_AUDIT: dict[str, Any] = {"horizon": 8, "epsilon": 1.0, "delta": 1e-3, "m": 1}
STEP_ONE = (np.arange(TREE_AUDIT["horizon"]) == 0).astype(np.int64)  # +1 at step 1: inside one node of every level


def discrete_bm_spec(counter: str, node_noise: str, noise_test: str, pure: bool = False) -> MechanismSpec:
    """GaussBM with exact discrete node noise: its sensitivity case and a search audit of one counter.

    The audit's neighbours: a counter's increments all 0 against +1 at step 1, claimed (1, 1e-3). ``pure``: the
    noise (discrete Laplace) states delta 0.
    """
    name = "_".join(["GaussBM", *([counter] if counter != "binary" else []), node_noise])
    config = {"n": 4000, "horizon": 16, "epsilon": 1.0, "delta": 1e-3, "m": 1, "counter": counter,
              "node_noise": node_noise}
    audit = gauss_bm_audit(GaussBM, {**TREE_AUDIT, "counter": counter, "node_noise": node_noise},
                           np.zeros_like(STEP_ONE), STEP_ONE, TREE_AUDIT["epsilon"], TREE_AUDIT["delta"])
    return MechanismSpec(name, GaussBM, lambda: dict(config), gauss_bm_output, noise_tests=(noise_test,),
                         sensitivity=_named(name), audit=audit,
                         expected_delta=(lambda c: 0.0) if pure else None)


def factorisation_bm_spec(counter: str) -> MechanismSpec:
    """GaussBM over a counter probed from its descriptor (``counters.registry``).

    Its first release's noise, N(0, sigma^2 ||row 1 of B||^2) with sigma from the counter's L2 sensitivity (for the
    square-root factorisations row 1 of A C^{-1} is e_1); its sensitivity case; a search audit of one counter.
    """
    name = f"GaussBM_{counter}"
    config = {"n": 4000, "horizon": 16, "epsilon": 1.0, "delta": 1e-3, "m": 1, "counter": counter}

    def noise(mech: GaussBM, c: dict[str, Any]) -> list[NoiseDraws]:
        cls = counter_class(counter)
        sigma = gaussian_sigma(cls.l2_sensitivity(c["horizon"], c["m"]), c["epsilon"], c["delta"], "classic")
        row = float(np.asarray(mech.counter.factorisation().variance(1, 1.0)).reshape(-1)[0])
        return gauss_bm_noise(mech, sigma * math.sqrt(row), "(sigma for sqrt(m) ||C e_1||)")

    audit = gauss_bm_audit(GaussBM, {**TREE_AUDIT, "counter": counter}, np.zeros_like(STEP_ONE), STEP_ONE,
                           TREE_AUDIT["epsilon"], TREE_AUDIT["delta"])
    return MechanismSpec(name, GaussBM, lambda: dict(config), gauss_bm_output, noise=noise,
                         noise_tests=(NOISE_TESTS[counter],), sensitivity=_named(name), audit=audit)


def discrete_sketch_spec(cls: type, **variant: str) -> MechanismSpec:
    """A sketch with exact discrete Gaussian cell noise: its sensitivity case; its noise is the counters'.

    Named as its mechanism config is (``lazycms_discrete_secure``, ``dpstream.descriptor``).
    """
    name = "_".join([cls.__name__.lower(), *variant.values()])
    test = PMF_TEST if variant["node_noise"] == "discrete_secure" else STORED_TEST
    return MechanismSpec(name, cls, lambda: {**SKETCH, **variant}, sketch_output, noise_tests=(test,),
                         sensitivity=_named(name),
                         notes={"audit": "audited through its cells' counters (the GaussBM discrete specs); the "
                                         "sketch's hashing is covered by the sensitivity probe"})
ALG5_NOISE = "tests/query_release/test_query_release_alg5.py::"

SPECS = [
    *svt_family(CONTINUOUS),
    *svt_family(DISCRETE_SECURE),
    # its probe: add/remove one record on {0, 1} queries, the neighbours calibrate_evolving's group of two is built on
    svt_spec("ThresholdMonitorEvolving", ThresholdMonitorEvolving, {"epsilon": 1.0, "delta": 1e-6, **THRESHOLD, "k": 3},
             partial(_monitor_noise, calibration=calibrate_evolving), svt_noise=DISCRETE_SECURE, output=_monitor),
    MechanismSpec("GeneralisedSparse", GeneralisedSparse,
                  lambda: {**THRESHOLD, "cutoff": 3, "threshold_scale": 1.0, "query_scale": 2.0}, svt_output, None),
    MechanismSpec("ThresholdMonitorEvolving", ThresholdMonitorEvolving,
                  lambda: {"epsilon": 1.0, "delta": 1e-6, **THRESHOLD, "k": 3}, _monitor,
                  noise_tests=("tests/svt/test_svt_mechanisms.py::test_monitor_noise_scales_are_10_delta_and_b",),
                  sensitivity=_named("ThresholdMonitorEvolving")),
    MechanismSpec("ShiftingHeavyHitters", ShiftingHeavyHitters,
                  lambda: {"epsilon": 4.0, "delta": 1e-6, "k_star": 2, **SHIFT}, _shifting,
                  noise_tests=("tests/svt/test_svt_heavy_hitters.py::test_tme_reports_at_the_rate_its_noise_implies",),
                  sensitivity=_named("ShiftingHeavyHitters")),
    MechanismSpec("HistogramEveryStep", HistogramEveryStep, lambda: {"epsilon": 4.0, "delta": 1e-6, **SHIFT},
                  _shifting,
                  noise_tests=("tests/svt/test_svt_heavy_hitters.py::test_histogram_baseline_noise_matches_its_scale",),
                  sensitivity=_named("HistogramEveryStep")),
    # its two parts: a Sparse (sigma checked there) and the same Laplace histogram core as HistogramEveryStep
    MechanismSpec("SparseThenHistogram", SparseThenHistogram,
                  lambda: {"epsilon": 4.0, "delta": 1e-6, "c": 3, **SHIFT}, _shifting,
                  noise_tests=("tests/svt/test_svt_heavy_hitters.py::"
                               "test_sparse_baseline_splits_the_budget_and_finds_heavy_steps",
                               "tests/svt/test_svt_heavy_hitters.py::test_histogram_baseline_noise_matches_its_scale"),
                  sensitivity=_named("SparseThenHistogram_sparse", "SparseThenHistogram_histogram")),
    MechanismSpec("LaplaceRelease", LaplaceRelease, lambda: dict(QR), _release, "accounted", accounted=_accounted,
                  noise_tests=(QR_NOISE + "test_laplace_release_noise_matches_calibrated_scale",),
                  sensitivity=_named("LaplaceRelease")),
    MechanismSpec("IterativeConstruction", IterativeConstruction,
                  lambda: {"update": MultiplicativeWeights(WORK, eta=0.05), **QR, "rounds": 5}, _release,
                  "accounted", accounted=_accounted,
                  noise_tests=(QR_NOISE + "test_ic_measurement_noise_matches_laplace_one_over_n_eps0",),
                  sensitivity=_named("PMW", "MWEM")),
    MechanismSpec("pmw", pmw, lambda: {"workload": WORK, **QR, "alpha": 0.3}, _release, "accounted",
                  accounted=_accounted, noise_tests=(QR_NOISE + "test_ic_measurement_noise_matches_laplace_one_over_"
                                                                "n_eps0",), sensitivity=_named("PMW")),
    MechanismSpec("mwem", mwem, lambda: {"workload": WORK, **QR, "rounds": 4}, _release, "accounted",
                  accounted=_accounted, noise_tests=(QR_NOISE + "test_ic_measurement_noise_matches_laplace_one_over_"
                                                                "n_eps0",), sensitivity=_named("MWEM")),
    MechanismSpec("OnlineIC", OnlineIC,
                  lambda: {"update": MultiplicativeWeights(WORK, eta=0.05), **QR, "alpha": 0.2}, _release,
                  "accounted", accounted=_accounted,
                  noise_tests=(QR_NOISE + "test_online_pmw_answer_noise_matches_numeric_sparse_sigma",),
                  sensitivity=_named("OnlinePMW")),
    MechanismSpec("online_pmw", online_pmw, lambda: {"workload": WORK, **QR, "alpha": 0.2}, _release, "accounted",
                  accounted=_accounted,
                  noise_tests=(QR_NOISE + "test_online_pmw_answer_noise_matches_numeric_sparse_sigma",),
                  sensitivity=_named("OnlinePMW")),
    MechanismSpec("PrivateEquilibriumRelease", PrivateEquilibriumRelease,
                  lambda: {"workload": WORK, "analysts": np.arange(27) % 3, **QR, "rounds": 5, "s": 10.0}, _release,
                  "accounted", accounted=_accounted,
                  noise_tests=(QR_NOISE + "test_hru_laplace_answers_match_calibrated_scale",),
                  sensitivity=_named("PrivateEquilibriumRelease_cleanup")),
    MechanismSpec("AnalystEquilibriumRelease", AnalystEquilibriumRelease,
                  lambda: {"workload": WORK, "analysts": np.arange(27) % 9, **QR, "rounds": 5, "s": 3.0, "eta": 0.2},
                  _release, "accounted", accounted=_accounted,
                  sensitivity=_named("AnalystEquilibriumRelease_cleanup"),
                  notes={"noise": "its clean-up Sparse and the flagged analysts' PMW noise are not drawn against "
                                  "their formula by any test yet (their scales come from hru_sparse_sigma and pmw)"}),
    MechanismSpec("AnalystPrivateMW", AnalystPrivateMW, lambda: {"workload": WORK, **QR}, _release, "accounted",
                  accounted=_accounted,
                  noise_tests=(ALG5_NOISE + "test_bad_rounds_add_exactly_the_calibrated_laplace_noise",
                               ALG5_NOISE + "test_epoch_length_is_s_plus_laplace_two_over_eps"),
                  sensitivity=_named("AnalystPrivateMW")),
    MechanismSpec("AnalystPrivateMWScaledUNCERTIFIED", AnalystPrivateMWScaledUNCERTIFIED,
                  lambda: {"workload": WORK, **QR, "c_s": 0.5, "c_n_hat": 32.0, "c_sigma": 1.3e-4, "c_tau": 5.2e-4},
                  _release, None),
    MechanismSpec("lazyhh", LazyHH, lambda: {"k": 2, "k_tilde": 8, "epsilon": 1.0, "delta": 1e-3, "beta": 1e-4,
                                             "horizon": 512}, _tracker,
                  expected_delta=lambda c: final_delta(c["epsilon"], c["delta"]),  # the tracker's overall delta~
                  noise_tests=("tests/heavy_hitters/test_heavy_hitters.py::test_lazy_cms_noise_matches_the_sigma_gamma_is_derived_"
                               "from",),
                  sensitivity=_named("lazyhh", "LazyHH_derived", "LazyHH_smooth_discrete_secure", "LazyHH_sqrt",
                                     "LazyHH_laplace_discrete_secure_stored")),
    MechanismSpec("punctual_hh", PunctualHH, lambda: {"k": 2, "universe_size": 64, "epsilon": 1.0, "delta": 1e-3,
                                                     "horizon": 512, "width": 8, "depth": 2}, _tracker,
                  noise_tests=("tests/sketches/test_sketches.py::test_cell_noise_variance_matches_popcount_sigma2",),
                  sensitivity=_named("punctual_hh")),
    MechanismSpec("cms_heap", CMSHeap, lambda: {"k": 2, "horizon": 512, "width": 8, "depth": 2}, _tracker, None),
    *(MechanismSpec(cls.__name__.lower(), cls, lambda: dict(SKETCH), sketch_output,
                    noise_tests=("tests/sketches/test_sketches.py::test_cell_noise_variance_matches_popcount_sigma2",
                                 "tests/sketches/test_sketches.py::test_query_row_noise_matches_its_variance"),
                    sensitivity=_named(*(n for n in REGISTRY if n.split("_")[0].lower() == cls.__name__.lower())))
      for cls in (LazyCMS, LazyCS, PunctualCMS, PunctualCS)),
    *(MechanismSpec(cls.__name__.lower(), cls, lambda: {"width": 8, "depth": 2, "horizon": 512}, sketch_output, None)
      for cls in (CMS, CS)),
    MechanismSpec("GaussBM", GaussBM, lambda: {"n": 4000, "horizon": 16, "epsilon": 1.0, "delta": 1e-3, "m": 1},
                  gauss_bm_output,
                  noise=lambda mech, c: gauss_bm_noise(mech, gauss_bm_sigma(c["horizon"], c["epsilon"], c["delta"],
                                                                            c["m"]), "(gauss_bm_sigma)"),
                  sensitivity=_named("GaussBM", "GaussBM_honaker", "GaussBM_blt", "GaussBM_beyond", "GaussBM_smooth",
                                     "GaussBM_smooth_derived", "GaussBM_laplace",
                                     "GaussBM_hybrid_derived", "GaussBM_nsqrt_derived")),
    *(factorisation_bm_spec(counter) for counter in cases.FACTORISATIONS),
    discrete_bm_spec("binary", "discrete_secure", PMF_TEST),
    discrete_bm_spec("binary", "discrete_secure_stored", STORED_TEST),
    discrete_bm_spec("honaker", "discrete_secure_stored", STORED_TEST),
    discrete_bm_spec("smooth", "discrete_secure", SMOOTH_TEST),
    discrete_bm_spec("laplace", "discrete_secure_stored", LAPLACE_TEST, pure=True),
    discrete_sketch_spec(LazyCMS, node_noise="discrete_secure"),
    discrete_sketch_spec(PunctualCS, node_noise="discrete_secure_stored"),
    discrete_sketch_spec(LazyCS, counter="honaker", node_noise="discrete_secure_stored"),
]
for _spec in SPECS:
    register(_spec)
