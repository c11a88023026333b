"""One vocabulary and one set of statistics for every claim dpstream checks.

A claim is the paper's sentence, a *rule* written before the run (the metric, the test over ALL grid points
with the trial-to-trial uncertainty, and the domain), what was measured, and one of four verdicts:

- ``confirmed``: the rule holds at every grid point it covers, with the stated uncertainty;
- ``not confirmed``: the data contradict the rule at some point: the opposite effect is shown at 95%, a
  value is shown outside its stated range, or a deterministic quantity (zero trial spread) misses it;
- ``inconclusive``: the data or the check cannot decide: an interval straddles the rule's boundary, fewer
  than ``MIN_TRIALS`` trials per point, a bound that is trivially true, an audit without power. The same
  situation gets the same word in every family;
- ``n/a``: outside the algorithm's domain (e.g. an infeasible parameter point).

Statistics (fixed before the run, no tuning): a grid point's uncertainty is the 95% Student-t interval of the
trial mean (``mean_ci``; at 3-5 trials a percentile bootstrap covers only 75-85%); a comparison of two
mechanisms at one point is the t interval of the mean paired difference over trials that share their data
(``paired_difference_ci``: trial i of every mechanism sees the same stream); flatness is judged within each
trial (``flat_within``); a monotone trend is Page's trend test with trials as blocks (``monotone_trend``),
or a Spearman test over points where each point is one many-run summary. Each rule covers every grid point
of its panel; a panel's points are not corrected for multiplicity (a rule over k points that must hold at
ALL of them is conservative for ``confirmed``, and ``not confirmed`` at one point of k is reported with the
point named).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy.stats import page_trend_test, spearmanr
from scipy.stats import t as t_dist

from dpstream.claims.decide import Evidence
from dpstream.claims.sequential import trial_slopes
from dpstream.timing import log_ratio_interval

VERDICTS = ("confirmed", "not confirmed", "inconclusive", "n/a")
"""The four verdict words a claim can get, each decided by the claim's rule."""
MIN_TRIALS = 3
"""Fewest trials per grid point from which a rule over trial means decides anything (fewer: inconclusive)."""
LEVEL = 0.95
TREND_ALPHA = 0.05


@dataclass(frozen=True)
class Claim:
    """One checked claim: the paper's sentence, the rule fixed before the run, what was measured, the verdict."""

    claim: str
    rule: str
    measured: str
    verdict: str
    evidence: Evidence | None = field(default=None, compare=False, repr=False)
    """Per-trial values for the registered sequential rule (``dpstream.claims.decide``); not a column of the table."""

    def __post_init__(self) -> None:
        """Reject a verdict outside ``VERDICTS``."""
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def row(self) -> dict[str, str]:
        """A row of ``<experiment>.claims.csv``."""
        return {"claim": self.claim, "rule": self.rule, "measured": self.measured, "verdict": self.verdict}


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


def mean_ci(values: Iterable[float]) -> tuple[float, float]:
    """95% Student-t interval of the mean of ``values`` (the trials of one grid point; NaNs dropped).

    The t interval keeps its nominal coverage at 3-5 trials for roughly normal trial values, where a
    percentile bootstrap covers only ~75-85% (at 3 trials the bootstrap interval is [min, max]). Identical
    values give a zero-width interval (a deterministic outcome, e.g. one fixed trace). Returns (nan, nan)
    with fewer than ``MIN_TRIALS`` finite values: such a point cannot decide a rule.
    """
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=np.float64)
    if x.size < MIN_TRIALS:
        return (np.nan, np.nan)
    half = float(t_dist.ppf(0.5 + LEVEL / 2.0, x.size - 1)) * float(x.std(ddof=1)) / np.sqrt(x.size)
    return float(x.mean()) - half, float(x.mean()) + half


def point_means(df: pd.DataFrame, by: str | list[str], y: str) -> pd.DataFrame:
    """Per grid point: ``mean``, Student-t ``lo`` / ``hi`` of the trial mean, and ``n`` trials (finite values)."""
    rows = []
    for key, g in df.groupby(by, sort=True):
        vals = g[y].to_numpy(dtype=np.float64)
        finite = vals[np.isfinite(vals)]
        lo, hi = mean_ci(finite)
        rows.append({"key": key, "mean": float(finite.mean()) if finite.size else np.nan, "lo": lo, "hi": hi,
                     "n": int(finite.size)})
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=["mean", "lo", "hi", "n"])
    return out.set_index("key").rename_axis(by if isinstance(by, str) else None)


