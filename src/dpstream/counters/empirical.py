"""Each counter's release variance measured on many independent counters, against its formula (issue 34).

For a registered counter (``COUNTERS``: a factorisation with a noise source) at horizon T, ``n`` independent counters
built by the class itself (one ``SeedSequence`` child a cell) release at ``check_steps``: 1, 7, T/3, T/2, T and the
steps of the smallest and largest formula variance. Every counter is fed zeros, so a release is its noise.

- Noise drawn at push (stored nodes): the counters take every step 1..max(steps) through the class's own ``push``
  (one compiled pass over the n counters a step) and ``release_all`` reads them at the steps checked.
- Noise derived at release (Philox or ChaCha20 keyed nodes; a push of 0 changes nothing, ``sparse_pushes``): a fresh
  counter's ``release_all`` at each step checked is its noise, with no pushes. So that this shortcut cannot hide a
  bug, ``cross_check`` runs ``CROSS_COUNTERS`` counters of the same seed through the real push path with random 0/1
  data at every step and asserts their releases minus the true counts are the shortcut's releases (to
  ``CROSS_RTOL`` of the noise's standard deviation, float summation order aside).

The statistic of a cell is S = mean of the n squared releases (the noise has mean 0, so a bias counts against it),
against the formula v = ``Counter.variance(step)``. The rule, fixed before the run, with ``alpha`` the family-wise
level and K the number of cells of the whole configuration (Bonferroni):

- Gaussian nodes (``stored``, ``derived``): a release is a sum of independent normals, so n S / v ~ chi^2_n exactly;
  the two-sided p-value 2 min(F(n S / v), 1 - F(n S / v)).
- Laplace and discrete nodes: by the CLT, S ~ N(v, (2 + k) v^2 / n) with k the release's excess kurtosis, which for a
  weighted sum of independent symmetric nodes is at most max(0, the node's excess kurtosis) (``node_excess_kurtosis``:
  3 for Laplace, from the probability mass function for the discrete Gaussian and discrete Laplace at the node
  scale); the two-sided normal p-value of z = (S - v) / sqrt((2 + k) v^2 / n), with k at its bound (conservative).

Verdict: ``mismatch`` when p < alpha / K; else ``match`` when the acceptance band (the S / v a cell accepts) lies
within 1 +- ``MAX_HALF_WIDTH``; else ``inconclusive`` (too few counters to tell). A cell the budget does not cover
(``STATE_BYTES``: the stored square root and ``unbounded``, O(T) state a counter) is ``not run``. Above the horizons
checked, the formula stands.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

import dpstream
from dpstream.counters.base import Counter
from dpstream.counters.registry import COUNTERS, CounterDescriptor
from dpstream.files import write_atomically
from dpstream.noise import children
from dpstream.pages import write_between
from dpstream.provenance import git_commit

EPSILON, DELTA = 1.0, 1e-6
"""The (epsilon, delta) every counter is calibrated for (m = 1, classic calibration), as the leaderboard's."""
ALPHA = 0.01
"""Family-wise level of a run: a cell is a mismatch at p < ALPHA / (cells of the configuration)."""
MAX_HALF_WIDTH = 0.25
"""A cell whose acceptance band on S / v is wider than 1 +- this says ``inconclusive`` rather than ``match``."""
CROSS_COUNTERS = 1000
"""Counters of the push-path cross-check of a derived-noise counter."""
CROSS_RTOL = 1e-9
"""Largest |push path - shortcut| of the cross-check, over the noise's standard deviation at the step."""
STATE_BYTES = 2**31
"""Most bytes of counter state (8-byte counts) a cell allocates; a counter past it is ``not run``."""
GAUSSIAN = ("gaussian",)
"""Node distributions whose releases are exactly normal (chi-square rule)."""
SOURCES = Path(__file__).resolve().parents[1]
"""The package's sources: a row's ``commit`` is ``-dirty`` when any file here (untracked ones too) differs from it."""


