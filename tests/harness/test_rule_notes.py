"""Rule as registered vs rule as coded, the generic rule descriptions, and final decisions awaiting adoption."""

import importlib
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpstream.claims.registration import by_id
from dpstream.harness.first_page import first_page
from dpstream.harness.readme import render
from dpstream.harness.report import registered_sentences, tally_lines
from dpstream.harness.rule_notes import (
    DIFFERENCES,
    FLAG,
    awaiting,
    declared_trend,
    differences_table,
    flag,
    generic_rule_paragraph,
)

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "results" / "tables"


def test_each_difference_names_the_line_and_constant_of_the_coded_rule():
    entries = by_id()
    for d in DIFFERENCES:
        line = (ROOT / d.path).read_text().splitlines()[d.line - 1]
        assert d.anchor in line, f"{d.where} no longer holds {d.anchor!r}: {line!r}"
        if d.constant:
            module, name, value = d.constant
            assert getattr(importlib.import_module(module), name) == value
            assert f"{name} = {value:g}" in d.difference
        for claim_id in d.claims:
            assert entries[claim_id]["rule"]["family"] == d.family  # what the registration writes


def test_fig3f_registered_text_disclaims_the_cut_its_claims_rows_apply():
    from dpstream.claims.sketch import LIMITED_EPS

    entries = by_id()
    claims = pd.read_csv(TABLES / "fig3f.claims.csv", keep_default_na=False).set_index("id")
    fig3f = next(d for d in DIFFERENCES if "fig3f#0" in d.claims)
    for claim_id in fig3f.claims:
        assert "not as the >= 2x cut" in " ".join(str(entries[claim_id]["underspecified"]).split())
        assert f"of the geometric mean >= {LIMITED_EPS:g}" in claims.loc[claim_id, "rule"]
    fig3c = pd.read_csv(TABLES / "fig3c.claims.csv", keep_default_na=False).set_index("id")
    assert fig3c.loc["fig3c#1", "rule"].startswith("per trial, the fraction of the ARE removed")


def test_the_flag_stands_beside_exactly_the_flagged_verdicts():
    flagged = {i for d in DIFFERENCES for i in d.claims}
    table = differences_table(TABLES)
    fig3f = pd.read_csv(TABLES / "fig3f.claims.csv", keep_default_na=False).set_index("id")["verdict"]
    assert f"fig3f#2: {fig3f['fig3f#2']}, fig3f#3: {fig3f['fig3f#3']} |" in next(r for r in table if "fig3f#0" in r)
    assert flag(["fig3f#4"]) == "" and flag(["fig3f#2", "fig3f#4"]).startswith(FLAG)
    rows = [r for r in first_page(TABLES) if r.startswith("| fig")]
    for row in rows:
        expected = any(quote in row for quote in ('"we observe a clear decrease', '"All variants show decreasing ARE '
                                                  'as depth', '"the influence of skew is still observable',
                                                  '"Skew has the largest effect', '"As recall approaches 1',
                                                  'maintain constant throughput',
                                                  'update time remains relatively constant',
                                                  'linear increase in update time', 'precision remains',
                                                  'eventually reaching 1', 'recall reaches 1 once'))
        assert (FLAG in row) == expected, row[:120]
    for exp in ("fig3f", "fig3c"):
        lines = render([exp], TABLES).splitlines()[2:]
        ids = pd.read_csv(TABLES / f"{exp}.claims.csv", keep_default_na=False)["id"]
        assert [FLAG in line.rsplit("|", 2)[-2] for line in lines] == [i in flagged for i in ids]


def test_the_generic_rule_count_comes_from_the_registration(tmp_path):
    text = generic_rule_paragraph()
    assert text.startswith("**122 of the 186 registered claims (70 implementation checks, 38 theory checks, 14 own "
                           "hypotheses)")
    registration = yaml.safe_load((ROOT / "results" / "preregistration.yaml").read_text())
    generic = next(c for c in registration["claims"] if c["rule"]["family"] == "location"
                   and c["rule"]["parameters"].get("statistic") == "the claim's per-trial statistic")
    generic["rule"]["parameters"] = {"statistic": "fraction of flagged seeds"}
    path = tmp_path / "preregistration.yaml"
    path.write_text(yaml.safe_dump(registration))
    assert generic_rule_paragraph(path).startswith("**121 of the 186")