def paired_difference_ci(a: pd.Series, b: pd.Series) -> tuple[float, float, float]:
    """Mean of a_i - b_i over the trials both have (aligned on the index, e.g. ``trial``) and its t interval.

    Returns (mean, lo, hi); lo and hi are NaN with fewer than ``MIN_TRIALS`` paired trials.
    """
    for s in (a, b):
        if not s.index.is_unique:
            raise ValueError(f"paired values need one value per trial, got duplicate trials {list(s.index)}")
    diff = (a - b).dropna().to_numpy(dtype=np.float64)
    diff = diff[np.isfinite(diff)]
    lo, hi = mean_ci(diff)
    return (float(diff.mean()) if diff.size else np.nan, lo, hi)


def mean_below(a: pd.Series, b: pd.Series) -> bool | None:
    """Is the mean of ``a`` below the mean of ``b`` at one grid point (paired over trials)?

    True when the whole 95% interval of mean(a - b) is below 0; False when it is above 0 (a is shown to be
    above b); None when it contains 0 (the data cannot decide) or with fewer than ``MIN_TRIALS`` trials.
    """
    _, lo, hi = paired_difference_ci(a, b)
    if not np.isfinite(hi):
        return None
    if hi < 0:
        return True
    return False if lo > 0 else None


def mean_within(values: Iterable[float], low: float, high: float) -> bool | None:
    """Does the trial mean of ``values`` lie in [low, high]?

    True when its 95% t interval lies inside, False when the interval lies entirely outside (the mean is
    shown to be elsewhere), None when it straddles a bound or with fewer than ``MIN_TRIALS`` values.
    """
    lo, hi = mean_ci(values)
    if not np.isfinite(lo):
        return None
    if low <= lo and hi <= high:
        return True
    return False if (hi < low or lo > high) else None


def flat_within(rows: pd.DataFrame, x: str, y: str, factor: float, paired: bool = True) -> tuple[bool | None, float]:
    """Is y flat within ``factor`` over the grid x?

    ``paired`` (quantities of one stream, e.g. ARE: trial i sees the same stream at every x): per trial,
    spread_i = max_x y / min_x y over the x values that trial has at every point (positive y); True when the
    95% t interval of mean spread lies at or below ``factor``, False when it lies above, None when it straddles.
    Not ``paired`` (independent noise per run, e.g. wall-clock time): from the per-point t intervals of the
    mean, True when max(hi) / min(lo) <= factor, False when even max(lo) / min(hi) > factor, else None.
    None also with fewer than 2 grid points or fewer than ``MIN_TRIALS`` trials. Returns (verdict, spread):
    the mean per-trial spread, or the spread of the point means.
    """
    if not paired:
        points = point_means(rows, x, y)
        if len(points) < 2 or (points["n"] < MIN_TRIALS).any():
            return None, np.nan
        spread = float(points["mean"].max() / points["mean"].min())
        if float(points["hi"].max()) / float(points["lo"].min()) <= factor and points["lo"].min() > 0:
            return True, spread
        return (False if float(points["lo"].max()) / float(points["hi"].min()) > factor else None), spread
    table = rows.pivot_table(index="trial", columns=x, values=y, aggfunc="first").dropna()
    if table.shape[1] < 2 or table.shape[0] < MIN_TRIALS:
        return None, np.nan
    values = table.to_numpy(dtype=np.float64)
    spread = values.max(axis=1) / np.where(values.min(axis=1) > 0, values.min(axis=1), np.nan)
    lo, hi = mean_ci(spread)
    mean = float(np.nanmean(spread))
    if not np.isfinite(hi):
        return None, mean
    if hi <= factor:
        return True, mean
    return (False if lo > factor else None), mean


