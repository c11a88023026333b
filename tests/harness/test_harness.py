"""The harness: grid expansion, seeding, the results store, resumption, errors, and every experiment in smoke."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import CONF_DIR, ROOT, child_env
from omegaconf import OmegaConf

from dpstream.harness.config import grid_points
from dpstream.harness.runner import is_timing, run
from dpstream.harness.store import CHECKSUM, STORE_FORMAT, ResultsStore, StoreError
from dpstream.registry import load_option, options


def fake_conf(tmp_path: Path, sleep: float = 0.0, uncertified: bool = False) -> Path:
    conf = tmp_path / "conf"
    for group in ("mechanism", "data", "experiment"):
        (conf / group).mkdir(parents=True)
    (conf / "mechanism" / "fake.yaml").write_text(
        f"name: fake\ntrial: _harness_fake:run_trial\nuses: [epsilon, delta, width, depth]\ndata_kinds: [none]\n"
        f"sleep: {sleep}\n"
        f"uncertified: {str(uncertified).lower()}\n")
    (conf / "data" / "none.yaml").write_text("name: none\nkind: none\nlength: 10\n")
    (conf / "experiment" / "e1.yaml").write_text(
        "id: e1\ntitle: fake sweep\ntrials: 4\nfixed: {mechanism: fake}\n"
        "grid: {epsilon: [0.1, 0.2, 0.3]}\nzip: {delta: [0.01, 0.02], width: [3, 4]}\n")
    return conf


def fake_cfg(conf: Path, tmp_path: Path, **over):
    cfg = {
        "mechanism": load_option(conf, "mechanism", "fake"), "data": load_option(conf, "data", "none"),
        "profile": {"name": "paper", "results_dir": "unused", "overrides": {}},
        "experiment": load_option(conf, "experiment", "e1"),
        "epsilon": 0.3, "delta": 0.001, "width": 5, "depth": 3, "memory_kb": None, "noise": "numpy",
        "trials": 2, "seed": 7, "n_jobs": 1, "backend": "loky", "scheduler_address": None, "rerun": False,
        "data_dir": str(tmp_path / "data"), "results_dir": str(tmp_path / "results"),
    }
    cfg.update(over)
    return cfg


def run_output(tmp_path: Path) -> Path:
    """The one run folder under ``<tmp_path>/results/runs`` (where a run's tables, figures and report go)."""
    (folder,) = (tmp_path / "results" / "runs").iterdir()
    return folder


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    return df[[c for c in df.columns if not is_timing(c)]].reset_index(drop=True)


def test_grid_crosses_grid_with_zip_in_order():
    spec = {"grid": {"a": [1, 2]}, "zip": {"b": [3, 4], "c": [5, 6]}}
    assert grid_points(spec) == [
        [("a", 1), ("b", 3), ("c", 5)], [("a", 1), ("b", 4), ("c", 6)],
        [("a", 2), ("b", 3), ("c", 5)], [("a", 2), ("b", 4), ("c", 6)],
    ]


def test_zip_lists_of_unequal_length_are_rejected():
    with pytest.raises(ValueError, match="equal lengths"):
        grid_points({"id": "x", "zip": {"b": [1, 2], "c": [1]}})


def test_unknown_group_option_names_the_allowed_ones(tmp_path):
    conf = fake_conf(tmp_path)
    with pytest.raises(ValueError, match=r"mechanism=nope: unknown mechanism 'nope'; allowed: fake"):
        load_option(conf, "mechanism", "nope")


def test_unknown_top_level_key_in_an_experiment_is_rejected(tmp_path):
    conf = fake_conf(tmp_path)
    cfg = fake_cfg(conf, tmp_path)
    cfg["experiment"]["grid"] = {"epsilonn": [1.0]}
    with pytest.raises(ValueError, match="unknown config key 'epsilonn'"):
        run(cfg, conf)


def test_rows_are_identical_for_one_and_two_jobs_and_seeded_per_trial(tmp_path):
    conf = fake_conf(tmp_path)
    one = run(fake_cfg(conf, tmp_path / "a", n_jobs=1), conf)[0]
    two = run(fake_cfg(conf, tmp_path / "b", n_jobs=2), conf)[0]
    pd.testing.assert_frame_equal(comparable(one), comparable(two))
    assert len(one) == 3 * 2 * 4
    # same trial index -> same draw at every grid point (common random numbers); different trials differ
    first = one[one["epsilon"] == 0.1]
    assert first.groupby("trial")["value"].nunique().eq(1).all()
    assert first.drop_duplicates("trial")["value"].nunique() == 4


def test_rerun_computes_nothing_and_table_is_tidy(tmp_path, capsys):
    conf = fake_conf(tmp_path)
    cfg = fake_cfg(conf, tmp_path)
    run(cfg, conf)
    capsys.readouterr()
    df = run(cfg, conf)[0]
    assert "(0 computed" in capsys.readouterr().out
    table = pd.read_csv(run_output(tmp_path) / "tables" / "e1.csv")
    assert len(table) == len(df) == 24
    assert {"epsilon", "delta", "width", "mechanism.name", "trial", "seed", "value", "certified"} <= set(table.columns)
    assert table["key"].is_unique


def test_uncertified_rows_are_labelled(tmp_path, capsys):
    conf = fake_conf(tmp_path, uncertified=True)
    df = run(fake_cfg(conf, tmp_path), conf)[0]
    assert not df["certified"].any()
    assert "NOT privacy-certified" in capsys.readouterr().out


def test_store_cuts_a_partial_last_line_left_by_a_kill(tmp_path):
    path = tmp_path / "s.jsonl"
    path.with_suffix(".format").write_text(f"{STORE_FORMAT}\n")
    path.write_text(json.dumps({"key": "a", "v": 1}) + "\n" + '{"key": "b", "v"')
    store = ResultsStore(path)
    assert len(store) == 1 and "a" in store
    assert path.read_text().endswith("\n")


def test_store_names_file_and_line_of_a_corrupt_row(tmp_path):
    path = tmp_path / "s.jsonl"
    path.with_suffix(".format").write_text(f"{STORE_FORMAT}\n")
    path.write_text(json.dumps({"key": "a"}) + "\nnot json\n" + json.dumps({"key": "c"}) + "\n")
    with pytest.raises(StoreError, match=r"s\.jsonl is corrupt at line 2"):
        ResultsStore(path)


def test_kill_minus_nine_loses_no_finished_trial_and_resume_duplicates_nothing(tmp_path):
    conf = fake_conf(tmp_path, sleep=0.25)
    script = tmp_path / "sweep.py"
    script.write_text(
        "import sys, json\nfrom pathlib import Path\nfrom dpstream.harness.runner import run\n"
        "run(json.loads(sys.argv[1]), Path(sys.argv[2]))\n")
    cfg = fake_cfg(conf, tmp_path, n_jobs=2)
    store = tmp_path / "results" / "store" / "trials.jsonl"
    proc = subprocess.Popen([sys.executable, str(script), json.dumps(cfg), str(conf)], env=child_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and (not store.exists() or len(store.read_text().splitlines()) < 5):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = ResultsStore(store)
    assert 5 <= len(finished) < 24, "the kill should land mid-sweep"
    kept = {k: finished.get(k)["value"] for k in list(finished._rows)}
    df = run(fake_cfg(conf, tmp_path, n_jobs=2), conf)[0]
    assert len(df) == 24 and df["key"].is_unique
    assert len(store.read_text().splitlines()) == 24, "resume must append only the missing trials"
    assert all(df.set_index("key").loc[k, "value"] == v for k, v in kept.items())


EXPERIMENTS = options(CONF_DIR, "experiment")


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_runs_in_smoke_profile(name, compose_cfg, smoke_results):
    """Each experiments/*.yaml runs end to end at smoke scale (aggregates are checked to resolve)."""
    spec = OmegaConf.load(CONF_DIR / "experiment" / f"{name}.yaml")
    if "parts" in spec:
        assert all((CONF_DIR / "experiment" / f"{p}.yaml").exists() for p in spec.parts)
        return
    tmp_path = smoke_results
    cfg = compose_cfg([f"experiment={name}", "profile=smoke", f"results_dir={tmp_path}", "reproduction=true",
                       f"data_dir={ROOT / 'data'}", "n_jobs=2"])
    frames = run(cfg, CONF_DIR)
    assert all(len(df) > 0 for df in frames)
    assert (tmp_path / "tables" / f"{name}.csv").exists()
    if spec.get("plot"):
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 0


def test_dask_local_cluster_gives_the_same_rows_as_loky(tmp_path):
    """backend=dask on a two-worker local dask.distributed cluster reproduces the loky rows exactly."""
    conf = fake_conf(tmp_path)
    loky = run(fake_cfg(conf, tmp_path / "loky", n_jobs=2, backend="loky"), conf)[0]
    dask = run(fake_cfg(conf, tmp_path / "dask", n_jobs=2, backend="dask"), conf)[0]
    pd.testing.assert_frame_equal(comparable(loky), comparable(dask))


def test_unknown_backend_is_rejected(tmp_path):
    conf = fake_conf(tmp_path)
    with pytest.raises(ValueError, match="unknown backend 'spark'; allowed: dask, loky, sequential, threading"):
        run(fake_cfg(conf, tmp_path, backend="spark"), conf)


def test_aggregate_with_report_writes_markdown_and_html(tmp_path):
    conf = fake_conf(tmp_path)
    (conf / "experiment" / "everything.yaml").write_text("id: everything\nparts: [e1]\nreport: true\n")
    (conf / "experiment" / "e1.yaml").write_text(
        (conf / "experiment" / "e1.yaml").read_text() + "claims: _harness_fake:claims\npaper_claim: finite\n")
    cfg = fake_cfg(conf, tmp_path, experiment=load_option(conf, "experiment", "everything"))
    run(cfg, conf)
    report = (run_output(tmp_path) / "report.md").read_text()
    assert "## e1: fake sweep" in report
    assert "| values are finite | all rows have a value | 24 | **confirmed** |" in report
    assert "All rows of the claims tables: 1 confirmed, 0 not confirmed, 0 inconclusive, 0 n/a (1 claims)" in report
    assert "git commit" in report
    assert "<h2>e1: fake sweep</h2>" in (run_output(tmp_path) / "report.html").read_text()


def test_rerun_true_replaces_stored_rows(tmp_path):
    conf = fake_conf(tmp_path)
    store = tmp_path / "results" / "store" / "trials.jsonl"
    run(fake_cfg(conf, tmp_path), conf)
    lines = store.read_text().splitlines()
    first = json.loads(lines[0])
    patched = {**{k: v for k, v in first.items() if k != CHECKSUM}, "value": 123.0}  # an edit without a checksum
    store.write_text(json.dumps(patched) + "\n" + "\n".join(lines[1:]) + "\n")
    assert run(fake_cfg(conf, tmp_path), conf)[0].set_index("key").loc[first["key"], "value"] == 123.0
    df = run(fake_cfg(conf, tmp_path, rerun=True), conf)[0]
    assert df.set_index("key").loc[first["key"], "value"] == first["value"]


def test_store_round_trips_infinite_and_nan_metrics(tmp_path):
    path = tmp_path / "s.jsonl"
    ResultsStore(path).append({"key": "a", "x": float("inf"), "y": float("nan")})
    row = ResultsStore(path).get("a")
    assert row["x"] == float("inf") and row["y"] != row["y"]


def test_command_line_beats_fixed_and_may_not_collapse_a_sweep(tmp_path):
    conf = fake_conf(tmp_path)
    spec = load_option(conf, "experiment", "e1")
    spec["fixed"]["depth"] = 3
    cfg = fake_cfg(conf, tmp_path, experiment=spec, depth=7)
    df = run(cfg, conf, overrides=["experiment=e1", "depth=7", "n_jobs=1"])[0]
    assert (df["depth"] == 7).all()
    with pytest.raises(ValueError, match=r"epsilon is swept by experiment 'e1'; change the sweep with "
                                         r"experiment.grid.epsilon"):
        run(fake_cfg(conf, tmp_path, experiment=spec), conf, overrides=["epsilon=0.5"])


def test_forced_rerun_recomputes_a_key_shared_by_two_experiments_once(tmp_path, capsys):
    conf = fake_conf(tmp_path)
    (conf / "experiment" / "twice.yaml").write_text("id: twice\nparts: [e1, e1]\n")
    run(fake_cfg(conf, tmp_path), conf)
    capsys.readouterr()
    run(fake_cfg(conf, tmp_path, rerun=True, experiment=load_option(conf, "experiment", "twice")), conf)
    out = capsys.readouterr().out
    assert "24 trials (24 computed" in out and "24 trials (0 computed" in out
