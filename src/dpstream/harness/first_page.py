"""The first page a referee reads: one row per figure panel of Holland's paper, and the verdicts that changed.

Per panel (``PANELS``): the registered sentences of the panel (``results/preregistration.yaml``), our setting (scale,
real or synthetic data, trials, implementation language), the verdict of each sentence in the paper's setting (its
clauses and checks combined, ``kinds.combine``), its robustness (``robust``, or ``fragile (fails at X)`` naming the
robustness rows whose decided verdict contradicts it, ``undecided at X`` for a setting left inconclusive; ``not
assessed`` beside an undecided verdict), the main deviation (the registration's ``underspecified`` or ``data`` note)
and a thumbnail. Every number on the page comes from the tables it is written from. ``changelog`` lists every claim
whose verdict differs from a previous set of claims tables (e.g. the last committed report's), with the old and new
verdict.
"""

from __future__ import annotations

import functools
import io
import re
import subprocess
from pathlib import Path

import pandas as pd
import yaml

from dpstream.claims.core import ZERO_SPREAD
from dpstream.claims.decide import DETERMINISTIC
from dpstream.claims.heavy_hitters import DETERMINISTIC as HH_DETERMINISTIC
from dpstream.claims.kinds import PAPER, PAPER_SETTING, classify, combine
from dpstream.claims.registration import load
from dpstream.harness.registered import combined, is_registered, labels, looks_of, table_rows
from dpstream.harness.rule_notes import (
    awaiting,
    constructed,
    decision_needs,
    declared_trend,
    differences_table,
    flag,
    generic_rule_paragraph,
    pooling,
    slope_margins,
    table_of,
)
from dpstream.metrics import release_times
from dpstream.registry import CONF_DIR, load_option

PANELS = {
    "fig3a": ("fig3a",), "fig3b": ("fig3b", "fig3b_wordfreq"), "fig3c": ("fig3c",), "fig3d": ("fig3d",),
    "fig3e": ("fig3e",), "fig3f": ("fig3f",), "fig4a": ("fig4a",), "fig4b": ("fig4b",),
    "fig4c": ("fig4c", "fig4_k256", "fig4c_wordfreq"), "fig4d": ("fig4d",), "fig4e": ("fig4e",), "fig4f": ("fig4f",),
}
"""Each figure panel and the experiments whose claims check its sentences (the first one in the paper's setting)."""
LANGUAGE = "Python/numba (the paper: C++)"
DECIDED = ("confirmed", "not confirmed")
"""The verdicts a robustness setting can agree with or contradict."""
THEORY_LANGUAGE = "Python/numba (the document reports no runs of its own)"
"""The implementation beside a document without experiments (Kaplan-Mansour-Stemmer, Hsu-Roth-Ullman, the notes)."""


def panel_claims(tables: Path) -> dict[str, pd.DataFrame]:
    """Per panel, its claims rows with the registered columns (``kinds.classify``), ``experiment``, ``id``, ``label``.

    ``label`` is where the verdict comes from (``registered.labels``: a registered look, or history).
    """
    out = {}
    looks = looks_of(tables)
    for panel, experiments in PANELS.items():
        frames = []
        for exp in experiments:
            path = tables / f"{exp}.claims.csv"
            if path.exists():
                claims = pd.read_csv(path, keep_default_na=False)
                claims = claims.drop(columns=[c for c in ("kind", "kind_reason") if c in claims.columns])
                frames.append(classify(exp, claims).assign(experiment=exp,
                                                           label=labels(claims, table_rows(tables, exp), looks,
                                                                        exp)))
        if frames:
            out[panel] = pd.concat(frames, ignore_index=True)
    return out


DESIGNED = re.compile(r"^synthetic:\s*false\s*#\s*a designed input", re.MULTILINE)
"""How a data config says it is a designed input: the comment on its ``synthetic: false`` line."""


@functools.cache
def designed_inputs() -> frozenset[str]:
    """Names of the data configs that say they are a designed input, not real data (``conf/data``, their own words)."""
    out = set()
    for file in sorted((CONF_DIR / "data").glob("*.yaml")):
        text = file.read_text()
        if DESIGNED.search(text):
            out.add(str(yaml.safe_load(text)["name"]))
    return frozenset(out)


