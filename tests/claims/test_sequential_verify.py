"""``make verify-registered`` end to end on a tiny fake experiment: looks, freezing, batches, resuming, trials needed.

The fake experiment has arms A-D drawn per trial from the trial's seed (``_harness_fake.sequential_claims``): A is far
below B at seeds 3 and 4 and far above from seed 5 (a claim frozen at look 1 must keep that look's verdict), C has no
effect and sd 0.6 (refuted against its smallest effect 0.5 by its second look, 20 trials, where the refutation statistic
is ~3.7 sd against a boundary of ~2.6), D half of it and sd 3 (both statistics ~0.5 at its budget: inconclusive), and a
fixed-sample
rule is judged once, at its budget.
"""

import numpy as np
import pandas as pd
import pytest
import yaml

import dpstream.harness.verify as v
from dpstream.claims.registration import registration_hash, rule_hash
from dpstream.errors import InputError
from dpstream.harness.verify import seed_dir

SPEC = {"id": "fake", "claims": "_harness_fake:sequential_claims"}
TEXTS = ("A is below B", "C is below B", "values are finite", "D is below B")
TRIALS_PER_SEED = 5


def _registration(path, sequential=(True, True, False, True)):
    claims = []
    for i, (text, seq) in enumerate(zip(TEXTS, sequential, strict=True)):
        entry = {"id": f"fake#{i}", "experiment": "fake", "claim": text, "kind": "implementation check",
                 "rule": {"family": "location", "sequential": seq}, "alpha": 0.05, "budget": 30, "first_batch": 10,
                 "smallest_effect": {"value": 0.5, "unit": "difference of the arms", "source": "test"}}
        claims.append({**entry, "rule_hash": rule_hash(SPEC["claims"], entry)})
    path.write_text(yaml.safe_dump({"version": 1, "alpha": 0.05, "looks": 3, "claims": claims}))
    return path


CLEAN = "0123456789abcdef" * 2 + "01234567"
"""A clean commit hash the fake rows record."""


class FakeRuns:
    """``verify.run_seed`` for the fake experiment: a seed's table written once (counted), with its provenance."""

    def __init__(self, registration, commit=CLEAN):
        self.prereg, self.commit, self.computed = registration_hash(registration), commit, []

    def __call__(self, store, profile, seed, experiment, n_jobs=None):
        path = seed_dir(store, profile, seed) / "tables" / f"{experiment}.csv"
        if path.exists():
            return path.parent.parent
        self.computed.append(seed)
        rng = np.random.default_rng(seed)
        rows = []
        for t in range(TRIALS_PER_SEED):
            b = rng.normal()
            shift = -3.0 if seed < 5 else 3.0
            for arm, value in (("A", b + shift + rng.normal()), ("B", b), ("C", b + 0.6 * rng.normal()),
                               ("D", b - 0.25 + 3.0 * rng.normal())):
                rows.append({"seed": seed, "trial": t, "arm": arm, "value": value, "commit": self.commit,
                             "run_time": "t", "prereg_hash": self.prereg})
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(path, index=False)
        return path.parent.parent


def _run(tmp_path, monkeypatch, runs, registration):
    monkeypatch.setattr(v, "run_seed", runs)
    record = tmp_path / "store" / "smoke" / "looks.csv"
    records = v._read_records(record, registration)
    claims = v.registered_experiment(SPEC, tmp_path / "store", "smoke", records, record, nulls=0, path=registration)
    return claims, pd.read_csv(record, keep_default_na=False)


