"""Can a rule tell data from noise? Permutation nulls and planted effects over a claim's own table.

A comparative or trend rule ("effect") is run on ``n`` permutation-null versions of its own table: within each trial
block (rows of one ``trial``: the same stream or data for every mechanism and grid point), the measured columns of
the rows are permuted jointly across the rows, so the mechanism and grid point a row's outcome came from no longer
matter; a pair of columns one rule compares inside a row (a release's error against the uniform distribution's on
the same data) is swapped at random, per row. A rule that confirms on more than ``MAX_NULL_SHARE`` of its nulls cannot
tell the data from noise: its verdict becomes ``inconclusive`` and its ``nulls`` column says so.

A rule that claims the absence of an effect ("absence": flat, limited, the same) confirms on its nulls by design;
it gets planted-effect tables instead: the same nulls with an effect of the size the paper would call real added
(``y`` scaled by ``factor`` from the smallest to the largest ``x``, log-linearly), and must confirm on at most
``MAX_NULL_SHARE`` of them. Level claims (a value at a point, precision 1, a recomputed bound) and implementation
checks are not comparative and get no null (``nulls`` says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

MAX_NULL_SHARE = 0.1
"""A rule may confirm on at most this share of its permutation nulls (or of its planted-effect tables)."""
SWAPPED = (("max_error", "uniform_max_error"), ("synopsis_max_error", "uniform_max_error"))
"""Column pairs compared inside one row; a null swaps them at random per row."""
CONFIG_PREFIXES = ("mechanism.", "data.", "profile.")
KEPT = {"experiment", "key", "trial", "seed", "epsilon", "delta", "width", "depth", "memory_kb", "noise",
        "release_times", "dpstream_version", "certified", "commit", "run_time", "prereg_hash"}
"""Columns that are part of a row's configuration (never permuted), besides the experiment's own grid keys."""


@dataclass(frozen=True)
class Planted:
    """An effect planted into a null table: ``y`` times ``factor`` ** (log(x / x_min) / log(x_max / x_min)).

    With ``mechanism`` set, the effect is that mechanism's ``y`` times ``factor`` at every ``x``, planted into the
    real table (a rule that two arms are the same must not confirm when one arm is ``factor`` times the other; a
    permutation across mechanisms would break the pairing the rule relies on).
    """

    y: str
    x: str
    factor: float
    mechanism: str | None = None


Test = str | Planted
"""``"effect"`` (permutation nulls must not confirm) or a ``Planted`` effect (planted tables must not confirm)."""

_FIG3B: dict[str, Test] = {'"All variants demonstrate': "effect", '"lazy sketches consistently': "effect"}
_FIG4C: dict[str, Test] = {'"as k~ increases, recall steadily improves"': "effect"}
_QR: dict[str, Test] = {"": "effect"}
TESTS: dict[str, dict[str, Test]] = {
    "fig3b": _FIG3B, "fig3b_wordfreq": _FIG3B,
    "fig3c": {'"All variants show': "effect", '"the benefit': "effect"},
    "fig3d": {"": "effect"},
    # 'limited' = spread <= 2x (LIMITED_EPS); a real effect: 3x over the eps grid
    "fig3e": {'"decreasing privacy': Planted("are_top15", "epsilon", 3.0), '"both LazyCMS': "effect"},
    "fig3f": {"": "effect"},
    "fig4a": {'"the ARE of reported items decreases': "effect", '"at the same memory level': "effect"},
    "fig4c": _FIG4C, "fig4c_wordfreq": _FIG4C, "fig4_k256": _FIG4C,
    # 'negligible' = at most 20% (FLAT_ARE 1.2); a real effect: 1.5x over the eps with recall 1
    "fig4d": {'"Counterintuitively': "effect", '"only the heaviest': "effect",
              '"As recall approaches 1': Planted("are", "epsilon", 1.5)},
    "fig4f": {'"At very low values of eps': "effect"},
    "qr_error_vs_eps": _QR, "qr_error_vs_n": _QR, "qr_error_vs_n_fair": _QR, "qr_error_vs_queries": _QR,
    "qr_alg4": {"Alg 4 releases": "effect", "Alg 4 error": "effect", "Alg 3 (one-query": "effect"},
    "qr_alg5": {"scaled constants": "effect", "Thm 5.2": "effect"},
    "qr_median_toy": _QR,
    "svt_c": {"Sparse becomes worse than ThresholdMonitor once": "effect"},
    # 'costs no accuracy' = within 0.9..1.1x (SECURE_BAND); a real cost: 1.3x on the secure arm at every memory
    "beyond_memory": {"LazyCMS exact discrete": Planted("are_top15_mean_t", "memory_kb", 1.3,
                                                        "lazycms_discrete_secure"),
                      "at 24 KB": "effect", "derived node noise": "effect", "Honaker": "effect", "BLT": "effect",
                      "the analytic": "effect"},
    "beyond_eps": {"": "effect"},
}


def test_of(exp_id: str, claim: str) -> Test | None:
    """The null test of one claim (first matching prefix of ``TESTS``), None for a level claim."""
    for prefix, test in TESTS.get(exp_id, {}).items():
        if claim.startswith(prefix):
            return test
    return None


def measured_columns(df: pd.DataFrame, grid_keys: set[str]) -> list[str]:
    """The columns a trial measured (everything but the configuration: ``CONFIG_PREFIXES``, ``KEPT``, grid keys)."""
    return [c for c in df.columns if not c.startswith(CONFIG_PREFIXES) and c not in KEPT and c not in grid_keys]


def permutation_null(df: pd.DataFrame, measured: list[str], rng: np.random.Generator) -> pd.DataFrame:
    """``df`` with its measured columns permuted jointly across the rows of each trial block, compared pairs swapped."""
    out = df.copy()
    blocks = df["trial"].to_numpy() if "trial" in df.columns else np.zeros(len(df))
    order = np.arange(len(df))
    for b in np.unique(blocks):
        where = np.flatnonzero(blocks == b)
        order[where] = rng.permutation(where)
    for c in measured:  # column by column: each keeps its dtype
        out[c] = df[c].to_numpy()[order]
    for a, b in SWAPPED:
        if a in out.columns and b in out.columns:
            flip = rng.random(len(out)) < 0.5
            va, vb = out[a].to_numpy(copy=True), out[b].to_numpy(copy=True)
            out[a], out[b] = np.where(flip, vb, va), np.where(flip, va, vb)
    return out


def plant(df: pd.DataFrame, effect: Planted) -> pd.DataFrame:
    """``df`` with ``effect`` added: y scaled log-linearly in x by ``effect.factor`` over the grid."""
    if effect.mechanism is not None:
        arm = df["mechanism.name"] == effect.mechanism
        return df.assign(**{effect.y: df[effect.y].where(~arm, df[effect.y] * effect.factor)})
    x = df[effect.x].astype(float)
    lo, hi = float(x.min()), float(x.max())
    share = np.log(x / lo) / np.log(hi / lo) if hi > lo else 0.0 * x
    return df.assign(**{effect.y: df[effect.y] * effect.factor ** share})


def null_shares(df: pd.DataFrame, judge: Callable[[pd.DataFrame], pd.DataFrame], exp_id: str, grid_keys: set[str],
                n: int, seed: int = 0) -> dict[int, tuple[Test, int]]:
    """Per claim index with a null test: (test, how many of ``n`` null or planted tables confirm it).

    ``judge`` maps a table to its claims table (rows in the same order as on the real table).
    """
    claims = judge(df)
    tests = {i: t for i, c in enumerate(claims["claim"]) if (t := test_of(exp_id, str(c))) is not None}
    if not tests or n <= 0:
        return {}
    measured = measured_columns(df, grid_keys)
    rng = np.random.default_rng(np.random.SeedSequence([seed, sum(map(ord, exp_id))]))
    plants = {t for t in tests.values() if isinstance(t, Planted)}
    counts = dict.fromkeys(tests, 0)
    for _ in range(n):
        null = permutation_null(df, measured, rng)
        tables: dict[Test, pd.DataFrame] = {"effect": null,
                                            **{p: plant(df if p.mechanism else null, p) for p in plants}}
        judged = {key: _judged(judge, table) for key, table in tables.items()}
        for i, t in tests.items():
            out = judged[t]
            counts[i] += int(out is not None and i < len(out) and out["verdict"].iloc[i] == "confirmed")
    return {i: (tests[i], counts[i]) for i in tests}


def _judged(judge: Callable[[pd.DataFrame], pd.DataFrame], table: pd.DataFrame) -> pd.DataFrame | None:
    """The claims of a null table; None when a rule cannot be evaluated on it (counted as not confirming)."""
    try:
        return judge(table)
    except (ValueError, KeyError, ZeroDivisionError, IndexError):
        return None


def apply_nulls(claims: pd.DataFrame, shares: dict[int, tuple[Test, int]], n: int) -> pd.DataFrame:
    """``claims`` with a ``nulls`` column; a rule confirming on > ``MAX_NULL_SHARE`` of its nulls is inconclusive."""
    notes, verdicts = [], list(claims["verdict"])
    for i in range(len(claims)):
        if i not in shares:
            notes.append("no null (a level claim or an implementation check)" if n > 0 else "nulls not run")
            continue
        test, hits = shares[i]
        what = (f"planted-effect tables ({test.y} x{test.factor:g} over {test.x})" if isinstance(test, Planted)
                else "permutation nulls")
        noise = hits > MAX_NULL_SHARE * n
        notes.append(f"confirms on {hits}/{n} {what}" + (": cannot tell data from noise" if noise else ""))
        if noise and verdicts[i] == "confirmed":
            verdicts[i] = "inconclusive"
    return claims.assign(verdict=verdicts, nulls=notes)
