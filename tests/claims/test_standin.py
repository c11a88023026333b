"""The Fig. 4 stand-in sensitivity analysis: planted profiles, and a map of where each sentence holds (tiny grid)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstream.data.caida_like import plant_band, standin_profile
from dpstream.harness.runner import run
from dpstream.registry import CONF_DIR

ROOT = Path(__file__).resolve().parents[2]


def _band(stream: np.ndarray, k: int) -> int:
    _, counts = np.unique(stream, return_counts=True)
    lo = stream.size / k
    return int(((counts >= lo) & (counts < 1.5 * lo)).sum())


@pytest.mark.parametrize("near", [0, 1, 5])
def test_planting_leaves_exactly_the_asked_sources_in_the_band_and_the_length(near):
    rng = np.random.default_rng(3)
    stream = (rng.zipf(1.3, size=1 << 15) % 5000 + 1).astype(np.uint32)
    planted = plant_band(stream, near, 64, np.random.default_rng(4))
    assert planted.size == stream.size and _band(planted, 64) == near
    assert _band(stream, 64) != near or near == 0 or np.array_equal(planted, stream)
    top = np.bincount(stream).argmax()
    assert np.sum(planted == top) == np.sum(stream == top)  # the heaviest source is untouched


def test_a_profile_plants_on_its_trials_own_trace_and_too_many_is_one_clear_error():
    a = standin_profile(1 << 14, 1.0, 3, 32, seed=1)
    assert _band(a, 32) == 3 and not np.array_equal(a, standin_profile(1 << 14, 1.0, 3, 32, seed=2))
    with pytest.raises(ValueError, match="near_threshold=5000: too few small sources"):
        standin_profile(1 << 14, 1.0, 5000, 32, seed=1)


@pytest.mark.long
def test_the_sensitivity_map_says_for_which_profiles_each_sentence_holds(compose_cfg, tmp_path):
    cfg = compose_cfg(["experiment=fig4_sensitivity", "profile=smoke", f"results_dir={tmp_path}",
                       f"data_dir={ROOT / 'data'}", "n_jobs=1"])
    run(cfg, CONF_DIR)
    rows = pd.read_csv(next(tmp_path.glob("**/tables/fig4_sensitivity.csv")))
    assert sorted(rows["data.near_threshold"].unique()) == [0, 8] and set(rows["data.zipf_exponent"]) == {1.0}
    claims = pd.read_csv(next(tmp_path.glob("**/tables/fig4_sensitivity.claims.csv")), keep_default_na=False)
    assert claims["claim"].str.match(r"fig4[abc]#\d+ ").all() and len(claims) >= 6
    assert (claims["verdict"] == "inconclusive").all()  # a map of the stand-in decides nothing about CAIDA
    for measured in claims["measured"]:
        holds, by = measured.split(". By verdict: ")
        assert holds.startswith("holds for ")
        for name in ("Zipf 1 / 0 near t/k", "Zipf 1 / 8 near t/k"):  # every profile judged once
            assert by.count(name) == 1
            confirmed = any(p.startswith("confirmed for") and name in p for p in by.split("; "))
            assert (name in holds) == confirmed
