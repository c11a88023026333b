"""Sparse-vector claims: each rule is confirmed on a table where the claim holds and flips where it fails."""

import numpy as np
import pandas as pd
import pytest
from claim_checks import only, verdicts

from dpstream.claims.svt import (
    accuracy_claim,
    atoms_claims,
    hh_claims,
    kappa_claims,
    kcap_claims,
    kstar_claims,
    order_claims,
    theory_claims,
)


def atoms_row(name: str, emp: float, theory: float, **kw) -> dict:
    return {"mechanism.name": name, "emp_alpha": emp, "theory_alpha": theory, "n_runs": 500, "threshold": 1e9,
            "cutoff": np.nan, "k_star": 1, "mechanism.beta": 0.05, "recall": 1.0, "processed": 100.0, "m": 100.0,
            **kw}


# ---- accuracy (shared by svt_c, svt_kstar, svt_kcap, svt_order) -------------------------------------------------

def test_accuracy_flips_with_emp_over_theory_and_needs_runs_and_domain():
    ok = pd.DataFrame([atoms_row("svt_tm", 0.8, 1.0, c=10), atoms_row("svt_sparse", 0.3, 1.0, c=10, cutoff=10)])
    assert accuracy_claim(ok).verdict == "confirmed"
    bad = ok.assign(emp_alpha=[0.8, 1.5])
    assert accuracy_claim(bad).verdict == "not confirmed"
    assert accuracy_claim(ok.assign(emp_alpha=[0.8, np.nan])).verdict == "not confirmed"  # no margin passes
    assert accuracy_claim(ok.assign(emp_alpha=[0.8, 1.0])).verdict == "inconclusive"  # within the quantile error
    assert accuracy_claim(ok.assign(n_runs=20)).verdict == "inconclusive"  # smoke-sized runs
    assert accuracy_claim(ok.assign(threshold=0.5)).verdict == "n/a"  # theorem silent when t < alpha
    short = pd.DataFrame([atoms_row("svt_sparse", np.nan, 1.0, c=10, cutoff=5)])
    assert accuracy_claim(short).verdict == "n/a"  # cutoff < c: outside Sparse's domain


# ---- E0 ---------------------------------------------------------------------------------------------------------

def test_theory_crossovers_are_never_confirmed():
    df = pd.DataFrame({"crossover_c_kstar_1": [5.9e4], "crossover_c_kstar_3": [3.0e6]})
    claims = theory_claims(df, {})
    assert set(verdicts(claims).values()) == {"inconclusive"}  # agreeing or not: theory recomputed
    assert "not an independent check" in claims[0].rule


# ---- E1: c sweep ------------------------------------------------------------------------------------------------

def c_sweep(tm_growth: float, sparse_growth, halts: bool = True) -> pd.DataFrame:
    """sparse_growth: emp_alpha of Sparse as a function of c."""
    rows = []
    for i, c in enumerate([10, 100, 1000]):
        tm = 1e5 * tm_growth**i
        rows.append(atoms_row("svt_tm", tm, 1.25e5 * 1.05**i, c=c))
        rows.append(atoms_row("svt_sparse", sparse_growth(c), 4e4 * 10**i, c=c, cutoff=c))
        for name in ("svt_sparse_short", "svt_above_threshold"):
            rows.append(atoms_row(name, np.nan, 1e4, c=c, cutoff=c // 2 if name.endswith("short") else 1,
                                  recall=0.5 if halts else 1.0, processed=50.0 if halts else 100.0))
    return pd.DataFrame(rows)


def sqrt_c_log_c(c: float) -> float:
    return 1e3 * np.sqrt(c) * np.log(c) * (1.05 if c == 100 else 1.0)  # 5%: inside the quantile error


def test_svt_c_claims_flip():
    good = atoms_claims(c_sweep(tm_growth=1.05, sparse_growth=sqrt_c_log_c), {})
    bad = atoms_claims(c_sweep(tm_growth=3.0, sparse_growth=lambda c: 1e4, halts=False), {})
    verdicts(good), verdicts(bad)
    for start in ("ThresholdMonitor's error is flat", "Sparse's error grows", "Sparse becomes worse"):
        assert only(good, start) == "confirmed", start
        assert only(bad, start) == "not confirmed", start
    # an implementation identity: never confirmed, not confirmed when it breaks
    assert only(good, "AboveThreshold and Sparse with cutoff < c halt") == "inconclusive"
    assert only(bad, "AboveThreshold and Sparse with cutoff < c halt") == "not confirmed"


