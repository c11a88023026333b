"""Claim kinds as declared data: implementation and theory checks apart from the paper tally, each sentence once."""

import pandas as pd
import pytest

from dpstream.claims.kinds import IMPLEMENTATION, OURS, PAPER, THEORY, classify, combine, headline, kind_of
from dpstream.claims.registration import load
from dpstream.harness.report import tally_table

ENTRIES = {c["id"]: c for c in load()["claims"]}


def _kind(claim_id: str) -> str:
    entry = ENTRIES[claim_id]
    return kind_of(entry["id"])[0]


def test_calibration_restatements_and_auditor_self_tests_are_implementation_checks():
    for claim_id in ("svt_c#4", "svt_kstar#3", "shifting_hh#0", "audit_svt#6", "qr_crossover#1", "qr_alg5#3",
                     "beyond_hh#0", "qr_error_vs_queries#0"):
        assert _kind(claim_id) == IMPLEMENTATION, claim_id
    assert _kind("beyond_memory#4") == OURS
    assert _kind("fig3b#0") == PAPER


def test_paraphrases_of_documents_without_experiments_are_theory_checks():
    for claim_id in ("svt_c#2", "qr_error_vs_eps#7", "qr_alg4#1", "shifting_hh#4"):
        assert _kind(claim_id) == THEORY, claim_id


@pytest.mark.parametrize(("verdicts", "word"), [
    (["confirmed", "confirmed"], "confirmed"), (["confirmed", "not confirmed"], "not confirmed"),
    (["confirmed", "inconclusive"], "inconclusive"), (["n/a", "confirmed"], "confirmed"), (["n/a"], "n/a")])
def test_one_sentence_checked_twice_is_combined_like_grid_points(verdicts, word):
    assert combine(verdicts) == word


def _rows(ids: list[str], verdicts: list[str]) -> pd.DataFrame:
    frames = [classify(ENTRIES[i]["experiment"], pd.DataFrame({"id": [i], "claim": [ENTRIES[i]["claim"]], "rule": "r",
                                                               "measured": "", "verdict": [v]}))
              .assign(experiment=ENTRIES[i]["experiment"]) for i, v in zip(ids, verdicts, strict=True)]
    return pd.concat(frames, ignore_index=True)


def test_headline_counts_each_sentence_once_and_no_check():
    rows = _rows(["fig3b#1", "fig3b#2", "fig3d#2", "svt_c#4", "svt_kcap#2"],
                 ["confirmed", "not confirmed", "not confirmed", "confirmed", "confirmed"])
    head = headline(rows)
    assert head["verdict"].tolist() == ["not confirmed"]  # CS refutes the sentence checked on CMS and CS
    tally = tally_table(rows).set_index("kind")
    assert tally.loc["paper claims (each sentence once, the paper's setting)", "total"] == 1
    assert tally.loc["implementation checks", "confirmed"] == 2


def test_the_mirror_of_a_literal_sentence_is_not_counted_for_the_paper():
    entry = ENTRIES["fig4d#1"]
    kind, why = kind_of(entry["id"])
    assert kind == OURS and "not independent" in why


def test_the_report_states_where_each_theory_bound_stops_being_vacuous_and_whether_runs_reach_it():
    from dpstream.harness.report import theory_scale_lines

    theory = [c for c in ENTRIES.values() if c["kind"] == THEORY]
    rows = pd.DataFrame([{"id": c["id"], "experiment": c["experiment"], "claim": c["claim"], "kind": c["kind"]}
                         for c in ENTRIES.values()])
    text = "\n".join(theory_scale_lines(rows))
    vacuous = sum(str(c["runs_reach_it"]).lower().startswith("no") for c in theory)
    assert f"{len(theory)} theory checks; {vacuous} of them run only where their bound is vacuous" in text
    assert all(str(c["nonvacuous_at"])[:40] in text for c in theory)
    assert theory_scale_lines(rows[rows["kind"] != THEORY]) == []
