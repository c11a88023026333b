"""Where each shown verdict comes from: the registered run (a look of pooled new seeds) or the history (seeds 0-2).

``make adopt-registered`` (``dpstream.harness.adopt``) writes, for every experiment whose registered claims are all
final in ``looks.csv``, its pooled table and claims with a ``provenance`` column naming the look and the pooled trials.
Every other claims table is history. A label is never taken from a claims file on its word: ``labels`` gives the
registered label only when the claims row says so, the gate passed it, every row of the experiment's table was run
under the registered hash on a clean commit at seed >= 3 (``registration.registered_rows``) *and* the claim's final
record in ``looks.csv`` (``final_record``) gives the same look, pooled trials, verdict and measurement under the current
registration's hash, for the registered claim text; anything else is shown as history or as registered rows not
decided by a registered look, deciding nothing. ``status`` is the registered run per experiment (final / running / not
started) from ``looks.csv``; ``section`` is the report's first page on the registered run.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd

from dpstream.claims.kinds import classify
from dpstream.claims.registration import (
    REGISTRATION,
    ROOT,
    by_id,
    claim_ids,
    load,
    registered_rows,
    registration_hash,
)

REGISTERED = re.compile(r"^registered: look (?P<look>\d+), (?P<trials>\d+) pooled trials")
"""How a claims row written by ``adopt`` names its provenance."""
HISTORY_LABEL = "history"
REFUSED = "refused by make adopt-registered"
"""How ``adopt.demote`` begins the ``provenance`` of a refused experiment's claims."""
REFUSED_NOTE = " (adoption refused)"
"""What a history label of a refused experiment's claim adds (``labels``)."""
PROVENANCE_COLUMNS = ("seed", "prereg_hash", "commit", "run_time")
STATES = ("final", "running", "not started")


def looks_path(results_dir: Path, profile: str = "paper") -> Path:
    """``looks.csv`` of the registered run whose store is ``<results_dir>/verify`` (``verify.verify_store``)."""
    return results_dir / "verify" / profile / "looks.csv"


def looks_of(tables: Path, profile: str = "paper") -> pd.DataFrame:
    """The records of the ``looks.csv`` beside ``tables`` (``<results>/verify/<profile>/looks.csv``, ``read_looks``)."""
    return read_looks(looks_path(tables.parent, profile))


def read_looks(path: Path) -> pd.DataFrame:
    """The records of ``looks.csv`` as written (read only: no column is added, nothing is rewritten)."""
    columns = ["look", "id", "verdict", "trials", "final", "measured"]
    if not path.exists():
        return pd.DataFrame(columns=[*columns, "experiment"])
    frame = pd.read_csv(path, keep_default_na=False, dtype={"prereg_hash": str})
    frame["final"] = frame["final"].astype(str) == "True"
    return frame.assign(experiment=frame["id"].str.rsplit("#", n=1).str[0])


