"""The empirical variance check (``counters.empirical``) passes every registered counter and catches a wrong scale.

At T = 64 with 20000 counters a cell (the full check, ``make counters-variance``, runs 2^14 and 2^16 on 100000): every
counter and node noise matches its formula at every step checked; with the noise of the counters sampled at half
its scale (the class's own multiplier, the formula left at the calibrated scale) every step is a mismatch; a release
shortcut that differs from the push path is a mismatch; too few counters are inconclusive.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpstream.counters import COUNTERS
from dpstream.counters import empirical as emp

HORIZON = 64
N = 20_000
N_HALVED = 2_000
PLAN = {(c, m): steps for c, m, _, steps in emp.planned([HORIZON])}
CELLS = sum(len(s) for s in PLAN.values())


def _cell(key, n, seed, **kwargs):
    return emp.check_cell(COUNTERS[key], HORIZON, PLAN[key], n, np.random.SeedSequence(seed), CELLS, **kwargs)


@pytest.mark.parametrize("key", list(COUNTERS), ids="/".join)
def test_every_counter_matches_its_formula(key):
    rows = _cell(key, N, [34, list(COUNTERS).index(key)])
    assert [r["step"] for r in rows] == list(PLAN[key])
    bad = [(r["step"], r["ratio"], r["p_value"], r["reason"]) for r in rows if r["verdict"] != "match"]
    assert not bad, f"{key}: steps not matching their formula: {bad}"
    if COUNTERS[key].sparse_pushes:
        assert all(r["path"] == "release" and r["cross_max_sd"] <= emp.CROSS_RTOL for r in rows)


def _halved(cls, n, horizon, seed):
    return cls(n=n, horizon=horizon, epsilon=emp.EPSILON, delta=emp.DELTA, seed=seed, kappa=0.5)


@pytest.mark.parametrize("key", list(COUNTERS), ids="/".join)
def test_a_halved_noise_scale_is_a_mismatch(key):
    rows = _cell(key, N_HALVED, [35, list(COUNTERS).index(key)], builder=_halved, cross_counters=200)
    assert all(r["verdict"] == "mismatch" for r in rows), [(r["step"], r["ratio"], r["verdict"]) for r in rows]
    assert all(r["ratio"] < 0.5 for r in rows)


def test_a_release_shortcut_unlike_the_push_path_is_a_mismatch(monkeypatch):
    real = emp.derived_releases

    def off(counter, steps):
        return {s: x * 1.001 for s, x in real(counter, steps).items()}

    monkeypatch.setattr(emp, "derived_releases", off)
    rows = _cell(("binary", "derived"), N_HALVED, 36, cross_counters=200)
    assert all(r["verdict"] == "mismatch" and "push path differs" in r["reason"] for r in rows)


def test_the_node_kurtosis_is_the_distributions():
    laplace = emp.build(COUNTERS["laplace", "discrete_secure_stored"], 1, HORIZON, np.random.SeedSequence(0))
    q = math.exp(-1 / laplace._noise_scale)
    assert emp.node_excess_kurtosis(laplace) == pytest.approx(3 + (1 - q) ** 2 / (2 * q), rel=1e-9)
    assert emp.node_excess_kurtosis(emp.build(COUNTERS["laplace", "stored"], 1, HORIZON, 0)) == 3.0
    gauss = emp.build(COUNTERS["binary", "discrete_secure"], 1, HORIZON, np.random.SeedSequence(0))
    assert gauss._noise_scale > 2 and abs(emp.node_excess_kurtosis(gauss)) < 1e-9


def test_the_rule_says_inconclusive_when_too_few_counters_decide():
    assert emp.judge(1.0, 1.0, 50, "gaussian", 0.0, 1e-4).verdict == "inconclusive"
    assert emp.judge(1.0, 1.0, 100_000, "gaussian", 0.0, 1e-4).verdict == "match"
    assert emp.judge(1.025, 1.0, 100_000, "gaussian", 0.0, 1e-4).verdict == "mismatch"
    # Laplace nodes: the band widens by sqrt((2 + 3) / 2), so the same 2.5% is no longer decisive at this level
    assert emp.judge(1.025, 1.0, 100_000, "laplace", 3.0, 1e-4).verdict == "match"


def test_the_chi_square_band_holds_its_level():
    """1000 Gaussian cells of 500 draws each: the share outside the 5% band is 5% within 3 binomial sds."""
    rng = np.random.default_rng(np.random.SeedSequence(37))
    x = rng.normal(0, 2.0, size=(1000, 500))
    outside = sum(emp.judge(float(np.mean(row**2)), 4.0, 500, "gaussian", 0.0, 0.05).p < 0.05 for row in x)
    assert abs(outside / 1000 - 0.05) < 3 * math.sqrt(0.05 * 0.95 / 1000)


def test_a_cell_replaces_its_own_rows_and_a_failed_write_leaves_the_table_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / "counters_variance.csv"
    row = {"counter": "binary", "node_noise": "stored", "horizon": HORIZON, "step": 1, "verdict": "match"}
    emp._write(pd.DataFrame(), pd.DataFrame([row, {**row, "counter": "honaker"}]), out)
    emp._write(pd.read_csv(out), pd.DataFrame([{**row, "verdict": "mismatch"}]), out)
    table = pd.read_csv(out)
    assert sorted(zip(table.counter, table.verdict, strict=True)) == [("binary", "mismatch"), ("honaker", "match")]
    before = out.read_bytes()

    def half_then_fail(self, handle, **kwargs):
        handle.write(b"counter,node_no")
        raise OSError("No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_fail)
    with pytest.raises(OSError):
        emp._write(table, pd.DataFrame([row]), out)
    assert out.read_bytes() == before
