"""Trial functions of the query-release experiments (spec E0-E5, E10, Algorithms 4 and 5); see docs/harness.md.

Seeds are spawned in a fixed order: ``data_seed, workload_seed, mech_seed = children(seed, 3)``, so the data and the
workload of trial i are the same for every mechanism and grid point.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import numpy as np

from dpstream.audit import audit
from dpstream.noise import children
from dpstream.privacy.query_release import (
    hru_alpha_bound,
    hru_analyst_epsilon,
    hru_crossover,
    laplace_alpha_bound,
    pmw_alpha_bound,
)
from dpstream.privacy.statement import labels
from dpstream.query_release import (
    Conjunctions,
    IterativeConstruction,
    LaplaceRelease,
    MatrixWorkload,
    MedianMechanism,
    PrivateEquilibriumRelease,
    Release,
    pmw,
    size_n_databases,
)
from dpstream.query_release.data import histogram
from dpstream.query_release.toy import ToyQueries
from dpstream.query_release.updates import MultiplicativeWeights
from dpstream.query_release.workloads import (
    Workload,
    assign_analysts,
    conjunction_digits,
    make_workload,
    ternary_transform,
)
from dpstream.trials import build, row_columns, within_budget

Row = dict[str, float | int | str | bool]
WORKLOAD_KEYS = ("workload", "k", "n_queries", "sparsity", "analysts")
"""Keys of a ``qr_database`` data config that choose the workload asked of it (read by ``build_problem``); the rest
are arguments of its ``_target_``, the records' generator or reader."""


def load_records(data: dict[str, Any], seed: np.random.SeedSequence) -> np.ndarray:
    """The data config's records: ``instantiate`` of its ``_target_`` (``build.factory``) with ``seed``."""
    return build.factory(data, WORKLOAD_KEYS)(seed=seed)


def error_metrics(answers: np.ndarray, true: np.ndarray, prefix: str = "") -> Row:
    """Max, mean and 50/95th percentile absolute error over the answered queries (NaN: unanswered, Alg 5 halted)."""
    err = np.abs(np.asarray(answers) - true)
    return {f"{prefix}max_error": float(np.nanmax(err)), f"{prefix}mean_error": float(np.nanmean(err)),
            f"{prefix}p50_error": float(np.nanpercentile(err, 50)),
            f"{prefix}p95_error": float(np.nanpercentile(err, 95))}


def build_problem(params: dict[str, Any], data_seed: np.random.SeedSequence,
                  workload_seed: np.random.SeedSequence) -> tuple[np.ndarray, Workload, np.ndarray, np.ndarray]:
    """Data histogram, workload, true answers and the analyst partition of one trial."""
    data = params["data"]
    hist = histogram(load_records(data, data_seed), data["d"])
    workload = make_workload(data.get("workload", "conjunctions"), data["d"], k=data.get("k", 3),
                             n_queries=data.get("n_queries", 1000), sparsity=data.get("sparsity", 3),
                             seed=workload_seed)
    analysts = assign_analysts(workload.n_queries, data.get("analysts", 10), seed=workload_seed)
    return hist, workload, workload.answers(hist), analysts


@row_columns("max_error", "mean_error", "p50_error", "p95_error", "uniform_max_error", "uniform_mean_error",
             "uniform_p50_error", "uniform_p95_error", "n_queries", "rounds", "eps_data", "delta_data", "seconds",
             "nonempty_cells", "eps_analyst", "delta_analyst", "private", "certified", "deployable", "curve",
             "stopped_early", "eps0", "laplace_scale", "tops", "cutoff", "sparse_sigma", "eta", "s", "m", "alpha_hat",
             "n_flagged", "n_flagged_analysts", "max_flagged_per_analyst", "analyst_cleanup_certified",
             "synopsis_max_error", "n_hat", "T", "R", "sigma", "tau", "epochs", "bad_rounds", "answered_fraction",
             "halted", "alpha_bound", "p_any_bad_bound", "constants")