@pytest.mark.parametrize("growth", [lambda c: 1e3 * c, lambda c: 1e3 * np.sqrt(c)])
def test_svt_c_sparse_shape_rejects_linear_and_plain_sqrt_growth(growth):
    # both grow by >= sqrt(c) over the grid, which the old one-sided rule accepted
    claims = atoms_claims(c_sweep(tm_growth=1.05, sparse_growth=growth), {})
    assert only(claims, "Sparse's error grows") == "not confirmed"


def test_svt_c_smoke_runs_cannot_decide():
    claims = atoms_claims(c_sweep(1.05, sqrt_c_log_c).assign(n_runs=20), {})
    assert only(claims, "ThresholdMonitor's error is flat") == "inconclusive"
    assert only(claims, "Sparse's error grows") == "inconclusive"
    assert only(claims, "(alpha, beta)-accuracy") == "inconclusive"


def test_svt_c_crossover_within_tolerance_is_inconclusive():
    df = c_sweep(1.05, sqrt_c_log_c)
    last = (df["c"] == 1000) & (df["mechanism.name"] == "svt_sparse")
    df.loc[last, "emp_alpha"] = 1e5 * 1.05**2 * 1.1  # Sparse only 10% above TM: inside the two-point tolerance
    assert only(atoms_claims(df, {}), "Sparse becomes worse") == "inconclusive"


def test_svt_c_crossover_measured_carries_the_ratio_with_its_interval():
    # Sparse 1e4 against TM 1e5 x 3^2 at c = 1000: ratio 1/90 = 0.0111, x1.21 either way (two quantile errors of x1.1)
    bad = atoms_claims(c_sweep(tm_growth=3.0, sparse_growth=lambda c: 1e4, halts=False), {})
    crossover = [c for c in bad if c.claim.startswith("Sparse becomes worse")][0]
    assert crossover.verdict == "not confirmed"
    assert "Sparse/TM x0.0111 [0.00918, 0.0134]" in crossover.measured


# ---- E1: k* sweep, cap sweep, order -----------------------------------------------------------------------------

def kappa_sweep(tm_growth: float, sparse_growth, kappa: float = 0.1, certified: bool = False) -> pd.DataFrame:
    df = c_sweep(tm_growth, sparse_growth)
    return df[df["mechanism.name"].isin(["svt_tm", "svt_sparse"])].assign(kappa=kappa, certified=certified)


def test_svt_kappa_claims_flip_and_say_not_certified():
    good = kappa_claims(kappa_sweep(1.05, sqrt_c_log_c), {})
    bad = kappa_claims(kappa_sweep(3.0, lambda c: 1e3 * c), {})
    verdicts(good), verdicts(bad)
    assert all("NOT privacy-certified" in c.claim for c in good) and len(good) == 3
    assert only(good, "svt_kappa is NOT privacy-certified") == "inconclusive"  # label check: holds by construction
    for start in ("[kappa = 0.1, NOT privacy-certified] ThresholdMonitor's", "[kappa = 0.1, NOT privacy-certified] "
                  "Sparse's"):
        assert only(good, start) == "confirmed", start
        assert only(bad, start) == "not confirmed", start


@pytest.mark.parametrize("kappa, certified", [(1.0, False), (0.1, True)])
def test_svt_kappa_label_fails_on_a_certified_or_full_noise_row(kappa, certified):
    df = kappa_sweep(1.05, sqrt_c_log_c).reset_index(drop=True)
    df.loc[0, "kappa"], df.loc[0, "certified"] = kappa, certified
    assert only(kappa_claims(df, {}), "svt_kappa is NOT privacy-certified") == "not confirmed"


def kstar_sweep(tm_slope: float, sparse_slope: float) -> pd.DataFrame:
    rows = []
    for k in (1, 3, 10):
        rows.append(atoms_row("svt_tm", 1e5 * k**tm_slope, 1.2e5 * k, c=100, k_star=k))
        rows.append(atoms_row("svt_sparse", 1e4 * k**sparse_slope, 4e4, c=100, k_star=k, cutoff=100))
    return pd.DataFrame(rows)