def test_the_written_fig3f_rule_is_computed_and_can_come_out_either_way(tmp_path):
    committed = declared_trend(TABLES)
    assert committed.startswith("not registered, shown because the registration's text describes it")
    assert "PunctualCMS (fig3f#2): mean slope -0.042" in committed
    assert "LazyCMS (fig3f#0): mean slope -0.480 (standard error 0.030, 30 trials) -> **confirmed**" in committed
    assert "PunctualCMS (fig3f#2): mean slope -0.042 (standard error 0.010, 30 trials) -> **not confirmed**" \
        in committed
    df = pd.read_csv(TABLES / "fig3f.csv", usecols=["mechanism.name", "epsilon", "seed", "trial", "are_top15"])
    punctual = df["mechanism.name"] == "punctualcms"
    rng = np.random.default_rng(0)  # ARE ~ 1/eps with 10% noise: a slope of -1, far steeper than the 0.2 asked
    df.loc[punctual, "are_top15"] = 0.1 / df.loc[punctual, "epsilon"] * rng.lognormal(0, 0.1, int(punctual.sum()))
    (tmp_path / "tables").mkdir()
    df.to_csv(tmp_path / "tables" / "fig3f.csv", index=False)
    assert "PunctualCMS (fig3f#2): mean slope -0.9" in declared_trend(tmp_path / "tables")
    assert "(fig3f#2): mean slope -0.9" in declared_trend(tmp_path / "tables").split("-> **confirmed**")[2]


def _looks(records: list[tuple[int, str, str, bool]]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=["look", "id", "verdict", "final"])
    return frame.assign(experiment=frame["id"].str.rsplit("#", n=1).str[0])


def test_a_final_decision_of_a_claim_shown_as_history_is_shown_awaiting_adoption():
    history = ["history: seed 0, decides nothing"] * 2
    looks = _looks([(1, "fig3e#1", "inconclusive", False), (1, "fig3e#2", "not confirmed", True),
                    (2, "fig3e#1", "not confirmed", True)])
    both = awaiting(["fig3e#1", "fig3e#2"], history, looks)
    assert both == "final: not confirmed (looks 1, 2, awaiting adoption of the experiment)"
    assert awaiting(["fig3e#2"], history[:1], looks) == "final: not confirmed (look 1, awaiting adoption of the " \
        "experiment)"
    assert awaiting(["fig3e#0", "fig3e#2"], history, looks) == ""  # fig3e#0 not final yet
    registered = "registered: look 2, 20 pooled trials, seeds 3-4, registration x"
    assert awaiting(["fig3e#1"], [registered], looks) == ""  # adopted: the registered label says it


def _fig3e_rows(root: Path, provenance: str) -> list[str]:
    """The first page's fig3e rows, its claims given ``provenance`` and fig3e#1, #2 final in looks.csv."""
    tables = root / "results" / "tables"
    tables.mkdir(parents=True)
    for name in ("fig3e.csv", "fig3e.claims.csv"):
        shutil.copy(TABLES / name, tables / name)
    claims = pd.read_csv(tables / "fig3e.claims.csv", keep_default_na=False)
    claims.assign(provenance=provenance).to_csv(tables / "fig3e.claims.csv", index=False)
    looks = root / "results" / "verify" / "paper"
    looks.mkdir(parents=True)
    _looks([(2, "fig3e#1", "not confirmed", True), (1, "fig3e#2", "not confirmed", True)]).drop(
        columns="experiment").assign(trials=20, measured="m", prereg_hash="x").to_csv(looks / "looks.csv", index=False)
    return [r for r in first_page(tables) if r.startswith("| fig3e")]


def test_the_first_page_shows_final_decisions_beside_history(tmp_path):
    rows = _fig3e_rows(tmp_path, "")  # shown as history
    dip = next(r for r in rows if "lower ARE at very small" in r)
    limited = next(r for r in rows if "limited effect" in r)
    assert "final: not confirmed (looks 1, 2, awaiting adoption of the experiment)" in dip
    assert "awaiting" not in limited  # fig3e#0 has no final record here