def test_claims_are_decided_at_their_looks_frozen_and_resumed(tmp_path, monkeypatch):
    registration = _registration(tmp_path / "prereg.yaml")
    runs = FakeRuns(registration)
    claims, looks = _run(tmp_path, monkeypatch, runs, registration)
    assert runs.computed == [3, 4, 5, 6, 7, 8]  # two new seeds a look (a first batch of 10 trials), seeds 0-2 never
    by_id = {i: g for i, g in looks.groupby("id")}
    # A below B: confirmed at look 1 on 10 trials and frozen, although the experiment ran two more looks for the others
    assert by_id["fake#0"][["look", "verdict", "trials"]].values.tolist() == [[1, "confirmed", 10]]
    assert claims["verdict"].iloc[0] == "confirmed" and "look 1" in claims["measured"].iloc[0]
    fresh = v.decide(v.import_object(SPEC["claims"])(claims.attrs["table"], SPEC)[0].evidence,
                     yaml.safe_load(registration.read_text())["claims"][0])
    assert fresh.verdict == "not confirmed"  # judged afresh on all 30 trials it would flip: the freeze matters
    # no effect where the claim needs 0.5: refuted at one of its looks, and not examined after it
    c = by_id["fake#1"]
    assert c["verdict"].iloc[-1] == "not confirmed" and c["verdict"].iloc[:-1].eq("inconclusive").all()
    # the fixed-sample rule is judged once, at its budget
    assert by_id["fake#2"][["look", "trials"]].values.tolist() == [[3, 30]]
    assert "no estimate of the trials" not in claims["measured"].iloc[2]  # decided: confirmed
    # an effect too small to decide on the budget: inconclusive, with the trials a decision would need
    d = by_id["fake#3"]
    assert d["trials"].tolist() == [10, 20, 30] and d["verdict"].iloc[-1] == "inconclusive"
    assert "a decision needs about" in claims["measured"].iloc[3]
    needed = int(claims["measured"].iloc[3].split("needs about ")[1].split()[0])
    assert needed > 30
    # resumed: nothing is computed again, no look is recorded twice, the verdicts are those of the first run
    again, looks_again = _run(tmp_path, monkeypatch, runs, registration)
    assert runs.computed == [3, 4, 5, 6, 7, 8] and looks_again.equals(looks)
    assert again["verdict"].tolist() == claims["verdict"].tolist()
    # interrupted during look 3: that look alone is judged again, from the stored trials
    looks[looks["look"] < 3].to_csv(tmp_path / "store" / "smoke" / "looks.csv", index=False)
    third, looks_third = _run(tmp_path, monkeypatch, runs, registration)
    assert runs.computed == [3, 4, 5, 6, 7, 8] and looks_third.equals(looks)
    assert third["verdict"].tolist() == claims["verdict"].tolist()


def test_trials_not_run_under_the_registration_decide_nothing_and_run_to_the_budget(tmp_path, monkeypatch):
    registration = _registration(tmp_path / "prereg.yaml")
    claims, looks = _run(tmp_path, monkeypatch, FakeRuns(registration, commit=f"{CLEAN}-dirty"), registration)
    assert set(looks["verdict"]) == {"inconclusive"} and looks.groupby("id")["trials"].max().eq(30).all()
    assert claims["verdict"].eq("inconclusive").all() and claims["measured"].str.contains("history").iloc[:2].all()
    assert "no estimate of the trials" in claims["measured"].iloc[2]  # the fixed-sample rule, undecided at its budget