def test_svt_kstar_claims_flip():
    good, bad = kstar_claims(kstar_sweep(1.0, 0.0), {}), kstar_claims(kstar_sweep(0.0, 1.0), {})
    verdicts(good), verdicts(bad)
    for start in ("ThresholdMonitor's error grows with k*", "ThresholdMonitor's error follows"):
        assert only(good, start) == "confirmed", start
        assert only(bad, start) == "not confirmed", start
    assert only(good, "Sparse's error does not depend on k*") == "inconclusive"  # holds by construction
    assert only(bad, "Sparse's error does not depend on k*") == "not confirmed"


def test_svt_kstar_smoke_runs_are_inconclusive():
    claims = kstar_claims(kstar_sweep(1.0, 0.0).assign(n_runs=20), {})
    assert set(verdicts(claims).values()) == {"inconclusive"}


def kcap_sweep(pruned_recall: bool, alpha_grows: bool) -> pd.DataFrame:
    rows = []
    for k, emp in zip([1, 5, 10, 20, 50], [0.7e5, 3e5, 6e5, 1.2e6, np.nan], strict=True):
        recall = k / 10 if (k < 10 and pruned_recall) else 1.0
        emp = emp if alpha_grows else 6e5 if k >= 10 else emp
        rows.append(atoms_row("svt_tm", emp, 1e5 * k, c=100, k_star=10, k=k, recall=recall, threshold=3e6))
    return pd.DataFrame(rows)


def test_svt_kcap_claims_flip():
    good, bad = kcap_claims(kcap_sweep(True, True), {}), kcap_claims(kcap_sweep(False, False), {})
    verdicts(good), verdicts(bad)
    assert only(good, "k > k* costs noise") == "confirmed"
    assert only(bad, "k > k* costs noise") == "not confirmed"
    assert only(good, "k < k* prunes") == "inconclusive"  # holds by construction
    assert only(bad, "k < k* prunes") == "not confirmed"
    assert only(kcap_claims(kcap_sweep(True, True).query("k >= 10"), {}), "k < k* prunes") == "n/a"
    assert only(kcap_claims(kcap_sweep(True, True).query("k <= 10"), {}), "k > k* costs noise") == "inconclusive"


def test_svt_order_claim_flips():
    rows = [atoms_row(n, a, 1e6, c=100, **{"data.order": o})
            for n, a in (("svt_tm", 5e5), ("svt_sparse", 5e4)) for o in ("random", "heavy_first", "heavy_last")]
    df = pd.DataFrame(rows)
    assert only(order_claims(df, {}), "The accuracy guarantees hold for any") == "inconclusive"  # by construction
    df.loc[df["data.order"] == "heavy_last", "emp_alpha"] *= 2
    assert only(order_claims(df, {}), "The accuracy guarantees hold for any") == "not confirmed"


# ---- E2: shifting heavy hitters ---------------------------------------------------------------------------------

TARGET = {"tme": "dpstream.svt.shifting.ShiftingHeavyHitters",
          "histogram": "dpstream.svt.shifting.HistogramEveryStep",
          "sparse_histogram": "dpstream.svt.shifting.SparseThenHistogram"}


def hh_table(tme_growth: float, theory_growth: float, hist_growth: float, success: float) -> pd.DataFrame:
    base = {"epsilon": 1.0, "delta": 1e-6, "data.domain_size": 1e12, "mechanism.beta": 0.05, "n_runs": 500,
            "data.size_min": 1e3, "data.size_max": 1e9, "data.groups": 28, "k_star": 1}
    rows = []
    for i, m in enumerate([1000, 100000]):
        rows.append({**base, "mechanism._target_": TARGET["tme"], "data.m": m, "emp_tau": 1e7 * tme_growth**i,
                     "theory_tau": 9e6 * theory_growth**i, "success_rate": success})
        rows.append({**base, "mechanism._target_": TARGET["histogram"], "data.m": m, "emp_tau": 2e4 * hist_growth**i,
                     "theory_tau": 1.7e4 * 12**i, "success_rate": 0.98})
    return pd.DataFrame(rows)


def test_hh_claims_flip():
    good = hh_claims(hh_table(tme_growth=1.0, theory_growth=2.0, hist_growth=8.0, success=1.0), {})
    bad = hh_claims(hh_table(tme_growth=10.0, theory_growth=2.0, hist_growth=1.0, success=0.5), {})
    verdicts(good), verdicts(bad)
    for start in ("Thm 4.7", "TME's error tau(k*) does not grow with m", "Baseline (a)"):
        assert only(good, start) == "confirmed", start
        assert only(bad, start) == "not confirmed", start
    linear = hh_claims(hh_table(tme_growth=1.0, theory_growth=2.0, hist_growth=100.0, success=1.0), {})
    assert only(linear, "Baseline (a)") == "not confirmed"  # grows ~ m, not ~ sqrt(m): two-sided rule
    assert only(good, "TME (k*=1) beats the per-step histogram") == "inconclusive"  # theory only


