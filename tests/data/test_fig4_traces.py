"""Fig. 4's trace is the unit of replication: one synthetic trace per trial, at least 3 at paper scale."""

import numpy as np
import pytest
import yaml
from conftest import ROOT

from dpstream.data.caida_like import synthetic_caida_like

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
