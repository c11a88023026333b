"""Claim kinds as data: implementation checks apart from the paper tally, each paper sentence counted once."""

import pandas as pd
import pytest

from dpstream.claims.kinds import IMPLEMENTATION, OURS, PAPER, classify, combine, headline, kind_of
from dpstream.harness.report import tally_table


def test_calibration_restatements_and_auditor_self_tests_are_implementation_checks():
    assert kind_of("svt_c", "(alpha, beta)-accuracy (Thm 3.1 ...)")[0] == IMPLEMENTATION
    assert kind_of("svt_kstar", "(alpha, beta)-accuracy (Thm 3.1 ...)")[0] == IMPLEMENTATION
    assert kind_of("shifting_hh", "Thm 4.7: with probability ...")[0] == IMPLEMENTATION
    assert kind_of("audit_svt", "sparse_pinning: the audit separates ...")[0] == IMPLEMENTATION
    assert kind_of("qr_crossover", "the smallest point where ...")[0] == IMPLEMENTATION
    assert kind_of("qr_alg5", "Claim 5.4: w.p. ...")[0] == IMPLEMENTATION
    assert kind_of("beyond_hh", "LazyHH with derived node noise ...")[0] == IMPLEMENTATION
    assert kind_of("beyond_memory", "BLT counters: ...")[0] == OURS
    assert kind_of("fig3b", '"All variants demonstrate decreasing ARE with increasing memory"')[0] == PAPER
    assert kind_of("svt_c", "Sparse becomes worse than ThresholdMonitor once c is large")[0] == PAPER


@pytest.mark.parametrize(("verdicts", "word"), [
    (["confirmed", "confirmed"], "confirmed"), (["confirmed", "not confirmed"], "not confirmed"),
    (["confirmed", "inconclusive"], "inconclusive"), (["n/a", "confirmed"], "confirmed"), (["n/a"], "n/a")])
def test_one_sentence_checked_twice_is_combined_like_grid_points(verdicts, word):
    assert combine(verdicts) == word


def test_headline_counts_each_sentence_once_and_no_implementation_check():
    rows = pd.DataFrame({"experiment": ["fig4c", "fig4c_wordfreq", "svt_c", "svt_kcap"],
                         "claim": ["recall improves"] * 2 + ["(alpha, beta)-accuracy"] * 2, "rule": "r", "measured": "",
                         "verdict": ["confirmed", "not confirmed", "confirmed", "confirmed"]})
    rows = pd.concat([classify(e, g) for e, g in rows.groupby("experiment", sort=False)])
    head = headline(rows)
    assert head["verdict"].tolist() == ["not confirmed"]  # the second data set refutes the shared sentence
    tally = tally_table(rows).set_index("kind")
    assert tally.loc["paper claims (each sentence once)", "total"] == 1
    assert tally.loc["implementation checks", "confirmed"] == 2


def test_headline_counts_a_quoted_sentence_once_whatever_surrounds_it():
    # the same quoted sentence on two mechanisms, a metric variant and another figure: one sentence, combined
    text = '"the Punctual variants exhibit a linear increase"'
    rows = pd.DataFrame({"experiment": ["fig3a", "fig3a", "fig3a", "fig3d", "fig3d"],
                         "claim": [f"{text} (PunctualCMS)", f"{text} (PunctualCS)", f"{text} [on mean_t]",
                                   f"Fig. 3(b) text {text}",
                                   'Fig. 3(b) text "the Punctual variants exhibit", over skew'],
                         "rule": "r", "measured": "",
                         "verdict": ["confirmed", "confirmed", "inconclusive", "confirmed", "confirmed"]})
    rows = pd.concat([classify(e, g) for e, g in rows.groupby("experiment", sort=False)])
    head = headline(rows)
    assert head["claim"].tolist() == ["the Punctual variants exhibit a linear increase"]  # a first clause: the same
    assert head["verdict"].tolist() == ["inconclusive"] and head["experiments"].tolist() == ["fig3a, fig3d"]


def test_laplace_growth_in_the_number_of_queries_is_an_implementation_check():
    assert kind_of("qr_error_vs_queries", "independent Laplace error grows like sqrt(|Q|) log|Q|")[0] == IMPLEMENTATION


def test_the_mirror_of_a_literal_sentence_is_not_counted_for_the_paper():
    kind, why = kind_of("fig4d", '"only the heaviest items are reported, which naturally have ... lower relative '
                                 'error" (the paper\'s explanation: ARE lower at small eps, i.e. rising with eps)')
    assert kind == OURS and "not independent" in why
