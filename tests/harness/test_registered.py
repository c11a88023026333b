"""Where a shown verdict comes from: a registered look (re-judged from the committed stores) or history."""

import pandas as pd
import pytest
from conftest import ROOT

from dpstream.claims.registration import by_id, registration_hash
from dpstream.harness import registered
from dpstream.harness.readme import render
from dpstream.harness.report import markdown_html

RESULTS = ROOT / "results"
FORGED = "registered: look 3, 30 pooled trials, seeds 3-32, registration 3cb7d19a335bb227"
CLEAN = "0123456789abcdef0123456789abcdef01234567"


def rows(seed: int, prereg: str | None = None, commit: str = CLEAN) -> pd.DataFrame:
    return pd.DataFrame({"seed": [seed, seed], "prereg_hash": [prereg or registration_hash()] * 2,
                         "commit": [commit] * 2, "run_time": ["2026-11-29T04:00:00+00:00"] * 2})


CLAIM = "svt_order#1"
"""A registered claim whose final record (look 3, 30 pooled trials, confirmed) the helpers below write."""


def claims(provenance: str = FORGED, gate: str = "", verdict: str = "confirmed") -> pd.DataFrame:
    return pd.DataFrame({"claim": [by_id()[CLAIM]["claim"]], "rule": ["r"], "verdict": [verdict], "id": [CLAIM],
                         "measured": ["look 3 of the pre-registered run, 30 pooled trials: m"], "gate": [gate],
                         "provenance": [provenance]})


def looks(verdict: str = "confirmed", look: int = 3, trials: int = 30, prereg: str | None = None,
          final: bool = True) -> pd.DataFrame:
    """The records of a ``looks.csv`` holding the final record of ``CLAIM`` (as ``read_looks`` gives them)."""
    frame = pd.DataFrame({"look": [look], "id": [CLAIM], "verdict": [verdict], "trials": [trials], "final": [final],
                          "measured": ["m"], "prereg_hash": [prereg or registration_hash()]})
    return frame.assign(experiment="svt_order")


@pytest.mark.parametrize("trial_rows", [rows(0), rows(2), rows(5, prereg="0" * 16), rows(5, commit=CLEAN + "-dirty"),
                                        rows(5, commit="unknown"), pd.DataFrame(columns=["seed"])],
                         ids=["seed 0", "seed 2", "other registration", "dirty commit", "unknown commit", "no rows"])
def test_a_claims_file_cannot_put_history_rows_under_a_registered_label(trial_rows):
    label = registered.labels(claims(), trial_rows, looks())[0]
    assert not registered.is_registered(label)
    assert "registered, look" not in registered.short(label)


def test_registered_label_needs_registered_rows_a_look_and_a_passed_gate():
    assert registered.is_registered(registered.labels(claims(), rows(5), looks())[0])
    assert not registered.is_registered(registered.labels(claims(provenance=""), rows(5), looks())[0])
    assert not registered.is_registered(registered.labels(claims(gate="rule changed"), rows(5), looks())[0])


@pytest.mark.parametrize("records", [looks(verdict="not confirmed"), looks(look=1), looks(trials=10),
                                     looks(prereg="0" * 16), looks(final=False), looks().iloc[0:0],
                                     looks().drop(columns="prereg_hash"), pd.concat([looks(), looks()])],
                         ids=["other verdict", "other look", "other trials", "other registration", "not final",
                              "no record", "unstamped", "two final records"])
def test_a_registered_label_needs_the_same_final_record_in_looks_csv(records):
    """The claims file's word (provenance, verdict, look, trials) is checked against looks.csv, never taken."""
    label = registered.labels(claims(), rows(5), records)[0]
    assert not registered.is_registered(label) and label.startswith("registered rows, not decided")


def test_a_registered_label_needs_the_registered_claim_text_and_the_recorded_measurement():
    edited = claims().assign(claim="another claim")
    assert not registered.is_registered(registered.labels(edited, rows(5), looks())[0])
    remeasured = claims().assign(measured="look 3 of the pre-registered run, 30 pooled trials: n")
    assert not registered.is_registered(registered.labels(remeasured, rows(5), looks())[0])
    assert registered.short(FORGED) == "registered, look 3, 30 trials"


