"""Speed goals of the query-release family (spec; issue): prints numbers, asserts nothing.

1. One round of the Algorithm 3 game over ~1e6 actions (d = 12: 2 x 3^12 = 1,062,882) in <= 30 ms.
2. The error-vs-n experiment (E2) at d = 12 up to n = 4000 for four eps values within 30 minutes on 2 cores:
   estimated from measured per-trial times of each mechanism (``--full`` runs every E2 trial once, serially).
3. The whole Algorithm 3 game of an E2 trial (d = 12, T = n / 6.4 rounds) >= 2x faster than the game loop it
   replaced (kept below as ``reference_play``: numpy passes per round, a 3^d Kronecker product per record), with
   the same records: an interleaved A/B ratio in one process (``--json`` writes benchmarks/results/query_release.json).

Usage: .venv/bin/python benchmarks/query_release.py [--rounds 200] [--full] [--skip-e2] [--ratio-n 1000]
       [--repeats 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from dpstream.noise import NoiseSource, children
from dpstream.query_release import Conjunctions, PrivateEquilibriumRelease, assign_analysts, histogram, product_mixture
from dpstream.query_release._kernels import _locate_bin, _log_histogram, _solve_capped, _suffix_sums, sample_index
from dpstream.query_release.gamma import gamma_projection
from dpstream.timing import interleaved_ratios
from dpstream.trials.query_release import build_problem, run_trial

RESULTS = Path(__file__).parent / "results" / "query_release.json"

E2_N = (250, 500, 1000, 2000, 4000)
E2_EPS = (1.0, 10.0, 30.0, 100.0)
E2_DATA = {"_target_": "dpstream.query_release.product_mixture", "d": 12, "components": 3, "concentration": 0.5,
           "workload": "conjunctions", "analysts": 10}


def game_round(rounds: int) -> None:
    """Time ``rounds`` rounds of the private equilibrium game (Alg. 3) on 2^12 records, 10 analysts."""
    d, n = 12, 1000
    work = Conjunctions(d)
    true = work.answers(histogram(product_mixture(n, d, seed=0), d))
    game = PrivateEquilibriumRelease(workload=work, analysts=assign_analysts(work.n_queries, 10, seed=0),
                                     epsilon=100.0, delta=1e-6, n=n,
                                     rounds=rounds, s_factor=24, seed=0)
    started, cpu = time.perf_counter(), time.process_time()
    game.play(true)
    per_round = (time.perf_counter() - started) / rounds
    per_round_cpu = (time.process_time() - cpu) / rounds
    print(f"Alg 3 game round, d = 12, N_Q = {game.n_actions:,} actions, s = {game.s:g}: "
          f"{per_round * 1e3:.1f} ms/round wall, {per_round_cpu * 1e3:.1f} ms/round CPU over {rounds} rounds "
          f"(goal <= 30 ms; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    log_w = np.random.default_rng(0).normal(size=game.n_actions)
    parts = {
        "Gamma_s projection": lambda: gamma_projection(log_w, game.s),
        "Gamma_s projection, log-weights spread x30 (late rounds at large eps)": lambda: gamma_projection(
            30 * log_w, 83280.0),
        "sample an action": lambda: sample_index(log_w, 0.5),
        "q(x_t) for all 3^12 queries": lambda: work.at_record(1234),
        "q_t on the universe": lambda: work.on_universe(777),
    }
    for name, fn in parts.items():
        fn()
        t = time.process_time()
        for _ in range(20):
            fn()
        print(f"  {name}: {(time.process_time() - t) / 20 * 1e3:.2f} ms CPU")


def e2_estimate(full: bool) -> None:
    """Time one E2 trial per (mechanism, n) at eps = 1 (runtime does not depend on eps), sum over the grid."""
    mechs = {
        "qr_laplace": {"_target_": "dpstream.query_release.LaplaceRelease"},
        "qr_pmw": {"_target_": "dpstream.query_release.pmw", "alpha": 0.2, "rounds": 100},
        "qr_mwem": {"_target_": "dpstream.query_release.mwem", "rounds": 30, "replays": 5},
        "qr_hru_private": {"_target_": "dpstream.query_release.PrivateEquilibriumRelease",
                           "rounds_rule": "data_private", "s_factor": 24},
        "qr_hru_uncapped": {"_target_": "dpstream.query_release.PrivateEquilibriumRelease",
                            "rounds_rule": "data_private", "s": 1},
    }
    data = E2_DATA
    total = 0.0
    ns = E2_N if full else (250, 4000)
    for name, mech in mechs.items():
        times = []
        for n in ns:
            t = time.perf_counter()
            run_trial({"epsilon": 1.0, "delta": 1e-6, "data": {**data, "n": n}, "mechanism": mech},
                      np.random.SeedSequence(0, spawn_key=(0,)))
            times.append(time.perf_counter() - t)
        per = dict(zip(ns, times, strict=True))
        if not full:  # rounds grow linearly in n for the games; interpolate linearly between 250 and 4000
            per = {n: times[0] + (times[1] - times[0]) * (n - 250) / 3750 for n in E2_N}
        total += sum(per.values()) * len(E2_EPS)
        print(f"  {name}: " + ", ".join(f"n={n}: {s:.1f} s" for n, s in per.items()))
    print(f"E2 (d = 12, n <= 4000, 4 eps, 1 trial each, T = n/6.4 games): ~{total:.0f} core-seconds "
          f"= {total / 2 / 60:.1f} min on 2 free cores (goal <= 30 min); the paper-T game at n = 250 adds "
          f"ceil(250 ln N_Q) = {int(np.ceil(250 * np.log(2 * 3**12)))} rounds per eps")


@njit
def _reference_total_and_min(w: np.ndarray) -> tuple[float, float]:
    total = 0.0
    w_min = 1.0
    for i in range(w.size):
        total += w[i]
        if 0.0 < w[i] < w_min:
            w_min = w[i]
    return total, w_min


@njit
def _reference_bin_values(w: np.ndarray, log_w: np.ndarray, width: float, n_bins: int, b: int,
                          size: int) -> np.ndarray:
    vals = np.empty(size)
    k = 0
    for i in range(w.size):
        if w[i] > 0.0 and min(int(-log_w[i] / width), n_bins - 1) == b:
            vals[k] = w[i]
            k += 1
    return np.sort(vals)[::-1]


@njit
def _reference_gamma_scale(w: np.ndarray, log_w: np.ndarray, s: float, n_bins: int) -> float:
    total, w_min = _reference_total_and_min(w)
    c = s / total
    if c <= 1.0:
        return c
    width = -np.log(w_min) / n_bins * (1.0 + 1e-12)
    if width <= 0.0:
        return -1.0
    count, mass = _log_histogram(w, log_w, 0.0, width, n_bins)
    suffix = _suffix_sums(mass)
    hit, above = _locate_bin(count, suffix, width, s)
    if hit < 1:
        return -1.0
    vals = _reference_bin_values(w, log_w, width, n_bins, hit - 1, count[hit - 1])
    return _solve_capped(vals, suffix[hit], above - count[hit - 1], s)


def _reference_at_record(x: int, d: int) -> np.ndarray:
    out = np.ones(1)
    for i in range(d):
        bit = (x >> (d - 1 - i)) & 1
        out = np.multiply.outer(out, np.array([1.0 - bit, float(bit), 1.0])).reshape(-1)
    return out


def reference_play(game: PrivateEquilibriumRelease, true: np.ndarray, seed: np.random.SeedSequence) -> np.ndarray:
    """The game loop before its compiled passes (all 3^d conjunctions, bucket solve never undecided here)."""
    work, k, s, half_eta = game.workload, game.workload.n_queries, game.s, game.eta / 2
    log_d, log_w, cum = np.zeros(game.universe_size), np.empty(2 * k), np.zeros(k)
    records = np.empty(game.rounds, dtype=np.int64)
    uniforms = NoiseSource(seed).rng.random((game.rounds, 2))
    for t in range(game.rounds):
        np.multiply(t * true - cum, half_eta, out=log_w[:k])
        np.negative(log_w[:k], out=log_w[k:])
        if not np.isfinite(log_w.sum()):
            raise ValueError("log_weights must be finite")
        shifted = np.subtract(log_w, log_w.max())
        w = np.exp(shifted)
        c = _reference_gamma_scale(w, shifted, float(s), 4096)
        if c <= 0:
            raise RuntimeError("the reference covers the bucket solve only")
        w *= c
        action = sample_index(np.minimum(w, 1.0, out=w), uniforms[t, 0])
        records[t] = x = sample_index(np.exp(log_d - log_d.max()), uniforms[t, 1])
        values = work.on_universe(action % k)
        log_d += half_eta * (values if action < k else 1.0 - values)
        cum += _reference_at_record(x, work.d)
    return records


def game_ratio(n: int, epsilon: float, repeats: int) -> list[dict[str, object]]:
    """Interleaved A/B: the whole game of an E2 trial (d = 12, T = n / 6.4, s = 24 T) against ``reference_play``.

    Two rows: wall time, and CPU time of the process (on a shared machine the wall time also counts waiting for a
    core and for memory bandwidth that other jobs use).
    """
    data_seed, workload_seed, mech_seed = children(np.random.SeedSequence(0, spawn_key=(0,)), 3)
    _, work, true, analysts = build_problem({"data": {**E2_DATA, "n": n}}, data_seed, workload_seed)

    def game() -> PrivateEquilibriumRelease:
        return PrivateEquilibriumRelease(workload=work, analysts=analysts, epsilon=epsilon, delta=1e-6, n=n,
                                         rounds_rule="data_private", s_factor=24, seed=mech_seed)

    same = np.array_equal(game().play(true)[0], reference_play(game(), true, mech_seed))  # also compiles both
    name, reference = "Alg 3 game (compiled passes)", "Alg 3 game (numpy passes, 3^d records)"
    arms = {name: lambda: game().play(true), reference: lambda: reference_play(game(), true, mech_seed)}
    target = 2.0
    rows: list[dict[str, object]] = []
    for clock_name, clock in (("wall", time.perf_counter), ("CPU", time.process_time)):
        est = interleaved_ratios(arms, reference, repeats=repeats, clock=clock)[name]
        print(f"{est} ({clock_name} time); {game().rounds} rounds at n = {n}, eps = {epsilon:g}: "
              f"{est.candidate_seconds:.2f} s against {est.reference_seconds:.2f} s; same records: {same}")
        rows.append({**est.as_dict(), "name": f"{name}, d = 12, n = {n}, eps = {epsilon:g}, {clock_name} time",
                     "target": f"ratio >= {target:g}", "met": est.decide(target) if same else False,
                     "same_records": same})
    return rows


def main() -> None:
    """Parse the command line and run the timings."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--skip-e2", action="store_true")
    parser.add_argument("--ratio-n", type=int, default=1000, help="n of the game timed against its reference")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true", help=f"write {RESULTS}")
    args = parser.parse_args()
    rows = game_ratio(args.ratio_n, 10.0, args.repeats)
    if args.json:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({
            "title": "Query release: the Algorithm 3 game (d = 12, 2 x 3^12 actions)",
            "command": "python benchmarks/query_release.py " + " ".join(sys.argv[1:]),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "rows": rows}, indent=2) + "\n")
    game_round(args.rounds)
    if not args.skip_e2:
        e2_estimate(args.full)


if __name__ == "__main__":
    main()