def test_a_refused_experiment_is_shown_not_adopted_never_awaiting(tmp_path):
    from dpstream.harness.registered import REFUSED

    dip = next(r for r in _fig3e_rows(tmp_path, f"{REFUSED}: replay differs") if "lower ARE at very small" in r)
    assert "(adoption refused)" in dip and "final: not confirmed (looks 1, 2, not adopted)" in dip
    assert "awaiting" not in dip


def test_the_paper_tally_counts_sentences_and_its_registered_part():
    rows = [("a", "confirmed", True), ("a", "not confirmed", True), ("b", "confirmed", True),
            ("b", "confirmed", False), ("c", "confirmed", True)]
    claims = pd.DataFrame([{"sentence": s, "verdict": v, "registered": r, "kind": "paper claim", "setting": "paper",
                            "data": "", "claim": s, "experiment": "e"} for s, v, r in rows])
    assert registered_sentences(claims).startswith("1 confirmed, 1 not confirmed, 0 inconclusive, 0 n/a (2 of 3 "
                                                   "sentences have every clause decided by the registered run")
    lines = tally_lines(claims)
    assert lines[0].startswith("Verdicts: paper claims (each sentence once") and "(3 claims)" in lines[0]
    assert lines[2].startswith("Paper claims are counted by sentence: a sentence of several clauses is one claim, "
                               "confirmed only if every clause is")
    assert "Of those, registered paper sentences: 1 confirmed, 1 not confirmed" in lines[2]


def test_audit_svt_per_seed_flags_are_counted_from_the_pooled_table_and_name_the_contradicted_claims(tmp_path):
    """The committed table: lyu_alg3 missed at 4 of 30 seeds, so #9 (its shipped pair) and #10 fail per seed."""
    from dpstream.harness.rule_notes import audit_seed_flags

    df = pd.read_csv(TABLES / "audit_svt.csv")
    text = audit_seed_flags(TABLES)
    for case, flagged in df.groupby("case")["fails"].sum().items():
        assert f"{case} {int(flagged)}/{int((df['case'] == case).sum())}" in text
    assert text.endswith("fails for audit_svt#9, audit_svt#10")
    # every control flagged at every seed, no shipped case flagged: the condition holds for every claim
    df.loc[df["negative_control"].astype(bool), "fails"] = True
    df.to_csv(tmp_path / "audit_svt.csv", index=False)
    (tmp_path / "audit_svt.claims.csv").write_text((TABLES / "audit_svt.claims.csv").read_text())
    assert audit_seed_flags(tmp_path).endswith("holds for every claim")


def test_the_state_tables_say_which_final_experiments_the_pages_show():
    from dpstream.harness.readme import render_status

    rows = {line.split(" | ")[0].lstrip("| "): line for line in render_status(TABLES).splitlines()}
    assert rows["qr_analyst_audit"].endswith("| final | 4 | 4 | 3 | 30 | refused |")  # replay differs: history shown
    assert rows["qr_convergence"].endswith("| final | 4 | 4 | 3 | 30 | yes |")
    waiting = [line for exp, line in rows.items() if line.startswith("| ") and exp != "experiment"
               and "| final |" not in line]
    assert all(line.endswith("| no |") for line in waiting), waiting  # no final look: never shown as adopted


