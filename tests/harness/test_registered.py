"""Where a shown verdict comes from: a registered look (re-judged from the committed stores) or history."""

import pandas as pd
import pytest
from conftest import ROOT

from dpstream.claims.registration import registration_hash
from dpstream.harness import registered
from dpstream.harness.readme import render
from dpstream.harness.report import markdown_html

RESULTS = ROOT / "results"
FORGED = "registered: look 3, 30 pooled trials, seeds 3-32, registration 3cb7d19a335bb227"
CLEAN = "0123456789abcdef0123456789abcdef01234567"


def rows(seed: int, prereg: str | None = None, commit: str = CLEAN) -> pd.DataFrame:
    return pd.DataFrame({"seed": [seed, seed], "prereg_hash": [prereg or registration_hash()] * 2,
                         "commit": [commit] * 2, "run_time": ["2026-11-29T04:00:00+00:00"] * 2})


def claims(provenance: str = FORGED, gate: str = "") -> pd.DataFrame:
    return pd.DataFrame({"claim": ["A falls"], "rule": ["r"], "measured": ["m"], "verdict": ["confirmed"],
                         "gate": [gate], "provenance": [provenance]})


@pytest.mark.parametrize("trial_rows", [rows(0), rows(2), rows(5, prereg="0" * 16), rows(5, commit=CLEAN + "-dirty"),
                                        rows(5, commit="unknown"), pd.DataFrame(columns=["seed"])],
                         ids=["seed 0", "seed 2", "other registration", "dirty commit", "unknown commit", "no rows"])
def test_a_claims_file_cannot_put_history_rows_under_a_registered_label(trial_rows):
    label = registered.labels(claims(), trial_rows)[0]
    assert not registered.is_registered(label)
    assert "registered, look" not in registered.short(label)


def test_registered_label_needs_registered_rows_a_look_and_a_passed_gate():
    assert registered.is_registered(registered.labels(claims(), rows(5))[0])
    assert not registered.is_registered(registered.labels(claims(provenance=""), rows(5))[0])
    assert not registered.is_registered(registered.labels(claims(gate="rule changed"), rows(5))[0])
    assert registered.short(FORGED) == "registered, look 3, 30 trials"


def test_a_rendered_verdict_block_shows_history_for_a_forged_registered_claims_file(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    claims().to_csv(tables / "x.claims.csv", index=False)
    rows(0).to_csv(tables / "x.csv", index=False)
    block = render(["x"], tables)
    assert "**confirmed** | history, seed 0 |" in block and "registered, look" not in block
    rows(7).to_csv(tables / "x.csv", index=False)
    assert "**confirmed** | registered, look 3, 30 trials |" in render(["x"], tables)


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


def test_make_claims_leaves_the_adopted_claims_and_rejudges_history():
    from dpstream.harness.rejudge import adopted

    shown = registered.all_claims(RESULTS / "tables")
    done = sorted(set(shown.loc[[registered.is_registered(x) for x in shown["label"]], "experiment"]))
    if not done:
        pytest.skip("no experiment adopted from the registered run yet")
    table = pd.read_csv(RESULTS / "tables" / f"{done[0]}.csv", low_memory=False)
    assert adopted(RESULTS, done[0], table) is not None
    assert adopted(RESULTS, "fig3b", pd.read_csv(RESULTS / "tables" / "fig3b.csv")) is None
    assert adopted(RESULTS, done[0], table.assign(seed=0)) is None  # the same claims on history rows: re-judged
