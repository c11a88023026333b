"""Trials of the sparse vector family: theory curves (E0), the atoms design (E1) and the privacy audit.

Top-level ``epsilon`` / ``delta`` are the total guarantee (eps_tot, delta_tot). One atoms trial is
one database + query stream (from ``data_seed``) and ``mechanism.runs`` seeded runs of the mechanism
on it (from ``mech_seed``), so every mechanism at a grid point sees the same data; ``n_runs`` is in
the row.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from dpstream import descriptor
from dpstream.audit.svt_cases import svt_case
from dpstream.descriptor import resolve
from dpstream.noise import children
from dpstream.privacy.accounting import check_kappa, sparse_prefers_pure
from dpstream.privacy.statement import labels
from dpstream.privacy.svt import DISCRETE_SECURE, calibrate_monitor, option_parameters
from dpstream.svt import AboveThreshold
from dpstream.svt import theory as T
from dpstream.svt.atoms import (
    HEAVY,
    AtomsDesign,
    monitor_critical_margin,
    quantile_margin,
    sparse_critical_margin,
)
from dpstream.svt.shifting import heavy_rows
from dpstream.trials import build, row_columns

BATCH_CELLS = 1 << 22  # runs per batch x queries: bounds the noise arrays to 32 MB each
ATOMS_OWN = ("runs", "beta", "cap_ratio", "cutoff_ratio", "composition")
"""Mechanism keys ``atoms_trial`` reads itself; every other one is a constructor argument (``build.factory``)."""
DESIGN_OWN = ("margin_factor",)
"""Keys of the atoms design (``conf/data/svt_atoms.yaml``) the trial reads itself; the rest go to ``atoms_design``."""
HH_OWN = ("runs",)
"""Mechanism keys ``hh_trial`` reads itself; every other one (beta too) is a constructor argument."""

Row = dict[str, float | int | str | bool]


@row_columns("c", "m", "alpha_sparse_pure", "alpha_sparse_approx", "alpha_sparse", "alpha_tm_A", "alpha_tm_B",
             "alpha_tm", "tm_option", "alpha_tm_kstar_*", "crossover_c_kstar_*")
def theory_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """E0 at one c: Sparse alpha (pure, approximate, min) at c, alpha_TM (A, B, min) at k = c, alpha_TM at each k*."""
    mech = params["mechanism"]
    eps, delta, m, beta = params["epsilon"], params["delta"], int(float(mech["m"])), mech["beta"]
    c = int(float(mech["c"]))
    row: Row = {
        "c": c,
        "m": m,
        "alpha_sparse_pure": T.alpha_sparse_pure(eps, c, m, beta),
        "alpha_sparse_approx": T.alpha_sparse_approx(eps, delta, c, m, beta),
        "alpha_sparse": T.alpha_sparse(eps, delta, c, m, beta),
    }
    for option, (eps_o, delta_o) in option_parameters(eps, delta, c).items():
        row[f"alpha_tm_{option}"] = T.alpha_monitor(eps_o, delta_o, m, beta)
    cal = calibrate_monitor(eps, delta, c)
    row["alpha_tm"] = T.alpha_monitor(cal.epsilon, cal.delta, m, beta)
    row["tm_option"] = cal.option
    for k_star in mech["k_star_lines"]:
        row[f"alpha_tm_kstar_{k_star}"] = T.alpha_monitor_total(eps, delta, k_star, m, beta)
        row[f"crossover_c_kstar_{k_star}"] = T.sparse_crossover_c(eps, delta, k_star, m, beta)
    return row


def _batches(n_runs: int, m: int, seed: np.random.SeedSequence) -> list[tuple[int, np.random.SeedSequence]]:
    size = max(1, min(n_runs, BATCH_CELLS // max(m, 1)))
    sizes = [size] * (n_runs // size) + ([n_runs % size] if n_runs % size else [])
    return list(zip(sizes, children(seed, len(sizes)), strict=True))


def _kappa(mech: dict[str, Any]) -> float:
    """The noise multiplier of the atoms design (``check_kappa``): 1 = calibrated; < 1 is NOT privacy-certified."""
    return check_kappa(mech.get("kappa", 1.0))


def run_monitor(make: partial, params: dict[str, Any], design: AtomsDesign, n: int, seed: np.random.SeedSequence):
    """ThresholdMonitor at cap k = cap_ratio x k* over the design, its noise drawn once for the critical margin."""
    k = max(1, round(params["mechanism"]["cap_ratio"] * design.k_star))
    tm = build.call(make, epsilon=params["epsilon"], delta=params["delta"], threshold=design.threshold, k=k, seed=seed)
    noise = tm.draw_noise(design.m, n)
    res = tm.run(design.queries, design.counts, n_runs=n, noise=noise)
    cap = tm.int_cap if tm.svt_noise == DISCRETE_SECURE else tm.calibration.cap  # the cap the decisions used
    crit = monitor_critical_margin(design, noise["w"], noise["v"], cap, k)
    info = {"k": k, "tm_option": tm.calibration.option, "noise_w_scale": tm.calibration.w_scale, **labels(tm)}
    return res, res.values, crit, info


def run_sparse(make: partial, params: dict[str, Any], design: AtomsDesign, n: int, seed: np.random.SeedSequence):
    """Sparse with cutoff ceil(cutoff_ratio c) and the configured composition, or AboveThreshold (cutoff 1, pure).

    Composition ``best``: the one with the smaller theoretical alpha.
    """
    mech = params["mechanism"]
    eps, delta = params["epsilon"], params["delta"]
    if issubclass(target_class(make), AboveThreshold):
        cutoff, comp = 1, "pure"
    else:
        cutoff = max(1, math.ceil(mech["cutoff_ratio"] * design.c))
        best = "pure" if sparse_prefers_pure(eps, cutoff, delta) else "approx"
        comp = mech["composition"] if mech["composition"] != "best" else best
    sv = build.call(make, epsilon=eps, threshold=design.threshold, c=cutoff, delta=0.0 if comp == "pure" else delta,
                    seed=seed)
    if cutoff >= design.c:
        noise = sv.draw_noise(design.m, n)
        res = sv.run(design.queries, design.counts, n_runs=n, noise=noise)
        crit = sparse_critical_margin(design, noise["threshold"], noise["query"], cutoff)
    else:  # cannot report every heavy query: draw noise lazily, stop at the halt
        res = sv.run(design.queries, design.counts, n_runs=n)
        crit = np.full(n, np.inf)
    values = np.broadcast_to(design.queries.answers(design.counts), res.outcomes.shape)
    return res, values, crit, {"cutoff": cutoff, "composition": comp, "noise_threshold_scale": sv.threshold_scale,
                               **labels(sv)}


def runners() -> dict[type, Callable]:
    """How ``atoms_trial`` runs each mechanism class (its ``_target_``) on the design.

    The ``runner`` of the descriptors (``dpstream.descriptor``); a subclass runs as its base.
    """
    return {d.target: resolve(d.runner) for d in descriptor.load().values() if d.runner is not None}

def target_class(make: partial) -> type:
    """The class a mechanism factory builds (SVT mechanisms are classes; a function target is an error)."""
    if not isinstance(make.func, type):
        raise TypeError(f"an SVT mechanism's _target_ must be a class, got {make.func!r}")
    return make.func


def _runner(cls: type, name: str | None) -> Callable:
    """The ``runners()`` entry of ``cls`` or of its nearest base class."""
    known = runners()
    for base in cls.__mro__:
        if base in known:
            return known[base]
    raise ValueError(f"mechanism {name!r}: atoms_trial runs {', '.join(c.__name__ for c in known)} and their "
                     f"subclasses, not {cls.__name__}")


def alpha_monitor(params: dict[str, Any], design: AtomsDesign, info: dict[str, Any]) -> float:
    """ThresholdMonitor's accuracy theorem (Kaplan, Mansour, Stemmer) at cap k."""
    return T.alpha_monitor_total(params["epsilon"], params["delta"], info["k"], design.m, params["mechanism"]["beta"])


