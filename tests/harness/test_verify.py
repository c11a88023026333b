"""``make verify`` on the smoke profile: three master seeds into a store outside the clone, resumable, combined."""

import pandas as pd

from dpstream.harness.verify import UNSTABLE, combine_seeds, seed_dir, verify


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


def test_verify_smoke_three_seeds_resumes_from_its_store(tmp_path, capsys):
    store, out = tmp_path / "store", tmp_path / "out"
    result = verify(seeds=(0, 1, 2), profile="smoke", experiment="svt_theory", nulls=2, out=out, store=store,
                    n_jobs=1)
    for seed in (0, 1, 2):
        assert (seed_dir(store, "smoke", seed) / "tables" / "svt_theory.csv").exists()
    written = pd.read_csv(out / "tables" / "svt_theory.claims.csv", keep_default_na=False)
    assert written["verdict"].tolist() == result["claims"]["svt_theory"]["verdict"].tolist()
    assert written["measured"].str.contains("same verdict at seeds 0, 1, 2").all()
    capsys.readouterr()
    verify(seeds=(0, 1, 2), profile="smoke", experiment="svt_theory", nulls=2, out=out, store=store, n_jobs=1)
    printed = capsys.readouterr().out
    assert printed.count("(0 computed") == 3  # every trial of every seed came from the store