def _setting(tables: Path, exp: str, language: str = LANGUAGE) -> str:
    path = tables / f"{exp}.csv"
    if not path.exists():
        return "no trial table"
    df = pd.read_csv(path, usecols=lambda c: c in {"trial", "seed", "length", "data.length", "data.synthetic",
                                                   "data.name", "n_true"})
    trials = df.groupby("seed")["trial"].nunique().sum() if "seed" in df else df["trial"].nunique()
    length = next((int(df[c].max()) for c in ("length", "data.length") if c in df and df[c].notna().any()), None)
    synthetic = bool(df["data.synthetic"].any()) if "data.synthetic" in df else None
    names = sorted(df["data.name"].dropna().astype(str).unique()) if "data.name" in df else []
    scale = f"T = {length:,}" if length else "scale as configured"
    named = f" ({', '.join(names)})" if names else ""
    data = ("synthetic stand-in for CAIDA" if exp.startswith("fig4") else "Zipf (synthetic, as the paper)"
            if exp.startswith("fig3") else "data as configured (no data column)" if synthetic is None
            else "no input data" if names == ["none"]
            else f"synthetic data{named}" if synthetic
            else f"a designed input{named}" if names and set(names) <= designed_inputs()
            else f"real data{named}")
    if "n_true" in df and df["n_true"].notna().any():  # the heavy hitters the stand-in holds, as the trials found
        low, high = int(df["n_true"].min()), int(df["n_true"].max())
        data += f" ({low if low == high else f'{low}-{high}'} true heavy hitters)"
    return f"{scale}; {data}; {trials} trials; {language}"


def _setting_name(setting: str) -> str:
    """A robustness setting's short name: ``robustness: k = 256 (the caption's k)`` -> ``k = 256``."""
    return str(setting).removeprefix("robustness: ").split(" (")[0]


def variants(claims: pd.DataFrame) -> dict[str, str]:
    """Per experiment checking a panel beside the one in the paper's setting, the setting it varies (``k = 256``).

    It is the first setting of the experiment's claims that the paper's experiment does not have; its other settings
    (the mean over release times) are then settings of that variant, not of the paper's experiment.
    """
    main = set(claims.loc[claims["setting"] == PAPER_SETTING, "experiment"])
    shared = set(claims.loc[claims["experiment"].isin(main), "setting"].map(_setting_name))
    out = {}
    for exp, rows in claims[~claims["experiment"].isin(main)].groupby("experiment", sort=False):
        own = [n for n in rows["setting"].map(_setting_name) if n not in shared]
        out[str(exp)] = own[0] if own else str(exp)
    return out


def _robustness(rows: pd.DataFrame, verdict: str, varied: dict[str, str] | None = None) -> str:
    """Robust, or fragile naming the robustness settings whose decided verdict contradicts ``verdict``.

    Only a decided verdict (confirmed, not confirmed) can be robust or fragile; beside an undecided one the column
    says so and lists every setting's verdict. A setting left inconclusive is named as undecided, not as a failure.
    A setting's rows are combined like one sentence's clauses (``kinds.combine``). A row of a variant experiment
    (``varied``, from ``variants``) is named with the variant: ``k = 256, mean over release times``.
    """
    others = rows[rows["setting"] != PAPER_SETTING]
    if others.empty:
        return "no robustness column"
    experiments = others["experiment"] if "experiment" in others.columns else pd.Series("", index=others.index)
    names = []
    for exp, setting in zip(experiments, others["setting"], strict=True):
        name, variant = _setting_name(setting), (varied or {}).get(str(exp))
        names.append(name if variant is None or variant == name else f"{variant}, {name}")
    by_name = {str(name): combine(list(group["verdict"]))
               for name, group in others.groupby(pd.Series(names, index=others.index), sort=False)}
    if verdict not in DECIDED:
        every = "; ".join(f"{name}: {v}" for name, v in by_name.items())
        return f"not assessed: the paper's setting is {verdict} ({every})"
    fails = "; ".join(f"{name}: {v}" for name, v in by_name.items() if v in DECIDED and v != verdict)
    undecided = ", ".join(name for name, v in by_name.items() if v not in DECIDED)
    if fails:
        return f"fragile (fails at {fails})" + (f"; undecided at {undecided}" if undecided else "")
    return f"undecided at {undecided}" if undecided else "robust"