def alpha_sparse(params: dict[str, Any], design: AtomsDesign, info: dict[str, Any]) -> float:
    """Sparse's (and AboveThreshold's, at cutoff 1) accuracy bound at the run's cutoff and composition."""
    eps, beta = params["epsilon"], params["mechanism"]["beta"]
    if info["composition"] == "pure":
        return T.alpha_sparse_pure(eps, info["cutoff"], design.m, beta)
    return T.alpha_sparse_approx(eps, params["delta"], info["cutoff"], design.m, beta)


def bounds() -> dict[type, Callable[[dict[str, Any], AtomsDesign, dict[str, Any]], float]]:
    """The accuracy bound of each mechanism class at calibrated noise: the ``theory`` of the descriptors.

    Keyed by the exact class: a subclass (a variant run as its base by ``runners()``) has no bound until a descriptor
    of it gives one; its ``theory_alpha`` is NaN.
    """
    return {d.target: resolve(d.theory) for d in descriptor.load().values() if d.theory is not None}


def _theory_alpha(cls: type, params: dict[str, Any], design: AtomsDesign, info: dict[str, Any]) -> float:
    """The accuracy bound at the run's noise: alpha is linear in the noise scales, so kappa x the calibrated bound.

    NaN, with a warning saying why, for a class without its own entry in ``bounds()``: another mechanism's bound
    (its base class's) is no statement about it.
    """
    known = bounds()
    bound = known.get(cls)
    if bound is None:
        warnings.warn(f"theory_alpha of {cls.__name__} is NaN: no accuracy bound is registered for it (a "
                      f"descriptor's theory, dpstream.descriptor; bounded: {', '.join(c.__name__ for c in known)})",
                      stacklevel=2)
        return math.nan
    return _kappa(params["mechanism"]) * bound(params, design, info)