def status(looks: pd.DataFrame, path: Path = REGISTRATION, claims: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per experiment with registered claims: its state, registered / final claims, the last look and pooled trials.

    ``final``: every registered claim has a final record; ``running``: some look is recorded; ``not started``: none is
    (in this checkout's ``looks.csv``: a run elsewhere shows once its records are copied here). With ``claims`` (the
    claims rows shown, ``all_claims``) a column ``adopted`` too: ``yes`` when a row is labelled registered, ``refused``
    when its adoption was refused, ``no`` otherwise (a final experiment may await its adoption).
    """
    entries = load(path)["claims"]
    rows = []
    for exp in dict.fromkeys(str(e["experiment"]) for e in entries):
        ids = [str(e["id"]) for e in entries if e["experiment"] == exp]
        mine = looks[looks["experiment"] == exp]
        final = set(mine.loc[mine["final"], "id"])
        state = "final" if set(ids) <= final else "running" if len(mine) else "not started"
        rows.append({"experiment": exp, "state": state, "claims": len(ids), "final": len(final & set(ids)),
                     "look": int(mine["look"].max()) if len(mine) else 0,
                     "pooled trials": int(mine["trials"].max()) if len(mine) else 0})
    frame = pd.DataFrame(rows, columns=["experiment", "state", "claims", "final", "look", "pooled trials"])
    if claims is None:
        return frame
    return frame.assign(adopted=[adoption(claims, exp) for exp in frame["experiment"]])


def adoption(claims: pd.DataFrame, experiment: str) -> str:
    """``yes``, ``refused`` or ``no``: whether ``experiment``'s claims rows (``all_claims``) show the registered run."""
    shown = list(claims.loc[claims["experiment"] == experiment, "label"]) if len(claims) else []
    if any(is_registered(x) for x in shown):
        return "yes"
    return "refused" if any(REFUSED_NOTE in x for x in shown) else "no"


def table_rows(tables: Path, exp: str) -> pd.DataFrame:
    """The provenance columns of ``<tables>/<exp>.csv`` (empty when there is no table)."""
    path = tables / f"{exp}.csv"
    if not path.exists():
        return pd.DataFrame(columns=list(PROVENANCE_COLUMNS))
    return pd.read_csv(path, usecols=lambda c: c in PROVENANCE_COLUMNS, dtype={"prereg_hash": str, "commit": str})


def _seeds(rows: pd.DataFrame) -> str:
    seeds = sorted({int(s) for s in rows["seed"].dropna()}) if "seed" in rows else []
    if not seeds:
        return "seeds unknown"
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"


def final_record(claim_id: str, label: str, verdict: str, measured: str, looks: pd.DataFrame,
                 path: Path = REGISTRATION) -> str:
    """Why ``looks.csv`` does not back a registered ``label`` of claim ``claim_id``; empty when it does.

    It does when the claim has one final record, written under the current registration's hash, at the label's look
    and pooled trials, with the claims row's verdict and the measurement the row quotes (``verify``'s ``look N of the
    pre-registered run, K pooled trials: <measured>``).
    """
    m = REGISTERED.match(label)
    if m is None:
        return "no registered look named"
    mine = looks[(looks["id"].astype(str) == claim_id) & looks["final"]] if len(looks) else looks
    if len(mine) != 1:
        return f"{len(mine)} final records of {claim_id} in looks.csv"
    r = mine.iloc[0]
    said = (f"look {r['look']} of the pre-registered run, {r['trials']} pooled trials: {r['measured']}",
            str(r["verdict"]), int(r["look"]), int(r["trials"]), str(r.get("prereg_hash", "")))
    shown = (measured, verdict, int(m["look"]), int(m["trials"]), registration_hash(path))
    names = ("measured", "verdict", "look", "pooled trials", "registration hash")
    return "; ".join(f"looks.csv's final {n} differs" for n, a, b in zip(names, said, shown, strict=True) if a != b)


def labels(claims: pd.DataFrame, rows: pd.DataFrame, looks: pd.DataFrame, experiment: str = "",
           path: Path = REGISTRATION) -> list[str]:
    """Per claims row, where its verdict comes from: ``registered: look N, K pooled trials ...`` or history.

    Registered only when the row's ``provenance`` says so, the gate passed it (empty ``gate``), every trial row is
    registered (``registered_rows``), the row states its registered claim text and ``looks`` (the records of
    ``looks.csv``, ``read_looks``) holds its final record as the row shows it (``final_record``); a claims file cannot
    make history rows, or verdicts the registered run did not give, registered by saying so. Claims are found by
    their ``id`` column, else by position in ``experiment`` (``registration.claim_ids``).
    """
    fresh = len(rows) > 0 and set(PROVENANCE_COLUMNS) <= set(rows.columns) and \
        len(registered_rows(rows, path)) == len(rows)
    column = {c: (claims[c].astype(str) if c in claims else pd.Series([""] * len(claims)))
              for c in ("provenance", "gate", "claim", "verdict", "measured")}
    entries = by_id(path)
    out = []
    for i, claim_id in enumerate(claim_ids(experiment, claims, path)):
        text, note = column["provenance"].iloc[i], column["gate"].iloc[i]
        entry = entries.get(claim_id)
        if not note and REGISTERED.match(text):
            if entry is None:
                note = "not in the pre-registration"
            elif " ".join(column["claim"].iloc[i].split()) != " ".join(str(entry["claim"]).split()):
                note = "states another claim than the registered one"
            else:
                note = final_record(claim_id, text, column["verdict"].iloc[i], column["measured"].iloc[i], looks,
                                    path)
        refused = REFUSED_NOTE if text.startswith(REFUSED) else ""
        if fresh and REGISTERED.match(text) and not note:
            out.append(text)
        elif fresh:
            out.append(f"registered rows, not decided by a registered look{refused}{': ' + note if note else ''}")
        else:
            out.append(f"{HISTORY_LABEL}: {_seeds(rows)}{refused}, decides nothing")
    return out


def short(label: str) -> str:
    """A label in a table cell: ``registered, look 3, 30 trials`` or ``history, seeds 0-2``."""
    m = REGISTERED.match(label)
    if m:
        return f"registered, look {m['look']}, {m['trials']} trials"
    return label.removesuffix(", decides nothing").replace(": ", ", ", 1)


def is_registered(label: str) -> bool:
    """Whether a label (from ``labels``) names a registered look."""
    return REGISTERED.match(label) is not None


def all_claims(tables: Path, path: Path = REGISTRATION, looks: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every claims row of ``tables`` with ``experiment``, its registered kind (``classify``) and ``label``.

    ``looks``: the records the labels are checked against (default: the ``looks.csv`` beside ``tables``).
    """
    looks = looks_of(tables) if looks is None else looks
    frames = []
    for file in sorted(tables.glob("*.claims.csv")):
        exp = file.name.removesuffix(".claims.csv")
        claims = pd.read_csv(file, keep_default_na=False)
        claims = classify(exp, claims.drop(columns=[c for c in ("kind", "kind_reason") if c in claims.columns]))
        frames.append(claims.assign(experiment=exp, label=labels(claims, table_rows(tables, exp), looks, exp,
                                                                  path)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def registration_commit(path: Path = REGISTRATION) -> tuple[str, str]:
    """The commit that last wrote the registration and its date (``unknown`` outside a git checkout)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%H %cI", "--", str(path.relative_to(ROOT))], cwd=ROOT,
                             capture_output=True, text=True, check=True, timeout=10).stdout.split()
    except (OSError, ValueError, subprocess.SubprocessError):
        return "unknown", "unknown"
    return (out[0][:12], out[1]) if len(out) == 2 else ("unknown", "unknown")


def trial_wall_hours(tables: Path, experiments: list[str]) -> float:
    """Trial wall hours (one worker: the runner's ``trial_wall_s``) of the registered rows of ``experiments``.

    Wall time, not CPU time: a trial running while the machine was loaded, or while its process was paused, counts
    the whole of it.
    """
    total = 0.0
    for exp in experiments:
        path = tables / f"{exp}.csv"
        if path.exists():
            df = pd.read_csv(path, usecols=lambda c: c in {*PROVENANCE_COLUMNS, "trial_wall_s"},
                             dtype={"prereg_hash": str, "commit": str})
            if "trial_wall_s" in df:
                total += float(registered_rows(df)["trial_wall_s"].sum())
    return total / 3600


def counts(claims: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts by registered kind (rows) x verdict (columns), registered and history apart."""
    from dpstream.claims import VERDICTS

    if claims.empty:
        return pd.DataFrame()
    source = ["registered" if is_registered(x) else "history" for x in claims["label"]]
    kinds = claims["kind"].astype(str).replace("", "unregistered")
    table = pd.crosstab([pd.Series(source, name="from"), kinds.rename("kind")], claims["verdict"].rename("verdict"))
    table = table.reindex(columns=list(VERDICTS), fill_value=0)
    return table.assign(total=table.sum(axis=1)).reset_index()


def _md(frame: pd.DataFrame) -> list[str]:
    cells = [[str(v).replace("|", "\\|") for v in row] for row in frame.itertuples(index=False)]
    return ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns),
            *["| " + " | ".join(r) + " |" for r in cells]]


LINKS = (("the registration", "preregistration.yaml"), ("every look of the registered run", "verify/paper/looks.csv"),
         ("how paper claims are checked", "../docs/verdicts.md"),
         ("Holland's figures", "../docs/reproduction/sketches.md"),
         ("the sparse vector technique", "../docs/reproduction/svt.md"),
         ("query release", "../docs/reproduction/query_release.md"))


def section(results_dir: Path, profile: str = "paper", path: Path = REGISTRATION) -> list[str]:
    """The report's first page on the registered run: registration, what ran, verdict counts, links (Markdown)."""
    tables = results_dir / "tables"
    commit, date = registration_commit(path)
    looks = read_looks(looks_path(results_dir, profile))
    claims = all_claims(tables, path, looks)
    state = status(looks, path, claims)
    final = list(state.loc[state["state"] == "final", "experiment"])
    adopted = sorted(state.loc[state["adopted"] == "yes", "experiment"])
    by_state = state["state"].value_counts()
    lines = ["## The registered run", "",
             f"Registration `results/preregistration.yaml`, hash `{registration_hash(path)}`, committed in `{commit}` "
             f"on {date}: every claim's kind, rule, budget and alpha fixed before any trial of master seeds 3 and up.",
             "",
             f"Experiments with registered claims: {len(state)}; "
             + ", ".join(f"{int(by_state.get(s, 0))} {s}" for s in STATES)
             + f". Shown here as registered: {len(adopted)} experiments ({len(final)} final in `looks.csv`), "
             f"{int(state.loc[state['experiment'].isin(adopted), 'pooled trials'].sum())} pooled trials, "
             f"{trial_wall_hours(tables, adopted):.3g} hours of trial wall time (one worker, the rows' `trial_wall_s`: "
             "wall time, pauses and load included, not CPU time). "
             "Every other verdict is history (master seeds 0-2, judged by rules some of which changed after their "
             "data was seen) and decides nothing: the gate turns its decided verdicts into `inconclusive`.", "",
             "Verdicts by kind, registered and history apart (claims rows: each clause of a paper sentence counts "
             "here; the tallies below count each sentence once):", "", *_md(counts(claims)), "",
             "Status of the registered run per experiment (from `looks.csv`; `not started`: no look recorded in this "
             "checkout's `looks.csv` yet, though a batch may be running elsewhere):", "",
             *_md(state), "",
             "Links: " + "; ".join(f"[{name}]({target})" for name, target in LINKS), ""]
    return lines


def combined(sources: list[str]) -> str:
    """One cell for the labels of several claims combined into one verdict: registered only if every one is."""
    shown = list(dict.fromkeys(short(x) for x in sources))
    if not shown:
        return "no claims"
    if all(is_registered(x) for x in sources) or not any(is_registered(x) for x in sources):
        return "; ".join(shown)
    return "partly history (decides nothing): " + "; ".join(shown)
