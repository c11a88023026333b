"""``make verify`` on the smoke profile: three master seeds into a store, resumable, combined; the store committed."""

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from dpstream.harness.verify import UNSTABLE, combine_seeds, progress, seed_dir, verify, verify_store

REPO = Path(__file__).resolve().parents[2]


def claims(*verdicts: str) -> pd.DataFrame:
    return pd.DataFrame({"claim": [f"c{i}" for i in range(len(verdicts))], "rule": "r", "measured": "m",
                         "verdict": list(verdicts)})


def test_a_verdict_that_differs_between_seeds_is_unstable_with_every_outcome():
    out = combine_seeds({0: claims("confirmed", "not confirmed"), 1: claims("confirmed", "confirmed"),
                         2: claims("confirmed", "not confirmed")})
    assert out["verdict"].tolist() == ["confirmed", "inconclusive"]
    assert out["measured"].iloc[1].startswith(f"inconclusive ({UNSTABLE}: seed 0: not confirmed; seed 1: confirmed; "
                                              "seed 2: not confirmed)")
    assert "same verdict at seeds 0, 1, 2" in out["measured"].iloc[0]


def test_each_seeds_null_outcome_is_kept_where_they_differ():
    per_seed = {s: claims("confirmed", "confirmed").assign(nulls=["confirms on 0/200", f"confirms on {s}/200"])
                for s in (0, 1, 2)}
    out = combine_seeds(per_seed)
    assert out["nulls"].tolist() == ["confirms on 0/200", "seed 0: confirms on 0/200; seed 1: confirms on 1/200; "
                                                          "seed 2: confirms on 2/200"]


def test_verify_smoke_three_seeds_resumes_from_its_store(tmp_path, capsys):
    store, out = tmp_path / "store", tmp_path / "out"
    before = progress(store, "smoke", (0, 1, 2), "svt_theory")
    assert before["seed"].tolist() == [0, 1, 2] and (before["trials"] > 0).all() and (before["stored"] == 0).all()
    assert not store.exists()  # counting wrote nothing
    result = verify(seeds=(0, 1, 2), profile="smoke", experiment="svt_theory", nulls=2, out=out, store=store,
                    n_jobs=1)
    for seed in (0, 1, 2):
        assert (seed_dir(store, "smoke", seed) / "tables" / "svt_theory.csv").exists()
    written = pd.read_csv(out / "tables" / "svt_theory.claims.csv", keep_default_na=False)
    assert written["verdict"].tolist() == result["claims"]["svt_theory"]["verdict"].tolist()
    assert written["measured"].str.contains("same verdict at seeds 0, 1, 2").all()
    after = progress(store, "smoke", (0, 1, 2), "svt_theory")
    assert after["stored"].tolist() == before["trials"].tolist()
    capsys.readouterr()
    verify(seeds=(0, 1, 2), profile="smoke", experiment="svt_theory", nulls=2, out=out, store=store, n_jobs=1)
    printed = capsys.readouterr().out
    assert printed.count("(0 computed") == 3  # every trial of every seed came from the store


def test_the_default_store_is_beside_the_report_and_the_environment_overrides_it(monkeypatch, tmp_path):
    monkeypatch.delenv("DPSTREAM_VERIFY_STORE", raising=False)
    assert verify_store() == Path("results") / "verify"
    assert verify_store(tmp_path / "out") == tmp_path / "out" / "verify"
    monkeypatch.setenv("DPSTREAM_VERIFY_STORE", str(tmp_path / "elsewhere"))
    assert verify_store(tmp_path / "out") == tmp_path / "elsewhere"


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs the git checkout")
def test_git_tracks_a_seeds_trial_store_and_ignores_its_tables_and_figures():
    seed = seed_dir(verify_store(Path("results")), "paper", 0)
    paths = [str(seed / "store" / "trials.jsonl"), str(seed / "store" / "trials.format"),
             str(seed / "tables" / "fig3a.csv"), str(seed / "figures" / "fig3a.png")]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=REPO, capture_output=True,
                             text=True).stdout.split()
    assert ignored == paths[2:]


def test_the_registered_run_takes_experiments_cheapest_first_by_the_frozen_estimate():
    from dpstream.claims.registration import load
    from dpstream.harness.verify import cheapest_first

    specs = [{"id": i} for i in ("fig3a", "unregistered", "fig4a", "audit_svt")]
    hours = load()["budget_estimate"]["per_experiment"]
    order = [s["id"] for s in cheapest_first(specs, load())]
    assert order[-1] == "unregistered" and [hours[i]["hours"] for i in order[:-1]] == sorted(
        hours[i]["hours"] for i in order[:-1])
    assert hours["audit_svt"]["hours"] < hours["fig3a"]["hours"] and order.index("audit_svt") < order.index("fig3a")
    # fig4c's trials are fig4a's (counted once, for fig4a): fig4c goes with fig4a, not first at "0 h"
    specs = [{"id": i} for i in ("fig4c", "audit_svt", "fig4a", "qr_alg5")]
    keys = {"fig4c": {"k1", "k2"}, "fig4a": {"k1", "k2", "k3"}, "audit_svt": {"s"}, "qr_alg5": {"q"}}
    assert hours["fig4c"]["hours"] < hours["qr_alg5"]["hours"] < hours["audit_svt"]["hours"] < hours["fig4a"]["hours"]
    assert [s["id"] for s in cheapest_first(specs, load(), keys)] == ["qr_alg5", "audit_svt", "fig4c", "fig4a"]
