"""The first page: one row per Holland panel and sentence from the committed tables; the changelog of verdicts."""

import subprocess
from pathlib import Path

import pandas as pd

from dpstream.claims.registration import load
from dpstream.harness.first_page import PANELS, changelog, committed_claims, first_page

RESULTS = Path(__file__).resolve().parents[2] / "results"


def test_every_paper_sentence_of_a_panel_has_one_row_with_its_setting_and_thumbnail():
    lines = first_page(RESULTS / "tables")
    rows = [line for line in lines[2:] if line.startswith("| fig")]
    decisive = {(c["experiment"], c["sentence"]) for c in load()["claims"]
                if c["kind"] == "paper claim" and c["setting"] == "paper"}
    assert len(rows) == len({s for e, s in decisive if any(e == exps[0] for exps in PANELS.values())})
    assert {r.split(" | ")[0].removeprefix("| ") for r in rows} == set(PANELS)
    for row in rows:
        assert "trials" in row and "figures/" in row and "**" in row
    fig4 = [r for r in rows if r.startswith("| fig4")]
    assert fig4 and all("synthetic stand-in" in r for r in fig4)


def test_robustness_names_the_setting_where_a_verdict_differs(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    for exp in ("fig3b", "fig3b_wordfreq"):
        claims = pd.read_csv(RESULTS / "tables" / f"{exp}.claims.csv", keep_default_na=False)
        claims.assign(verdict="confirmed" if exp == "fig3b" else "not confirmed").to_csv(tables / f"{exp}.claims.csv",
                                                                                           index=False)
    rows = [r for r in first_page(tables) if r.startswith("| fig3b")]
    decreasing = next(r for r in rows if "All variants demonstrate" in r)
    assert "**confirmed**" in decreasing and "fragile (fails at word-frequency stream: not confirmed" in decreasing


def test_the_changelog_lists_exactly_the_verdicts_that_changed():
    old = committed_claims(RESULTS)
    assert set(old) >= {"fig3b", "fig4c"}
    assert changelog(old, old) == ["No verdict changed."]
    new = {**old, "fig3b": old["fig3b"].assign(verdict=["not confirmed"] + list(old["fig3b"]["verdict"][1:]))}
    lines = changelog(old, new)
    assert len(lines) == 3 and lines[2].startswith(f"| fig3b#0 | {old['fig3b']['verdict'][0]} | not confirmed |")


def test_the_report_opens_with_the_first_page_and_changelog_before_tallies_and_provenance(tmp_path):
    import shutil

    from dpstream.harness.report import write_report

    (tmp_path / "tables").mkdir()
    for name in ("fig3b.csv", "fig3b.claims.csv"):
        shutil.copy(RESULTS / "tables" / name, tmp_path / "tables" / name)
    spec = {"id": "fig3b", "title": "Figure 3(b)", "claims": "dpstream.claims.sketch:fig3b_claims"}
    cfg = {"results_dir": str(tmp_path), "profile": {"name": "paper"}, "seed": 0, "noise": "numpy",
           "backend": "loky", "n_jobs": 1, "regenerated_by": "a test"}
    text = write_report([spec], [pd.read_csv(tmp_path / "tables" / "fig3b.csv")], cfg).read_text()
    order = [text.index(s) for s in ("## First page", "## Changelog", "Verdicts:", "| setting | value |",
                                     "## fig3b:")]
    assert order == sorted(order)


def test_the_changelog_gives_the_label_never_the_raw_provenance():
    """A claims file naming a look that looks.csv does not back is not quoted as decided by the registered run."""
    old = {"x": pd.DataFrame({"verdict": ["inconclusive", "inconclusive"], "rule": ["r", "r"]})}
    said = "registered: look 1, 10 pooled trials, seeds 3-12, registration 3cb7d19a335bb227"
    new = {"x": old["x"].assign(verdict="confirmed", provenance=said, gate="")}
    backed = "registered: look 3, 30 pooled trials, seeds 3-32, registration 3cb7d19a335bb227"
    lines = changelog(old, new, {"x": ["registered rows, not decided by a registered look: no record", backed]})
    assert "decided by the registered run" not in lines[2] and said not in lines[2]
    assert "looks.csv does not back" in lines[2]
    assert f"decided by the registered run ({backed})" in lines[3]


def test_the_changelog_names_the_commit_of_the_report_it_compares(tmp_path):
    from dpstream.harness.first_page import section

    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=RESULTS, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert f"## Changelog: verdicts that changed against the report committed at {head}" in section(RESULTS, "HEAD")
    nothing = "## Changelog: no committed report to compare against (v0 is not a commit of a git checkout here)"
    assert any(line.startswith(nothing) for line in section(RESULTS, "v0"))  # a ref the checkout does not hold
    (tmp_path / "tables").mkdir()
    assert any(line.startswith(nothing) for line in section(tmp_path, "v0"))  # outside a checkout


def test_robustness_combines_a_settings_clauses_and_names_a_variants_settings_with_it():
    from dpstream.harness.first_page import _robustness, variants

    k256, mean_t = "robustness: k = 256 (the caption's k)", "robustness: mean over release times"
    rows = pd.DataFrame({"experiment": ["a", "a", "b", "b", "b"],
                         "setting": ["paper", mean_t, k256, k256, mean_t],
                         "verdict": ["inconclusive", "inconclusive", "confirmed", "not confirmed", "not confirmed"]})
    assert variants(rows) == {"b": "k = 256"}
    # the variant's two clauses are one sentence at k = 256; its mean over release times is not the paper run's
    assert _robustness(rows, "inconclusive", variants(rows)) == (
        "not assessed: the paper's setting is inconclusive (mean over release times: inconclusive; k = 256: not "
        "confirmed; k = 256, mean over release times: not confirmed)")
    # an undecided verdict is neither robust nor fragile, even where every setting agrees with it
    assert _robustness(rows.iloc[:2], "inconclusive", {}) == (
        "not assessed: the paper's setting is inconclusive (mean over release times: inconclusive)")
    # beside a decided verdict, an undecided setting is neither a failure nor robust
    assert _robustness(rows.iloc[:2], "not confirmed", {}) == "undecided at mean over release times"
    assert _robustness(rows, "confirmed", variants(rows)) == (
        "fragile (fails at k = 256: not confirmed; k = 256, mean over release times: not confirmed); undecided at "
        "mean over release times")
    assert _robustness(rows.assign(verdict="not confirmed"), "not confirmed", variants(rows)) == "robust"


def test_the_release_note_counts_the_prefixes_that_are_not_powers_of_two(tmp_path):
    from dpstream.harness.first_page import release_note
    from dpstream.metrics import release_times

    for horizon in (1 << 20, 1 << 12, 5000):
        pd.DataFrame({"length": [horizon]}).to_csv(tmp_path / "fig3b.csv", index=False)
        times = release_times(horizon)
        odd = sum(bin(int(t)).count("1") > 1 for t in times)
        assert f"{len(times)} prefixes from {int(times[0]):,} to T, {odd} of them not powers of two" in (
            release_note(tmp_path))
    assert "T = 5,000 only, where a binary tree sums 5 node(s)" in release_note(tmp_path)
    assert release_note(RESULTS / "tables").startswith("Figure 3's setting measures at T = 2^20 only, where a binary "
                                                       "tree sums 1 node(s)")
    assert release_note(tmp_path / "nowhere") == ""


def test_a_designed_input_is_not_called_real_data():
    from dpstream.harness.first_page import THEORY_LANGUAGE, _setting, designed_inputs

    assert {"svt_atoms", "svt_shifting_hh"} <= designed_inputs()
    tables = RESULTS / "tables"
    assert "; a designed input (svt_atoms); " in _setting(tables, "svt_c", THEORY_LANGUAGE)
    assert "; real data (qr_fair); " in _setting(tables, "qr_error_vs_n_fair", THEORY_LANGUAGE)
    assert "; no input data; " in _setting(tables, "audit_power", THEORY_LANGUAGE)
    assert _setting(tables, "svt_c", THEORY_LANGUAGE).endswith(THEORY_LANGUAGE)


def test_a_decided_verdict_on_rows_without_spread_is_called_a_deterministic_computation():
    from dpstream.claims.core import ZERO_SPREAD
    from dpstream.harness.first_page import deterministic

    assert deterministic(pd.Series([f"min 1 (30 trials); {ZERO_SPREAD}"]), "confirmed").startswith("zero spread")
    assert deterministic(pd.Series([f"min 1 (30 trials); {ZERO_SPREAD}"]), "inconclusive") == ""
    assert deterministic(pd.Series(["mean -0.5 [-0.6, -0.4]"]), "confirmed") == ""
    rows = first_page(RESULTS / "tables")
    spread = [r for r in rows if "zero spread over the trials" in r]
    claims = pd.concat([pd.read_csv(f, keep_default_na=False) for f in (RESULTS / "tables").glob("fig*.claims.csv")])
    flat = claims[claims["measured"].str.contains(ZERO_SPREAD, regex=False)
                  & claims["verdict"].isin(["confirmed", "not confirmed"])]
    assert len(spread) >= 1 and all("**inconclusive**" not in r for r in spread)
    assert not flat.empty  # the committed tables hold such a verdict (fig4e's precision at 1)