def spread_interval(rows: pd.DataFrame, x: str, y: str, paired: bool = True) -> tuple[float, float]:
    """The interval ``flat_within`` judges the spread by, NaN when it cannot decide.

    Paired: the 95% t interval of the mean per-trial spread; not paired: [max lo / min hi, max hi / min lo] of the
    per-point t intervals.
    """
    if not paired:
        points = point_means(rows, x, y)
        if len(points) < 2 or (points["n"] < MIN_TRIALS).any() or not points["lo"].min() > 0:
            return np.nan, np.nan
        return (float(points["lo"].max()) / float(points["hi"].min()),
                float(points["hi"].max()) / float(points["lo"].min()))
    table = rows.pivot_table(index="trial", columns=x, values=y, aggfunc="first").dropna()
    if table.shape[1] < 2 or table.shape[0] < MIN_TRIALS:
        return np.nan, np.nan
    values = table.to_numpy(dtype=np.float64)
    return mean_ci(values.max(axis=1) / np.where(values.min(axis=1) > 0, values.min(axis=1), np.nan))


def trial_values(df: pd.DataFrame, y: str, where: dict[str, Any]) -> pd.Series:
    """``y`` of the rows matching every ``column: value`` of ``where``, indexed by ``trial``.

    Numbers are compared with isclose; the index lets two mechanisms' values pair up over trials. Duplicate trials are
    an error.
    """
    keep = np.ones(len(df), dtype=bool)
    for col, value in where.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            keep &= np.isclose(df[col].to_numpy(dtype=np.float64), value)
        else:
            keep &= (df[col] == value).to_numpy()
    rows = df[keep]
    if not rows["trial"].is_unique:
        raise ValueError(f"{y} at {where}: more than one row per trial ({list(rows['trial'])}); "
                         "the selection must pick one grid point")
    return pd.Series(rows[y].to_numpy(dtype=np.float64), index=pd.Index(rows["trial"], name="trial"))


def monotone_trend(x: Iterable[float], y: Iterable[float], direction: Literal["increasing", "decreasing"],
                   blocks: Iterable[Any] | None = None) -> tuple[bool | None, float, float]:
    """One-sided test that y moves with x in ``direction``; returns (holds, statistic, p).

    With ``blocks`` (the trial of each value: one stream per trial), Page's trend test over the trials that
    have every x value, so trial-to-trial differences do not count as evidence (statistic: Page's L); it
    needs ``MIN_TRIALS`` complete trials and 3 x values. Without blocks (one value per x, e.g. a quantile over many
    runs), a Spearman rank test over the points (statistic: rho), needing at least 4 distinct x values.
    holds is True when p < 0.05 in the claimed direction; False when p < 0.05 in the OPPOSITE direction or
    y is exactly constant (decisively no trend); None otherwise (the data cannot decide).
    """
    frame = pd.DataFrame({"x": np.asarray(list(x), dtype=np.float64), "y": np.asarray(list(y), dtype=np.float64)})
    if blocks is not None:
        frame["block"] = list(blocks)
    frame = frame[np.isfinite(frame["x"]) & np.isfinite(frame["y"])]
    if frame["x"].nunique() < 2:
        return None, np.nan, np.nan
    if frame["y"].nunique() == 1 and len(frame) >= MIN_TRIALS:
        return False, 0.0, 1.0
    if blocks is not None:
        table = frame.pivot_table(index="block", columns="x", values="y", aggfunc="mean").dropna()
        if table.shape[0] < MIN_TRIALS or table.shape[1] < 3:  # Page's L needs 3 or more x values
            return None, np.nan, np.nan
        data = table.to_numpy(dtype=np.float64)  # columns in increasing x: Page's predicted order

        def p_of(d: np.ndarray) -> tuple[float, float]:
            res = page_trend_test(d)
            return float(res.statistic), float(res.pvalue)

        stat, p_up = p_of(data)
        _, p_down = p_of(data[:, ::-1])
    else:
        if frame["x"].nunique() < 4:
            return None, np.nan, np.nan
        stat = float(spearmanr(frame["x"], frame["y"]).statistic)
        p_up = float(spearmanr(frame["x"], frame["y"], alternative="greater").pvalue)
        p_down = float(spearmanr(frame["x"], frame["y"], alternative="less").pvalue)
    p_claim, p_other = (p_up, p_down) if direction == "increasing" else (p_down, p_up)
    if p_claim < TREND_ALPHA:
        return True, stat, p_claim
    return (False if p_other < TREND_ALPHA else None), stat, p_claim


