"""The atoms design, critical margins against real runs, and the svt trial functions called directly."""

import numpy as np
import pytest
import yaml
from conftest import CONF_DIR

from dpstream.harness.runner import make_row
from dpstream.svt import Sparse, ThresholdMonitor
from dpstream.svt.atoms import HEAVY, NEAR, atoms_design, monitor_critical_margin, sparse_critical_margin
from dpstream.trials import svt as trials


def seed():
    """A fresh trial seed (spawning children mutates a SeedSequence, as the harness expects)."""
    return np.random.SeedSequence(0, spawn_key=(0,))


def design(margin=1e5, order="random", k_star=3, c=60):
    return atoms_design(c, k_star, 1e6, margin, 40, 40, order, np.random.default_rng(5))


@pytest.mark.parametrize("order", ["random", "heavy_first", "heavy_last"])
def test_atoms_design_sets_c_and_k_star_independently(order):
    d = design(order=order)
    heavy = d.kind == HEAVY
    assert heavy.sum() == d.c == 60
    atoms_of_heavy = d.queries.matrix[heavy].indices
    assert (np.bincount(atoms_of_heavy) == d.k_star).all()  # every heavy record is in exactly k* heavy queries
    answers = d.queries.answers(d.counts)
    np.testing.assert_allclose(answers[heavy], 1e6 + 1e5)
    np.testing.assert_allclose(answers[d.kind == NEAR], 1e6 - 1e5)
    np.testing.assert_allclose(answers[~heavy & (d.kind != NEAR)], 0.0)
    # occurrence counts each atom's heavy queries in stream order
    for atom in range(3):
        rows = np.flatnonzero(heavy & (d.queries.matrix.indices[d.queries.matrix.indptr[:-1]] == atom))
        np.testing.assert_array_equal(d.occurrence[rows], [1, 2, 3])


def _all_correct(outcomes, d):
    return ((outcomes == 1) == (d.kind == HEAVY)).all()


@pytest.mark.parametrize("k", [3, 1])
def test_monitor_critical_margin_is_where_real_runs_start_to_succeed(k):
    # Run TM on designs at margins just above and below each run's critical margin with the same noise;
    # success is judged w.r.t. S_i (pruned heavy queries must be BOTTOM when k < k*).
    d0 = design()
    tm = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=d0.threshold, k=k, seed=1)
    noise = tm.draw_noise(d0.m, 30)
    crit = monitor_critical_margin(d0, noise["w"], noise["v"], tm.calibration.cap, k)
    assert np.isfinite(crit).all()
    for r in range(30):
        for factor, ok in ((1.001, True), (0.999, False)):
            d = design(margin=crit[r] * factor)
            res = tm.run(d.queries, d.counts, n_runs=1, noise={key: v[r : r + 1] for key, v in noise.items()})
            expect_top = res.values[0] >= d.threshold
            assert bool(((res.outcomes[0] == 1) == expect_top).all()) == ok
            if k < d.k_star and ok:
                assert res.outcomes[0][(d.kind == HEAVY) & (d.occurrence > k)].max() == 0


def test_sparse_critical_margin_is_where_real_runs_start_to_succeed():
    d0 = design()
    sv = Sparse(epsilon=1.0, threshold=d0.threshold, c=d0.c, delta=1e-6, seed=2)
    noise = sv.draw_noise(d0.m, 30)
    crit = sparse_critical_margin(d0, noise["threshold"], noise["query"], d0.c)
    for r in range(30):
        for factor, ok in ((1.001, True), (0.999, False)):
            d = design(margin=crit[r] * factor)
            res = sv.run(d.queries, d.counts, n_runs=1, noise={key: v[r : r + 1] for key, v in noise.items()})
            assert bool(_all_correct(res.outcomes[0], d)) == ok
    assert np.isinf(sparse_critical_margin(d0, noise["threshold"], noise["query"], d0.c - 1)).all()


def params(mechanism, **over):
    """Trial params of ``mechanism`` on the data it reads (``data_kinds``: svt_atoms, or none).

    An override goes to the data config when that has the key (the design: c, k_star, n_near, ...),
    else to the mechanism.
    """
    mech = yaml.safe_load((CONF_DIR / "mechanism" / f"{mechanism}.yaml").read_text())
    data = yaml.safe_load((CONF_DIR / "data" / f"{mech['data_kinds'][0]}.yaml").read_text())
    for key, value in over.items():
        (data if key in data else mech)[key] = value
    return {"epsilon": 1.0, "delta": 1e-6, "mechanism": mech, "data": data, "trial": 0, "seed": 0}