def run_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """One release by ``params.mechanism`` on ``params.data``: errors, the uniform line, accounted privacy."""
    data_seed, workload_seed, mech_seed = children(seed, 3)
    hist, workload, true, analysts = build_problem(params, data_seed, workload_seed)
    mechanism = build.call(build.factory(params["mechanism"]), workload=workload, analysts=analysts,
                           epsilon=params["epsilon"], delta=params["delta"], n=params["data"]["n"], seed=mech_seed)
    started = time.perf_counter()
    release = mechanism.run(true)
    seconds = time.perf_counter() - started
    uniform = workload.answers(np.full(hist.size, 1.0 / hist.size))
    row: Row = {**error_metrics(release.answers, true), **error_metrics(uniform, true, "uniform_"),
                "n_queries": workload.n_queries, "rounds": release.rounds, "eps_data": release.eps_data,
                "delta_data": release.delta_data, "seconds": seconds, "nonempty_cells": int(np.count_nonzero(hist))}
    if release.eps_analyst is not None:
        row["eps_analyst"] = release.eps_analyst
        row["delta_analyst"] = params["delta"]
    row.update(labels(mechanism))
    row["certified"] = row["certified"] and within_budget(params, row)  # the mechanism's, within the run's budget
    row.update({k: v for k, v in release.info.items() if isinstance(v, int | float | str | bool)})
    if "curve_round" in release.trace and release.trace["curve_round"].size:
        row["curve"] = json.dumps({"round": release.trace["curve_round"].tolist(),
                                   "max_error": release.trace["curve_max_error"].tolist()})
    return row


@row_columns("alpha_hru", "alpha_hru_D", "alpha_hru_SV", "alpha_hru_Lap", "alpha_pmw", "alpha_laplace", "log10_n",
             "s_hru", "n_actions")
def theory_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """Spec E0: the accuracy bounds of Algorithm 3, PMW and Laplace at n (d binary attributes, all conjunctions)."""
    d, n = params["data"]["d"], params["data"]["n"]
    n_actions, universe = 2 * 3**d, 2**d
    eps, delta, beta = params["epsilon"], params["delta"], params.get("beta", 0.05)
    hru = hru_alpha_bound(n, eps, delta, n_actions, universe, beta, params["mechanism"].get("theory_s_factor", 12))
    return {"alpha_hru": hru["alpha"], "alpha_hru_D": hru["alpha_D"], "alpha_hru_SV": hru["alpha_SV"],
            "alpha_hru_Lap": hru["alpha_Lap"], "alpha_pmw": pmw_alpha_bound(n, eps, delta, n_actions, universe, beta),
            "alpha_laplace": laplace_alpha_bound(n, eps, delta, n_actions, beta), "log10_n": math.log10(n),
            "s_hru": hru["s"], "n_actions": n_actions}


def _toy_release(kind: str, params: dict[str, Any], net: np.ndarray, queries: ToyQueries, true: np.ndarray,
                 seed: np.random.SeedSequence) -> tuple[Release, Any]:
    """One toy release.

    ``median`` (IC + median mechanism over the trivial net), ``pmw`` (linear queries only, its histogram then answers
    the non-linear ones too) or ``laplace``; with the mechanism that released it.
    """
    mech, n = params["mechanism"], params["data"]["n"]
    delta = 0.0 if mech.get("pure", False) else params["delta"]
    if kind == "laplace":
        laplace = LaplaceRelease(epsilon=params["epsilon"], delta=delta, n=n, seed=seed)
        return laplace.run(true), laplace
    if kind == "median":
        dua = MedianMechanism(queries.evaluate(net))
        ic = IterativeConstruction(update=dua, epsilon=params["epsilon"], delta=delta, n=n, alpha=mech["alpha"],
                                   seed=seed)
        return ic.run(true), ic
    work = MatrixWorkload(queries.subsets)  # |X| must be a power of two (4 or 8 here)
    ic = pmw(workload=work, epsilon=params["epsilon"], delta=delta, n=n, alpha=mech["alpha"],
             rounds=mech.get("rounds"), seed=seed)
    release = ic.run(true[: queries.n_linear])
    update = ic.update
    if not isinstance(update, MultiplicativeWeights):  # pmw always builds one: its histogram answers the rest
        raise TypeError(f"pmw built a {type(update).__name__}, not MultiplicativeWeights")
    release.answers = queries.evaluate(update.hist)
    return release, ic