def trend_two_sided(x: Iterable[float], y: Iterable[float],
                    blocks: Iterable[Any] | None = None) -> tuple[bool | None, float, float]:
    """Two-sided ``monotone_trend``: does y move with x in EITHER direction? Returns (holds, p_up, p_down).

    holds is True when one one-sided p is below 0.025 (two-sided level 0.05), False when y is exactly
    constant, None otherwise (the data cannot decide; no trend cannot be shown without a margin).
    """
    x, y = list(x), list(y)
    blocks = None if blocks is None else list(blocks)
    up, _, p_up = monotone_trend(x, y, "increasing", blocks)
    down, _, p_down = monotone_trend(x, y, "decreasing", blocks)
    if up is False and down is False:  # both opposite trends at once: only a constant y
        return False, p_up, p_down
    if min(p_up, p_down) < TREND_ALPHA / 2:
        return True, p_up, p_down
    return None, p_up, p_down


ZERO_SPREAD = "zero spread over trials: one deterministic series, no interval"
"""What ``measured`` says instead of a zero-width interval: the trials are copies of one outcome."""


def zero_width(lo: float, hi: float) -> bool:
    """Is [lo, hi] a finite interval of zero width (up to rounding: relative 1e-9), i.e. trials with zero spread?"""
    return bool(np.isfinite(lo) and np.isfinite(hi) and abs(hi - lo) <= 1e-9 * max(abs(lo), abs(hi)))


def fmt_ci(mean: float, lo: float, hi: float, sign: bool = False) -> str:
    """``mean [lo, hi]`` for the ``measured`` column (``sign``: with an explicit + or -).

    A zero-width interval (``zero_width``) is not printed: the value is a single deterministic series and says so.
    """
    spec = "+.3g" if sign else ".3g"
    if zero_width(lo, hi):
        return f"{mean:{spec}} ({ZERO_SPREAD})"
    return f"{mean:{spec}} [{lo:{spec}}, {hi:{spec}}]"


TREND_RULE = ("for each of {mechs}: Page's trend test (trials as blocks) that {y} is {direction} in {x}, "
              "p < 0.05: confirmed; the opposite trend at p < 0.05 or a constant {y}: not confirmed; else "
              "inconclusive (a mechanism missing from the rows: inconclusive)")
FLAT_UNPAIRED_RULE = ("for each of {mechs} (independent timing noise per run, so trials are not paired): with the "
                      "95% t interval of mean {y} at every {x}, max(upper) / min(lower) <= {factor:g}: confirmed; "
                      "max(lower) / min(upper) > {factor:g}: not confirmed; otherwise inconclusive")
FLAT_RULE = ("for each of {mechs}: per trial, spread = max over {x} of {y} / min over {x}; 95% t interval of the "
             "mean spread <= {factor:g}: confirmed, > {factor:g}: not confirmed, straddling: inconclusive")


def end_to_end(rows: pd.DataFrame, x: str, y: str) -> str:
    """The effect size of a trend: per trial y(last x) / y(first x), geometric mean and its log-scale 95% interval.

    Empty when the ratio is not defined (a value <= 0, fewer than 2 grid values); zero spread says so (``fmt_ci``).
    """
    if rows.empty or rows[x].nunique() < 2 or "trial" not in rows.columns:
        return ""
    table = rows.pivot_table(index="trial", columns=x, values=y, aggfunc="first").dropna()
    if table.empty or (table.to_numpy() <= 0).any():
        return ""
    ratio = table.iloc[:, -1] / table.iloc[:, 0]
    centre, lo, hi = ratio_ci(ratio)
    if not np.isfinite(lo):
        return f", {y} last/first x{centre:.3g} ({ratio.size} trials: no interval)"
    return f", {y} last/first x{fmt_ci(centre, lo, hi)}"