def test_an_implementation_check_on_data_without_spread_is_labelled_by_construction():
    """beyond_hh#0: both LazyHH arms give the same recall and precision in every trial: a verdict by construction."""
    from dpstream.harness.first_page import changelog
    from dpstream.harness.rule_notes import BY_CONSTRUCTION, constructed, one_trial, shown, table_of

    claims = pd.read_csv(TABLES / "beyond_hh.claims.csv", keep_default_na=False)
    table = table_of(TABLES, "beyond_hh")
    notes = constructed(claims, table, "beyond_hh", TABLES.parent)
    assert notes[0].startswith(f"{BY_CONSTRUCTION} (registered: \"cannot fail") and "36 trials" in notes[0]
    # one trial of the derived arm with another recall: the same rule, no longer a computation
    derived = table.index[(table["mechanism.name"] == "lazyhh_derived") & (table["trial"] == table["trial"].max())]
    moved = table.assign(recall=table["recall"].where(~table.index.isin(derived[:1]), 0.0))
    assert one_trial(moved, -1) is not None and constructed(claims, moved, "beyond_hh", TABLES.parent) == [""]
    # an implementation check the registration does not declare unable to fail keeps its label (audit seeds alike)
    audit = pd.read_csv(TABLES / "audit_power.claims.csv", keep_default_na=False)
    assert not any(constructed(audit, table_of(TABLES, "audit_power"), "audit_power", TABLES.parent))
    # the verdict page's cell and the changelog say so instead of "decided by the registered run"
    label = "registered: look 3, 36 pooled trials, seeds 3-14, registration 3cb7d19a335bb227"
    assert shown(["beyond_hh#0"], [label], pd.DataFrame(), notes)[0].startswith(f"{BY_CONSTRUCTION}; registered")
    old = {"beyond_hh": claims.assign(verdict="inconclusive")}
    line = changelog(old, {"beyond_hh": claims}, {"beyond_hh": [label]}, {"beyond_hh": notes})[2]
    assert BY_CONSTRUCTION in line and "decided by the registered run" not in line
    assert "decided by the registered run" in changelog(old, {"beyond_hh": claims}, {"beyond_hh": [label]})[2]


def test_svt_c_notes_read_the_rows_the_coded_rules_read_and_each_seed_apart():
    """The pooled growth and seed 3's Sparse/TM are the coded rules' own numbers; the per-seed ranges are recomputed."""
    from dpstream.harness.rule_notes import svt_c_crossover, svt_c_growth

    claims = pd.read_csv(TABLES / "svt_c.claims.csv", keep_default_na=False).set_index("id")
    coded = re.findall(r"k\*=(\d+): TM growth x([\d.]+)", claims.loc["svt_c#0", "measured"])
    pooled = re.findall(r"k\* = (\d+): x[\d.]+\.\.x[\d.]+ per seed .*? x([\d.]+) on all \d+ pooled rows",
                        svt_c_growth(TABLES))
    assert coded and pooled == coded
    crossing = re.findall(r"k\*=(\d+): at c = [^:]*: Sparse [^,]*, Sparse/TM x([\d.]+)",
                          claims.loc["svt_c#2", "measured"])
    assert crossing and re.findall(r"k\* = (\d+): x([\d.]+) at seed", svt_c_crossover(TABLES)) == crossing
    df = pd.read_csv(TABLES / "svt_c.csv", low_memory=False)
    tm = df[(df["mechanism.name"] == "svt_tm") & (df["k_star"] == 1)].groupby("seed")["emp_alpha"]
    growth = tm.max() / tm.min()
    assert f"k* = 1: x{growth.min():.3g}..x{growth.max():.3g} per seed ({len(growth)} seeds)" in svt_c_growth(TABLES)


def test_slope_margins_read_each_claims_grid_from_its_table():
    from dpstream.harness.rule_notes import slope_margins

    rows = {r.split(" | ")[0].lstrip("| "): r.split(" | ") for r in slope_margins(TABLES) if r.startswith("| fig")}
    entry = by_id()["fig3b#0"]
    memory = pd.read_csv(TABLES / "fig3b.csv", usecols=["memory_kb"])["memory_kb"]
    span = np.log(memory.max() / memory.min())
    slope = float(entry["smallest_effect"]["value"])
    assert rows["fig3b#0"][1:] == [f"memory_kb {memory.min():g}..{memory.max():g}", f"{slope:g}",
                                   f"x{np.exp(slope * span):.3g}", f"{np.log(1.5) / span:.3g}",
                                   "its refutation margin |"]
    assert rows["fig3f#0"][-1] == "not used (fixed-sample, coded rule) |"


