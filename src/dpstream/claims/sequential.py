"""Sequential decision rules that keep their error rate: group-sequential alpha spending over ``make verify``'s batches.

Design (Lan and DeMets, "Discrete sequential boundaries for clinical trials", Biometrika 1983; the O'Brien-Fleming-type
spending function alpha(t) = 2 - 2 Phi(z_{1 - alpha/2} / sqrt(t))). Chosen over an anytime-valid confidence sequence
(Robbins' normal mixture, betting) because ``make verify`` looks at the data a few times only, after whole batches:
with K planned looks the O'Brien-Fleming boundary spends almost nothing early and its last boundary is within a few
percent of the fixed-sample quantile, so the trial budget is ~3% above a single test's, where a confidence sequence
valid at every n pays a log factor in width at every n. Lan-DeMets spending computes each boundary from the
information fraction actually reached (trials so far / registered budget), so a resumed run with uneven batches keeps
the error rate; looking beyond the budget is not allowed (the alpha is spent): the claim stays inconclusive and says how
many trials a new registration would need.

Every claim point is decided from ALL trials of the new master seeds, pooled (independent draws), by two one-sided
tests on a per-trial statistic ``d`` whose claimed direction is negative (the caller negates or subtracts margins):

- ``confirmed`` when "mu >= 0" (no effect in the claimed direction) is rejected;
- ``not confirmed`` when "mu <= -delta" (the effect is at least the smallest that matters, ``delta``) is rejected:
  the effect is shown to be absent, opposite, or smaller than what the sentence needs;
- ``inconclusive`` otherwise, with the trials a decision would need (``trials_needed``).

Each side is a group-sequential test at level ``alpha``: at mu = 0 a wrong ``confirmed`` has probability <= alpha, at
mu = -delta (the least-favourable point for a true claim) a wrong ``not confirmed`` has probability <= alpha, over all
looks. When both sides reject at one look (the effect is real and below ``delta``) the verdict is ``not confirmed``:
the sentence asserts an effect that matters.

Rule families (``RULES``):

- ``location``: a mean over trials (paired difference, margin-shifted value); the z boundary is used on the t
  statistic through its p-value (t quantile of Phi(c)), which keeps the level at batch sizes >= ``MIN_BATCH``.
- ``trend``: the per-trial least-squares slope of y on log x (one stream per trial is one block, like Page's test),
  then ``location`` on the slopes; ``delta`` is the smallest slope that matters (log change over the grid / log span).
- ``quantile``: an order-statistic (sign) test of the median of ``d``, distribution-free for skewed or heavy-tailed
  values: the count of trials with d < 0 (confirm side) or d > -delta (refute side) against Binomial(n, 1/2), exact
  boundaries from the spending function by dynamic programming over counts.
- ``every point``: a rule over m points confirms only if every point confirms (intersection-union, no correction
  needed) and is refuted when some point is refuted under the sequential Holm procedure (Ye, Li and Wang, "Group
  sequential Holm procedures", Stat. Med. 2013): the remaining points are tested with boundaries at alpha / (m - r)
  where r points are already refuted, and a refuted point stays refuted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom, norm
from scipy.stats import t as t_dist

ALPHA = 0.05
"""Default one-sided level of each side of a claim (a wrong confirm, a wrong refute), family-wise over its points."""
POWER = 0.8
"""Power at the smallest effect that matters the first batch is sized for (``plan_budget``)."""
LOOKS = 3
"""Planned looks (batches) of a registered trial budget."""
MIN_BATCH = 10
"""Fewest trials in a first batch: the t-to-z conversion of ``location`` keeps its level from about 10 trials."""
RULES = ("location", "trend", "quantile")
VERDICTS = ("confirmed", "not confirmed", "inconclusive")
_GRID = 1201  # points of the density grid of ``z_boundaries`` (error < 1e-5 on the crossing probabilities)


def obrien_fleming_spent(fraction: float, alpha: float) -> float:
    """Alpha spent by information fraction ``fraction`` (0..1] under the O'Brien-Fleming-type Lan-DeMets function."""
    if fraction <= 0:
        return 0.0
    f = min(fraction, 1.0)
    return float(2.0 - 2.0 * norm.cdf(norm.ppf(1.0 - alpha / 2.0) / np.sqrt(f)))