@row_columns("max_error", "mean_error", "p50_error", "p95_error", "uniform_max_error", "uniform_mean_error",
             "uniform_p50_error", "uniform_p95_error", "linear_max_error", "nonlinear_max_error",
             "uniform_nonlinear_max_error", "net_size", "rounds", "eps_data", "delta_data", "pure", "seconds",
             "stopped_early", "eps0", "laplace_scale", "private", "certified", "deployable")
def median_toy_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """Spec E10: median mechanism vs PMW vs Laplace at toy scale, linear and non-linear 1/n-sensitive queries."""
    data_seed, _, mech_seed = children(seed, 3)
    data, mech = params["data"], params["mechanism"]
    hist = np.bincount(load_records(data, data_seed), minlength=data["universe_size"]) / data["n"]
    queries = ToyQueries(data["universe_size"])
    net = size_n_databases(data["universe_size"], data["n"])
    true = queries.evaluate(hist)
    started = time.perf_counter()
    release, mechanism = _toy_release(mech["kind"], params, net, queries, true, mech_seed)
    uniform = queries.evaluate(np.full(hist.size, 1.0 / hist.size))
    lin = slice(0, queries.n_linear)
    non = slice(queries.n_linear, None)
    row: Row = {**error_metrics(release.answers, true), **error_metrics(uniform, true, "uniform_"),
            "linear_max_error": float(np.abs(release.answers[lin] - true[lin]).max()),
            "nonlinear_max_error": float(np.abs(release.answers[non] - true[non]).max()),
            "uniform_nonlinear_max_error": float(np.abs(uniform[non] - true[non]).max()),
            "net_size": net.shape[0], "rounds": release.rounds, "eps_data": release.eps_data,
            "delta_data": release.delta_data, "pure": bool(mech.get("pure", False)),
            "seconds": time.perf_counter() - started,
            **{k: v for k, v in release.info.items() if isinstance(v, bool | int | float)}}
    mine = labels(mechanism)
    return {**row, **mine, "certified": mine["certified"] and within_budget(params, row)}


@row_columns("synopsis_max_error", "uniform_max_error", "eps_analyst", "eps_lower", "p_with_canary",
             "p_without_canary", "audit_fails", "tau", "audit_runs", "canary_true", "private", "certified",
             "deployable", "seconds")