def test_a_rendered_verdict_block_shows_history_for_a_forged_registered_claims_file(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    claims().to_csv(tables / "x.claims.csv", index=False)
    rows(0).to_csv(tables / "x.csv", index=False)
    (tmp_path / "verify" / "paper").mkdir(parents=True)
    looks().drop(columns="experiment").to_csv(tmp_path / "verify" / "paper" / "looks.csv", index=False)
    block = render(["x"], tables)
    assert "**confirmed** | history, seed 0" in block and "registered, look" not in block
    rows(7).to_csv(tables / "x.csv", index=False)
    assert "**confirmed** | registered, look 3, 30 trials" in render(["x"], tables)  # then any flag of its rule


def test_committed_registered_verdicts_are_the_final_records_of_looks_csv():
    """Every claim the committed tables show as registered is the final record of looks.csv: verdict, look, trials."""
    looks = registered.read_looks(registered.looks_path(RESULTS))
    final = {r["id"]: r for r in looks[looks["final"]].to_dict("records")}
    shown = registered.all_claims(RESULTS / "tables")
    adopted = shown[[registered.is_registered(x) for x in shown["label"]]]
    state = registered.status(looks)
    assert set(adopted["experiment"]) <= set(state.loc[state["state"] == "final", "experiment"])
    for r in adopted.itertuples():
        m = registered.REGISTERED.match(r.label)
        assert m is not None and r.id in final, r.id
        assert (r.verdict, int(m["look"]), int(m["trials"])) == (final[r.id]["verdict"], final[r.id]["look"],
                                                                 final[r.id]["trials"]), r.id
        assert str(r.measured).startswith(f"look {m['look']} of the pre-registered run, {m['trials']} pooled trials")


def test_status_counts_final_running_and_not_started():
    looks = pd.DataFrame({"look": [1, 1, 1], "id": ["svt_theory#0", "svt_theory#1", "qr_theory#0"],
                          "verdict": ["inconclusive"] * 3, "trials": [30, 30, 10], "final": [True, False, False],
                          "measured": [""] * 3})
    state = registered.status(looks.assign(experiment=looks["id"].str.rsplit("#", n=1).str[0])).set_index("experiment")
    assert state.loc["svt_theory", "state"] == "running" and state.loc["svt_theory", "final"] == 1
    assert state.loc["qr_theory", "state"] == "running" and state.loc["qr_theory", "pooled trials"] == 10
    assert (state.drop(index=["svt_theory", "qr_theory"])["state"] == "not started").all()


def test_the_first_page_in_html_keeps_tables_links_and_thumbnails_only():
    out = markdown_html(["## Run", "see [looks](verify/looks.csv) <b>", "| a | b |", "|---|---|",
                         "| 1 \\| 2 | <img src='f.png' width='120'> |"])
    assert out[0] == "<h2>Run</h2>"
    assert "<a href='verify/looks.csv'>looks</a>" in out[1] and "&lt;b&gt;" in out[1]
    assert "<td>1 | 2</td><td><img src='f.png' width='120'></td>" in out[2]


def test_the_status_block_of_the_verdicts_page_is_the_committed_looks_csv():
    from dpstream.harness.readme import STATUS, sync

    text, changed = sync(ROOT / "docs" / "verdicts.md", RESULTS / "tables")
    assert STATUS.search(text) and "registered-status" not in changed


def test_make_claims_leaves_the_adopted_claims_and_rejudges_history(tmp_path):
    from dpstream.harness.rejudge import adopted

    shown = registered.all_claims(RESULTS / "tables")
    done = sorted(set(shown.loc[[registered.is_registered(x) for x in shown["label"]], "experiment"]))
    if not done:
        pytest.skip("no experiment adopted from the registered run yet")
    table = pd.read_csv(RESULTS / "tables" / f"{done[0]}.csv", low_memory=False)
    assert adopted(RESULTS, done[0], table) is not None
    assert adopted(RESULTS, done[0], table.assign(seed=0)) is None  # the same claims on history rows: re-judged
    _, looks = _copy(tmp_path)
    mine = looks["id"].str.rsplit("#", n=1).str[0] == done[0]
    (tmp_path / "unlooked").mkdir()
    _copy(tmp_path / "unlooked", looks[~mine])
    assert adopted(tmp_path / "unlooked", done[0], table) is None  # no final look recorded: not adopted


def _copy(tmp_path, looks_csv: pd.DataFrame | None = None):
    """``results`` in ``tmp_path``: the committed tables and ``looks.csv`` (or ``looks_csv``).

    The tables are linked, svt_order's claims copied (a test edits them).
    """
    tables = tmp_path / "tables"
    tables.mkdir()
    for file in (RESULTS / "tables").iterdir():
        if file.name != "svt_order.claims.csv":
            (tables / file.name).symlink_to(file)
    committed = pd.read_csv(RESULTS / "tables" / "svt_order.claims.csv", keep_default_na=False)
    committed.to_csv(tables / "svt_order.claims.csv", index=False)
    (tmp_path / "verify" / "paper").mkdir(parents=True)
    source = pd.read_csv(registered.looks_path(RESULTS), keep_default_na=False, dtype={"prereg_hash": str})
    (source if looks_csv is None else looks_csv).to_csv(registered.looks_path(tmp_path), index=False)
    return committed, source


def test_a_forged_verdict_in_an_adopted_claims_file_is_not_registered_and_make_claims_rejudges_it(tmp_path):
    """Repro: svt_order#0 edited to confirmed (looks.csv: inconclusive), under a look-1 or its own look-3 provenance."""
    from dpstream.harness.rejudge import adopted

    committed, _ = _copy(tmp_path)
    table = pd.read_csv(RESULTS / "tables" / "svt_order.csv", low_memory=False)
    assert adopted(tmp_path, "svt_order", table) is not None  # the committed file, as looks.csv has it
    for provenance in ("registered: look 1, 10 pooled trials, seeds 3-12, registration 3cb7d19a335bb227",
                       str(committed["provenance"].iloc[0])):
        forged = committed.copy()
        assert forged.loc[0, "id"] == "svt_order#0" and forged.loc[0, "verdict"] == "inconclusive"
        forged.loc[0, ["verdict", "provenance"]] = ["confirmed", provenance]
        forged.to_csv(tmp_path / "tables" / "svt_order.claims.csv", index=False)
        shown = registered.all_claims(tmp_path / "tables")
        label = shown.loc[shown["id"] == "svt_order#0", "label"].iloc[0]
        assert not registered.is_registered(label) and "verdict differs" in label, label
        assert adopted(tmp_path, "svt_order", table) is None


def test_an_experiment_without_records_in_looks_csv_is_not_shown_as_registered(tmp_path):
    """Repro: every svt_order row removed from looks.csv: its claims are not registered, the first page counts 14."""
    source = pd.read_csv(registered.looks_path(RESULTS), keep_default_na=False, dtype={"prereg_hash": str})
    _copy(tmp_path, looks_csv=source[~source["id"].str.startswith("svt_order#")])
    shown = registered.all_claims(tmp_path / "tables")
    mine = shown[shown["experiment"] == "svt_order"]
    assert len(mine) and not any(map(registered.is_registered, mine["label"]))
    finals = registered.status(registered.read_looks(registered.looks_path(tmp_path)))
    final = int((finals["state"] == "final").sum())
    committed = registered.all_claims(RESULTS / "tables")
    shown = committed.loc[committed["label"].map(registered.is_registered), "experiment"].nunique()
    text = "\n".join(registered.section(tmp_path))
    assert f"Shown here as registered: {shown - 1} experiments ({final} final in `looks.csv`)" in text
    # the rows' trial_wall_s is wall time (perf_counter), paused or loaded: never called CPU time
    assert "hours of trial wall time (one worker, the rows' `trial_wall_s`: wall time, pauses and load included, not " \
           "CPU time)" in text and "CPU hours" not in text