def _propagate(density: np.ndarray, grid: np.ndarray, new_grid: np.ndarray, step: float) -> np.ndarray:
    """Density of S + N(0, step) on ``new_grid`` from the density of S on ``grid`` (trapezoid weights)."""
    h = grid[1] - grid[0]
    weights = density * h
    weights[[0, -1]] *= 0.5
    kernel = norm.pdf((new_grid[:, None] - grid[None, :]) / np.sqrt(step)) / np.sqrt(step)
    return np.asarray(kernel @ weights, dtype=np.float64)


@lru_cache(maxsize=256)
def z_boundaries(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    """Upper z boundaries c_1..c_K of a one-sided group-sequential test at level ``alpha`` (looks at ``fractions``).

    c_k solves P(Z_1 < c_1, ..., Z_{k-1} < c_{k-1}, Z_k >= c_k) = spent(t_k) - spent(t_{k-1}) under mu = 0, where
    Z_k = S(t_k) / sqrt(t_k) for a Brownian motion S (the score process of the pooled mean): the recursive numerical
    integration of Armitage, McPherson and Rowe (1969) on a grid of the continuation region.
    """
    if any(b <= a for a, b in zip((0.0, *fractions), fractions, strict=False)) or fractions[-1] > 1.0 + 1e-12:
        raise ValueError(f"information fractions must increase within (0, 1], got {fractions}")
    bounds: list[float] = []
    spent_before = 0.0
    grid = np.zeros(1)
    density = np.ones(1)  # a point mass at S(0) = 0, handled on the first look
    t_prev = 0.0
    for k, t in enumerate(fractions):
        increment = obrien_fleming_spent(t, alpha) - spent_before
        step = t - t_prev
        if k == 0:
            c = float(norm.isf(increment)) if increment > 0 else np.inf
            new_grid = np.linspace(-8.0 * np.sqrt(t), c * np.sqrt(t) if np.isfinite(c) else 8.0 * np.sqrt(t), _GRID)
            new_density = norm.pdf(new_grid / np.sqrt(t)) / np.sqrt(t)
        else:
            h = grid[1] - grid[0]
            w = density * h
            w[[0, -1]] *= 0.5

            def excess(c: float, w: np.ndarray = w, grid: np.ndarray = grid, step: float = step, t: float = t,
                       target: float = increment) -> float:
                return float(np.sum(w * norm.sf((c * np.sqrt(t) - grid) / np.sqrt(step)))) - target

            c = np.inf if increment <= 1e-15 else brentq(excess, -10.0, 40.0, xtol=1e-10)
            top = c * np.sqrt(t) if np.isfinite(c) else grid[-1] + 8.0 * np.sqrt(step)
            new_grid = np.linspace(min(grid[0], 0.0) - 8.0 * np.sqrt(step), top, _GRID)
            new_density = _propagate(density, grid, new_grid, step)
        bounds.append(float(c))
        spent_before += increment
        grid, density, t_prev = new_grid, new_density, t
    return tuple(bounds)


@lru_cache(maxsize=4096)
def t_boundary(z: float, n: int) -> float:
    """The z boundary ``z`` as a boundary for a t statistic on ``n`` trials (equal one-sided p-value)."""
    return float(t_dist.isf(norm.sf(z), n - 1)) if np.isfinite(z) else np.inf


@lru_cache(maxsize=4096)
def sign_boundaries(ns: tuple[int, ...], alpha: float, n_max: int) -> tuple[int, ...]:
    """Smallest counts b_k such that "X_k >= b_k at some look" has probability <= alpha under p = 1/2.

    X_k is the count of successes among the first ``ns[k]`` Bernoulli(1/2) trials; each b_k is the smallest count whose
    crossing probability at look k (not having crossed before) is within the alpha spent by ns[k] / n_max (exact, by
    dynamic programming over counts; never more than spent).
    """
    probs = np.ones(1)  # P(X = x, not crossed yet) for x = 0..n
    n_prev, spent_before, crossed = 0, 0.0, 0.0
    out = []
    for n in ns:
        step = binom.pmf(np.arange(n - n_prev + 1), n - n_prev, 0.5)
        probs = np.convolve(probs, step)
        budget = obrien_fleming_spent(n / n_max, alpha) - spent_before
        tail = np.cumsum(probs[::-1])[::-1]  # P(X >= b, not crossed)
        ok = np.nonzero(tail <= budget + 1e-15)[0]
        b = int(ok[0]) if ok.size else n + 1
        out.append(b)
        crossed += float(tail[b]) if b <= n else 0.0
        spent_before = crossed
        probs[b:] = 0.0
        n_prev = n
    return tuple(out)


@dataclass(frozen=True)
class Decision:
    """A claim point's verdict at a look: the verdict, its statistics and the trials a decision would need."""

    verdict: str
    n: int
    estimate: float
    confirm_stat: float
    refute_stat: float
    needed: int

    def text(self) -> str:
        """A short description for the ``measured`` column."""
        more = "" if self.verdict != "inconclusive" else f"; a decision needs about {self.needed} trials in all"
        return f"{self.verdict} after {self.n} trials (estimate {self.estimate:.4g}){more}"


def trials_needed(sd: float, delta: float, alpha: float = ALPHA, power: float = POWER, looks: int = LOOKS) -> int:
    """Trials of a ``looks``-look O'Brien-Fleming design that confirms with ``power`` at the smallest effect ``delta``.

    The fixed-sample size ((z_{1-alpha} + z_{power}) sd / delta)^2 times the design's inflation (its last boundary over
    z_{1-alpha}, squared, a slight overestimate); at least ``MIN_BATCH`` a look.
    """
    if not (np.isfinite(sd) and delta > 0):
        return -1
    last = z_boundaries(tuple((k + 1) / looks for k in range(looks)), alpha)[-1]
    n = ((last + norm.ppf(power)) * sd / delta) ** 2
    return max(int(np.ceil(n / looks)) * looks, MIN_BATCH * looks)


def plan_budget(sd: float, delta: float, alpha: float = ALPHA, power: float = POWER,
                looks: int = LOOKS) -> tuple[int, int]:
    """(first batch, budget): the registered trial budget from a pilot standard deviation and its even batches."""
    budget = trials_needed(sd, delta, alpha, power, looks)
    return budget // looks, budget


def _pooled(d: Any) -> np.ndarray:
    x = np.asarray(d, dtype=np.float64)
    return x[np.isfinite(x)]


def decide_location(d: Sequence[float] | np.ndarray, delta: float, budget: int, alpha: float = ALPHA,
                    looks_at: Sequence[int] = ()) -> Decision:
    """Two one-sided group-sequential t tests on the pooled trial values ``d`` (claimed: mean < 0; delta > 0).

    ``looks_at`` are the trial counts of the earlier looks (the boundaries spend alpha at every look made); the
    current look is at len(d). Zero spread: the mean decides outright (a deterministic quantity).
    """
    x = _pooled(d)
    n = int(x.size)
    if n < 3:
        return Decision("inconclusive", n, float(np.mean(x)) if n else np.nan, np.nan, np.nan,
                        max(budget, MIN_BATCH))
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    if sd == 0.0:
        verdict = "confirmed" if mean <= -delta else "not confirmed"
        return Decision(verdict, n, mean, np.inf if mean < 0 else -np.inf, np.inf if mean > -delta else -np.inf, n)
    fractions = tuple(min(m, budget) / budget for m in (*looks_at, n))
    c = t_boundary(z_boundaries(fractions, alpha)[-1], n)
    se = sd / np.sqrt(n)
    confirm, refute = -mean / se, (mean + delta) / se
    verdict = "not confirmed" if refute >= c else "confirmed" if confirm >= c else "inconclusive"
    return Decision(verdict, n, mean, confirm, refute, trials_needed(sd, delta, alpha))


def decide_quantile(d: Sequence[float] | np.ndarray, delta: float, budget: int, alpha: float = ALPHA,
                    looks_at: Sequence[int] = ()) -> Decision:
    """Sign tests of the median of ``d`` (claimed: median < 0): the order-statistic rule, group-sequential, exact.

    Confirm when the count of d < 0 crosses its boundary (median >= 0 rejected); refute when the count of d > -delta
    crosses it (median <= -delta rejected).
    """
    x = _pooled(d)
    n = int(x.size)
    ns = tuple(min(m, budget) for m in (*looks_at, n))
    if n < 3 or any(b <= a for a, b in zip(ns, ns[1:], strict=False)):
        return Decision("inconclusive", n, float(np.median(x)) if n else np.nan, np.nan, np.nan, max(budget, n))
    b = sign_boundaries(ns, alpha, budget)[-1]
    below, above = int(np.sum(x < 0)), int(np.sum(x > -delta))
    verdict = "not confirmed" if above >= b else "confirmed" if below >= b else "inconclusive"
    # the sign test at p = 1/2 against p = P(d < 0) at the smallest effect: size from the normal approximation
    needed = trials_needed(0.5, max(abs(below / n - 0.5), 0.05), alpha)
    return Decision(verdict, n, float(np.median(x)), float(below), float(above), needed)


def trial_slopes(x: Sequence[float] | np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-trial least-squares slope of y on log x: ``y`` is trials x points, ``x`` the points' values (positive)."""
    lx = np.log(np.asarray(x, dtype=np.float64))
    lx = lx - lx.mean()
    return np.asarray((np.asarray(y, dtype=np.float64) - np.mean(y, axis=1, keepdims=True)) @ lx / (lx @ lx))


def decide_trend(x: Sequence[float] | np.ndarray, y: np.ndarray, delta: float, budget: int, alpha: float = ALPHA,
                 looks_at: Sequence[int] = ()) -> Decision:
    """A decreasing trend of y in x: ``decide_location`` on the per-trial slopes (``trial_slopes``; claimed < 0)."""
    return decide_location(trial_slopes(x, y), delta, budget, alpha, looks_at)


Decider = Callable[..., Decision]
"""A one-point rule with ``decide_location``'s signature (``decide_location``, ``decide_quantile``)."""


def decide_every_point(points: Sequence[Sequence[float] | np.ndarray], delta: float, budget: int, alpha: float = ALPHA,
                       looks_at: Sequence[int] = (), refuted: Sequence[bool] = (),
                       decider: Decider = decide_location) -> tuple[str, list[Decision]]:
    """A rule over m points (claimed: mean < 0 at every point), pooled trials per point, sequential Holm.

    Confirmed when every point confirms at level ``alpha``; not confirmed when some point is refuted by the step-down
    procedure (a point is tested at alpha / (m - r) with r points refuted so far, at this or an earlier look, given in
    ``refuted``); else inconclusive. Returns the verdict and the per-point decisions (the refute side at the level
    that decided it). ``decider`` is the one-point rule (the sign test ``decide_quantile`` for a median at every point).
    """
    m = len(points)
    done = list(refuted) or [False] * m
    decisions = [decider(p, delta, budget, alpha, looks_at) for p in points]
    while True:
        level = alpha / max(m - sum(done), 1)
        step = [decider(p, delta, budget, level, looks_at) for p in points]
        new = [i for i in range(m) if not done[i] and step[i].verdict == "not confirmed"]
        if not new:
            break
        for i in new:
            done[i] = True
            decisions[i] = step[i]
    for i in range(m):  # a point not refuted by Holm is at most inconclusive on its refute side
        if not done[i] and decisions[i].verdict == "not confirmed":
            decisions[i] = Decision("inconclusive", *(getattr(decisions[i], f) for f in
                                                      ("n", "estimate", "confirm_stat", "refute_stat", "needed")))
    if any(done):
        return "not confirmed", decisions
    return ("confirmed" if all(d.verdict == "confirmed" for d in decisions) else "inconclusive"), decisions