def test_theory_trial_reproduces_spec_crossover():
    row = trials.theory_trial(params("svt_theory", c=100), seed())
    assert row["crossover_c_kstar_1"] == pytest.approx(5.9e4, rel=0.05)
    assert row["alpha_tm_kstar_1"] == pytest.approx(5.8e5, rel=0.05)
    assert row["alpha_sparse"] == min(row["alpha_sparse_pure"], row["alpha_sparse_approx"])


def test_atoms_trial_monitor_finds_every_heavy_query_at_its_theoretical_margin():
    row = trials.atoms_trial(params("svt_tm", c=300, k_star=3, runs=40, n_near=50, n_far=50), seed())
    assert row["n_runs"] == 40 and row["c"] == 300 and row["k"] == 3
    assert row["recall"] == 1.0 and row["fp_rate"] == 0.0
    assert 0 < row["emp_alpha"] <= row["theory_alpha"]


def test_atoms_trial_is_reproducible():
    p = params("svt_sparse", c=100, runs=30, n_near=20, n_far=20)
    a, b = trials.atoms_trial(p, seed()), trials.atoms_trial(p, seed())
    a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_atoms_trial_above_threshold_halts_at_first_top():
    row = trials.atoms_trial(params("svt_above_threshold", c=100, runs=20, n_near=20, n_far=20), seed())
    assert row["recall"] == pytest.approx(1 / 100)
    assert row["processed"] < row["m"] and np.isnan(row["emp_alpha"])  # no margin succeeds


def test_audit_trial_reports_verdict():
    row = trials.audit_trial(params("svt_audit", case="broken_no_query_noise_swap", runs_factor=0.5), seed())
    assert row["verdict"] == "flagged" and row["as_expected"] and row["pair"] == "above_threshold_swap"
    assert row["n_runs"] + row["n_search"] == 20_000 and row["epsilon_lower_given"] > 1.0


@pytest.mark.parametrize("name", ["svt_tm", "svt_sparse"])
def test_atoms_trial_kappa_below_one_is_not_certified_and_shrinks_margin_and_theory(name):
    p = params(name, c=100, runs=30, n_near=20, n_far=20)
    full = trials.atoms_trial(p, seed())
    low = trials.atoms_trial({**p, "mechanism": {**p["mechanism"], "kappa": 0.1}}, seed())
    assert full["certified"] and full["kappa"] == 1.0
    assert low["kappa"] == 0.1 and low["certified"] is False
    assert make_row("k", p, low)["certified"] is False  # the runner keeps the trial's label
    for col in ("margin_eval", "theory_alpha"):
        assert low[col] == pytest.approx(0.1 * full[col], rel=1e-9)
    # same seeds, noise x 0.1: the critical margins (noise-only) scale exactly, so does their quantile
    assert low["emp_alpha"] == pytest.approx(0.1 * full["emp_alpha"], rel=1e-9)


def test_atoms_trial_rejects_kappa_outside_unit_interval():
    p = params("svt_tm", c=100, runs=5, n_near=20, n_far=20)
    with pytest.raises(ValueError, match=r"kappa must be in \(0, 1\].*got 2"):
        trials.atoms_trial({**p, "mechanism": {**p["mechanism"], "kappa": 2}}, seed())


def test_a_variant_without_its_own_bound_gets_nan_theory_alpha_never_its_base_class_bound():
    class Variant(Sparse):
        pass

    p = params("svt_sparse", c=100, runs=5, n_near=20, n_far=20)
    design = atoms_design(c=100, k_star=1, threshold=1.0, margin=0.5, n_near=20, n_far=20, order="random",
                          rng=np.random.default_rng(0))
    info = {"cutoff": 100, "composition": "pure"}
    assert trials._theory_alpha(Sparse, p, design, info) > 0  # Sparse's own bound
    with pytest.warns(UserWarning, match="theory_alpha of Variant is NaN: no accuracy bound is registered"):
        assert np.isnan(trials._theory_alpha(Variant, p, design, info))


def test_sparse_critical_margin_takes_one_threshold_per_run_or_one_per_top_and_names_any_other_shape():
    d = atoms_design(c=4, k_star=1, threshold=10.0, margin=2.0, n_near=5, n_far=5, order="random",
                     rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    once, query = rng.laplace(size=(7, 1)), rng.laplace(size=(7, d.m))
    # a threshold drawn once is the same as the same value redrawn at every TOP (integers of the design: exact)
    assert np.array_equal(sparse_critical_margin(d, once, query, 6), sparse_critical_margin(d, np.repeat(once, 6, 1),
                                                                                          query, 6))
    with pytest.raises(ValueError, match=r"thr must hold 1 threshold draw per run .* cutoff = 6 .*got 2"):
        sparse_critical_margin(d, np.repeat(once, 2, 1), query, 6)
