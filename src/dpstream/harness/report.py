"""``results/report.md`` and ``results/report.html``.

Every figure, every paper claim with the measured value and a verdict, and the configuration and versions that produced
them.
"""

from __future__ import annotations

import html
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

import dpstream
from dpstream.certified import NOT_PRIVATE, not_private, uncertified
from dpstream.claims import VERDICTS
from dpstream.claims.kinds import (
    IMPLEMENTATION,
    KIND_WORDS,
    OURS,
    PAPER,
    PAPER_SETTING,
    STAND_IN,
    THEORY,
    UNREGISTERED,
    classify,
    headline,
    stand_in,
)
from dpstream.claims.registration import REGISTRATION, by_id
from dpstream.harness.console import SMOKE_BANNER, typed_command
from dpstream.harness.environment import PACKAGES, environment
from dpstream.harness.first_page import PANELS
from dpstream.harness.first_page import section as first_page_section
from dpstream.harness.registered import is_registered, labels, looks_of
from dpstream.harness.registered import section as registered_section
from dpstream.harness.rule_notes import shown as from_cells
from dpstream.plots.names import relabel


def _git_commit() -> str:
    """The commit checked out when the report is written (its own commit comes after), and whether code differs."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=here).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ":/src", ":/conf"], capture_output=True,
                               text=True, timeout=5, cwd=here).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not head:
        return "unknown"
    return f"{head}, with uncommitted changes to src/ or conf/" if dirty else head


def provenance(cfg: dict[str, Any]) -> dict[str, str]:
    """Versions (numpy, numba, scipy, pandas, the lock's hash) and settings that produced a report."""
    env = environment()
    return {
        "dpstream": dpstream.__version__, "git commit checked out when written": _git_commit(),
        "python": platform.python_version(),
        **{p: env[f"{p}_version"] for p in PACKAGES}, "requirements.lock sha256": env["lock_sha256"],
        "profile": cfg["profile"]["name"],
        "seed": str(cfg["seed"]), "noise": cfg["noise"], "backend": cfg["backend"], "n_jobs": str(cfg["n_jobs"]),
    }


def _claims(results_dir: Path, exp_id: str) -> pd.DataFrame | None:
    path = results_dir / "tables" / f"{exp_id}.claims.csv"
    # keep_default_na=False: the verdict "n/a" is a word, not a missing value
    if not path.exists():
        return None
    claims = pd.read_csv(path, keep_default_na=False)
    # the kinds are declared in the pre-registration, never taken from an older table's columns
    return classify(exp_id, claims.drop(columns=[c for c in ("kind", "kind_reason") if c in claims.columns]))


def _cell(text: object) -> str:
    """A Markdown table cell: pipes escaped, newlines folded."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def claim_cells(row: Any) -> str:
    """One claim as Markdown table cells: ``claim | rule | measured | **verdict** |`` (row of a claims table)."""
    return f"{_cell(row.claim)} | {_cell(row.rule)} | {_cell(row.measured)} | **{row.verdict}** |"


def verdict_counts(claims: pd.DataFrame) -> dict[str, int]:
    """How many claims have each of the four verdict words (zero included), in ``VERDICTS`` order."""
    counts = claims["verdict"].value_counts()
    unknown = sorted(set(counts.index) - set(VERDICTS))
    if unknown:
        raise ValueError(f"unknown verdicts {unknown}: allowed are {VERDICTS}")
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


def verdict_summary(claims: pd.DataFrame) -> str:
    """Counts of the four verdict words, every word listed (zero included), in one fixed order."""
    counts = verdict_counts(claims)
    return ", ".join(f"{n} {v}" for v, n in counts.items()) + f" ({sum(counts.values())} claims)"


CHECKS_NOTE = ("Claims that follow from the construction (a rule that re-derives the noise calibration, a bound "
               "recomputed from the paper's formula, an auditor's self-test, a feasibility computation, a rule that "
               "cannot fail): checks of the implementation, not counted in the paper tally. A failing check is a bug.")


TALLIES = ((PAPER, "paper claims (each sentence once, the paper's setting)"),
           ("stand-in", "paper sentences on the synthetic stand-in (Fig. 4; not about CAIDA)"),
           (OURS, "own hypotheses"), (THEORY, "theory checks"), (IMPLEMENTATION, "implementation checks"),
           (UNREGISTERED, "unregistered claims (decide nothing)"))
"""The report's tallies in order: (selector, label); ``KIND_WORDS`` are the kinds the pre-registration declares."""
assert {k for k, _ in TALLIES} >= set(KIND_WORDS)


def _tally_rows(claims: pd.DataFrame, selector: str) -> pd.DataFrame:
    if selector == PAPER:
        return headline(claims)
    return stand_in(claims) if selector == "stand-in" else claims[claims["kind"] == selector]


def tally_table(claims: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per tally: paper sentences (each once, ``kinds.headline``), the stand-in, each other kind."""
    rows = []
    for selector, label in TALLIES:
        sub = _tally_rows(claims, selector)
        rows.append({"kind": label, **verdict_counts(sub), "total": len(sub)})
    rows.append({"kind": "all rows of the claims tables", **verdict_counts(claims), "total": len(claims)})
    return pd.DataFrame(rows)


BY_SENTENCE = ("Paper claims are counted by sentence: a sentence of several clauses is one claim, confirmed only if "
               "every clause is, not confirmed if any clause is refuted.")


def registered_sentences(claims: pd.DataFrame) -> str:
    """The paper tally by sentence over the sentences whose every clause the registered run decided.

    ``claims`` carries a boolean ``registered`` per row (its label names a registered look); a sentence with a
    clause from history is left out (history decides nothing).
    """
    rows = claims[(claims["kind"] == PAPER) & (claims["setting"] == PAPER_SETTING) & (claims["data"] != STAND_IN)]
    decided = rows.groupby("sentence")["registered"].all()
    sentences = headline(claims[claims["sentence"].isin(decided[decided].index)])
    counts = verdict_counts(sentences)
    return (", ".join(f"{n} {v}" for v, n in counts.items()) + f" ({len(sentences)} of {len(decided)} sentences "
            "have every clause decided by the registered run; the others include history, which decides nothing)")


def tally_lines(claims: pd.DataFrame) -> list[str]:
    """The report's headline: the paper tally by sentence first, then the other tallies, then all rows.

    The paper tally is followed by its registered part when the rows say which are registered (``registered``).
    """
    out = []
    for selector, label in TALLIES:
        out += [f"{'Verdicts: ' if selector == PAPER else ''}{label}: {verdict_summary(_tally_rows(claims, selector))}",
                ""]
        if selector == PAPER:
            out += [BY_SENTENCE + (f" Of those, registered paper sentences: {registered_sentences(claims)}."
                                   if "registered" in claims.columns else ""), ""]
    return [*out, f"All rows of the claims tables: {verdict_summary(claims)}", ""]


def theory_scale_lines(claims: pd.DataFrame) -> list[str]:
    """Per registered bound of the theory checks among ``claims``: where it stops being vacuous, whether runs reach it.

    The scale is declared in the pre-registration (``nonvacuous_at``, ``runs_reach_it``); a theory check tested only
    where its bound is vacuous can confirm nothing about the bound.
    """
    theory = claims[claims["kind"] == THEORY]
    if theory.empty:
        return []
    entries = by_id(REGISTRATION)
    scales: dict[tuple[str, str], int] = {}
    for r in theory.itertuples():
        e = entries.get(str(r.id), {})
        key = (str(e.get("nonvacuous_at", "not stated")), str(e.get("runs_reach_it", "not stated")))
        scales[key] = scales.get(key, 0) + 1
    below = sum(n for (_, reach), n in scales.items() if reach.lower().startswith("no"))
    return ["## Theory checks and the scale of their bounds", "",
            f"{len(theory)} theory checks; {below} of them run only where their bound is vacuous (the runs do not "
            "reach the scale where it says something).", "",
            "| where the bound stops being vacuous | do the runs reach it? | checks |", "|---|---|---|",
            *[f"| {_cell(at)} | {_cell(reach)} | {n} |" for (at, reach), n in scales.items()], ""]


def with_paper_names(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims with mechanism config names in their text written as the papers' names.

    For example ``svt_tm`` -> ``ThresholdMonitor``; the verdict is untouched.
    """
    return claims.assign(**{c: claims[c].astype(str).map(relabel) for c in ("claim", "rule", "measured")})


_INLINE = ((re.compile(r"`([^`]+)`"), r"<code>\1</code>"), (re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"))


def inline_html(text: object) -> str:
    """Report text (Markdown inline: `code`, **bold**) as HTML: escaped first, then the two marks replaced."""
    out = html.escape(str(text), quote=False)
    for pattern, replacement in _INLINE:
        out = pattern.sub(replacement, out)
    return out


_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_IMG = re.compile(r"&lt;(img src='[^'&<>]+' width='\d+')&gt;")
"""A first-page thumbnail (``first_page``), the one raw HTML tag the page holds."""


def markdown_html(lines: list[str]) -> list[str]:
    """The report's first page (headings, paragraphs, pipe tables, links; Markdown) as HTML lines."""
    out: list[str] = []
    rows: list[list[str]] = []

    def cells(line: str) -> list[str]:
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]

    def text(s: str) -> str:
        return _IMG.sub(r"<\1>", _LINK.sub(r"<a href='\2'>\1</a>", inline_html(s)))

    for line in [*lines, ""]:
        if line.startswith("|"):
            if not set(line) <= set("|-: "):
                rows.append(cells(line))
            continue
        if rows:
            head, *body = rows
            out.append("<table><thead><tr>" + "".join(f"<th>{text(c)}</th>" for c in head) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{text(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table>")
            rows = []
        if line.startswith("## "):
            out.append(f"<h2>{text(line[3:])}</h2>")
        elif line.strip():
            out.append(f"<p>{text(line)}</p>")
    return out


def html_table(table: pd.DataFrame, cls: str) -> str:
    """``table`` as an HTML table of class ``cls``: every cell through ``inline_html``, floats to 3 digits."""
    head = "".join(f"<th>{inline_html(c)}</th>" for c in table.columns)
    body = ["<tr>" + "".join(f"<td>{inline_html(_fmt(v))}</td>" for v in row) + "</tr>"
            for row in table.itertuples(index=False)]
    return f"<table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _fmt(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


CONTINUAL_METRICS = {  # marker column -> the paper's metric (end of stream) and its release-time summaries
    "are_top15_mean_t": ("are_top15", "are_top15_mean_t", "are_top15_max_t"),
    "precision_mean_t": ("precision", "precision_mean_t", "recall", "recall_mean_t"),
}


def continual_table(df: pd.DataFrame, spec: dict[str, Any]) -> pd.DataFrame | None:
    """Trial means of the end-of-stream metrics next to their mean / max over the release times.

    Release times: continual observation; one row per (mechanism, swept x), with the summaries the rows have; None when
    the rows have no release-time metrics.
    """
    cols = next((c for marker, c in CONTINUAL_METRICS.items() if marker in df.columns), None)
    if cols is None:
        return None
    x = spec.get("plot_args", {}).get("x")
    keys = ["mechanism.name", *([x] if x in df.columns and x != "mechanism.name" else [])]
    return df.groupby(keys, sort=False)[[c for c in cols if c in df.columns]].mean().reset_index()


def _display(table: pd.DataFrame) -> pd.DataFrame:
    """A results table as shown in the report: ``mechanism.name`` becomes ``mechanism`` with the papers' names."""
    if "mechanism.name" not in table.columns:
        return table
    return table.assign(**{"mechanism.name": table["mechanism.name"].astype(str).map(relabel)}).rename(
        columns={"mechanism.name": "mechanism"})


def _markdown(table: pd.DataFrame) -> list[str]:
    cells = [[_fmt(v) for v in row] for row in table.itertuples(index=False)]
    return ["| " + " | ".join(table.columns) + " |", "|" + "---|" * table.shape[1],
            *["| " + " | ".join(row) + " |" for row in cells], ""]


def _project_relative(path: object) -> object:
    """A folder under the working directory as a relative path; other values unchanged.

    So a committed report does not depend on where the project was checked out.
    """
    if not isinstance(path, str) or not Path(path).is_absolute() or not Path(path).is_relative_to(Path.cwd()):
        return path
    return str(Path(path).relative_to(Path.cwd()))


def claims_section(claims: pd.DataFrame, smoke: bool) -> tuple[list[str], str]:
    """An experiment's claims as Markdown rows and an HTML table; at smoke scale every verdict says so."""
    named = with_paper_names(claims)
    if smoke:
        named = named.assign(verdict=[f"{v} ({SMOKE_BANNER})" for v in named["verdict"]])
    source = "source" in named.columns  # where each verdict comes from (``registered.labels``)
    md = [f"| claim | rule (fixed before the run) | measured | verdict |{' from |' if source else ''}",
          f"|---|---|---|---|{'---|' if source else ''}",
          *[f"| {claim_cells(r)}" + (f" {_cell(r.source)} |" if source else "") for r in named.itertuples()],
          ""]
    page = html_table(named.assign(verdict=[f"**{v}**" for v in named["verdict"]]).rename(
        columns={"rule": "rule (fixed before the run)", "source": "from"}), "claims")
    return md, page


def compute_cost(df: pd.DataFrame) -> str:
    """"; computed in X min of trial wall time" from the rows' ``trial_wall_s`` (the runner's), or a note without it.

    The sum over rows is what the experiment costs from an empty store with one worker (n_jobs = 1), on the machine
    and under the load the rows were computed with; rows from before the column existed are counted as missing.
    """
    if "trial_wall_s" not in df.columns or df["trial_wall_s"].isna().all():
        return "; trial wall time not recorded (rows from before it was)"
    known = df["trial_wall_s"].dropna()
    missing = len(df) - len(known)
    return (f"; computed in {known.sum() / 60:.3g} min of trial wall time (one worker)"
            + (f", {missing} rows without it" if missing else ""))


def write_report(specs: list[dict[str, Any]], frames: list[pd.DataFrame], cfg: dict[str, Any]) -> Path:
    """Write report.md and report.html into ``cfg['results_dir']``; return the Markdown path."""
    results_dir = Path(cfg["results_dir"])
    prov = provenance(cfg)
    smoke = prov["profile"] == "smoke"  # every verdict then says it is not a reproduction
    md = ["# dpstream report", "",
          f"Regenerated by `{cfg.get('regenerated_by') or typed_command()}`. Each section: the paper's claim, our "
          "figure, and each claim checked against the measured rows. Errors, precision, recall, true counts and "
          "other numbers computed from the raw data evaluate the releases: they are **NOT private (evaluation)**; "
          "only a row's release stands under its privacy label."
          + (f" **Smoke profile: {SMOKE_BANNER}.**" if smoke else ""), "",
          ]
    first = [*(registered_section(results_dir) if not smoke else []),
             *(first_page_section(results_dir, str(cfg.get("changelog_ref") or "HEAD"))
               if any(s["id"] in PANELS for s in specs) else [])]
    md += first
    tallies_at = len(md)  # the first page on top, then the tallies, then the provenance
    md += ["| setting | value |", "|---|---|", *[f"| {k} | {v} |" for k, v in prov.items()], ""]
    page = ["<html><head><meta charset='utf-8'><title>dpstream report</title>",
            "<style>body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 6px;font-size:90%}</style></head><body>",
            "<h1>dpstream report</h1>", *markdown_html(first)]
    verdicts_at = len(page)  # the first page on top, then the verdict summary, then the provenance
    page.append(html_table(pd.DataFrame([prov]), "provenance"))
    summary = []
    looks = looks_of(results_dir / "tables")
    for spec, df in zip(specs, frames, strict=True):
        exp_id = spec["id"]
        md += [f"## {exp_id}: {spec.get('title', '')}", ""]
        page += [f"<h2>{html.escape(exp_id)}: {inline_html(spec.get('title', ''))}</h2>"]
        if spec.get("paper_claim"):
            md += [f"Paper: {spec['paper_claim']}", ""]
            page += [f"<p><b>Paper:</b> {inline_html(spec['paper_claim'])}</p>"]
        note = f"{len(df)} trial rows; table `tables/{exp_id}.csv`" + compute_cost(df) + (
            "; **contains NOT privacy-certified rows**" if uncertified(df) else "") + (
            f"; non-private baseline rows (privacy: {NOT_PRIVATE})" if not_private(df) else "")
        md += [note, ""]
        page += [f"<p>{inline_html(note)}</p>"]
        figure = results_dir / "figures" / f"{exp_id}.png"
        if figure.exists():
            md += [f"![{exp_id}](figures/{exp_id}.png)", ""]
            page += [f"<img src='figures/{exp_id}.png' style='max-width:48em'>"]
        continual = continual_table(df, spec)
        if continual is not None:
            intro = "At the end of the stream and over the release times (mean / max, continual observation):"
            md += [intro, "", *_markdown(_display(continual))]
            page += [f"<p>{inline_html(intro)}</p>", html_table(_display(continual), "continual")]
        claims = _claims(results_dir, exp_id)
        if claims is not None and len(claims):
            found = labels(claims, df, looks, exp_id)
            claims = claims.assign(source=from_cells([str(i) for i in claims["id"]], found, looks),
                                   registered=[is_registered(x) for x in found])
            summary += [{"experiment": exp_id, **r} for r in claims.to_dict("records")]
            visible = claims[claims["kind"] != IMPLEMENTATION]
            if "nulls" in visible.columns:  # the falsifiability check goes with what was measured
                visible = visible.assign(measured=visible["measured"] + " [nulls: " + visible["nulls"] + "]")
            claims = visible[["claim", "rule", "measured", "verdict", "source"]]
        if claims is not None and len(claims):
            md_rows, page_table = claims_section(claims, smoke)
            md += md_rows
            page += [page_table]
    if summary:
        everything = pd.DataFrame(summary)
        md[tallies_at:tallies_at] = tally_lines(everything)
        page[verdicts_at:verdicts_at] = ["<h2>Verdicts</h2>", html_table(tally_table(everything), "verdicts")]
        md += theory_scale_lines(everything)
        checks = everything[everything["kind"] == IMPLEMENTATION]
        if len(checks):
            listed = with_paper_names(checks)[["experiment", "claim", "kind_reason", "rule", "measured", "verdict",
                                               "source"]]
            md += ["## Implementation checks", "", CHECKS_NOTE, "",
                   "| experiment | check | why it is not a paper claim | rule | measured | verdict | from |",
                   "|---|---|---|---|---|---|---|",
                   *[f"| {r.experiment} | {_cell(r.claim)} | {_cell(r.kind_reason)} | {_cell(r.rule)} | "
                     f"{_cell(r.measured)} | **{r.verdict}** | {_cell(r.source)} |" for r in listed.itertuples()], ""]
            page += ["<h2>Implementation checks</h2>", f"<p>{inline_html(CHECKS_NOTE)}</p>",
                     html_table(listed.assign(verdict=[f"**{v}**" for v in listed["verdict"]]).rename(
                         columns={"source": "from"}), "checks")]
    shown = {k: _project_relative(v) if k.endswith("_dir") else v for k, v in cfg.items()
             if k not in ("experiment", "regenerated_by", "changelog_ref")}
    md += ["## Configuration", "", "```yaml", yaml.safe_dump(shown, sort_keys=True).rstrip(), "```", ""]
    page += ["</body></html>"]
    out = results_dir / "report.md"
    out.write_text("\n".join(md))
    (results_dir / "report.html").write_text("\n".join(page))
    return out