def trend_evidence(df: pd.DataFrame, mechs: tuple[str, ...], x: str, y: str,
                   direction: Literal["increasing", "decreasing"], log_offset: float,
                   names: dict[str, str] | None = None) -> Evidence | None:
    """Per mechanism, the per-trial slopes of ln(y + ``log_offset``) on ln x, negated for an increasing claim.

    The evidence of a registered ``trend`` rule (``dpstream.claims.decide``): one stream per trial is one block. None
    when a mechanism has fewer than two grid values on its complete trials.
    """
    names = names or {}
    points = {}
    for m in mechs:
        table = df[df["mechanism.name"] == m].pivot_table(index="trial", columns=x, values=y, aggfunc="first").dropna()
        if table.shape[1] < 2:
            return None
        slopes = trial_slopes(table.columns.to_numpy(dtype=np.float64),
                              np.log(table.to_numpy(dtype=np.float64) + log_offset))
        points[names.get(m, m)] = slopes if direction == "decreasing" else -slopes
    return Evidence.of("trend", points)


def trend_claim(df: pd.DataFrame, claim: str, mechs: tuple[str, ...], x: str, y: str,
                direction: Literal["increasing", "decreasing"], names: dict[str, str] | None = None,
                log_offset: float | None = None) -> Claim:
    """``monotone_trend`` of ``y`` in ``x`` for every mechanism in ``mechs`` (``mechanism.name``); all must hold.

    With ``log_offset`` the claim carries its registered evidence (``trend_evidence`` on ln(y + log_offset)).
    """
    names = names or {}
    results, parts = [], []
    for m in mechs:
        rows = df[df["mechanism.name"] == m]
        holds, stat, p = (monotone_trend(rows[x], rows[y], direction, rows["trial"]) if len(rows)
                          else (None, np.nan, np.nan))
        results.append(holds)
        parts.append(f"{names.get(m, m)} " + ("absent" if not len(rows) else f"p {p:.2g}" if np.isfinite(p)
                                                 else f"{len(rows)} values: too few") + end_to_end(rows, x, y))
    rule = TREND_RULE.format(mechs=", ".join(names.get(m, m) for m in mechs), y=y, direction=direction, x=x)
    evidence = None if log_offset is None else trend_evidence(df, mechs, x, y, direction, log_offset, names)
    return Claim(claim, rule, "; ".join(parts), verdict_of(all_points(results)), evidence)


def flat_claim(df: pd.DataFrame, claim: str, mechs: tuple[str, ...], x: str, y: str, factor: float,
               names: dict[str, str] | None = None, paired: bool = True) -> Claim:
    """``flat_within`` ``factor`` of ``y`` over ``x`` for every mechanism in ``mechs``; all must hold."""
    names = names or {}
    results, parts = [], []
    for m in mechs:
        rows = df[df["mechanism.name"] == m]
        flat, spread = flat_within(rows, x, y, factor, paired)
        results.append(flat)
        lo, hi = spread_interval(rows, x, y, paired)
        parts.append(f"{names.get(m, m)} " + (f"{spread:.2f}x " + (f"({ZERO_SPREAD})" if zero_width(lo, hi)
                                                                      else f"[{lo:.3g}, {hi:.3g}]")
                                                 if np.isfinite(spread) else "too few trials or points"))
    rule = (FLAT_RULE if paired else FLAT_UNPAIRED_RULE).format(mechs=", ".join(names.get(m, m) for m in mechs), x=x,
                                                                 y=y, factor=factor)
    return Claim(claim, rule, "spread " + ", ".join(parts), verdict_of(all_points(results)))


def fmt_series(series: pd.Series, digits: int = 3) -> str:
    """``k: v`` pairs of a small series for the ``measured`` column."""
    return ", ".join(f"{k:g}: {v:.{digits}g}" if isinstance(k, int | float) else f"{k}: {v:.{digits}g}"
                     for k, v in series.items())


ClaimFunction = Callable[[pd.DataFrame, dict[str, Any]], list[Claim]]
"""An experiment's ``claims:`` entry: ``(rows, experiment) -> list[Claim]``."""


