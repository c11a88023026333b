"""One vocabulary and one set of statistics for every claim dpstream checks.

A claim is the paper's sentence, a *rule* written before the run (the metric, the test over ALL grid points
with the trial-to-trial uncertainty, and the domain), what was measured, and one of four verdicts:

- ``confirmed``: the rule holds at every grid point it covers, with the stated uncertainty;
- ``not confirmed``: the rule was evaluated and does not hold (at some point the measurement contradicts it
  or fails to show it with the data the rule asks for);
- ``inconclusive``: the data or the check cannot decide (fewer than ``MIN_TRIALS`` trials per point, a bound
  that is trivially true, an audit without power);
- ``n/a``: outside the algorithm's domain (e.g. an infeasible parameter point).

Statistics (fixed before the run, all seeded, no tuning): a grid point's uncertainty is the 95% percentile
bootstrap interval of the trial mean (``bootstrap_mean_ci``, 2000 resamples over trials); a comparison of two
mechanisms at one point is the paired bootstrap interval of the mean difference over trials that share their
data (``paired_difference_ci``: trial i of every mechanism sees the same stream); a monotone trend is a
one-sided Spearman rank test over every (x, trial value) pair at level 0.05 (``monotone_trend``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

VERDICTS = ("confirmed", "not confirmed", "inconclusive", "n/a")
MIN_TRIALS = 3
"""Fewest trials per grid point from which a rule over trial means decides anything (fewer: inconclusive)."""
LEVEL = 0.95
N_BOOT = 2000
TREND_ALPHA = 0.05


@dataclass(frozen=True)
class Claim:
    """One checked claim: the paper's sentence, the rule fixed before the run, what was measured, the verdict."""

    claim: str
    rule: str
    measured: str
    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def row(self) -> dict[str, str]:
        """A row of ``<experiment>.claims.csv``."""
        return asdict(self)


def verdict_of(holds: bool | None) -> str:
    """True -> confirmed, False -> not confirmed, None -> inconclusive."""
    if holds is None:
        return "inconclusive"
    return "confirmed" if holds else "not confirmed"


def all_points(results: Iterable[bool | None]) -> bool | None:
    """A rule over every grid point: False if any point fails, else None if any cannot decide, else True.

    No points at all cannot decide (None): a rule is never confirmed over an empty grid.
    """
    results = list(results)
    if not results:
        return None
    if any(r is False for r in results):
        return False
    if any(r is None for r in results):
        return None
    return True


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed))


