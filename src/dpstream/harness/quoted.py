"""Numbers the documentation quotes from results, each computed from its committed table when a page is rendered.

A page quotes one between ``<!-- q: NAME -->`` and ``<!-- /q -->`` (``NAME`` a key of ``QUOTED``); ``make readme``
(``dpstream.harness.readme``) writes the value computed from ``results/tables`` there, and the test suite's check
fails when the page's text differs from what the tables give. Speed-ups are quoted only from interleaved in-process
timing (``experiment=fig3a_speedup``), never from the wall-clock of separate trials.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from dpstream.claims.sketch import speedups
from dpstream.harness.rule_notes import declared_trend, differences_table, generic_rule_paragraph
from dpstream.plots.names import relabel

FIG3F_EPS = (0.05, 0.3, 1.0, 2.0)
NOT_TIMED = ("not measured yet: `experiment=fig3a_speedup` (Punctual against Lazy in interleaved rounds in one "
             "process) has no committed table")


def _table(tables: Path, exp: str) -> pd.DataFrame | None:
    path = tables / f"{exp}.csv"
    return pd.read_csv(path) if path.exists() else None


def speedup(punctual: str) -> Callable[[Path], str]:
    """Per memory, the median Punctual / Lazy speed-up of the interleaved timing, its trial range and interval."""
    def value(tables: Path) -> str:
        df = _table(tables, "fig3a_speedup")
        return NOT_TIMED if df is None else speedups(df, punctual)
    return value


def noise_ratio(mech: str) -> Callable[[Path], str]:
    """Fig. 3(f): the mean over trials of the per-trial ratio ARE(smallest eps) / ARE(largest eps) of ``mech``."""
    def value(tables: Path) -> str:
        df = _table(tables, "fig3f")
        if df is None:
            return "no table"
        rows = df[df["mechanism.name"] == mech].pivot_table(index="trial", columns="epsilon", values="are_top15")
        return f"{float((rows[rows.columns.min()] / rows[rows.columns.max()]).mean()):.3g}x"
    return value


def fig3f_eps_table(tables: Path) -> str:
    """Fig. 3(f) at skew 2.1: PunctualCMS and LazyCMS mean ARE at T and over release times, at a few eps."""
    df = _table(tables, "fig3f")
    if df is None:
        return "\nno table\n"
    means = {col: df.groupby(["mechanism.name", "epsilon"])[col].mean().to_dict()
             for col in ("are_top15", "are_top15_mean_t")}
    n = int(df["trial"].nunique())
    lines = [f"| skew 2.1, mean of {n} trials | " + " | ".join(f"eps = {e:g}" for e in FIG3F_EPS) + " |",
             "|---|" + "---|" * len(FIG3F_EPS)]
    for mech, name in (("punctualcms", "PunctualCMS"), ("lazycms", "LazyCMS")):
        cells = [f"{means['are_top15'][mech, e]:.3g} / {means['are_top15_mean_t'][mech, e]:.3g}" for e in FIG3F_EPS]
        lines.append(f"| {name} ARE at T = 2^20 / mean over release times | " + " | ".join(cells) + " |")
    return "\n" + "\n".join(lines) + "\n"


def fig4b_time_range(tables: Path) -> str:
    """Fig. 4(b): LazyHH's point means of us per update over k~, their range and max / min spread."""
    df = _table(tables, "fig4b")
    if df is None:
        return "no table"
    means = df[df["mechanism.name"] == "lazyhh"].groupby("mechanism.k_tilde")["us_per_update"].mean()
    return f"{means.min():.3g}-{means.max():.3g} us per update, spread {means.max() / means.min():.3g}x"


FIG3_PANELS = ("fig3a", "fig3b", "fig3c", "fig3d", "fig3e", "fig3f")


def fig3_runtime(tables: Path) -> str:
    """Figure 3's cost from its tables: rows, distinct trials, trial wall seconds per panel, 3(a)'s largest share.

    Wall seconds are the rows' ``trial_wall_s`` (one worker, under whatever load the machine had): a trial shared by
    two panels (one store key) is counted for the first panel that lists it, and a later panel shows its own share.
    """
    frames = {p: df for p in FIG3_PANELS if (df := _table(tables, p)) is not None}
    if "fig3a" not in frames or any("trial_wall_s" not in df or "key" not in df for df in frames.values()):
        return "no trial wall time in the Figure 3 tables"
    seen: set[str] = set()
    parts = []
    for panel, df in frames.items():
        own = df[~df["key"].isin(seen)]
        seen |= set(df["key"])
        parts.append(f"3({panel[-1]}) {own['trial_wall_s'].sum():.0f} s" + (
            f" ({len(df) - len(own)} of its {len(df)} rows from another panel's trials)" if len(own) < len(df) else ""))
    rows = sum(len(df) for df in frames.values())
    total = float(pd.concat(frames.values()).drop_duplicates("key")["trial_wall_s"].sum())
    a = frames["fig3a"]
    cost = a.groupby(["mechanism.name", "memory_kb"])["trial_wall_s"].sum()
    largest = cost.sort_values().index[-1]
    mech, kb = str(largest[0]), float(largest[1])
    top = float(cost.max())
    seeds = sorted({int(x) for df in frames.values() for x in df["seed"].unique()})
    return (f"{rows} trial rows of which {len(seen)} are distinct trials (master seed{'s' if len(seeds) > 1 else ''} "
            f"{', '.join(map(str, seeds))}); trial wall time, one worker: {'; '.join(parts)}; "
            f"**{total:.0f} s = {total / 60:.1f} minutes** for the distinct trials. The largest share of 3(a) is "
            f"{relabel(mech)} at {kb:g} KB, {top:.0f} s of {a['trial_wall_s'].sum():.0f} s "
            f"({top / a['trial_wall_s'].sum():.0%})")