ZERO_SPREAD_TEXTS = (ZERO_SPREAD, HH_DETERMINISTIC.strip(" []"), DETERMINISTIC.split(" (")[0])
"""What the claims functions write where a point has no spread over the trials (``claims.core``, ``heavy_hitters``,
``decide``)."""


def deterministic(measured: pd.Series, verdict: str) -> str:
    """The note beside a decided verdict that a clause's rows have no spread: a deterministic computation, no test."""
    if verdict not in DECIDED or not any(t in str(m) for m in measured for t in ZERO_SPREAD_TEXTS):
        return ""
    return "zero spread over the trials: a deterministic computation on this data, not a test"


def first_page(tables: Path, figures: str = "figures") -> list[str]:
    """The Markdown lines of the first page (one row per panel and sentence)."""
    entries = {c["id"]: c for c in load()["claims"]}
    looks = looks_of(tables)
    lines = ["| panel | claim | our setting | verdict | robustness | main deviation | thumbnail |",
             "|---|---|---|---|---|---|---|"]
    for panel, claims in panel_claims(tables).items():
        paper = claims[claims["kind"] == PAPER]
        varied = variants(paper)
        setting = _setting(tables, PANELS[panel][0])
        for _, rows in paper.groupby("sentence", sort=False):
            decisive = rows[rows["setting"] == PAPER_SETTING]
            if decisive.empty:  # a sentence of another panel checked here for robustness only
                continue
            verdict = combine(list(decisive["verdict"]))
            ids, sources = [str(i) for i in decisive["id"]], list(decisive["label"])
            source = "; ".join(x for x in (combined(sources), awaiting(ids, sources, looks), flag(ids),
                                           deterministic(decisive["measured"], verdict)) if x)
            entry = entries[str(decisive["id"].iloc[0])]
            deviation = "; ".join(d for d in (entry.get("underspecified"), "judged on a synthetic stand-in (its own "
                                              "tally)" if entry.get("data") else "") if d)
            quote = str(entry["quote"]).replace("|", "\\|")
            thumb = f"<img src='{figures}/{PANELS[panel][0]}.png' width='120'>"
            lines.append(f"| {panel} | \"{quote}\" | {setting} | **{verdict}** ({source}) | "
                         f"{_robustness(rows, verdict, varied)} | {deviation or 'none registered'} | {thumb} |")
    return lines


def release_note(tables: Path, panel: str = "fig3b") -> str:
    """Where a Figure 3 stream length that is not a power of two enters: the release times of the mean over them.

    T is read from ``panel``'s table (the paper's 2^20); empty without one.
    """
    path = tables / f"{PANELS[panel][0]}.csv"
    if not path.exists():
        return ""
    lengths = pd.read_csv(path, usecols=lambda c: c in {"length", "data.length"})
    if lengths.empty or not lengths.notna().any().any():
        return ""
    horizon = int(lengths.max().max())
    times = release_times(horizon)
    odd = int(sum(t & (t - 1) != 0 for t in times.tolist()))
    size = f"2^{horizon.bit_length() - 1}" if horizon & (horizon - 1) == 0 else f"{horizon:,}"
    return (f"Figure 3's setting measures at T = {size} only, where a binary tree sums "
            f"{bin(horizon).count('1')} node(s). Lengths that are not powers of two enter its verdicts through the "
            f"robustness setting 'mean over release times': {len(times)} prefixes from {int(times[0]):,} to T, {odd} "
            "of them not powers of two. No setting at a single such length was registered, so there is no column for "
            "one. (Figure 4's stand-in has its own length, in its rows.)")


def rule_notes(tables: Path) -> list[str]:
    """The first page's notes on the registration's rule texts (``dpstream.harness.rule_notes``).

    The generic descriptions, the written rules the code does not apply (``DIFFERENCES``) and among them those that
    read the pooled seeds as one table (``pooling``), what the registered
    smallest slope means on each trend claim's grid (``slope_margins``), labelled as not registered, Fig. 3(f)'s
    written rule on its table, and what each undecided registered claim would need (``decision_needs``).
    """
    margins, needs = slope_margins(tables), decision_needs(tables)
    return [generic_rule_paragraph(), "", *differences_table(tables), "", pooling(tables), "", *margins,
            *([""] if margins else []),
            f"Fig. 3(f) under the rule as written ({declared_trend(tables)}).", "", *([needs, ""] if needs else [])]