@row_columns("c", "k_star", "m", "n_runs", "threshold", "margin_eval", "emp_alpha", "theory_alpha",
             "emp_over_theory", "success_rate_eval", "margin_fixed", "success_rate_fixed", "recall", "fp_rate",
             "processed", "violations_S", "violations_Si", "k", "tm_option", "noise_w_scale", "cutoff",
             "composition", "noise_threshold_scale", "kappa", "private", "certified", "deployable", "seconds")
def atoms_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """E1: R runs of one mechanism on one atoms design: empirical vs theoretical alpha, recall, FPs, halting.

    ``mechanism.kappa`` < 1 scales every noise scale, the evaluation margin and theory_alpha by kappa (so the
    database shrinks by kappa): the row says ``kappa`` and ``certified: False`` (NOT privacy-certified).
    ``theory_alpha`` (and ``emp_over_theory``) is NaN for a mechanism class without a bound in ``bounds()``.
    """
    started = time.perf_counter()
    data_seed, mech_seed = children(seed, 2)
    mech, data = params["mechanism"], params["data"]
    eps, delta, beta = params["epsilon"], params["delta"], mech["beta"]
    c, k_star = int(float(data["c"])), int(data["k_star"])
    m_guess = c + data["n_near"] + data["n_far"]
    kappa = _kappa(mech)
    margin = kappa * data["margin_factor"] * T.alpha_monitor_total(eps, delta, k_star, m_guess, beta)
    if mech.get("svt_noise") == DISCRETE_SECURE:  # integer design: threshold 2 margin, counts threshold +- margin
        margin = float(math.ceil(margin))
    margin_fixed = kappa * T.alpha_monitor_total(eps, delta, 1, m_guess, beta)  # the same for every k*
    design = build.factory(data, DESIGN_OWN)(c=c, k_star=k_star, threshold=2.0 * margin, margin=margin,
                                             rng=np.random.default_rng(data_seed))
    make = build.factory(mech, ATOMS_OWN)
    cls = target_class(make)
    runner = _runner(cls, mech.get("name"))
    heavy = design.kind == HEAVY
    crit, recall, fp, processed, viol_s, viol_si = [], [], [], [], [], []
    info: dict[str, Any] = {}
    for n, s in _batches(int(mech["runs"]), design.m, mech_seed):
        res, values, c_run, info = runner(make, params, design, n, s)
        top = res.outcomes == 1
        crit.append(c_run)
        recall.append(top[:, heavy].mean(axis=1))
        fp.append(top[:, ~heavy].mean(axis=1))
        processed.append(res.processed)
        viol_s.append((top != heavy).sum(axis=1))
        viol_si.append((top != (values >= design.threshold)).sum(axis=1))
    crit_all = np.concatenate(crit)
    emp = quantile_margin(crit_all, beta)
    emp = emp if np.isfinite(emp) else math.nan  # no margin succeeds; NaN, not inf (the JSON store has no inf)
    theory = _theory_alpha(cls, params, design, info)
    viol = np.concatenate(viol_s)
    return {
        "c": design.c,
        "k_star": k_star,
        "m": design.m,
        "n_runs": crit_all.size,
        "threshold": design.threshold,
        "margin_eval": margin,
        "emp_alpha": emp,
        "theory_alpha": theory,
        "emp_over_theory": emp / theory,
        "success_rate_eval": float((viol == 0).mean()),
        "margin_fixed": margin_fixed,
        "success_rate_fixed": float((crit_all <= margin_fixed).mean()),  # success at gamma = alpha_TM(k* = 1)
        "recall": float(np.concatenate(recall).mean()),
        "fp_rate": float(np.concatenate(fp).mean()),
        "processed": float(np.concatenate(processed).mean()),
        "violations_S": float(viol.mean()),
        "violations_Si": float(np.concatenate(viol_si).mean()),
        **info,
        "kappa": kappa,  # kappa < 1 or a setting without a proof: NOT privacy-certified (``info``, the mechanism's)
        "seconds": time.perf_counter() - started,
    }


def _search_row(res: Any) -> Row:
    return {("audit_delta" if k == "delta" else k): v for k, v in res.row().items()}


@row_columns("case", "audited", "negative_control", "pair", "neighbours", "alpha", "audit_delta", "claimed_epsilon",
             "count_1", "count_2", "direction", "epsilon_lower", "event", "fails", "n_runs", "n_search", "p_1",
             "p_2", "verdict", "as_expected", "private", "certified", "epsilon_lower_given", "seconds")
