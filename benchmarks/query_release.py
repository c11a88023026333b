"""Speed goals of the query-release family (spec; issue): prints numbers, asserts nothing.

1. One round of the Algorithm 3 game over ~1e6 actions (d = 12: 2 x 3^12 = 1,062,882) in <= 30 ms.
2. The error-vs-n experiment (E2) at d = 12 up to n = 4000 for four eps values within 30 minutes on 2 cores:
   estimated from measured per-trial times of each mechanism (``--full`` runs every E2 trial once, serially).

Usage: .venv/bin/python benchmarks/query_release.py [--rounds 200] [--full]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dpstream.query_release import Conjunctions, PrivateEquilibriumRelease, assign_analysts, histogram, product_mixture
from dpstream.query_release._kernels import sample_index
from dpstream.query_release.gamma import gamma_projection
from dpstream.trials.query_release import run_trial

E2_N = (250, 500, 1000, 2000, 4000)
E2_EPS = (1.0, 10.0, 30.0, 100.0)


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
    data = {"_target_": "dpstream.query_release.product_mixture", "d": 12, "components": 3, "concentration": 0.5,
            "workload": "conjunctions", "analysts": 10}
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


def main() -> None:
    """Parse the command line and run the timings."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--skip-e2", action="store_true")
    args = parser.parse_args()
    game_round(args.rounds)
    if not args.skip_e2:
        e2_estimate(args.full)


if __name__ == "__main__":
    main()