def test_trials_needed_takes_the_sequential_estimate_then_construction_and_makes_up_none():
    from dpstream.harness.rule_notes import BY_CONSTRUCTION_NEED, CANNOT_FAIL, NO_ESTIMATE, trials_needed

    sequential = "inconclusive at 60 trials; a decision needs about 333 trials in all"
    assert trials_needed(sequential, {}).startswith("about 333 trials in all")
    assert trials_needed("holds by construction; 288/288 points halt", {}) == BY_CONSTRUCTION_NEED
    assert trials_needed("0/30 flagged", {"kind_reason": f"{CANNOT_FAIL}: equal by design"}) == BY_CONSTRUCTION_NEED
    interval = "effect at the deciding point (a vs b): mean paired difference +0.1 [-0.1, +0.3]"
    assert trials_needed(interval, {"kind_reason": "a paper sentence"}) == NO_ESTIMATE  # no post-hoc power


def test_every_undecided_registered_claim_says_what_a_decision_would_need():
    from dpstream.harness.registered import all_claims, is_registered
    from dpstream.harness.rule_notes import decision_needs

    shown = all_claims(TABLES)
    undecided = shown[shown["label"].map(is_registered).astype(bool) & (shown["verdict"] == "inconclusive")]
    text = decision_needs(TABLES)
    named = re.findall(r"([a-z0-9_]+#\d+) \((\d+) trials\)", text)
    assert sorted(i for i, _ in named) == sorted(undecided["id"])
    assert f"What the {len(undecided)} registered claims" in text
    assert "about 333 trials in all (the registered sequential rule's estimate): fig3b#2 (60 trials)" in text
    assert re.search(r"hold by construction[^;]*svt_c#3 \(12 trials\)", text)