def audit_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """One audit case (``mechanism.case``) run at and claiming top-level ``epsilon``.

    ``search_audit`` with the case's runs x ``mechanism.runs_factor``.

    Cases with a hand-picked event also report its bound on fresh runs (``epsilon_lower_given``).
    """
    started = time.perf_counter()
    mech = params["mechanism"]
    case = svt_case(mech["case"], epsilon=params["epsilon"])
    n_runs = max(20, round(case.runs * float(mech["runs_factor"])))
    search_seed, given_seed = children(seed, 2)
    res = case.search(n_runs, seed=search_seed, alpha=mech["alpha"])
    row: Row = {
        "case": case.name,
        "audited": case.mechanism,
        "negative_control": case.broken,
        "pair": case.pair,
        "neighbours": case.neighbours,
        **_search_row(res),
        "verdict": "flagged" if res.fails else "passed",
        "as_expected": res.fails == case.broken,
        "private": not case.broken,  # negative controls are NOT private by design
        "certified": not case.broken,
    }
    if case.event is not None:
        row["epsilon_lower_given"] = case.run(n_runs // 2, seed=given_seed, alpha=mech["alpha"]).epsilon_lower
    return {**row, "seconds": time.perf_counter() - started}


@row_columns("case", "audited", "ratio", "alpha", "audit_delta", "claimed_epsilon", "count_1", "count_2",
             "direction", "epsilon_lower", "event", "fails", "n_runs", "n_search", "p_1", "p_2", "private",
             "certified", "seconds")
def audit_power_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """Power of ``search_audit``: case ``mechanism.case`` built at eps = ``mechanism.ratio`` x its claim; flagged?"""
    started = time.perf_counter()
    mech = params["mechanism"]
    ratio = float(mech["ratio"])
    case = svt_case(mech["case"], ratio)
    res = case.search(max(20, round(case.runs * float(mech["runs_factor"]))), seed=seed, alpha=mech["alpha"])
    return {
        "case": case.name,
        "audited": case.mechanism,
        "ratio": ratio,
        **_search_row(res),
        "private": True,  # the case claims its epsilon
        "certified": ratio <= 1.0,  # built with less noise than its claim needs: NOT private as claimed
        "seconds": time.perf_counter() - started,
    }


@row_columns("k_star", "n_runs", "threshold", "theory_tau", "emp_tau", "emp_over_theory", "success_rate",
             "zero_weight_reports", "private_reports", "runs_with_private_reports", "size_g*", "recall_g*",
             "private", "certified", "deployable", "seconds")
def hh_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """E2: shifting heavy hitters (TME, Thm 4.7) or a baseline: recall per group size, zero-weight reports, tau."""
    started = time.perf_counter()
    data_seed, mech_seed = children(seed, 2)
    mech = params["mechanism"]
    beta = mech["beta"]
    design = build.factory(params["data"])(rng=np.random.default_rng(data_seed))
    holdings, sizes = design.holdings, design.sizes
    method = build.call(build.factory(mech, HH_OWN), epsilon=params["epsilon"], delta=params["delta"], m=design.m,
                        domain_size=design.domain_size, k_star=design.k_star, c=sizes.size * design.k_star,
                        seed=mech_seed)  # c: Sparse + histogram's oracle cutoff, every heavy step
    res = method.run(holdings, sizes, n_runs=int(mech["runs"]))
    rows = heavy_rows(holdings, sizes, method.domain_size)
    group = rows.element // design.k_star
    recall = np.bincount(group, weights=res.reported.mean(axis=0), minlength=sizes.size) / np.bincount(group)
    bad = np.flatnonzero(recall < 1 - beta)  # emp tau: smallest size from which every larger group is found
    emp_tau = float(sizes[0] if not bad.size else sizes[bad.max() + 1] if bad.max() + 1 < sizes.size else math.nan)
    must = rows.weight >= method.tau
    success = (res.zero_reports == 0) & res.reported[:, must].all(axis=1)
    row: Row = {
        "k_star": design.k_star,
        "n_runs": int(mech["runs"]),
        "threshold": res.threshold,
        "theory_tau": method.tau,
        "emp_tau": emp_tau,
        "emp_over_theory": emp_tau / method.tau,
        "success_rate": float(success.mean()),
        "zero_weight_reports": float(res.zero_reports.mean()),
        "private_reports": float(res.private_reports.mean()),
        "runs_with_private_reports": int((res.private_reports > 0).sum()),
    }
    for g, (size, rec) in enumerate(zip(sizes, recall, strict=True)):
        row[f"size_g{g:02d}"], row[f"recall_g{g:02d}"] = float(size), float(rec)
    return {**row, **labels(method), "seconds": time.perf_counter() - started}