def bootstrap_mean_ci(values: Iterable[float], seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean of ``values`` (trials of one grid point; NaNs dropped).

    Returns (nan, nan) with fewer than ``MIN_TRIALS`` finite values: such a point cannot decide a rule.
    """
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=np.float64)
    if x.size < MIN_TRIALS:
        return (np.nan, np.nan)
    idx = _rng(seed).integers(0, x.size, size=(N_BOOT, x.size))
    means = x[idx].mean(axis=1)
    tail = (1.0 - LEVEL) / 2.0
    return float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail))


def point_means(df: pd.DataFrame, by: str | list[str], y: str) -> pd.DataFrame:
    """Per grid point: ``mean``, bootstrap ``lo`` / ``hi`` of the trial mean, and ``n`` trials (finite values)."""
    rows = []
    for key, g in df.groupby(by, sort=True):
        vals = g[y].to_numpy(dtype=np.float64)
        finite = vals[np.isfinite(vals)]
        lo, hi = bootstrap_mean_ci(finite)
        rows.append({"key": key, "mean": float(finite.mean()) if finite.size else np.nan, "lo": lo, "hi": hi,
                     "n": int(finite.size)})
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=["mean", "lo", "hi", "n"])
    return out.set_index("key").rename_axis(by if isinstance(by, str) else None)


def paired_difference_ci(a: pd.Series, b: pd.Series, seed: int = 0) -> tuple[float, float, float]:
    """Mean of a_i - b_i over the trials both have (aligned on the index, e.g. ``trial``) and its bootstrap interval.

    Returns (mean, lo, hi); lo and hi are NaN with fewer than ``MIN_TRIALS`` paired trials.
    """
    diff = (a - b).dropna().to_numpy(dtype=np.float64)
    diff = diff[np.isfinite(diff)]
    lo, hi = bootstrap_mean_ci(diff, seed)
    return (float(diff.mean()) if diff.size else np.nan, lo, hi)


def mean_below(a: pd.Series, b: pd.Series, seed: int = 0) -> bool | None:
    """Is the mean of ``a`` below the mean of ``b`` at one grid point (paired over trials)?

    True when the whole 95% interval of mean(a - b) is below 0; False when it is not (the data do not show
    a below b, including when a is clearly above); None with fewer than ``MIN_TRIALS`` paired trials.
    """
    _, lo, hi = paired_difference_ci(a, b, seed)
    if not np.isfinite(hi):
        return None
    return bool(hi < 0)


def mean_within(values: Iterable[float], low: float, high: float, seed: int = 0) -> bool | None:
    """Does the 95% bootstrap interval of the trial mean of ``values`` lie inside [low, high]?

    True when it does, False when it does not (the data do not show the mean inside, including an interval
    straddling a bound), None with fewer than ``MIN_TRIALS`` finite values.
    """
    lo, hi = bootstrap_mean_ci(values, seed)
    if not np.isfinite(lo):
        return None
    return bool(low <= lo and hi <= high)


def flat_within(points: pd.DataFrame, factor: float) -> tuple[bool | None, float]:
    """Is a curve flat within ``factor`` over its grid, given ``point_means`` of it (positive values)?

    The spread is max(hi) / min(lo) over the points' 95% intervals, so trial noise counts against
    flatness. Returns (spread <= factor, spread); None when fewer than 2 points or any point has fewer
    than ``MIN_TRIALS`` trials.
    """
    if len(points) < 2 or (points["n"] < MIN_TRIALS).any():
        return None, np.nan
    low = float(points["lo"].min())
    spread = float(points["hi"].max()) / low if low > 0 else np.inf
    return bool(spread <= factor), spread


def trial_values(df: pd.DataFrame, y: str, where: dict[str, Any]) -> pd.Series:
    """``y`` of the rows matching every ``column: value`` of ``where`` (numbers compared with isclose),
    indexed by ``trial`` so that two mechanisms' values pair up over trials."""
    keep = np.ones(len(df), dtype=bool)
    for col, value in where.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            keep &= np.isclose(df[col].to_numpy(dtype=np.float64), value)
        else:
            keep &= (df[col] == value).to_numpy()
    rows = df[keep]
    return pd.Series(rows[y].to_numpy(dtype=np.float64), index=pd.Index(rows["trial"], name="trial"))


def monotone_trend(x: Iterable[float], y: Iterable[float],
                   direction: Literal["increasing", "decreasing"]) -> tuple[bool | None, float, float]:
    """One-sided Spearman rank test that y moves with x in ``direction``, over every (x, trial value) pair.

    Returns (holds, rho, p): holds is True when p < 0.05 in the claimed direction, False otherwise, None when
    fewer than 2 distinct x values or fewer than ``MIN_TRIALS`` values per x on average (cannot decide).
    A constant y (no trend at all) is False: the claimed trend is not there.
    """
    x = np.asarray(list(x), dtype=np.float64)
    y = np.asarray(list(y), dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    distinct = np.unique(x).size
    if distinct < 2 or x.size < MIN_TRIALS * distinct:
        return None, np.nan, np.nan
    if np.ptp(y) == 0:
        return False, 0.0, 1.0
    alternative = "greater" if direction == "increasing" else "less"
    res = spearmanr(x, y, alternative=alternative)
    return bool(res.pvalue < TREND_ALPHA), float(res.statistic), float(res.pvalue)


TREND_RULE = ("for each of {mechs}: one-sided Spearman rank test that {y} is {direction} in {x} over every "
              "(x, trial value) pair, p < 0.05 (a mechanism missing from the rows: inconclusive)")
FLAT_RULE = ("for each of {mechs}: max over {x} of the upper 95% bootstrap end of mean {y} / min of the lower "
             "ends <= {factor:g}")


def trend_claim(df: pd.DataFrame, claim: str, mechs: tuple[str, ...], x: str, y: str,
                direction: Literal["increasing", "decreasing"], names: dict[str, str] | None = None) -> Claim:
    """``monotone_trend`` of ``y`` in ``x`` for every mechanism in ``mechs`` (``mechanism.name``); all must hold."""
    names = names or {}
    results, parts = [], []
    for m in mechs:
        rows = df[df["mechanism.name"] == m]
        holds, rho, p = monotone_trend(rows[x], rows[y], direction) if len(rows) else (None, np.nan, np.nan)
        results.append(holds)
        parts.append(f"{names.get(m, m)} " + ("absent" if not len(rows) else f"rho {rho:.2f} p {p:.2g}"
                                                 if holds is not None else f"{len(rows)} values: too few"))
    rule = TREND_RULE.format(mechs=", ".join(names.get(m, m) for m in mechs), y=y, direction=direction, x=x)
    return Claim(claim, rule, "; ".join(parts), verdict_of(all_points(results)))


def flat_claim(df: pd.DataFrame, claim: str, mechs: tuple[str, ...], x: str, y: str, factor: float,
               names: dict[str, str] | None = None) -> Claim:
    """``flat_within`` ``factor`` of ``y`` over ``x`` for every mechanism in ``mechs``; all must hold."""
    names = names or {}
    results, parts = [], []
    for m in mechs:
        flat, spread = flat_within(point_means(df[df["mechanism.name"] == m], x, y), factor)
        results.append(flat)
        parts.append(f"{names.get(m, m)} " + (f"{spread:.2f}x" if flat is not None else "too few trials or points"))
    rule = FLAT_RULE.format(mechs=", ".join(names.get(m, m) for m in mechs), x=x, y=y, factor=factor)
    return Claim(claim, rule, "spread " + ", ".join(parts), verdict_of(all_points(results)))


def fmt_series(series: pd.Series, digits: int = 3) -> str:
    """``k: v`` pairs of a small series for the ``measured`` column."""
    return ", ".join(f"{k:g}: {v:.{digits}g}" if isinstance(k, int | float) else f"{k}: {v:.{digits}g}"
                     for k, v in series.items())


ClaimFunction = Callable[[pd.DataFrame, dict[str, Any]], list[Claim]]
"""An experiment's ``claims:`` entry: ``(rows, experiment) -> list[Claim]``."""