INTERLEAVED = ("interleaved_ratio", "interleaved_low", "interleaved_high")
"""Columns of an interleaved A/B timing (``dpstream.timing.RatioEstimate``): reference time / candidate time."""
# the text enters the registered rules' hashes (claims.registration.rule_hash), so it keeps the registered module name
TIMING_PROTOCOL = ("Timing is decided only by interleaved A/B repetitions in one process (dpstream.harness.timing, "
                   ">= 5 rounds): per point the median ratio reference time / candidate time with its 95% "
                   "order-statistic interval on the log scale (columns interleaved_ratio, _low, _high); every interval "
                   "inside the band: confirmed; one wholly outside: not confirmed; otherwise inconclusive")
NO_INTERLEAVED = ("inconclusive by design without an interleaved measurement (wall-clock of separate trial runs, which "
                  "load on a shared machine moves several-fold, decides nothing); ")


def timing_claim(claim: Claim, rows: pd.DataFrame, band: Callable[[pd.Series], tuple[float, float]],
                 band_text: str) -> Claim:
    """A timing claim decided only from interleaved A/B ratios (``INTERLEAVED`` columns of ``rows``).

    ``band(row)`` is the (low, high) range the ratio must lie in at that row's point. Without such columns the
    verdict is ``inconclusive`` and the table-based rule's outcome is kept in ``measured`` as a description.
    """
    rule = f"{TIMING_PROTOCOL}; band: {band_text}. Descriptive (not deciding): {claim.rule}"
    if not set(INTERLEAVED) <= set(rows.columns) or rows["interleaved_ratio"].isna().all():
        return replace(claim, rule=NO_INTERLEAVED + rule, verdict="inconclusive",
                       measured=f"inconclusive (no interleaved measurement); the wall-clock rule alone would say "
                                f"{claim.verdict!r}: {claim.measured}")
    results, parts = [], []
    for _, r in rows.dropna(subset=["interleaved_ratio"]).iterrows():
        lo, hi = band(r)
        results.append(True if lo <= r["interleaved_low"] and r["interleaved_high"] <= hi
                       else False if (r["interleaved_high"] < lo or r["interleaved_low"] > hi) else None)
        parts.append(f"{r['interleaved_ratio']:.3g}x [{r['interleaved_low']:.3g}, {r['interleaved_high']:.3g}] "
                     f"(band {lo:.3g}..{hi:.3g})")
    return replace(claim, rule=rule, verdict=verdict_of(all_points(results)),
                   measured="interleaved ratios " + "; ".join(parts))


REFUTE_ALPHA = (1.0 - LEVEL) / 2.0
"""One-sided level of the refutation side: the upper tail the 95% two-sided interval leaves out."""


def refutation_p(a: pd.Series, b: pd.Series) -> float:
    """One-sided p-value that mean(a - b) > 0 over the paired trials (t test); NaN with fewer than ``MIN_TRIALS``.

    Zero spread (every trial the same difference, a deterministic series): 0 when the difference is positive, else 1.
    """
    diff = (a - b).dropna().to_numpy(dtype=np.float64)
    diff = diff[np.isfinite(diff)]
    if diff.size < MIN_TRIALS:
        return np.nan
    sd = float(diff.std(ddof=1))
    if sd == 0.0:
        return 0.0 if diff.mean() > 0 else 1.0
    return float(t_dist.sf(diff.mean() / (sd / np.sqrt(diff.size)), diff.size - 1))


def holm_rejects(p_values: list[float], alpha: float = REFUTE_ALPHA) -> list[bool]:
    """Holm's step-down procedure over a rule's points: which hypotheses are rejected at family-wise level ``alpha``."""
    p = np.asarray([1.0 if not np.isfinite(v) else v for v in p_values], dtype=np.float64)
    out = np.zeros(p.size, dtype=bool)
    for rank, i in enumerate(np.argsort(p, kind="stable")):
        if p[i] > alpha / (p.size - rank):
            break
        out[i] = True
    return out.tolist()