def test_hh_baseline_a_measured_carries_the_growth_exponent_with_its_interval():
    # grid step (1e9 / 1e3)^(1/27) = 1.6681; growth x100 [100 / 1.6681, 100 x 1.6681]; exponent 1 +- ln 1.6681 / ln 100
    linear = hh_claims(hh_table(tme_growth=1.0, theory_growth=2.0, hist_growth=100.0, success=1.0), {})
    claim = [c for c in linear if c.claim.startswith("Baseline (a)")][0]
    assert claim.verdict == "not confirmed"
    assert "growth x100 [59.9, 167], exponent 1 [0.889, 1.11] vs 0.5" in claim.measured


def test_hh_tme_flat_in_m_is_inconclusive_below_the_grid_resolution():
    # theory moves 12% (1e3 -> 1e5) against a size grid of ratio 1.67: the measurement cannot resolve it
    claims = hh_claims(hh_table(tme_growth=1.0, theory_growth=1.12, hist_growth=8.0, success=1.0), {})
    assert only(claims, "TME's error tau(k*) does not grow with m") == "inconclusive"
    assert "1.67" in [c.rule for c in claims if c.claim.startswith("TME's error")][0]


@pytest.mark.parametrize("emp_growth, theory_growth, verdict", [(3.0, 3.0, "confirmed"), (1.0, 3.0, "not confirmed"),
                                                                 (1.0, 1.32, "inconclusive")])
def test_hh_tme_grows_with_kstar(emp_growth, theory_growth, verdict):
    df = hh_table(1.0, 2.0, 8.0, 1.0)
    k3 = df.assign(k_star=3)
    tme = k3["mechanism._target_"] == TARGET["tme"]
    k3.loc[tme, "emp_tau"] *= emp_growth
    k3.loc[tme, "theory_tau"] *= theory_growth  # 1.32: the committed grid's ratio, below one step 1.67
    claims = hh_claims(pd.concat([df, k3], ignore_index=True), {})
    verdicts(claims)
    assert only(claims, "TME's error tau(k*) depends on k*") == verdict


@pytest.mark.parametrize("rate, verdict", [(1.0, "confirmed"), (0.9, "not confirmed"), (0.95, "inconclusive")])
def test_hh_success_rate_uses_an_exact_interval(rate, verdict):
    assert only(hh_claims(hh_table(1.0, 2.0, 8.0, rate), {}), "Thm 4.7") == verdict


@pytest.mark.parametrize("growth, verdict", [(1.0, "confirmed"), (10.0, "not confirmed"), (1.0, "inconclusive")])
def test_hh_baseline_b_flat_in_m_flips(growth, verdict):
    df = hh_table(1.0, 2.0, 8.0, 1.0)
    sparse = df[df["mechanism._target_"] == TARGET["tme"]].assign(**{"mechanism._target_": TARGET["sparse_histogram"]})
    sparse["emp_tau"] = [1e4, 1e4 * growth]
    sparse["theory_tau"] = [1e4, 1.2e4 if verdict == "inconclusive" else 2e4]  # 1.2 < grid step 1.67
    claims = hh_claims(pd.concat([df, sparse], ignore_index=True), {})
    verdicts(claims)
    assert only(claims, "Baseline (b)") == verdict


@pytest.mark.parametrize("hist_growth, verdict", [(10.5, "confirmed"), (11.8, "not confirmed"),
                                                 (8.0, "not confirmed")])
def test_hh_baseline_a_band_is_sqrt_m_with_the_grid_resolution_only(hist_growth, verdict):
    # grid 3e3..3e7 over 98 groups (step x1.0995): band [10 / 1.0995, 10 x 1.0995] = [9.09, 10.995]; growth 11.8
    # (sqrt(m) times the theory's log m factor) is outside: the sentence says sqrt(m), the band does not widen
    df = hh_table(1.0, 1.12, hist_growth, 1.0).assign(**{"data.size_min": 3e3, "data.size_max": 3e7,
                                                        "data.groups": 98})
    claims = hh_claims(df, {})
    assert only(claims, "Baseline (a)") == verdict
    assert only(claims, "TME's error tau(k*) does not grow with m") == "confirmed"  # theory x1.12 > one step
