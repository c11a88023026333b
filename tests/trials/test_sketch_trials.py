"""Figure 3 trials through the harness.

Reproducibility across n_jobs, ARE at release times. (Command-line errors and sweeps: tests/test_cli.py.)
"""


import numpy as np
import pandas as pd
import pytest
from conftest import CONF_DIR, ROOT

from dpstream.data.stream import load_stream
from dpstream.harness.runner import is_timing, run
from dpstream.metrics import average_relative_error, release_times, top_k
from dpstream.noise import trial_seed
from dpstream.trials.sketch import make_sketch, run_trial

USES = ["epsilon", "delta", "width", "depth", "memory_kb"]  # as conf/mechanism/*.yaml declare


def test_fig3_rows_identical_for_one_and_two_jobs(compose_cfg, tmp_path):
    frames = []
    for n_jobs in (1, 2):
        cfg = compose_cfg(["experiment=fig3d", "profile=smoke", f"results_dir={tmp_path / str(n_jobs)}",
                           f"data_dir={ROOT / 'data'}", f"n_jobs={n_jobs}"])
        df = run(cfg, CONF_DIR)[0]
        frames.append(df[[c for c in df.columns if not is_timing(c)]])
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert frames[0]["are_top15"].nunique() > 1


def test_noiseless_trial_are_matches_direct_computation(tmp_path):
    """A CMS trial's ARE equals the ARE computed by hand from the same stream and sketch."""
    from dpstream.data import zipf_stream
    from dpstream.sketches import CMS

    params = {"mechanism": {"name": "cms", "_target_": "dpstream.sketches.CMS", "uses": USES},
              "data": {"name": "zipf", "_target_": "dpstream.data.zipf_stream", "length": 20000, "universe": 5000,
                       "skew": 1.2},
              "epsilon": 1.0, "delta": 0.01, "width": 64, "depth": 2, "memory_kb": None, "data_dir": str(tmp_path)}
    row = run_trial(params, trial_seed(3, 0))
    data_seed, mech_seed = trial_seed(3, 0).spawn(2)
    stream = zipf_stream(length=20000, universe=5000, skew=1.2, seed=data_seed)
    sketch = CMS(width=64, depth=2, horizon=len(stream), seed=mech_seed)
    sketch.extend(stream)
    items, counts = top_k(stream, 15)
    expected = np.mean(np.abs(counts - sketch.query_many(items)) / counts)
    assert row["are_top15"] == pytest.approx(expected)
    assert row["sketch_width"] == 64 and row["length"] == 20000


def _private_params(tmp_path, mechanism, cls, **extra):
    return {"mechanism": {"name": mechanism, "_target_": f"dpstream.sketches.{cls}", "uses": USES},
            "data": {"name": "zipf", "_target_": "dpstream.data.zipf_stream", "length": 6000, "universe": 3000,
                     "skew": 1.3},
            "epsilon": 2.0, "delta": 1e-3, "width": 40, "depth": 3, "memory_kb": None, "data_dir": str(tmp_path),
            **extra}


def _are_of_fresh_sketch(params, t):
    """ARE of the top-15 of stream[:t], from a NEW sketch (same seeds) fed stream[:t] in one ``extend``."""
    data_seed, mech_seed = trial_seed(1, 0).spawn(2)
    stream = load_stream(params["data"], data_seed, params["data_dir"])[0]
    sketch = make_sketch(params, len(stream), mech_seed)
    sketch.extend(stream[:t])
    items, counts = top_k(stream[:t], 15)
    return average_relative_error(counts, sketch.query_many(items))


@pytest.mark.parametrize(("mechanism", "cls"), [("punctualcms", "PunctualCMS"), ("lazycs", "LazyCS"), ("cms", "CMS")])
def test_are_at_release_times_equal_fresh_sketches_stopped_there(tmp_path, mechanism, cls):
    """are_top15 is the single-pass value at T (unchanged by the chunked feed).

    The mean / max over the release times equal sketches built anew and stopped at each t.
    """
    params = _private_params(tmp_path, mechanism, cls, release_times=6)
    row = run_trial(params, trial_seed(1, 0))
    times = release_times(6000, 6)
    direct = [_are_of_fresh_sketch(params, int(t)) for t in times]
    assert row["n_release_times"] == 6 and times[-1] == 6000
    assert row["are_top15"] == direct[-1]
    assert row["are_top15_mean_t"] == pytest.approx(np.mean(direct), rel=1e-12)
    assert row["are_top15_max_t"] == max(direct)
    assert len(set(direct)) == 6  # the times really differ