def experiment_rows(tables: Path, experiments: list[str], figures: str = "figures") -> list[str]:
    """The first page of a document without figure panels: one row per experiment, from the committed tables.

    The claim is the experiment's ``paper_claim`` (``conf/experiment``); the verdict combines its registered claims
    other than implementation checks (``kinds.combine``), with their count per verdict; the main deviation is the
    first registered ``underspecified`` reason among them, else the kinds they are (a theory check states where its
    bound stops being vacuous in the registration).
    """
    entries = {c["id"]: c for c in load()["claims"]}
    lines = ["| experiment | claim | our setting | verdict | robustness | main deviation | thumbnail |",
             "|---|---|---|---|---|---|---|"]
    looks = looks_of(tables)
    for exp in experiments:
        path = tables / f"{exp}.claims.csv"
        if not path.exists():
            raise FileNotFoundError(f"a first page names experiment {exp!r} but {path} does not exist")
        claims = pd.read_csv(path, keep_default_na=False)
        claims = classify(exp, claims.drop(columns=[c for c in ("kind", "kind_reason") if c in claims.columns]))
        judged = claims[claims["kind"] != "implementation check"]
        judged = judged if len(judged) else claims
        counts = ", ".join(f"{n} {v}" for v, n in judged["verdict"].value_counts().sort_index().items())
        registered = [entries[i] for i in judged["id"] if i in entries]
        deviation = next((str(e["underspecified"]) for e in registered if e.get("underspecified")), "") or \
            "; ".join(f"{n} {k}s" for k, n in pd.Series([e["kind"] for e in registered]).value_counts().items())
        robustness = _robustness(judged.assign(setting=judged["setting"].replace("", PAPER_SETTING)),
                                 combine(list(judged["verdict"])))
        kept = [(str(i), x) for i, x, keep in zip(claims["id"], labels(claims, table_rows(tables, exp), looks, exp),
                                                  claims["kind"] != "implementation check", strict=True)
                if keep or len(judged) == len(claims)]
        ids, sources = [i for i, _ in kept], [x for _, x in kept]
        source = "; ".join(x for x in (combined(sources), awaiting(ids, sources, looks), flag(ids)) if x)
        claim = str(load_option(CONF_DIR, "experiment", exp).get("paper_claim") or "")
        setting = _setting(tables, exp, THEORY_LANGUAGE)
        lines.append(f"| {exp} | {_cell(claim)} | {setting} | **{combine(list(judged['verdict']))}** "
                     f"({counts}; {source}) | {robustness} | {_cell(deviation)} | "
                     f"<img src='{figures}/{exp}.png' width='120'> |")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def changelog(old: dict[str, pd.DataFrame], new: dict[str, pd.DataFrame],
              sources: dict[str, list[str]] | None = None, notes: dict[str, list[str]] | None = None) -> list[str]:
    """Markdown lines: every claim (by id) whose verdict differs between two sets of claims tables, and why.

    The reason is the new table's ``gate`` note (history, a rule changed after registration) where it has one, else
    its label (``sources``: per experiment, ``registered.labels`` of the new table) when that is a look of the
    registered run (``notes``, per experiment: ``rule_notes.constructed``, say first when an implementation check's
    verdict is one by construction, its data without spread, which no trials decided), else its rule (the rule and
    trials of this run decided). A ``provenance`` the label does not back
    (``looks.csv`` holds no such final record) is said to be so, never quoted as a registered look. A claim new or
    gone counts as changed.
    """
    lines = ["| claim | before | now | why |", "|---|---|---|---|"]
    empty = pd.DataFrame(columns=["verdict"])
    for exp in sorted(set(old) | set(new)):
        before, now = old.get(exp, empty), new.get(exp, empty)
        for i in range(max(len(before), len(now))):
            b = str(before["verdict"].iloc[i]) if i < len(before) else "absent"
            n = str(now["verdict"].iloc[i]) if i < len(now) else "absent"
            if b == n:
                continue
            gate = str(now["gate"].iloc[i]) if "gate" in now.columns and i < len(now) else ""
            said = str(now["provenance"].iloc[i]) if "provenance" in now.columns and i < len(now) else ""
            shown = (sources or {}).get(exp, [])
            label = shown[i] if i < len(shown) else ""
            note = (notes or {}).get(exp, [])
            construction = note[i] if i < len(note) else ""
            registered = (f"{construction}; shown by the registered run ({label})" if construction else
                          f"decided by the registered run ({label}) on fresh trials, where the history's rows "
                          "decided nothing") if is_registered(label) else (
                f"its claims file names a registered look that looks.csv does not back; shown as {label or 'history'}"
                if said else "")
            why = gate or registered or ("the claim is gone" if n == "absent" else "decided by its rule on this "
                                         "run's trials: " + str(now["rule"].iloc[i])[:160].replace("|", "\\|"))
            lines.append(f"| {exp}#{i} | {b} | {n} | {why} |")
    return lines if len(lines) > 2 else ["No verdict changed."]


