"""Fig. 4's trace is the unit of replication: one synthetic trace per trial, at least 3 at paper scale."""

import numpy as np
import pytest
import yaml
from conftest import ROOT

from dpstream.data.caida_like import synthetic_caida_like
from dpstream.noise import trial_seed
from dpstream.trials.heavy_hitters import run_trial

FIG4_ON_CAIDA = ("fig4_k256", "fig4a", "fig4b", "fig4c", "fig4d", "fig4e", "fig4f")


def test_trace_seed_none_draws_one_trace_per_trial_seed(tmp_path):
    def trace(entropy: int):
        return synthetic_caida_like(length=20_000, trace_seed=None, seed=np.random.SeedSequence(entropy),
                                    cache_dir=tmp_path)

    assert np.array_equal(trace(1), trace(1))  # the same trial seed (and cache entry): the same trace
    assert not np.array_equal(trace(1), trace(2))
    with pytest.raises(ValueError, match="trace_seed=None"):
        synthetic_caida_like(length=100, trace_seed=None, seed=None)


@pytest.mark.parametrize("exp_id", FIG4_ON_CAIDA)
def test_fig4_configs_replicate_over_at_least_three_traces(exp_id):
    spec = yaml.safe_load((ROOT / "experiments" / f"{exp_id}.yaml").read_text())
    assert spec["fixed"]["data.trace_seed"] is None
    assert spec.get("trials", 5) >= 3


@pytest.mark.parametrize(("trace_seed", "distinct"), [(None, True), (2019, False)])
def test_fig4_trial_feeds_its_own_trace_when_trace_seed_is_none(tmp_path, trace_seed, distinct):
    """The trial passes its data seed to the source: trials 0 and 1 see different traces only with trace_seed=None."""
    data = {"name": "caida_like_synthetic", "_target_": "dpstream.data.caida_like.synthetic_caida_like",
            "synthetic": True, "length": 20_000, "zipf_exponent": 1.0, "full_length": 26_600_000,
            "distinct_sources": 312_000, "trace_seed": trace_seed}
    mech = {"name": "cms_heap", "trial": "dpstream.trials.heavy_hitters:run_trial", "private": False, "k": 16,
            "_target_": "dpstream.heavy_hitters.CMSHeap", "period": None, "k_tilde": 64, "uses": ["width", "depth"]}
    params = {"width": 64, "depth": 3, "seed": 0, "mechanism": mech, "data": data, "data_dir": str(tmp_path),
              "profile": {"name": "smoke"}}
    rows = [run_trial(params | {"trial": t}, trial_seed(0, t)) for t in (0, 1, 0)]
    hashes = [r["trace_xxh3"] for r in rows]
    assert len(hashes[0]) == 16 and hashes[0] == hashes[2]  # a trial's trace is reproducible
    assert (hashes[0] != hashes[1]) == distinct


def test_claims_name_how_many_traces_the_rows_span():
    import pandas as pd

    from dpstream.claims.heavy_hitters import trace_note

    rows = pd.DataFrame({"data.name": "caida_like_synthetic", "data.synthetic": True, "n_true": [9, 9, 11],
                         "trace_xxh3": ["a1", "a1", "b2"]})
    assert trace_note(rows) == ("on the 2 distinct synthetic caida_like traces "
                                "(data.name caida_like_synthetic, n_true 9-11)")
    assert trace_note(rows.assign(trace_xxh3="a1")) == ("on the synthetic caida_like trace "
                                                        "(data.name caida_like_synthetic, n_true 9-11)")