def analyst_audit_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """Spec E5: empirical analyst leakage of D^ from a canary query in analyst 0's set (Clopper-Pearson tester).

    World 2's workload: every conjunction not touching the most biased attribute x_a; world 1 adds the canary
    "x_a = 1" (owned by analyst 0). Other analysts observe
    D^ only; the event is "q*(D^) on the canary's side of tau", tau and the side fixed from pilot runs on
    separate seeds. Claimed: eps_analyst of D^ (Lemma 3.8) at delta.
    """
    data_seed, workload_seed, mech_seed = children(seed, 3)
    data, mech = params["data"], params["mechanism"]
    d, n = data["d"], data["n"]
    hist = histogram(load_records(data, data_seed), d)
    full = Conjunctions(d)
    marginals = ternary_transform(hist, d).reshape((3,) * d)
    one_way = np.array([marginals[(2,) * a + (1,) + (2,) * (d - a - 1)] for a in range(d)])
    attr = int(np.argmax(np.abs(one_way - 0.5)))  # canary: "x_attr = 1", the most biased attribute
    digits = conjunction_digits(np.arange(3**d), d)
    others = np.flatnonzero(digits[:, attr] == 2)[1:]  # queries not touching x_attr (empty conjunction dropped)
    canary = int(np.ravel_multi_index((2,) * attr + (1,) + (2,) * (d - attr - 1), (3,) * d))
    worlds = [Conjunctions(d, np.append(others, canary)), Conjunctions(d, others)]
    canary_values = full.on_universe(canary)

    def sampler(work: Conjunctions, n_runs: int, s: np.random.SeedSequence) -> np.ndarray:
        owners = np.zeros(work.n_queries, dtype=np.int64)
        true = work.answers(hist)
        out = np.empty(n_runs)
        for r, child in enumerate(children(s, n_runs)):
            game = PrivateEquilibriumRelease(workload=work, analysts=owners, epsilon=params["epsilon"],
                                             delta=params["delta"], n=n,
                                             rounds=mech["rounds"], s=mech["s"], eta=mech["eta"], seed=child)
            records, _ = game.play(true)
            out[r] = canary_values[records].mean()
        return out

    pilot_seed, audit_seed = children(mech_seed, 2)
    pilot = [sampler(w, mech["pilot_runs"], s) for w, s in zip(worlds, children(pilot_seed, 2), strict=True)]
    grid = np.unique(np.concatenate(pilot))
    gaps = [(np.mean(pilot[0] >= t) - np.mean(pilot[1] >= t), t) for t in grid]
    gap, tau = max(gaps, key=lambda g: abs(g[0]))
    above = gap >= 0
    started = time.perf_counter()
    claimed = hru_analyst_epsilon(mech["eta"], mech["rounds"], mech["s"], params["delta"])
    result = audit(sampler, worlds[0], worlds[1], lambda v: (v >= tau) == above, mech["audit_runs"], claimed,
                   params["delta"], seed=audit_seed)
    work = worlds[0]  # utility of this density s: one game on world 1, max error of D^ over its workload
    true = work.answers(hist)
    game = PrivateEquilibriumRelease(workload=work, analysts=np.zeros(work.n_queries, dtype=np.int64),
                                     epsilon=params["epsilon"],
                                     delta=params["delta"], n=n, rounds=mech["rounds"], s=mech["s"], eta=mech["eta"],
                                     seed=children(audit_seed, 1)[0])
    records, _ = game.play(true)
    synopsis = work.answers(np.bincount(records, minlength=hist.size) / records.size)
    uniform = work.answers(np.full(hist.size, 1.0 / hist.size))
    return {"synopsis_max_error": float(np.abs(synopsis - true).max()),
            "uniform_max_error": float(np.abs(uniform - true).max()),
            "eps_analyst": claimed, "eps_lower": result.epsilon_lower, "p_with_canary": result.row()["p_1"],
            "p_without_canary": result.row()["p_2"], "audit_fails": result.fails, "tau": float(tau),
            "audit_runs": result.n_runs, "canary_true": float(one_way[attr]), **labels(game),
            "seconds": time.perf_counter() - started}


@row_columns("T_beat", "T_max", "alpha_at_T_max", "feasible", "n_actions", "n_beat", "n_max", "uniform_max_error",
             "round_s", "est_T_beat_s", "est_T_max_s")
def crossover_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> Row:
    """Where Algorithm 3 (T = n/6.4, s = 24 T, all 3^d conjunctions) could beat the uniform line, and its cost.

    Theory (``privacy.query_release.hru_crossover``) against this data's uniform max error; the game's cost per round is
    measured over ``mechanism.timed_rounds`` rounds at this d, and the run time of T_beat rounds extrapolated.
    """
    data_seed, workload_seed, mech_seed = children(seed, 3)
    hist, workload, true, analysts = build_problem(params, data_seed, workload_seed)
    uniform = float(np.abs(workload.answers(np.full(hist.size, 1.0 / hist.size)) - true).max())
    cross = hru_crossover(params["data"]["d"], params["epsilon"], params["delta"], uniform)
    timed = int(params["mechanism"].get("timed_rounds", 20))

    def game(rounds: int) -> PrivateEquilibriumRelease:
        return PrivateEquilibriumRelease(workload=workload, analysts=analysts, epsilon=params["epsilon"],
                                         delta=params["delta"], n=params["data"]["n"],
                                         rounds=rounds, s=min(24 * rounds, workload.n_queries), seed=mech_seed)

    game(1).play(true)  # warm-up: compiles (or loads) the numba kernels outside the timed rounds
    timed_game = game(timed)
    started = time.process_time()
    timed_game.play(true)
    round_s = (time.process_time() - started) / timed
    return {**{k: v for k, v in cross.items() if k not in ("d", "epsilon")}, "uniform_max_error": uniform,
            "round_s": round_s, "est_T_beat_s": cross["T_beat"] * round_s,
            "est_T_max_s": cross["T_max"] * round_s}