def committed_claims(results_dir: Path, ref: str = "HEAD") -> dict[str, pd.DataFrame]:
    """The claims tables of ``results_dir/tables`` as committed at ``ref`` (empty outside a git checkout)."""
    tables = results_dir.resolve() / "tables"
    try:
        root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=tables, capture_output=True,
                                   text=True, check=True, timeout=10).stdout.strip())
        listed = subprocess.run(["git", "ls-tree", "--name-only", f"{ref}:{tables.relative_to(root)}"], cwd=root,
                                capture_output=True, text=True, check=True, timeout=10).stdout.split()
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}
    out = {}
    for name in listed:
        if name.endswith(".claims.csv"):
            text = subprocess.run(["git", "show", f"{ref}:{(tables / name).relative_to(root)}"], cwd=root,
                                  capture_output=True, text=True, check=True, timeout=10).stdout
            out[name.removesuffix(".claims.csv")] = pd.read_csv(io.StringIO(text), keep_default_na=False)
    return out


def named_commit(results_dir: Path, ref: str) -> str | None:
    """``ref``'s short commit, None outside a git checkout or for a ref it does not hold: the changelog names it."""
    try:
        return subprocess.run(["git", "rev-parse", "--short=7", f"{ref}^{{commit}}"], cwd=results_dir.resolve(),
                              capture_output=True, text=True, check=True, timeout=10).stdout.strip() or None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def section(results_dir: Path, ref: str = "HEAD") -> list[str]:
    """The report's first page: the panel table and the changelog against the claims tables committed at ``ref``.

    Outside a git checkout, or for a ref it does not hold, there is nothing to compare: the heading says so.
    """
    tables = results_dir / "tables"
    now = {p.name.removesuffix(".claims.csv"): pd.read_csv(p, keep_default_na=False)
           for p in sorted(tables.glob("*.claims.csv"))}
    looks = looks_of(tables)
    sources = {exp: labels(claims, table_rows(tables, exp), looks, exp) for exp, claims in now.items()}
    old = committed_claims(results_dir, ref)
    changed = {exp for exp, claims in now.items()
               if list(claims["verdict"].astype(str)) != list(old.get(exp, pd.DataFrame(columns=["verdict"]))["verdict"]
                                                              .astype(str))}
    notes = {exp: constructed(now[exp], table_of(tables, exp), exp, results_dir) for exp in sorted(changed)}
    commit = named_commit(results_dir, ref)
    heading = (f"## Changelog: verdicts that changed against the report committed at {commit}" if commit else
               f"## Changelog: no committed report to compare against ({ref} is not a commit of a git checkout here): "
               "every verdict is listed as new")
    return ["## First page: Holland's figures, one row per panel and sentence", "",
            "Verdicts in the paper's setting (each sentence's clauses and checks combined); robustness columns beside "
            "them. Figure 4 runs on a synthetic stand-in for the CAIDA trace: those verdicts are their own tally. "
            + release_note(tables), "",
            *first_page(tables), "", *rule_notes(tables),
            heading, "",
            *changelog(old, now, sources, notes), ""]