def watch_speed(deployable: bool) -> Callable[[Path], str]:
    """``dpstream watch`` end to end at its defaults (multiply-shift hashing, no host cap), from the benchmark's record.

    ``benchmarks/results/watch.json`` beside the tables' ``results/``: packets per CPU second and the ratio, with its
    interval, to the bare Count-Min loop of the same depth and hash family measured in the same process.
    """
    def value(tables: Path) -> str:
        path = tables.parent.parent / "benchmarks" / "results" / "watch.json"
        if not path.exists():
            return "not measured: `benchmarks/results/watch.json` is missing"
        rows = [r for r in json.loads(path.read_text())["rows"] if "multiply_shift" in r["name"]
                and "host cap" not in r["name"] and ("(deployable)" in r["name"]) == deployable]
        if len(rows) != 1:
            raise ValueError(f"{path}: expected one default {'deployable' if deployable else 'derived'} row, "
                             f"found {len(rows)}")
        r = rows[0]
        return (f"{r['packets_per_cpu_s'] / 1e6:.1f} M packets per CPU second ({r['ratio']:.2g}x "
                f"[{r['low']:.2g}, {r['high']:.2g}] of a {r['reference']}, flush every {r['flush_every']})")
    return value


def paper_tally(tables: Path) -> str:
    """The report's paper tally by sentence over every claims table, and its registered part."""
    from dpstream.claims.kinds import headline
    from dpstream.harness.registered import all_claims, is_registered
    from dpstream.harness.report import registered_sentences, verdict_summary

    claims = all_claims(tables)
    claims = claims.assign(registered=[is_registered(x) for x in claims["label"]])
    return (verdict_summary(headline(claims)).replace(" claims)", " sentences)") + "; of those, registered: "
            + registered_sentences(claims))


QUOTED: dict[str, Callable[[Path], str]] = {
    "watch.deployable": watch_speed(True),
    "watch.derived": watch_speed(False),
    "fig3.runtime": fig3_runtime,
    "fig4b.time_range": fig4b_time_range,
    "fig3a.speedup.cms": speedup("punctualcms"),
    "fig3a.speedup.cs": speedup("punctualcs"),
    **{f"fig3f.ratio.{m}": noise_ratio(m) for m in ("lazycms", "lazycs", "punctualcms", "punctualcs")},
    "fig3f.eps_table": fig3f_eps_table,
    "fig3f.declared_trend": lambda tables: declared_trend(tables),
    "rules.generic": lambda tables: generic_rule_paragraph(),
    "tally.paper": paper_tally,
    "rules.differences": lambda tables: "\n" + "\n".join(differences_table(tables)) + "\n",
}
"""Every quotable number: name -> its value computed from the tables folder."""
SAY = re.compile(r"the rows say '(?P<verdict>[^']+)'")


def claim_row(tables: Path, claim_id: str) -> pd.Series:
    """The row of the claim registered as ``claim_id`` in its committed claims table."""
    exp, index = claim_id.rsplit("#", 1)
    return pd.read_csv(tables / f"{exp}.claims.csv", keep_default_na=False).iloc[int(index)]


def claim_verdict(tables: Path, claim_id: str, gated: bool = True) -> str:
    """The verdict of the claim registered as ``claim_id`` in its committed claims table.

    ``gated=False``: the verdict its rows gave before ``registration.gate`` (history rows decide nothing, but say
    what they would have said).
    """
    row = claim_row(tables, claim_id)
    said = SAY.search(str(row.get("gate", "")))
    return str(row["verdict"]) if gated or said is None else said.group("verdict")


def table_mean(tables: Path, spec: str) -> str:
    """``<experiment>:<column>:<key>=<value>,...``: the mean of ``column`` over the rows matching every key."""
    exp, column, where = (spec.split(":", 2) + [""])[:3]
    df = pd.read_csv(tables / f"{exp}.csv")
    for cond in filter(None, where.split(",")):
        key, _, want = cond.partition("=")
        col = df[key]
        df = df[col.astype(float) == float(want)] if pd.api.types.is_numeric_dtype(col) else df[col.astype(str) == want]
    if df.empty or df[column].dropna().empty:
        raise ValueError(f"{spec!r}: no row of {exp}.csv matches")
    return f"{float(df[column].mean()):.3g}"


def value(name: str, tables: Path) -> str:
    """The text of quotable ``name``.

    A key of ``QUOTED``; ``verdict:<id>`` or ``rows:<id>`` (``claim_verdict``); ``measured:<id>``, the claims row's
    ``measured`` (after the registered look's prefix); ``mean:<experiment>:<column>:<key>=<value>,...``
    (``table_mean``).
    """
    if name in QUOTED:
        return QUOTED[name](tables)
    kind, _, rest = name.partition(":")
    if kind in ("verdict", "rows") and "#" in rest:
        return f"`{claim_verdict(tables, rest, gated=kind == 'verdict')}`"
    if kind == "measured" and "#" in rest:
        return str(claim_row(tables, rest)["measured"]).split(" pooled trials: ", 1)[-1]
    if kind == "mean":
        return table_mean(tables, rest)
    raise KeyError(f"no quotable number {name!r}; quotable: {sorted(QUOTED)}, verdict:<id>, rows:<id>, "
                   "measured:<id>, mean:<spec>")