def test_the_skew_note_bounds_the_ln_change_the_claims_function_reports():
    """The note's least one-sided bound, recomputed from the claims function's per-trial ln change (Bonferroni)."""
    from scipy import stats

    from dpstream.claims.sketch import _log_ratio
    from dpstream.harness.rule_notes import skew_log_change

    df = pd.read_csv(TABLES / "fig3d.csv", low_memory=False)
    pairs = [(p, b) for p in ("lazycms", "lazycs", "punctualcms", "punctualcs") for b in ("cms", "cs")]
    pairs.append(("cs", "cms"))
    lows = []
    for a, b in pairs:
        d = (_log_ratio(df, b, "data.skew") - _log_ratio(df, a, "data.skew")).to_numpy(dtype=float)
        lows.append(d.mean() - stats.t.ppf(1 - 0.025 / len(pairs), d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    assert skew_log_change(TABLES).endswith(f", {min(lows):.3g}")
    assert f"exceeds 0.1 for {sum(v > 0.1 for v in lows)} of {len(pairs)} pairs" in skew_log_change(TABLES)


def test_the_per_seed_verdicts_judge_each_seed_apart_and_kcap_is_refuted_by_pooling_alone():
    """svt_kcap#1 per seed, recomputed from its steps; pooled, adjacent replicates of one cap fail the x1.21 step."""
    from dpstream.claims.svt import PAIR_TOL
    from dpstream.harness.rule_notes import per_seed, pooling, seed_verdicts

    df = pd.read_csv(TABLES / "svt_kcap.csv", low_memory=False)
    tm = df[(df["mechanism.name"] == "svt_tm") & (df["k"] >= df["k_star"])]
    rising = [bool((g.sort_values("k")["emp_alpha"].pct_change().dropna() > PAIR_TOL - 1).all())
              for _, g in tm.groupby("seed")]
    assert f"svt_kcap#1: confirmed at {sum(rising)} of {len(rising)} seeds" in per_seed(("svt_kcap#1",))(TABLES)
    pooled = tm.sort_values("k", kind="stable")["emp_alpha"].to_numpy()
    assert (pooled[1:] <= PAIR_TOL * pooled[:-1]).any()
    claims = pd.read_csv(TABLES / "svt_kcap.claims.csv", keep_default_na=False).set_index("id")
    assert claims.loc["svt_kcap#1", "verdict"] == "not confirmed" and sum(rising) == len(rising)
    paragraph = pooling(TABLES)
    assert paragraph.startswith(f"**{sum(len(d.claims) for d in DIFFERENCES if d.pooled)} registered claims")
    assert f"svt_kcap#1 (not confirmed pooled; alone: confirmed at {len(rising)} of {len(rising)} seeds)" in paragraph
    for d in DIFFERENCES:
        for claim_id in d.claims:
            exp = claim_id.rsplit("#", 1)[0]
            counts = seed_verdicts(TABLES, exp).get(claim_id)
            if counts is not None:  # every seed of the table judged once
                assert sum(counts.values()) == pd.read_csv(TABLES / f"{exp}.csv", usecols=["seed"])["seed"].nunique()


def test_the_per_seed_verdicts_follow_the_table_they_read(tmp_path):
    """Judged when no seed_verdicts.csv holds the table's SHA-256: none written, or written before the table changed."""
    from dpstream.harness.rule_notes import seed_verdicts, write_seed_verdicts

    tables = tmp_path / "tables"
    tables.mkdir()
    df = pd.read_csv(TABLES / "svt_order.csv", low_memory=False)
    df.to_csv(tables / "svt_order.csv", index=False)
    assert sum(seed_verdicts(tables, "svt_order")["svt_order#1"].values()) == df["seed"].nunique()
    write_seed_verdicts(tables)
    df[df["seed"] == df["seed"].min()].to_csv(tables / "svt_order.csv", index=False)
    assert sum(seed_verdicts(tables, "svt_order")["svt_order#1"].values()) == 1
    assert seed_verdicts(tables, "no_such_experiment") == {}


def test_the_committed_per_seed_verdicts_are_of_the_committed_tables():
    """seed_verdicts.csv holds, for every pooled experiment with a table, that table's SHA-256 and nothing older."""
    import hashlib

    from dpstream.harness.rule_notes import SEED_VERDICTS, pooled_experiments

    stored = pd.read_csv(TABLES / SEED_VERDICTS, keep_default_na=False)
    current = {e: hashlib.sha256((TABLES / f"{e}.csv").read_bytes()).hexdigest()
               for e in pooled_experiments() if (TABLES / f"{e}.csv").exists()}
    assert dict(stored[["experiment", "table_sha256"]].drop_duplicates().itertuples(index=False)) == current
    seeds = stored.groupby(["experiment", "claim"])["seeds"].sum()
    for exp in current:  # every seed of a table counted once per claim
        n = pd.read_csv(TABLES / f"{exp}.csv", usecols=["seed"])["seed"].nunique()
        assert (seeds.loc[exp] == n).all(), exp


def _judged_afresh(tmp_path: Path, experiments: list[str]) -> pd.DataFrame:
    from dpstream.harness.rule_notes import write_seed_verdicts

    tables = tmp_path / "tables"
    tables.mkdir()
    for exp in experiments:
        shutil.copyfile(TABLES / f"{exp}.csv", tables / f"{exp}.csv")
    return pd.read_csv(write_seed_verdicts(tables), keep_default_na=False)


def test_the_committed_per_seed_verdicts_are_what_judging_gives(tmp_path):
    """Two experiments judged afresh seed by seed give their rows of seed_verdicts.csv exactly (all: the long test)."""
    from dpstream.harness.rule_notes import SEED_VERDICTS

    fresh = _judged_afresh(tmp_path, ["svt_kcap", "svt_order"])
    stored = pd.read_csv(TABLES / SEED_VERDICTS, keep_default_na=False)
    assert len(fresh) > 0
    pd.testing.assert_frame_equal(fresh, stored[stored["experiment"].isin(["svt_kcap", "svt_order"])]
                                  .reset_index(drop=True))


@pytest.mark.long
def test_every_committed_per_seed_verdict_is_what_judging_gives(tmp_path):
    from dpstream.harness.rule_notes import SEED_VERDICTS, pooled_experiments

    fresh = _judged_afresh(tmp_path, [e for e in pooled_experiments() if (TABLES / f"{e}.csv").exists()])
    pd.testing.assert_frame_equal(fresh, pd.read_csv(TABLES / SEED_VERDICTS, keep_default_na=False))