@pytest.mark.parametrize("trials_per_seed", [5, 3])
def test_a_look_adds_enough_seeds_for_the_smallest_first_batch(trials_per_seed):
    entries = [{"first_batch": 57}, {"first_batch": 10}]
    assert v.seeds_per_look(entries, trials_per_seed) == -(-10 // trials_per_seed)
    assert v.look_seeds(2, 2) == (3, 4, 5, 6)  # seeds 0-2 are history
    assert v.schedule({"budget": 171, "first_batch": 57, "rule": {"sequential": True}}, 3, True) == (57, 114, 171)
    assert v.schedule({"budget": 171, "first_batch": 57, "rule": {"sequential": True}}, 3, False) == (171,)


def test_looks_recorded_under_another_registration_are_refused_and_old_files_upgraded(tmp_path, monkeypatch, capsys):
    registration = _registration(tmp_path / "prereg.yaml")
    runs = FakeRuns(registration)
    claims, looks = _run(tmp_path, monkeypatch, runs, registration)
    record = tmp_path / "store" / "smoke" / "looks.csv"
    assert looks["prereg_hash"].eq(registration_hash(registration)).all()
    # written before records carried the hash: stamped with the current one, once, and resumed as before
    looks.drop(columns="prereg_hash").to_csv(record, index=False)
    again, upgraded = _run(tmp_path, monkeypatch, runs, registration)
    assert upgraded.equals(looks) and again["verdict"].tolist() == claims["verdict"].tolist()
    assert runs.computed == [3, 4, 5, 6, 7, 8]
    # the registration changed: the looks decided under the old one are not resumed
    old = registration_hash(registration)
    registration.write_text(registration.read_text().replace("alpha: 0.05\n", "alpha: 0.01\n", 1))
    new = registration_hash(registration)
    assert new != old
    with pytest.raises(InputError, match=f"{old}.*{new}"):
        _run(tmp_path, monkeypatch, runs, registration)
    # from the command line (the committed registration): one line naming both hashes, exit status 2
    record.parent.mkdir(parents=True, exist_ok=True)
    looks.assign(prereg_hash="0123abcdef").to_csv(record, index=False)
    monkeypatch.setenv("DPSTREAM_VERIFY_STORE", str(tmp_path / "store"))
    with pytest.raises(SystemExit) as exit_:
        v.main(["--registered", "--profile", "smoke", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1
    assert "0123abcdef" in err and registration_hash() in err


def test_a_claims_provenance_names_the_seeds_of_its_own_look(tmp_path, monkeypatch):
    """fake#0 is final at look 1 (seeds 3-4) while its experiment ran to look 3 (seeds 3-8)."""
    registration = _registration(tmp_path / "prereg.yaml")
    claims, looks = _run(tmp_path, monkeypatch, FakeRuns(registration), registration)
    hash_ = registration_hash(registration)
    assert claims["provenance"].iloc[0] == f"registered: look 1, 10 pooled trials, seeds 3-4, registration {hash_}"
    assert claims["provenance"].iloc[3] == f"registered: look 3, 30 pooled trials, seeds 3-8, registration {hash_}"


def test_a_claim_decided_by_its_sequential_rule_shows_that_rule(tmp_path, monkeypatch):
    registration = _registration(tmp_path / "prereg.yaml")
    claims, _ = _run(tmp_path, monkeypatch, FakeRuns(registration), registration)
    rule = dict(zip(claims["id"], claims["rule"], strict=True))
    # decided by ``decide``: the registered test, its margin, alpha and looks, not the claims function's own text
    for claim_id in ("fake#0", "fake#1", "fake#3"):
        assert rule[claim_id].startswith("registered sequential rule") and "paired" not in rule[claim_id]
        assert "group-sequential t tests on the mean of d" in rule[claim_id]
        assert '"the mean of d <= -0.5" (the smallest effect that matters: 0.5, difference of the arms)' in rule[
            claim_id]
        assert "alpha 0.05 a side" in rule[claim_id] and "Looks at 10, 20, 30 pooled trials (budget 30)" in rule[
            claim_id]
    assert rule["fake#2"] == "all rows"  # a fixed-sample rule decided it: the claims function's text is that rule


def test_a_registered_trend_rule_in_words_comes_from_its_registration_entry():
    from dpstream.claims.core import trend_claim
    from dpstream.claims.registration import by_id
    from dpstream.harness.verify import sequential_rule

    rng = np.random.default_rng(1)
    memory = (8, 24, 64)
    df = pd.DataFrame([{"mechanism.name": m, "trial": t, "memory_kb": kb, "are_top15": 1 / kb + rng.uniform(0, 1e-3)}
                       for m in ("a", "b") for t in range(4) for kb in memory])
    claim = trend_claim(df, "decreasing", ("a", "b"), "memory_kb", "are_top15", "decreasing", log_offset=1e-3)
    assert "Page's trend test" in claim.rule  # the text of the fixed-sample rule
    entry = by_id()["fig3b_wordfreq#0"]
    text = sequential_rule(entry, claim.evidence, 3)
    assert "Page" not in text and "p < " not in text
    assert "d = the least-squares slope of ln(are_top15 + 1e-3) on ln memory_kb" in text
    assert "at each of 2 points (a, b)" in text and "Holm over the points" in text
    assert f'"the mean of d <= -{entry["smallest_effect"]["value"]:g}"' in text
    assert f"Looks at 10, 20, 30 pooled trials (budget {entry['budget']})" in text
    # read from the entry, not written in: another margin, alpha and budget give another text
    other = {**entry, "alpha": 0.01, "budget": 40, "smallest_effect": {**entry["smallest_effect"], "value": 0.3}}
    changed = sequential_rule(other, claim.evidence, 3)
    assert '"the mean of d <= -0.3"' in changed and "alpha 0.01" in changed and "(budget 40)" in changed


def test_every_committed_claim_adopted_under_a_sequential_rule_shows_that_rule():
    """The committed claims tables: an adopted sequential claim's ``rule`` is the registered rule, never Page's p."""
    from pathlib import Path

    from dpstream.claims.registration import by_id
    from dpstream.harness.registered import REGISTERED

    entries = by_id()
    shown = 0
    for path in sorted((Path(__file__).resolve().parents[2] / "results" / "tables").glob("*.claims.csv")):
        claims = pd.read_csv(path, keep_default_na=False)
        if "provenance" not in claims.columns:
            continue
        for claim_id, rule, provenance in zip(claims["id"], claims["rule"], claims["provenance"], strict=True):
            entry = entries.get(str(claim_id), {})
            if REGISTERED.match(str(provenance)) and v.sequential(entry):
                shown += 1
                effect = f'<= -{entry["smallest_effect"]["value"]:g}"'
                assert rule.startswith("registered sequential rule") and effect in rule, (claim_id, rule[:120])
                assert "Page's" not in rule and f"alpha {entry['alpha']:g} a side" in rule
    assert shown >= 12  # fig3b_wordfreq#0-4, fig3c#0, fig3d#2-5, fig3e#1-2 at least