def check_steps(variance: np.ndarray) -> tuple[int, ...]:
    """Steps checked at horizon T = len(variance) (variance[s - 1] the formula at step s).

    1, 7, T/3, T/2, T, and the first steps of the smallest and largest variance, each within [1, T].
    """
    horizon = len(variance)
    wanted = {1, 7, horizon // 3, horizon // 2, horizon, int(np.argmin(variance)) + 1, int(np.argmax(variance)) + 1}
    return tuple(sorted(s for s in wanted if 1 <= s <= horizon))


def node_excess_kurtosis(counter: Counter) -> float:
    """Excess kurtosis of one node noise of ``counter`` at its scale (0 for the normal, 3 for Laplace).

    The discrete Gaussian N_Z(0, s^2) and discrete Laplace (pmf ~ exp(-|k| / b)) from their mass functions.
    """
    distribution, scale = counter.source.distribution, float(counter._noise_scale)
    if distribution == "gaussian":
        return 0.0
    if distribution == "laplace":
        return 3.0
    k = np.arange(-int(60 * scale) - 60, int(60 * scale) + 61, dtype=np.float64)
    logp = -k**2 / (2 * scale**2) if distribution == "discrete_gaussian" else -np.abs(k) / scale
    p = np.exp(logp - logp.max())
    p /= p.sum()
    m2, m4 = float((k**2 * p).sum()), float((k**4 * p).sum())
    return m4 / m2**2 - 3.0


@dataclass(frozen=True)
class Judged:
    """The rule's outcome on one cell: p-value, band on S / v, verdict."""

    p: float
    band_low: float
    band_high: float
    verdict: str


def judge(second_moment: float, variance: float, n: int, distribution: str, kurtosis: float,
          level: float) -> Judged:
    """The verdict of one cell at per-cell level ``level`` (the family-wise alpha over K)."""
    ratio = second_moment / variance
    if distribution in GAUSSIAN:
        chi2 = stats.chi2(n)
        p = float(min(1.0, 2 * min(chi2.cdf(n * ratio), chi2.sf(n * ratio))))
        low, high = float(chi2.ppf(level / 2)) / n, float(chi2.isf(level / 2)) / n
    else:
        sd = math.sqrt((2.0 + max(0.0, kurtosis)) / n)
        p = float(2 * stats.norm.sf(abs(ratio - 1) / sd))
        half = float(stats.norm.isf(level / 2)) * sd
        low, high = 1 - half, 1 + half
    if p < level:
        verdict = "mismatch"
    elif low >= 1 - MAX_HALF_WIDTH and high <= 1 + MAX_HALF_WIDTH:
        verdict = "match"
    else:
        verdict = "inconclusive"
    return Judged(p, low, high, verdict)


Builder = Callable[[CounterDescriptor, int, int, np.random.SeedSequence], Counter]


def build(cls: CounterDescriptor, n: int, horizon: int, seed: np.random.SeedSequence) -> Counter:
    """``cls`` with n counters over ``horizon`` at (``EPSILON``, ``DELTA``), m = 1, classic calibration."""
    return cls(n=n, horizon=horizon, epsilon=EPSILON, delta=DELTA, seed=seed)


def releases(counter: Counter, steps: Iterable[int], data: np.random.Generator | None = None) -> dict[int, np.ndarray]:
    """Every counter's release minus its true count at each of ``steps``, through the class's ``push``.

    The counters take every step 1..max(steps): increments 0, or 0/1 from ``data``.
    """
    wanted, n = sorted(steps), counter.n
    cells, out = np.arange(n, dtype=np.int64), {}
    values, true = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for s in range(1, wanted[-1] + 1):
        if data is not None:
            values = data.integers(0, 2, n, dtype=np.int64)
            true += values
        counter.push(cells, np.full(n, s, dtype=np.int64), values)
        if s in wanted:
            out[s] = np.asarray(counter.release_all(np.full(n, s, dtype=np.int64)), dtype=np.float64) - true
    return out


def derived_releases(counter: Counter, steps: Iterable[int]) -> dict[int, np.ndarray]:
    """A derived-noise counter's releases at ``steps`` with no pushes: its noise at each step (``sparse_pushes``)."""
    return {s: np.asarray(counter.release_all(np.full(counter.n, s, dtype=np.int64)), dtype=np.float64).copy()
            for s in sorted(steps)}


def cross_check(cls: CounterDescriptor, horizon: int, steps: tuple[int, ...], seed: np.random.SeedSequence,
                variance: np.ndarray, builder: Builder = build, n: int = CROSS_COUNTERS) -> float:
    """Largest |push path - shortcut| over the noise's sd, for ``n`` counters of one seed, data 0/1 at every step."""
    data_seed, counter_seed = children(seed, 2)
    pushed = releases(builder(cls, n, horizon, counter_seed), steps, np.random.default_rng(data_seed))
    shortcut = derived_releases(builder(cls, n, horizon, counter_seed), steps)
    return max(float(np.abs(pushed[s] - shortcut[s]).max()) / math.sqrt(variance[s - 1]) for s in steps)


def planned(horizons: Iterable[int]) -> list[tuple[str, str, int, tuple[int, ...]]]:
    """(counter, node noise, T, steps) of every registered counter at ``horizons``, before any noise is drawn."""
    out = []
    for horizon in horizons:
        for key in COUNTERS:
            formula = build(COUNTERS[key], 1, horizon, np.random.SeedSequence(0)).variance(np.arange(1, horizon + 1))
            out.append((*key, horizon, check_steps(np.asarray(formula, dtype=np.float64))))
    return out


def fits(cls: CounterDescriptor, n: int, horizon: int) -> bool:
    """Whether n counters of ``cls`` at ``horizon`` fit ``STATE_BYTES``."""
    return n * cls.bytes_per_counter(horizon, 8) <= STATE_BYTES


def check_cell(cls: CounterDescriptor, horizon: int, steps: tuple[int, ...], n: int, seed: np.random.SeedSequence,
               n_cells: int, alpha: float = ALPHA, builder: Builder = build,
               cross_counters: int = CROSS_COUNTERS) -> list[dict[str, Any]]:
    """Rows of one (counter, node noise, T): one per step, with the verdict and the run's configuration."""
    base = {"counter": cls.name, "node_noise": cls.node_noise, "distribution": cls.source.distribution,
            "horizon": horizon, "log2_horizon": math.log2(horizon), "steps": " ".join(map(str, steps)),
            "counters": n, "alpha": alpha, "cells": n_cells, "noise_version": json.dumps(cls.source.version())}
    if not fits(cls, n, horizon):
        return [{**base, "step": s, "path": "none", "verdict": "not run",
                 "reason": f"{n} counters hold {n * cls.bytes_per_counter(horizon, 8)} bytes > {STATE_BYTES}"}
                for s in steps]
    start = time.perf_counter()
    sample_seed, cross_seed = children(seed, 2)
    counter = builder(cls, n, horizon, sample_seed)
    variance = np.asarray(build(cls, 1, horizon, sample_seed).variance(np.arange(1, horizon + 1)), dtype=np.float64)
    kurtosis = node_excess_kurtosis(counter)
    derived = bool(cls.sparse_pushes)
    noise = derived_releases(counter, steps) if derived else releases(counter, steps)
    seconds = time.perf_counter() - start
    cross = cross_check(cls, horizon, steps, cross_seed, variance, builder, cross_counters) if derived else math.nan
    rows = []
    for s in steps:
        second = float(np.mean(noise[s] ** 2))
        judged = judge(second, float(variance[s - 1]), n, cls.source.distribution, kurtosis, alpha / n_cells)
        verdict = judged.verdict
        reason = ""
        if derived and not cross <= CROSS_RTOL:
            verdict, reason = "mismatch", f"push path differs from the release shortcut by {cross:.3g} sd"
        rows.append({**base, "step": s, "path": "release" if derived else "push", "formula_variance": variance[s - 1],
                     "empirical_second_moment": second, "ratio": second / variance[s - 1],
                     "empirical_mean": float(np.mean(noise[s])), "node_excess_kurtosis": kurtosis,
                     "rule": "chi2" if cls.source.distribution in GAUSSIAN else "clt_kurtosis_bound",
                     "p_value": judged.p, "band_low": judged.band_low, "band_high": judged.band_high,
                     "cross_counters": cross_counters if derived else 0, "cross_max_sd": cross,
                     "verdict": verdict, "reason": reason, "cell_seconds": seconds})
    return rows


def _commit(root: Path = SOURCES) -> str:
    """The checkout's commit, ``-dirty`` when the sources under ``root`` differ from it; empty without git."""
    return git_commit(root, untracked=True) or ""


def run(horizons: Iterable[int], n: int, seed: int, out: Path | None = None, alpha: float = ALPHA,
        keys: Iterable[tuple[str, str]] | None = None, only: Iterable[int] | None = None,
        log: Callable[[str], None] = print) -> pd.DataFrame:
    """Check every registered counter (or ``keys``, in their order) at ``horizons`` (or those of them in ``only``).

    The configuration is every registered counter at every one of ``horizons``, whatever runs: K counts all its
    cells, and cell i (in ``planned`` order) takes child i of ``SeedSequence(seed)``, so a cell's noise and verdict
    do not depend on which others run. Rows are written to ``out`` after each cell, beside the rows ``out`` already
    holds for other cells (a run cut short keeps what finished; runs of disjoint cells add up).
    """
    horizons = tuple(horizons)
    plan = planned(horizons)
    n_cells = sum(len(p[3]) for p in plan)
    seeds = dict(zip(((c, m, t) for c, m, t, _ in plan), children(np.random.SeedSequence(seed), len(plan)),
                     strict=True))
    steps_of = {(c, m, t): steps for c, m, t, steps in plan}
    env = {"seed": seed, "dpstream_version": dpstream.__version__, "numpy_version": np.__version__,
           "commit": _commit()}
    kept = pd.read_csv(out) if out is not None and out.exists() else pd.DataFrame()
    rows: list[dict[str, Any]] = []
    for horizon in (h for h in horizons if only is None or h in set(only)):
        for counter, noise in (COUNTERS if keys is None else keys):
            cell_key = (counter, noise, horizon)
            start = time.perf_counter()
            cell = check_cell(COUNTERS[counter, noise], horizon, steps_of[cell_key], n, seeds[cell_key], n_cells,
                              alpha)
            index = list(seeds).index(cell_key)
            rows += [{**r, **env, "seed_index": index} for r in cell]
            verdicts = ", ".join(f"{r['step']}:{r['verdict']}" for r in cell)
            log(f"{counter}/{noise} T=2^{int(math.log2(horizon))}: {time.perf_counter() - start:.1f} s  {verdicts}")
            if out is not None:
                _write(kept, pd.DataFrame(rows), out)
    return pd.DataFrame(rows)


CELL = ["counter", "node_noise", "horizon"]


def _write(kept: pd.DataFrame, new: pd.DataFrame, out: Path) -> None:
    """``new`` and the rows of ``kept`` for other cells, in registry then horizon order, to ``out``.

    Written whole or not at all (``files.write_atomically``): a run killed, or a disk that fills, mid-write leaves
    the table as it was.
    """
    if len(kept):
        done = set(map(tuple, new[CELL].to_numpy().tolist()))
        kept = kept[[tuple(k) not in done for k in kept[CELL].to_numpy().tolist()]]
    both = pd.concat([kept, new], ignore_index=True) if len(kept) else new
    order = {key: i for i, key in enumerate(COUNTERS)}
    both = both.assign(_o=[order.get((c, m), len(order)) for c, m in zip(both.counter, both.node_noise, strict=True)])
    both = both.sort_values(["horizon", "_o", "step"], kind="stable").drop(columns="_o")
    write_atomically(out, lambda handle: both.to_csv(handle, index=False))


BLOCK = ("<!-- counters-variance -->", "<!-- /counters-variance -->")
"""The markers of the page's block generated from the table (``render``)."""


def _cell_text(group: pd.DataFrame) -> str:
    verdicts = group["verdict"].value_counts()
    if "not run" in verdicts:
        return "not run (O(T) state)"
    text = ", ".join(f"{verdicts[v]} {v}" for v in ("match", "mismatch", "inconclusive") if v in verdicts)
    return f"{text}; max abs(S/v - 1) {float((group['ratio'] - 1).abs().max()):.4f}"


def render(df: pd.DataFrame) -> str:
    """The page's block: what ran, the verdict counts, and one row per registered counter at each horizon."""
    horizons = sorted(df["horizon"].unique())
    counts = df["verdict"].value_counts()
    first = df.iloc[0]
    lines = [f"Configuration: the {len(COUNTERS)} registered counters and node noises x T = "
             f"{', '.join(f'2^{int(math.log2(h))}' for h in horizons)}, {int(first['counters'])} independent "
             f"counters a cell, seed {int(first['seed'])}, alpha = {first['alpha']:g} family-wise over "
             f"{int(first['cells'])} (counter, T, step) cells (Bonferroni). Of the {len(df)} cells in the table: "
             + ", ".join(f"{counts.get(v, 0)} {v}" for v in ("match", "mismatch", "inconclusive", "not run"))
             + (f"; {missing} not finished in the time the run had." if (missing := int(first["cells"]) - len(df))
                else "."),
             "", "| counter | node noise | " + " | ".join(f"T = 2^{int(math.log2(h))}" for h in horizons) + " |",
             "|---|---|" + "---|" * len(horizons)]
    for counter, noise in COUNTERS:
        mine = df[(df["counter"] == counter) & (df["node_noise"] == noise)]
        cells = [_cell_text(mine[mine["horizon"] == h]) if (mine["horizon"] == h).any() else "not finished"
                 for h in horizons]
        lines.append(f"| {counter} | {noise} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_block(page: Path, df: pd.DataFrame) -> None:
    """Replace the text between the ``BLOCK`` markers of ``page`` by ``render(df)``."""
    write_between(page, BLOCK, render(df))


def main(argv: list[str] | None = None) -> None:
    """``python -m dpstream.counters.empirical``: the check, written to ``--out``, its summary to ``--page``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log2-horizons", type=int, nargs="+", default=[14, 16], help="the configuration's T")
    parser.add_argument("--run-log2-horizons", type=int, nargs="*", default=None, help="run these of them only")
    parser.add_argument("--counters", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--alpha", type=float, default=ALPHA)
    parser.add_argument("--only", nargs="*", default=None, help="counter/node_noise pairs, in this order")
    parser.add_argument("--out", type=Path, default=Path("results/tables/counters_variance.csv"))
    parser.add_argument("--page", type=Path, default=None, help="a page with the generated block to rewrite")
    parser.add_argument("--render-only", action="store_true", help="rewrite --page from --out, run nothing")
    args = parser.parse_args(argv)
    keys = None if args.only is None else [tuple(k.split("/")) for k in args.only]
    unknown = [k for k in keys or [] if k not in COUNTERS]
    if unknown:
        parser.error(f"unknown counter/node_noise {unknown}; allowed: {sorted('/'.join(k) for k in COUNTERS)}")
    if not args.render_only:
        only = None if args.run_log2_horizons is None else [2**h for h in args.run_log2_horizons]
        run([2**h for h in args.log2_horizons], args.counters, args.seed, args.out, args.alpha,
            keys, only)
    if args.page is not None:
        write_block(args.page, pd.read_csv(args.out))


if __name__ == "__main__":
    main()
