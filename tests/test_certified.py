"""``certified`` means one thing in the API, the tables and the report: private at the claimed (epsilon, delta)."""

import pandas as pd
from conftest import ROOT

from dpstream.certified import CERTIFIED, NOT_PRIVATE, UNCERTIFIED, rewrite_table, uncertified, with_privacy
from dpstream.harness.runner import table_row
from dpstream.privacy.statement import labels
from dpstream.sketches import CMS, CS, LazyCMS

SKETCH_TRIAL = "dpstream.trials.sketch:run_trial"


def test_table_rows_of_sketches_agree_with_the_api():
    for cls, private in ((CMS, False), (CS, False), (LazyCMS, True)):
        kw = {"epsilon": 1.0, "delta": 1e-6} if private else {}
        sketch = cls(width=8, depth=2, horizon=100, seed=1, **kw)
        row = table_row({"are": 0.1, **labels(sketch)})
        assert row["certified"] is sketch.certified is private
        assert row["privacy"] == (CERTIFIED if private else NOT_PRIVATE)


def test_privacy_follows_the_mechanism_labels_and_a_row_without_them_is_not_private():
    row = {"x": 1, "private": True, "certified": False, "seconds": 2.0}
    assert list(with_privacy(row)) == ["x", "private", "certified", "privacy", "seconds"]
    assert with_privacy(row)["privacy"] == UNCERTIFIED
    assert with_privacy({"certified": True}) == {"certified": False, "privacy": NOT_PRIVATE}
    assert with_privacy({"private": True, "certified": True})["privacy"] == CERTIFIED


def test_only_rows_that_claim_privacy_count_as_uncertified():
    baseline = pd.DataFrame({"certified": [False, True], "privacy": [NOT_PRIVATE, CERTIFIED]})
    assert not uncertified(baseline)
    assert uncertified(pd.DataFrame({"certified": [False, True], "privacy": [UNCERTIFIED, CERTIFIED]}))
    assert uncertified(pd.DataFrame({"certified": [False]})), "a table without privacy column: every row claims it"


def test_rewriting_a_table_changes_only_certified_and_privacy(tmp_path):
    path = tmp_path / "t.csv"
    text = ("experiment,mechanism.trial,mechanism.private,are,private,certified,note\n"
            f"e,{SKETCH_TRIAL},True,0.30000000000000004,False,True,\"a, b\"\n"
            f"e,{SKETCH_TRIAL},True,1e-300,True,True,\n")
    path.write_text(text)
    assert rewrite_table(path) and not rewrite_table(path)
    assert path.read_text() == (
        "experiment,mechanism.trial,mechanism.private,are,private,certified,privacy,note\n"
        f"e,{SKETCH_TRIAL},True,0.30000000000000004,False,False,{NOT_PRIVATE},\"a, b\"\n"
        f"e,{SKETCH_TRIAL},True,1e-300,True,True,\"{CERTIFIED}\",\n")


def test_committed_tables_call_no_baseline_certified():
    """No row labelled not private is certified; where rows carry labels, none of a private mechanism lost its label.

    A trial that releases nothing (a theory bound and a timing, ``qr_crossover``) carries no labels: its rows are not
    private by rule (``certified.privacy_columns``), whatever its mechanism's config says. An audit's negative control
    (``audit_svt``: a deliberately broken mechanism, audited by the private ``svt_audit`` trial) is labelled not
    private by its own row, and only such a row may be.
    """
    for path in sorted((ROOT / "results" / "tables").glob("*.csv")):
        if path.name.endswith(".claims.csv"):
            continue
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        if "mechanism.private" not in df.columns:
            continue
        assert "privacy" in df.columns, path.name
        baseline = df["privacy"] == NOT_PRIVATE
        assert (df.loc[baseline, "certified"] == "False").all(), path.name
        if "private" in df.columns:  # rows carrying their mechanism's labels: a private mechanism keeps its label
            broken = df.get("negative_control", pd.Series("False", index=df.index)) == "True"
            assert (df.loc[baseline & ~broken, "mechanism.private"] == "False").all(), path.name
            assert (df.loc[broken, "private"] == "False").all(), path.name