def below_at_points(pairs: list[tuple[pd.Series, pd.Series]]) -> list[bool | None]:
    """``mean_below`` at every point of a rule, its refutation side Holm-corrected over the points.

    A point holds when its 95% interval of mean(a - b) is below 0 (each point at its own level: a rule that must
    hold at ALL points is conservative); a point fails only when "a above b" is rejected by Holm's procedure over
    all the points at the one-sided 2.5% level (so one of k points above 0 by chance does not refute the rule).
    """
    results = [mean_below(a, b) for a, b in pairs]
    rejected = holm_rejects([refutation_p(a, b) for a, b in pairs])
    return [None if r is False and not rej else r for r, rej in zip(results, rejected, strict=True)]


HOLM_NOTE = ("; the refutation side is Holm-corrected over the rule's points (family-wise 2.5% one-sided): a point "
             "fails only when its 'above' is rejected by Holm's procedure, else it is inconclusive")


def ratio_ci(ratios: Iterable[float]) -> tuple[float, float, float]:
    """Geometric mean of per-trial ratios and its 95% t interval on the log scale: (centre, lo, hi).

    A ratio's natural scale is the log (x2 and x0.5 are symmetric): ``dpstream.timing.log_ratio_interval``.
    NaN interval with fewer than ``MIN_TRIALS`` finite ratios or a ratio <= 0 (no log).
    """
    x = np.asarray([v for v in ratios if np.isfinite(v)], dtype=np.float64)
    if x.size < MIN_TRIALS or np.any(x <= 0):
        return (float(np.exp(np.log(x).mean())) if x.size and np.all(x > 0) else np.nan), np.nan, np.nan
    return log_ratio_interval(x)


def deciding_effect(pairs: list[tuple[pd.Series, pd.Series]], labels: list[str]) -> str:
    """The effect of a rule "a below b at every point", at the point that decides it, with its interval.

    A rule that must hold at every point stands or falls with the point whose 95% interval of mean(a - b) reaches
    highest: that point's mean paired difference and interval are the rule's effect size (``paired_difference_ci``).
    Points with fewer than ``MIN_TRIALS`` paired trials have no interval and are named as such.
    """
    best: tuple[float, str, float, float, float] | None = None
    for (a, b), label in zip(pairs, labels, strict=True):
        mean, lo, hi = paired_difference_ci(a, b)
        if np.isfinite(hi) and (best is None or hi > best[0]):
            best = (hi, label, mean, lo, hi)
    if best is None:
        return "effect: no point has 3 paired trials (no interval)"
    _, label, mean, lo, hi = best
    return f"effect at the deciding point ({label}): mean paired difference {fmt_ci(mean, lo, hi, sign=True)}"


def trend_effect(x: Iterable[float], y: Iterable[float], blocks: Iterable[Any]) -> str:
    """The size of a trend over x, per block (trial): y at the largest x against y at the smallest, with its interval.

    Positive y: the geometric mean of the per-trial ratios y(x_max) / y(x_min) and its 95% t interval on the log
    scale (``ratio_ci``); otherwise the mean per-trial difference and its t interval (``mean_ci``). Fewer than
    ``MIN_TRIALS`` trials with both ends: no interval.
    """
    frame = pd.DataFrame({"x": np.asarray(list(x), dtype=np.float64), "y": np.asarray(list(y), dtype=np.float64),
                          "block": list(blocks)})
    frame = frame[np.isfinite(frame["x"]) & np.isfinite(frame["y"])]
    if frame["x"].nunique() < 2:
        return "change: fewer than 2 x values"
    x_lo, x_hi = frame["x"].min(), frame["x"].max()
    ends = frame[frame["x"].isin([x_lo, x_hi])].pivot_table(index="block", columns="x", values="y",
                                                             aggfunc="mean").dropna()
    first, last = ends[x_lo].to_numpy(), ends[x_hi].to_numpy()
    span = f"from x = {x_lo:.3g} to {x_hi:.3g}"
    if len(ends) and np.all(first > 0) and np.all(last > 0):
        centre, lo, hi = ratio_ci(last / first)
        return f"change {span}: x{fmt_ci(centre, lo, hi)} (per-trial ratio, log-scale interval)"
    diff = last - first
    lo, hi = mean_ci(diff)
    centre = float(diff.mean()) if diff.size else np.nan
    return f"change {span}: {fmt_ci(centre, lo, hi, sign=True)} (per-trial difference)"
