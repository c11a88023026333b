"""What a referee reading the registration should know beside a verdict: where the written rule is not the coded one.

The registration (``results/preregistration.yaml``) describes each claim's rule in words (family, parameters, smallest
effect); the decision is fixed by the code its ``rule_hash`` covers. ``DIFFERENCES`` lists the registered claims whose
written rule differs from the code that decides them, each with the file and line of the coded rule and the
difference in one line (``tests/harness/test_rule_notes.py`` checks that the line and the constant are what the entry
says). A coded rule that reads the pooled seeds as one table (the max over the min of every row, a condition every row
must meet, steps between adjacent rows, one row read at each end) is listed with its verdict on each master seed apart
(``per_seed``), beside the pooled verdict it keeps. Nothing here re-decides a claim: the verdicts stay those of the
coded rule. ``generic_rule_paragraph`` counts the claims registered with a placeholder rule description;
``declared_trend`` computes, as a labelled sensitivity note that decides nothing, what Fig. 3(f)'s written trend rule
gives on the committed table. ``awaiting`` says when a claim shown as history already has its final registered decision
in ``looks.csv`` (its experiment not adopted yet).
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpstream.claims.core import VERDICTS
from dpstream.claims.nulls import CONFIG_PREFIXES, KEPT, measured_columns
from dpstream.claims.registration import REGISTRATION, by_id, load, registration_hash
from dpstream.claims.registration import claim_ids as claim_ids_of
from dpstream.claims.sequential import ALPHA, decide_trend, trial_slopes
from dpstream.claims.sketch import NAMES, NON_PRIVATE, PRIVATE, log_ratio
from dpstream.claims.svt import PAIR_TOL
from dpstream.files import write_atomically
from dpstream.harness.experiments import composed_config, experiments_to_run, judge
from dpstream.harness.registered import REFUSED_NOTE, all_claims, is_registered, short
from dpstream.plots.names import relabel
from dpstream.registry import CONF_DIR


@dataclass(frozen=True)
class RuleDifference:
    """Registered claims whose written rule differs from their coded rule: where the code is and how it differs."""

    claims: tuple[str, ...]
    path: str
    """The file of the coded rule, relative to the repository root."""
    line: int
    anchor: str
    """Text that line holds (the test checks it, so the reference cannot drift from the code)."""
    difference: str
    constant: tuple[str, str, float] | None = None
    """(module, name, value) of the constant the difference names, checked by the test."""
    family: str = "trend"
    """The rule family the registration writes for these claims (checked by the test)."""
    evidence: Callable[[Path], str] | None = None
    """What the committed tables show per trial where the coded rule reads less of them (``tables`` -> text)."""
    pooled: bool = False
    """The coded rule reads the pooled seeds as one table: its statistic moves with their number (``pooling``)."""

    @property
    def where(self) -> str:
        """``path:line`` of the coded rule."""
        return f"{self.path}:{self.line}"


def audit_seed_flags(tables: Path) -> str:
    """audit_svt per seed, from its pooled table: each case flagged in k of n seeds, and the claims that contradicts.

    A negative control's "confirmed" needs it flagged at every seed; a shipped case's needs it never flagged and every
    paired control flagged at every seed (the coded rule's own wording, applied to each seed instead of one).
    """
    frame = tables / "audit_svt.csv"
    if not frame.exists():
        return "no table"
    df = pd.read_csv(frame)
    per_case = df.groupby("case", sort=False).agg(flagged=("fails", "sum"), seeds=("fails", "size"),
                                                  control=("negative_control", "first"))
    claims = pd.read_csv(tables / "audit_svt.claims.csv", keep_default_na=False)
    ids = dict(zip(claims["claim"].str.split(":").str[0], claim_ids_of("audit_svt", claims), strict=True))
    contradicted = []
    for case, r in per_case.iterrows():
        controls = per_case[df.groupby("case", sort=False)["pair"].first() == case]
        holds = (r.flagged == r.seeds if r.control
                 else r.flagged == 0 and bool((controls.flagged == controls.seeds).all()))
        if not holds and ids.get(str(case)):
            contradicted.append(ids[str(case)])
    counts = "; ".join(f"{case} {int(r.flagged)}/{int(r.seeds)}" for case, r in per_case.iterrows())
    verdict = (f"Per seed, the coded rule's own condition fails for {', '.join(contradicted)}" if contradicted
               else "Per seed, the coded rule's condition holds for every claim")
    return f"Seeds flagged, per case: {counts}. {verdict}"

ANALYST_AUDIT_TRIAL = "dpstream.trials.query_release:analyst_audit_trial"
"""The trial of qr_analyst_audit, as its store rows name it (``mechanism.trial``)."""


def analyst_audit_seeds(tables: Path) -> str:
    """qr_analyst_audit per density s, from the registered stores: what each seed's row gives under the coded rule.

    The coded rule (``claims.query_release.analyst_audit_claims``) makes one claim a row: on the pooled table of 30
    seeds its first four claims are the s = 1 rows of four seeds. Per s, over the seeds run under the current
    registration: the claimed eps_A, the audit's power eps_max(runs) and the rows the rule would call "not confirmed"
    (eps_A <= eps_max and the audit fails).
    """
    from dpstream.claims.query_release import audit_power

    registered = f'"prereg_hash": "{registration_hash()}"'  # seeds 0-2 ran before the registration
    rows = [json.loads(line) for store in sorted((tables.parent / "verify" / "paper").glob("seed_*/store/trials.jsonl"))
            for line in store.read_text().splitlines() if ANALYST_AUDIT_TRIAL in line and registered in line]
    if not rows:
        return "no registered store"
    df = pd.DataFrame(rows)
    df["eps_max"] = [audit_power(n, d) for n, d in zip(df["audit_runs"], df["delta"], strict=True)]
    parts = []
    for s, block in df.groupby("mechanism.s"):
        refuting = int(((block["eps_analyst"] <= block["eps_max"]) & block["audit_fails"].astype(bool)).sum())
        parts.append(f"s = {s:g}: eps_A {block['eps_analyst'].min():.3g}..{block['eps_analyst'].max():.3g} against "
                     f"eps_max {block['eps_max'].max():.3g}, lower bound median {block['eps_lower'].median():.3f}, "
                     f"'not confirmed' at {refuting} of {block['seed'].nunique()} seeds")
    blind = bool((df["eps_analyst"] > df["eps_max"]).all())
    lead = ("The audit has no power at any s: the claimed eps_A exceeds eps_max at every row, so the coded rule "
            "gives 'inconclusive' on every row by construction. " if blind else "")
    return lead + "Per s over the registered seeds: " + "; ".join(parts)


def _svt_c_arms(tables: Path) -> list[tuple[float, pd.DataFrame, pd.DataFrame]]:
    """svt_c's (k*, ThresholdMonitor rows, Sparse rows) per k*, from its pooled table (none without one)."""
    df = table_of(tables, "svt_c")
    if df.empty:
        return []
    return [(float(block["k_star"].iloc[0]), block[block["mechanism.name"] == "svt_tm"],
             block[block["mechanism.name"] == "svt_sparse"]) for _, block in df.groupby("k_star")]


def svt_c_growth(tables: Path) -> str:
    """TM's growth over c (svt_c#0) per seed and on the per-c means, beside the pooled rows' that the code reads.

    The coded rule (``claims.svt._tm_flat``) takes the max over the min of every pooled row at a k*, which only grows
    as seeds are added; each seed's own rows and the per-c means do not.
    """
    parts = []
    for k_star, tm, _ in _svt_c_arms(tables):
        by_seed = tm.groupby("seed")["emp_alpha"]
        per_seed = by_seed.max() / by_seed.min()
        means = tm.groupby("c")["emp_alpha"].mean()
        theory = tm.groupby("c")["theory_alpha"].first()
        parts.append(f"k* = {k_star:g}: x{per_seed.min():.3g}..x{per_seed.max():.3g} per seed ({len(per_seed)} "
                     f"seeds), x{means.max() / means.min():.3g} on the per-c means, "
                     f"x{tm['emp_alpha'].max() / tm['emp_alpha'].min():.3g} on all {len(tm)} pooled rows (allowed "
                     f"x{float(theory.max() / theory.min()) * PAIR_TOL:.3g})")
    return ("TM's growth over c: " + "; ".join(parts)) if parts else "no table"


def svt_c_crossover(tables: Path) -> str:
    """Sparse/TM at the largest c (svt_c#2) per seed, beside the first pooled seed's that the code reads."""
    parts = []
    for k_star, tm, sp in _svt_c_arms(tables):
        c_max = min(tm["c"].max(), sp["c"].max())
        ratio = (sp[sp["c"] == c_max].set_index("seed")["emp_alpha"]
                 / tm[tm["c"] == c_max].set_index("seed")["emp_alpha"]).dropna()
        first = tm.loc[tm["c"] == c_max, "seed"].iloc[0]  # the row the code reads: the table's first at c_max
        if ratio.empty or first not in ratio.index:
            continue
        parts.append(f"k* = {k_star:g}: x{ratio[first]:.3g} at seed {int(first)} (read by the code), "
                     f"x{ratio.min():.3g}..x{ratio.max():.3g} over {len(ratio)} seeds, Sparse worse in "
                     f"{int((ratio > 1).sum())}")
    return ("Sparse/TM at the largest c: " + "; ".join(parts)) if parts else "no table"


def skew_log_change(tables: Path) -> str:
    """fig3d under its registered reading: every pair's paired difference of ln(ARE_first / ARE_last) over skew.

    The registration writes the rule on the ln ARE change with a smallest effect of 0.1 (ln 1.1), Holm over the
    pairs; each pair's one-sided t lower bound at 2.5% / (number of pairs) (Bonferroni, at least as strict as Holm:
    every bound above the margin means Holm rejects every pair too) is set against it. A note that decides nothing.
    """
    df = table_of(tables, "fig3d")
    if df.empty:
        return "no table"
    entry = by_id()["fig3d#0"]
    margin = float(entry["smallest_effect"]["value"])
    pairs = [(p, b) for p in PRIVATE for b in NON_PRIVATE] + [("cs", "cms")]
    change = {m: log_ratio(df, m, "data.skew") for m in {m for pair in pairs for m in pair}}
    level = ALPHA / 2 / len(pairs)
    lows = {}
    for a, b in pairs:
        d = (change[b] - change[a]).to_numpy(dtype=np.float64)
        lows[f"{NAMES[a]} vs {NAMES[b]}"] = d.mean() - stats.t.ppf(1 - level, len(d) - 1) * d.std(ddof=1) / np.sqrt(
            len(d))
    low = min(lows, key=lambda k: lows[k])
    return (f"Under the registered reading: the one-sided lower bound (level {level:.2g} a pair, Bonferroni over "
            f"{len(pairs)} pairs) of each pair's mean difference of ln(ARE_first / ARE_last) exceeds {margin:g} for "
            f"{sum(v > margin for v in lows.values())} of {len(lows)} pairs; the least is {low}, {lows[low]:.3g}")


TM_GROWTH = "TM's growth over c is the max over the min of every pooled row at a k*"
THEORY_GROWTH = "theory's growth times PAIR_TOL = 1.21"
TIMING_ROW = 'results.append(True if lo <= r["interleaved_low"]'
"""The line of ``claims.core.timing_claim`` that decides each row."""
RECALL_ROW = "results = [all_one(_at(df, y, {x: v})) for v in points]"
"""The line of ``claims.heavy_hitters._recall_one`` that decides each point."""


def interleaved_intervals(exp: str, mechanisms: tuple[str, ...], band: float) -> Callable[[Path], str]:
    """Evidence for a flat-time claim of ``exp``: its interleaved intervals against the band 1/band..band.

    Over the rows of ``mechanisms``: how many intervals lie inside the band, straddle an edge or lie outside it.
    """

    def evidence(tables: Path) -> str:
        df = table_of(tables, exp)
        if df.empty or "interleaved_ratio" not in df.columns:
            return "no interleaved rows"
        rows = df[df["mechanism.name"].isin(mechanisms)].dropna(subset=["interleaved_ratio"])
        if rows.empty:
            return "no interleaved rows"
        low, high = 1 / band, band
        inside = (rows["interleaved_low"] >= low) & (rows["interleaved_high"] <= high)
        outside = (rows["interleaved_high"] < low) | (rows["interleaved_low"] > high)
        ratio = rows["interleaved_ratio"]
        return (f"Of {len(rows)} rows ({rows['trial'].nunique()} trials), {int(inside.sum())} intervals lie inside "
                f"{low:.3g}..{high:g}, {int((~inside & ~outside).sum())} straddle an edge, {int(outside.sum())} lie "
                f"outside; every ratio itself is within x{ratio.min():.3g}..x{ratio.max():.3g}")

    return evidence


def timing_band(claim_id: str, mechanisms: tuple[str, ...], module: str, flat_time: float) -> RuleDifference:
    """The difference of a flat-time claim decided by ``claims.core.timing_claim`` with ``module``'s FLAT_TIME.

    Registered as a location test of each trial's ln spread; coded as every row's interleaved interval inside the
    band. The evidence counts the intervals of ``mechanisms`` in the claim's experiment (``interleaved_intervals``).
    """
    return RuleDifference(
        (claim_id,), "src/dpstream/claims/core.py", 437, TIMING_ROW,
        "the text registers a location test of each trial's ln spread of time over the grid, margin ln 1.5; the code "
        "(timing_claim) confirms only when every row's interleaved interval (each trial and grid point) lies inside "
        f"1 / FLAT_TIME..FLAT_TIME = {flat_time:g}, so each pooled trial adds rows that must all lie inside, and a "
        "single interval over an edge leaves it inconclusive", (module, "FLAT_TIME", flat_time), family="location",
        evidence=interleaved_intervals(claim_id.rsplit("#", 1)[0], mechanisms, flat_time), pooled=True)


def recall_domain(tables: Path) -> str:
    """fig4d per eps: the least and greatest recall over trials, against both readings' domains (1, and 0.95)."""
    df = table_of(tables, "fig4d")
    if df.empty:
        return "no table"
    lazy = df[df["mechanism.name"] == "lazyhh"].groupby("epsilon")["recall"]
    low, high = lazy.min(), lazy.max()
    return (f"Recall over trials per eps: {', '.join(f'{e:g}: {low[e]:.3g}..{high[e]:.3g}' for e in low.index)}; "
            f"eps with recall >= 0.95 in every trial: {int((low >= 0.95).sum())}, with recall 1 in every trial: "
            f"{int((low >= 1).sum())} (both rules need at least 2)")


def spec_of(results: Path, exp: str) -> dict[str, Any] | None:
    """The experiment ``exp`` as composed from the ``results`` folder (None when there is no such experiment)."""
    return next((s for s in experiments_to_run(composed_config(results, exp), CONF_DIR) if s["id"] == exp), None)


def seed_verdicts(tables: Path, exp: str) -> dict[str, Counter[str]]:
    """Per registered claim of ``exp``: how often each verdict comes out of its claims function on one master seed.

    Each seed's rows of the committed table ``<tables>/<exp>.csv`` are judged alone (``judge``, no permutation nulls):
    what the coded rule says of every seed apart, where on the pooled table it reads all seeds as one table. Empty
    without a table, a ``seed`` column or an experiment of that name. Read from ``<tables>/seed_verdicts.csv`` while
    it holds the table's SHA-256 (``write_seed_verdicts``), else judged; once per table content in a process.
    """
    path = tables / f"{exp}.csv"
    if not path.exists():
        return {}
    key = (exp, hashlib.sha256(path.read_bytes()).hexdigest())
    if key not in _SEED_VERDICTS:
        _SEED_VERDICTS.update(_stored_seed_verdicts(tables))  # every experiment's stored verdicts in one read
    if key not in _SEED_VERDICTS:
        _SEED_VERDICTS[key] = _judge_seeds(pd.read_csv(path, low_memory=False), exp, tables.parent)
    return _SEED_VERDICTS[key]


_SEED_VERDICTS: dict[tuple[str, str], dict[str, Counter[str]]] = {}
"""``seed_verdicts`` by (experiment, SHA-256 of its table)."""

SEED_VERDICTS = "seed_verdicts.csv"
"""Beside the claims tables: one row per (experiment, table SHA-256, claim, verdict) with the number of seeds."""


def pooled_claims() -> list[str]:
    """The registered claims whose coded rule reads the pooled seeds as one table (``RuleDifference.pooled``)."""
    return [i for d in DIFFERENCES if d.pooled for i in d.claims]


def pooled_experiments() -> list[str]:
    """The experiments of ``pooled_claims``, in their order."""
    return list(dict.fromkeys(i.rsplit("#", 1)[0] for i in pooled_claims()))


def write_seed_verdicts(tables: Path) -> Path:
    """Judge every seed of each ``pooled_experiments`` table in ``tables`` afresh; write ``<tables>/seed_verdicts.csv``.

    Rendering then reads the verdicts instead of judging again (about a CPU-minute); a row whose table has changed
    since is not used.
    """
    rows = []
    for exp in pooled_experiments():
        path = tables / f"{exp}.csv"
        if not path.exists():
            continue
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        counts = _judge_seeds(pd.read_csv(path, low_memory=False), exp, tables.parent)
        _SEED_VERDICTS[(exp, sha)] = counts
        rows += [{"experiment": exp, "table_sha256": sha, "claim": claim_id, "verdict": v, "seeds": n}
                 for claim_id, c in counts.items() for v in VERDICTS if (n := c[v])]
    out = tables / SEED_VERDICTS
    table = pd.DataFrame(rows, columns=["experiment", "table_sha256", "claim", "verdict", "seeds"])
    write_atomically(out, lambda handle: table.to_csv(handle, index=False))  # whole or not at all
    return out


def _stored_seed_verdicts(tables: Path) -> dict[tuple[str, str], dict[str, Counter[str]]]:
    file = tables / SEED_VERDICTS
    if not file.exists():
        return {}
    out: dict[tuple[str, str], dict[str, Counter[str]]] = {}
    for r in pd.read_csv(file, dtype={"seeds": int}, keep_default_na=False).to_dict("records"):
        out.setdefault((r["experiment"], r["table_sha256"]), {}).setdefault(r["claim"], Counter())[r["verdict"]] = \
            int(r["seeds"])
    return out


def _judge_seeds(df: pd.DataFrame, exp: str, results: Path) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {}
    if df.empty or "seed" not in df.columns or (spec := spec_of(results, exp)) is None:
        return counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-spread seeds warn in scipy
        for _, rows in df.groupby("seed"):
            judged = judge(spec, rows)
            if judged is None:
                return {}
            for claim_id, verdict in zip(claim_ids_of(exp, judged), judged["verdict"].astype(str), strict=True):
                if claim_id:
                    counts.setdefault(claim_id, Counter())[verdict] += 1
    return counts


def at_seeds(counts: Counter[str]) -> str:
    """``confirmed at 29, inconclusive at 1``: how many seeds give each verdict.

    No count stands before a verdict word: the pages keep that form for the counts they quote from the tables.
    """
    return ", ".join(f"{v} at {counts[v]}" for v in VERDICTS if counts[v])


def per_seed(claim_ids: tuple[str, ...]) -> Callable[[Path], str]:
    """Evidence for a coded rule that reads the pooled seeds as one table: its verdict on each seed (``seed_verdicts``).

    A description beside the verdict, which stays the pooled rule's: it decides nothing.
    """

    def evidence(tables: Path) -> str:
        parts = []
        for claim_id in claim_ids:
            counts = seed_verdicts(tables, claim_id.rsplit("#", 1)[0]).get(claim_id)
            if not counts:
                parts.append(f"{claim_id}: no table")
                continue
            seeds = sum(counts.values())
            parts.append(f"{claim_id}: {at_seeds(counts)} of {seeds} seed{'s' if seeds > 1 else ''}")
        return "The coded rule on each master seed's trials alone (no permutation nulls): " + "; ".join(parts)

    return evidence


def svt_pooled(claim_id: str, line: int, anchor: str, coded: str,
               evidence: Callable[[Path], str] | None = None) -> RuleDifference:
    """The difference of an svt claim whose code reads the pooled rows as one table, with the PAIR_TOL it names.

    Registered as a per-trial location rule; ``coded`` says what the code does instead. The evidence is the claim's
    verdict on each seed (``per_seed``) unless ``evidence`` is given.
    """
    return RuleDifference(
        (claim_id,), "src/dpstream/claims/svt.py", line, anchor,
        f"the text registers a per-trial location rule; the code {coded}", ("dpstream.claims.svt", "PAIR_TOL", 1.1**2),
        family="location", evidence=evidence or per_seed((claim_id,)), pooled=True)


def pooled_ratio(claim_id: str, line: int, anchor: str, what: str, bound: str = "PAIR_TOL = 1.21",
                 evidence: Callable[[Path], str] | None = None) -> RuleDifference:
    """``svt_pooled`` for a claim decided by the max over the min of every pooled row (``claims.svt._ratio``)."""
    return svt_pooled(claim_id, line, anchor, f"judges the pooled seeds as one table: {what}, a statistic that only "
                      f"grows as seeds are added, against {bound}", evidence)


def every_row(claim_ids: tuple[str, ...], path: str, line: int, anchor: str, what: str,
              constant: tuple[str, str, float] | None = None, family: str = "location",
              registered: str = "a per-trial location rule") -> RuleDifference:
    """The difference of a claim whose code needs a condition on every pooled row: more seeds, more rows to hold."""
    return RuleDifference(claim_ids, path, line, anchor, f"the text registers {registered}; the code {what}, so each "
                          "pooled seed adds rows that must all hold and one row decides", constant, family,
                          evidence=per_seed(claim_ids), pooled=True)


DIFFERENCES = (
    RuleDifference(
        ("fig3f#0", "fig3f#1", "fig3f#2", "fig3f#3"), "src/dpstream/claims/sketch.py", 340,
        "size, text = _at_least(ratio, LIMITED_EPS)",
        "the text registers a trend of ln ARE on ln eps 'and not as the >= 2x cut'; the code requires Page's trend "
        "test AND the geometric-mean ratio ARE(eps = 0.05) / ARE(eps = 2) >= LIMITED_EPS = 2.0, i.e. that 2x cut",
        ("dpstream.claims.sketch", "LIMITED_EPS", 2.0)),
    RuleDifference(
        ("fig3d#1",), "src/dpstream/claims/core.py", 290, "if min(p_up, p_down) < TREND_ALPHA / 2:",
        "the text registers 'still observable' as a change of at least a factor 1.5 of ARE across the skew grid; the "
        "code (observable_claim, sketch.py) confirms on Page's trend test alone (either one-sided p < TREND_ALPHA / 2, "
        "TREND_ALPHA = 0.05) and checks no size, so only an exactly constant table refutes it. On the adopted table "
        "(70 pooled trials) LazyCS changes by x0.704 [0.619, 0.8] and PunctualCS by x0.717 [0.628, 0.82] from skew "
        "1.1 to 2.1: factors 1.42 and 1.39 whose intervals hold 1.5, inconclusive under the registered reading "
        "(LazyCMS and PunctualCMS change by about x0.07, far beyond it)",
        ("dpstream.claims.core", "TREND_ALPHA", 0.05)),
    RuleDifference(
        ("fig3c#1",), "src/dpstream/claims/sketch.py", 262, "more_for_claim(df, '\"the benefit [of depth]",
        "the text registers a trend over depth; the code compares, for every (private, non-private) pair, the paired "
        "per-trial fraction of the ARE removed between the first and last depth (MORE_FOR), a different test"),
    RuleDifference(
        tuple(f"audit_svt#{i}" for i in range(13)), "src/dpstream/claims/audit.py", 27,
        'flagged = dict(zip(df["case"], df["fails"].astype(bool), strict=True))',
        "the text registers a per-trial location rule; the code judges one table of 13 audits, so on the pooled "
        "table of 30 seeds the registered claims are the first seed's 13 rows (their eps_lower), and every flag it "
        "reads is the last pooled seed's (a dict over repeated cases): 'paired controls flagged: 30/30' counts one "
        "seed's flag 30 times. The flag of every seed is the column fails of results/tables/audit_svt.csv",
        family="location", evidence=audit_seed_flags, pooled=True),
    RuleDifference(
        tuple(f"qr_analyst_audit#{i}" for i in range(4)), "src/dpstream/claims/query_release.py", 373,
        'for _, r in df.sort_values("mechanism.s").iterrows():',
        "the text registers one claim per density s (1, 30, 300, 2400); the code makes one claim per row, so on the "
        "pooled table of 30 seeds the four registered ids are the s = 1 rows of seeds 3-6, and the final records of "
        "#1-#3 judge s = 1, not the s their registered text names. Adoption refuses the experiment (its replay states "
        "another claim than the registered one)",
        family="location", evidence=analyst_audit_seeds, pooled=True),
    pooled_ratio("svt_c#0", 134, 'growth, allowed = _ratio(tm["emp_alpha"])', TM_GROWTH, THEORY_GROWTH,
                 svt_c_growth),
    pooled_ratio("svt_kappa#1", 134, 'growth, allowed = _ratio(tm["emp_alpha"])', TM_GROWTH, THEORY_GROWTH),
    pooled_ratio("svt_kstar#1", 279, 'shape = _ratio(tm["emp_alpha"] / tm["theory_alpha"])',
                 "TM's emp_alpha / theory_alpha over the k* grid is the max over the min of every pooled row"),
    pooled_ratio("svt_kstar#2", 297, 'flat = _ratio(sp["emp_alpha"])',
                 "Sparse's spread over k* is the max over the min of every pooled row"),
    pooled_ratio("svt_order#0", 357, 'spread = _ratio(g["emp_alpha"])',
                 "each mechanism's spread over the query orders is the max over the min of every pooled row"),
    svt_pooled("svt_kstar#0", 276, "steps = emp[1:] / emp[:-1]",
               "sorts the pooled TM rows by k* and needs the last row over the first above PAIR_TOL = 1.21 and no "
               "step between adjacent rows below 1 / 1.21: pooled, the rows of one k* from different seeds stand next "
               "to each other, so most steps it reads are between replicates, and which rows end up first and last "
               "depends on the order the sort leaves them in"),
    svt_pooled("svt_kcap#1", 324, "steps = [None if not np.isfinite(a) and not np.isfinite(b)",
               "sorts the pooled TM rows of every cap k >= k* by k and needs emp_alpha to rise by more than PAIR_TOL = "
               "1.21 at every step between adjacent rows: pooled, the rows of one k from different seeds stand next to "
               "each other and their step of about x1 fails, so two seeds or more make it not confirmed whatever the "
               "data"),
    every_row(("svt_kstar#3", "svt_kcap#2", "svt_order#1", "svt_c#4"), "src/dpstream/claims/svt.py", 92,
              "results = [_accuracy_point(r) for _, r in domain.iterrows()]",
              "(accuracy_claim) needs every pooled row of the domain at emp_alpha <= theory_alpha / POINT_TOL = 1.1 "
              "to confirm (a row above theory x 1.1 refutes, a row between leaves it inconclusive)",
              ("dpstream.claims.svt", "POINT_TOL", 1.1)),
    every_row(("shifting_hh#0",), "src/dpstream/claims/svt.py", 438, "success = [_success_point(r, n, b)",
              "needs the Clopper-Pearson interval of the success rate at every pooled (k*, m) row at or above 1 - "
              "beta, a level the theorem guarantees each row only with probability 1 - beta"),
    RuleDifference(
        tuple(f"shifting_hh#{i}" for i in range(1, 5)), "src/dpstream/claims/svt.py", 454,
        'res[k_star] = (g["emp_tau"].iloc[-1] / g["emp_tau"].iloc[0],',
        "the text registers a per-trial location rule; the code reads each growth in m as the last pooled row over "
        "the first after sorting by m: pooled, it reads one seed's row at each end, whichever the sort leaves there, "
        "and none of the others", family="location",
        evidence=per_seed(tuple(f"shifting_hh#{i}" for i in range(1, 5))), pooled=True),
    RuleDifference(
        ("svt_c#2",), "src/dpstream/claims/svt.py", 181, 'a_tm = tm.loc[tm["c"] == c_max, "emp_alpha"].iloc[0]',
        "the text registers a per-trial location rule; the code reads Sparse/TM at the largest c from the first "
        "pooled seed's rows alone, with a fixed band of PAIR_TOL = 1.21 either way that no number of trials "
        "narrows, and its 'Sparse worse from c' merges every TM row with every Sparse row at a c",
        ("dpstream.claims.svt", "PAIR_TOL", 1.1**2), family="location", evidence=svt_c_crossover, pooled=True),
    RuleDifference(
        ("fig3d#0",), "src/dpstream/claims/sketch.py", 282, "return [more_for_claim(df, '\"Skew has the largest",
        "the text registers every pairwise difference of the ln ARE change over skew, each at least 0.1 (ln 1.1); "
        "the code (more_for_claim, MORE_FOR) tests the paired per-trial fraction of the ARE removed between the first "
        "and last skew, below 0 for every pair with no smallest size", family="every point",
        evidence=skew_log_change),
    timing_band("fig3a#0", ("cms", "cs", "lazycms", "lazycs"), "dpstream.claims.sketch", 1.5),
    timing_band("fig4b#0", ("lazyhh",), "dpstream.claims.heavy_hitters", 1.5),
    every_row(("fig3a#1", "fig3a#2"), "src/dpstream/claims/core.py", 437, TIMING_ROW,
              "(timing_claim) confirms only when every row's interleaved interval (each trial and width) lies inside "
              "w_min / w / LINEAR_BAND = 2..w_min / w x 2", ("dpstream.claims.sketch", "LINEAR_BAND", 2.0),
              family="trend", registered="a trend of ln seconds on the sketch width"),
    every_row(("beyond_memory#9", "beyond_memory#10"), "src/dpstream/claims/core.py", 437, TIMING_ROW,
              "(timing_claim) confirms only when every row's interleaved interval (each trial and memory) lies at or "
              "above SPEED_RATIO = 0.5 (an interval across it leaves the claim inconclusive, one below refutes it)",
              ("dpstream.claims.beyond", "SPEED_RATIO", 0.5)),
    every_row((*(f"{e}#{i}" for e in ("fig4c", "fig4_k256", "fig4c_wordfreq") for i in (3, 5)), "fig4e#0", "fig4e#1"),
              "src/dpstream/claims/heavy_hitters.py", 182, "results.append(all_one(vals))",
              "(precision_claim, all_one) needs precision 1 in every pooled trial at every point", family="quantile",
              registered="a quantile of 1 - precision at every point, smallest effect 0.05"),
    every_row(("fig4f#1", "fig4f#2"), "src/dpstream/claims/heavy_hitters.py", 210, RECALL_ROW,
              "(_recall_one, all_one) needs recall 1 in every pooled trial at every eps >= 0.32", family="quantile",
              registered="a quantile of 1 - recall at every eps >= 0.32, smallest effect 0.05"),
    every_row(tuple(f"{e}#{i}" for e in ("fig4c", "fig4_k256", "fig4c_wordfreq") for i in (2, 4)),
              "src/dpstream/claims/heavy_hitters.py", 210, RECALL_ROW,
              "(_recall_one, all_one) needs recall 1 in every pooled trial at k~ = 4k", family="trend",
              registered="a trend of recall over k~ whose second clause is recall at k~ = 4k >= 1 - 0.05"),
    every_row(("qr_alg5#0",), "src/dpstream/claims/query_release_extra.py", 118,
              'uniform_ok = ((paper["bad_rounds"] == 0)',
              "needs no bad round and the uniform release in every pooled paper-constant row"),
    every_row(("qr_alg5#2",), "src/dpstream/claims/query_release_extra.py", 139,
              'verdict_of(all_points([bool(v) for v in tight["max_error"] <= tight["alpha_bound"]]))),',
              "needs every pooled non-vacuous row's max error within Claim 5.3's bound, which holds with probability "
              "1 - beta a row"),
    every_row(("qr_alg5#3",), "src/dpstream/claims/query_release_extra.py", 142,
              'verdict_of(all_points([bool(v) for v in df["answered_fraction"] >= 1.0]))),',
              "needs every pooled row to answer all k queries, which Claim 5.4 guarantees with probability 1 - 3 beta "
              "/ 4 a row"),
    RuleDifference(
        ("qr_crossover#1",), "src/dpstream/claims/query_release_extra.py", 277,
        'fits = (1.5 * feasible["est_T_beat_s"] <= 240).tolist()',
        "the text registers a per-trial location rule; the code confirms when any pooled feasible row fits in 240 s "
        "(any(fits)), so each pooled seed adds rows that can only make it confirmed", family="location",
        evidence=per_seed(("qr_crossover#1",)), pooled=True),
    RuleDifference(
        ("fig4d#2",), "src/dpstream/claims/heavy_hitters.py", 366, 'full = [e for e in points if all_one(',
        "the text registers the ln spread of ARE over the eps with recall >= 0.95, margin ln 1.5; the code takes the "
        "eps whose recall is 1 in every trial and the cut FLAT_ARE = 1.2 on the mean spread",
        ("dpstream.claims.heavy_hitters", "FLAT_ARE", 1.2), family="location", evidence=recall_domain),
)
"""Every registered claim whose written rule is not the rule its code applies (the verdict is the code's)."""

FLAG = "rule as registered differs from rule as coded"


def pooling(tables: Path) -> str:
    """One paragraph: the claims whose coded rule reads the pooled seeds as one table (``RuleDifference.pooled``).

    Counted from the claims tables and each seed's own verdicts (``seed_verdicts``), and naming those whose pooled
    verdict fewer than half of the seeds give alone. A description: the verdicts stay the coded rule's.
    """
    ids = pooled_claims()
    shown = verdicts_shown(tables, tuple(ids))
    apart = []
    for claim_id in ids:
        counts = seed_verdicts(tables, claim_id.rsplit("#", 1)[0]).get(claim_id)
        seeds = sum(counts.values()) if counts else 0
        if counts and seeds > 1 and 2 * counts[shown[claim_id]] < seeds:
            apart.append(f"{claim_id} ({shown[claim_id]} pooled; alone: {at_seeds(counts)} of {seeds} seeds)")
    return (f"**{len(ids)} registered claims are decided by a coded rule that reads the pooled seeds as one table** "
            "(the rows above whose difference says so: a max over the min of every row, a condition every row must "
            "meet, steps between adjacent rows, one row read at each end), so their statistic moves with the number "
            "of seeds pooled rather than being calibrated to it. Judged on each master seed's trials alone, "
            + (f"{len(apart)} of them get a verdict that fewer than half of the seeds give: {'; '.join(apart)}. "
               if apart else "every one gets the pooled verdict from at least half of the seeds. ")
            + "The verdicts shown stay the coded rule's, flagged beside them; the per-seed verdicts decide nothing.")



def difference_of(claim_id: str) -> RuleDifference | None:
    """The entry of ``DIFFERENCES`` naming ``claim_id``, if any."""
    return next((d for d in DIFFERENCES if claim_id in d.claims), None)


def flag(claim_ids: list[str]) -> str:
    """The note beside a verdict decided by any of ``claim_ids``: empty, or the flag with the coded rules' lines."""
    where = list(dict.fromkeys(d.where for i in claim_ids if (d := difference_of(i)) is not None))
    return f"{FLAG} ({', '.join(where)})" if where else ""


def registered_text(entry: dict[str, Any]) -> str:
    """The rule as the registration writes it: family, parameters, smallest effect."""
    rule, effect = entry["rule"], entry["smallest_effect"]
    params = ", ".join(f"{k}: {v}" for k, v in (rule.get("parameters") or {}).items())
    return f"{rule['family']} ({params}); smallest effect {effect['value']:g} ({effect['unit']})"


def verdicts_shown(tables: Path, claim_ids: tuple[str, ...]) -> dict[str, str]:
    """The verdict the committed claims tables show for each of ``claim_ids`` (the coded rule's), or why none."""
    out: dict[str, str] = {}
    for exp in dict.fromkeys(i.rsplit("#", 1)[0] for i in claim_ids):
        file = tables / f"{exp}.claims.csv"
        ids = [i for i in claim_ids if i.startswith(f"{exp}#")]
        if not file.exists():
            out |= dict.fromkeys(ids, "no table")
            continue
        claims = pd.read_csv(file, keep_default_na=False)
        verdicts = dict(zip(claim_ids_of(exp, claims), claims["verdict"].astype(str), strict=True))
        out |= {i: verdicts.get(i, "absent") for i in ids}
    return out


def shown_verdicts(tables: Path, claim_ids: tuple[str, ...]) -> str:
    """``verdicts_shown`` as ``id: verdict, ...``."""
    return ", ".join(f"{i}: {v}" for i, v in verdicts_shown(tables, claim_ids).items())


def differences_table(tables: Path, path: Path = REGISTRATION) -> list[str]:
    """Markdown lines: per entry of ``DIFFERENCES``, its claims, the rule as registered and as coded, the difference.

    And the verdicts the claims tables of ``tables`` show for them (the coded rule's).
    """
    entries = by_id(path)
    lines = ["| claims | rule as registered | rule as coded | difference | verdict shown (the coded rule's) |",
             "|---|---|---|---|---|"]
    for d in DIFFERENCES:
        written = "; ".join(dict.fromkeys(registered_text(entries[i]) for i in d.claims))
        difference = f"{d.difference}. {d.evidence(tables)}" if d.evidence else d.difference
        lines.append(f"| {', '.join(d.claims)} | {_cell(written)} | `{d.where}` | {_cell(difference)} | "
                     f"{shown_verdicts(tables, d.claims)} |")
    return lines


PLURAL = {"implementation check": "implementation checks", "theory check": "theory checks",
          "own hypothesis": "own hypotheses", "paper claim": "paper claims"}
GENERIC = "the claim's per-trial statistic"
"""The placeholder statistic of a registered rule description that names no test of its own."""


def generic_claims(path: Path = REGISTRATION) -> list[dict[str, Any]]:
    """The registered claims whose rule is described only generically (a location family on ``GENERIC``)."""
    return [c for c in load(path)["claims"]
            if c["rule"]["family"] == "location" and (c["rule"].get("parameters") or {}).get("statistic") == GENERIC]


def generic_rule_paragraph(path: Path = REGISTRATION) -> str:
    """One paragraph: how many registered claims carry the generic rule description, by kind, and what decides them."""
    generic = generic_claims(path)
    total = len(load(path)["claims"])
    kinds = pd.Series([str(c["kind"]) for c in generic], dtype=str).value_counts()
    by_kind = ", ".join(f"{n} {PLURAL.get(str(k), str(k))}" for k, n in kinds.items())
    return (f"**{len(generic)} of the {total} registered claims ({by_kind}) have a generic rule description** in the "
            f"registration (`family: location`, statistic \"{GENERIC}\", a default smallest effect): the text does "
            "not say which test decides them. Their decision is fixed by the code their `rule_hash` covers (the "
            "claims function named by the experiment, whose rule text each claims row prints in its `rule` column), "
            "not by that description; the registered smallest effect plays no part in those rules. Where a written "
            f"rule does name a test and the code applies another, the verdict is flagged \"{FLAG}\" and the claims "
            "are listed in the table that follows.")


def declared_trend(tables: Path, path: Path = REGISTRATION) -> str:
    """Fig. 3(f)'s written trend rule on the committed table: per mechanism of ``DIFFERENCES``' fig3f claims.

    The registered parameters (y = ln(are_top15 + offset), x = epsilon, smallest effect) and ``decide_trend`` at the
    registered alpha and budget (a fixed-sample rule: one look); decides nothing, the verdicts are the coded rule's.
    """
    frame = tables / "fig3f.csv"
    if not frame.exists():
        return "no table"
    df = pd.read_csv(frame)
    entries = by_id(path)
    parts = []
    for claim_id in next(d.claims for d in DIFFERENCES if d.claims[0].startswith("fig3f#")):
        entry = entries[claim_id]
        params = entry["rule"]["parameters"]
        m = re.fullmatch(r"ln\((?P<col>\w+) \+ (?P<offset>[0-9.e+-]+)\)", str(params["y"]))
        mech = re.search(r"\(skew [^,]+, (?P<name>\w+)\)", str(entry["claim"]))
        if m is None or mech is None:
            raise ValueError(f"{claim_id}: cannot read the registered trend {params['y']!r} / mechanism")
        name = next(n for n in df["mechanism.name"].unique() if relabel(str(n)) == mech["name"])
        block = df[df["mechanism.name"] == name].pivot_table(index=["seed", "trial"], columns=str(params["x"]),
                                                              values=m["col"])
        x, y = block.columns.to_numpy(float), np.log(block.to_numpy(float) + float(m["offset"]))
        delta = float(entry["smallest_effect"]["value"])
        d = decide_trend(x, y, delta, int(entry["budget"]), float(entry.get("alpha", ALPHA)))
        slopes = trial_slopes(x, y)
        se = float(slopes.std(ddof=1) / np.sqrt(slopes.size))
        parts.append(f"{mech['name']} ({claim_id}): mean slope {d.estimate:.3f} (standard error {se:.3f}, "
                     f"{d.n} trials) -> **{d.verdict}**")
    return ("not registered, shown because the registration's text describes it: the written rule (per-trial "
            "least-squares slope of ln(ARE + 1e-3) on ln eps, decreasing, smallest effect "
            f"{delta:g}; `dpstream.claims.sequential.decide_trend` at one look, alpha {ALPHA:g} per side) on the "
            "committed table gives " + "; ".join(parts) + ". It decides nothing; the verdicts shown are the coded "
            "rule's")


SLOPE_SOURCE = "slope ln 1.5 / ln of the x span"
"""How the registration derives its smallest slope for the trend claims whose x grid it does not name."""


def slope_margins(tables: Path, path: Path = REGISTRATION) -> list[str]:
    """Markdown lines: per trend claim whose smallest slope cites ``SLOPE_SOURCE``, what it means on its grid.

    The registered slope s over a grid x_min..x_max is a factor exp(s ln(x_max / x_min)) of y across the grid; the
    source's own derivation gives ln 1.5 / ln(x_max / x_min). The grid is read from the claim's table. Only a
    sequential rule uses the slope (the margin of its refutation side); a fixed-sample rule's code decides.
    """
    rows = []
    for entry in load(path)["claims"]:
        effect = entry.get("smallest_effect") or {}
        x = (entry["rule"].get("parameters") or {}).get("x")
        if SLOPE_SOURCE not in " ".join(str(effect.get("source", "")).split()) or not x:
            continue
        grid = table_of(tables, str(entry["experiment"]))
        if str(x) not in grid.columns:
            continue
        low, high = float(grid[str(x)].min()), float(grid[str(x)].max())
        if not 0 < low < high:
            continue  # a grid of one value, or reaching 0, has no span on a log axis
        span, slope = np.log(high / low), float(effect["value"])
        used = "its refutation margin" if entry["rule"].get("sequential") else "not used (fixed-sample, coded rule)"
        rows.append(f"| {entry['id']} | {x} {low:g}..{high:g} | {slope:g} | x{np.exp(slope * span):.3g} | "
                    f"{np.log(1.5) / span:.3g} | {used} |")
    if not rows:
        return []
    return [f"The registered smallest slope of these trend claims cites \"{SLOPE_SOURCE}, rounded down\". One value "
            "was registered for every grid: what it means across each claim's grid, beside that derivation's value "
            "there (where the registered slope is above it, it asks for more than a factor 1.5):",
            "", "| claim | grid | registered slope | factor across the grid | ln 1.5 / ln span | the slope is |",
            "|---|---|---|---|---|---|", *rows]


def awaiting(claim_ids: list[str], sources: list[str], looks: pd.DataFrame) -> str:
    """``final: <verdict> (look N, awaiting adoption of the experiment)``, or empty; ``not adopted`` if it was refused.

    For claims shown as history (no label of ``sources`` registered) whose registered decisions are all final in
    ``looks.csv`` (``looks``, ``registered.read_looks``): their experiment is not adopted yet. Several claims (the
    clauses of one sentence) are combined like the sentence (``kinds.combine``).
    """
    from dpstream.claims.kinds import combine

    if not claim_ids or any(is_registered(s) for s in sources) or looks.empty:
        return ""
    final = looks[looks["final"] & looks["id"].astype(str).isin(claim_ids)]
    if set(final["id"].astype(str)) != set(claim_ids) or final["id"].duplicated().any():
        return ""
    at = sorted({int(n) for n in final["look"]})
    where = f"look {at[0]}" if len(at) == 1 else "looks " + ", ".join(map(str, at))
    state = "not adopted" if any(REFUSED_NOTE in s for s in sources) else "awaiting adoption of the experiment"
    return f"final: {combine(list(final['verdict'].astype(str)))} ({where}, {state})"


BY_CONSTRUCTION = "by construction"
"""How a verdict is labelled that follows from the implementation whatever the trials (``constructed``)."""
CANNOT_FAIL = "cannot fail"
"""How the registration's ``kind_reason`` begins for an implementation check declared unable to fail."""
NOT_CONFIG = {"trial", "seed", "key", "commit", "run_time", "prereg_hash", "dpstream_version"}
"""Columns of a trial row that are neither its configuration nor its measurement."""


def one_trial(table: pd.DataFrame, which: int) -> pd.DataFrame | None:
    """``table`` with every trial's measurements replaced by those of one trial (``which``: 0 first, -1 last).

    Per configuration (every config column but trial, seed and provenance) the rows of each trial take, in order,
    the measured columns (``nulls.measured_columns``) of the chosen trial's rows; None when the trials of a
    configuration do not have the same number of rows.
    """
    config = [c for c in table.columns if (c.startswith(CONFIG_PREFIXES) or c in KEPT) and c not in NOT_CONFIG]
    measured = measured_columns(table, set(config))
    point = table.groupby(config, dropna=False, sort=False).ngroup() if config else pd.Series(0, index=table.index)
    rank = table.groupby([point, table["trial"]], sort=False).cumcount()
    frame = pd.DataFrame({"point": point, "trial": table["trial"], "rank": rank})
    if frame.groupby(["point", "trial"]).size().groupby(level=0).nunique().max() != 1:
        return None
    chosen = frame.groupby("point")["trial"].transform(lambda t: sorted(t.unique())[which])
    source = table[(frame["trial"] == chosen).to_numpy()]
    lookup = pd.Series(np.arange(len(source)), index=pd.MultiIndex.from_arrays(
        [frame.loc[source.index, "point"], frame.loc[source.index, "rank"]]))
    at = lookup.reindex(pd.MultiIndex.from_arrays([frame["point"], frame["rank"]])).to_numpy()
    out = table.copy()
    for c in measured:
        out[c] = source[c].to_numpy()[at]
    return out


def constructed(claims: pd.DataFrame, table: pd.DataFrame, exp: str, results: Path,
                spec: dict[str, Any] | None = None) -> list[str]:
    """Per claims row: the ``by construction`` note of a decided implementation check whose data have no spread.

    Such a check is one the registration declares unable to fail (its ``kind_reason`` begins ``CANNOT_FAIL``, fixed
    before the run) whose data bear it out (both arms identical in every trial, e.g. an equivalence the threshold
    decides): its claims function (``spec``, default the experiment's as composed from the ``results`` folder) gives
    the same verdict and measurement on ``table`` as on the table where every trial is the first trial, and where
    every trial is the last one (``one_trial``), so no trial decided it. "" for every other row (and for a table of
    one trial). A check with no spread that the registration does not declare so (every audit seed flagged alike,
    say) keeps its label: its trials could have differed.
    """
    entries = by_id()
    ids = claim_ids_of(exp, claims)
    out = [""] * len(claims)
    due = [k for k, (i, v) in enumerate(zip(ids, claims["verdict"].astype(str), strict=True))
           if entries.get(i, {}).get("kind") == "implementation check" and v in ("confirmed", "not confirmed")
           and str(entries[i].get("kind_reason", "")).startswith(CANNOT_FAIL)]
    if not due or "trial" not in table.columns or table["trial"].nunique() < 2:
        return out
    spec = spec or spec_of(results, exp)
    if spec is None:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-spread tables warn in scipy
        real = judge(spec, table)
        copies = [judge(spec, t) if (t := one_trial(table, which)) is not None else None for which in (0, -1)]
    if real is None or any(c is None or len(c) != len(real) for c in copies):
        return out
    trials = int(table["trial"].nunique())
    for k in due:
        if k < len(real) and all(c is not None and (c["verdict"].iloc[k], c["measured"].iloc[k])
                                 == (real["verdict"].iloc[k], real["measured"].iloc[k]) for c in copies):
            out[k] = (f"{BY_CONSTRUCTION} (registered: \"{entries[ids[k]]['kind_reason']}\"); its data have no "
                      f"spread: its rule gives the same verdict and measurement when all {trials} trials are the "
                      "first trial, or the last")
    return out


NEEDED = re.compile(r"a decision needs about (\d+) trials")
POOLED = re.compile(r"(\d+) pooled trials")


def trials_needed(measured: str, entry: dict[str, Any]) -> str:
    """What an undecided registered claim would need, as its registered rule can say it (``entry``: its registration).

    A sequential rule estimates the trials itself (``measured``); a check the registration declares unable to fail,
    or that holds by construction, no number of trials decides; any other rule is fixed-sample, and its registration
    states no per-trial test to power, so there is no estimate (none is made up after the run).
    """
    if m := NEEDED.search(measured):
        return f"about {m[1]} trials in all (the registered sequential rule's estimate)"
    if str(entry.get("kind_reason", "")).startswith(CANNOT_FAIL) or "holds by construction" in measured:
        return BY_CONSTRUCTION_NEED
    return NO_ESTIMATE


BY_CONSTRUCTION_NEED = "none: they hold by construction, so only a failure (a bug) would decide them"
NO_ESTIMATE = ("no estimate: fixed-sample rules whose registration states no per-trial test to power (the trials they "
               "would need are not computed after the run)")


def decision_needs(tables: Path) -> str:
    """A paragraph: the registered claims left inconclusive, grouped by ``trials_needed``, with their pooled trials."""
    shown = all_claims(tables)
    if shown.empty:
        return ""
    undecided = shown[shown["label"].map(is_registered).astype(bool) & (shown["verdict"] == "inconclusive")]
    if undecided.empty:
        return ""
    entries = by_id()
    rank = {claim_id: k for k, claim_id in enumerate(entries)}  # the registration's order
    groups: dict[str, list[str]] = {}
    for _, r in undecided.sort_values("id", key=lambda ids: ids.map(rank)).iterrows():
        measured = str(r["measured"])
        trials = f"{m[1]} trials" if (m := POOLED.search(measured)) else "trials not stated"
        need = trials_needed(measured, entries.get(str(r["id"]), {}))
        groups.setdefault(need, []).append(f"{r['id']} ({trials})")
    parts = [f"{len(ids)}: {need}: {', '.join(ids)}" for need, ids in groups.items()]
    return (f"**What the {len(undecided)} registered claims left inconclusive would need.** " + "; ".join(parts)
            + ".")


def table_of(tables: Path, exp: str) -> pd.DataFrame:
    """``<tables>/<exp>.csv`` (empty when there is none)."""
    path = tables / f"{exp}.csv"
    return pd.read_csv(path, low_memory=False) if path.exists() else pd.DataFrame()


def shown(claim_ids: list[str], sources: list[str], looks: pd.DataFrame, notes: list[str] | None = None) -> list[str]:
    """Per claim, its ``from`` cell: where the verdict comes from (``registered.short``), then the notes that apply.

    A verdict ``by construction`` (``notes``, from ``constructed``) says so first; then the final registered decision
    awaiting adoption (``awaiting``) and the rule-text flag (``flag``).
    """
    notes = notes or [""] * len(claim_ids)
    return ["; ".join(x for x in (BY_CONSTRUCTION if n else "", short(s), awaiting([i], [s], looks), flag([i])) if x)
            for i, s, n in zip(claim_ids, sources, notes, strict=True)]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
