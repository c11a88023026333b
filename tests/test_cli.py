"""The ``dpstream`` command.

It runs from any directory, lists what it can run, gives one-line config errors with exit status 2, checks
mechanism/data against each other and experiment files against their schema, runs a sweep as one run with one table, and
leaves no orphan workers when a parallel run is stopped.

The command starts Python + numba each time, so only five tests start it as a process; the error lines are checked
in-process through ``dpstream.cli.main``, which is exactly what the console script calls.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import CONF_DIR, child_env, ctrl_c_as_at_a_terminal
from test_harness import fake_cfg, fake_conf

from dpstream.cli import explain, main, precheck, split_sweep
from dpstream.errors import ConfigError
from dpstream.harness.config import DATA_KINDS, check_experiment, data_kind, data_kinds
from dpstream.harness.results import results_dir
from dpstream.harness.runner import parallel_backend, plan, run
from dpstream.registry import load_option, options

SCRIPT = Path(sys.executable).with_name("dpstream")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "dpstream"]


def one_error_line(capsys, args: list[str]) -> str:
    """Run ``dpstream args`` in-process; it must exit with status 2 and print exactly one line on stderr."""
    with pytest.raises(SystemExit) as stop:
        main(args)
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_console_command_runs_from_any_directory_and_writes_there(tmp_path):
    out = subprocess.run([*COMMAND, "mechanism=cms", "profile=smoke", "trials=1", "data.length=4096"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    tables = list((tmp_path / "results" / "smoke" / "runs").glob("run-cms-zipf-*/tables/run-cms-*.csv"))
    assert len(tables) == 1 and len(pd.read_csv(tables[0])) == 1
    assert (tmp_path / "results" / "smoke" / "store" / "trials.jsonl").exists()
    assert f"table: {tables[0]}" in out.stdout


def test_python_m_dpstream_rejects_an_unknown_mechanism_in_one_line_with_status_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dpstream", "mechanism=nope"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 2
    assert out.stderr.startswith("error: mechanism=nope: unknown mechanism; allowed: "
                                 "cms, cms_heap, cms_ms, counter_board, cs, lazycms")
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_help_lists_every_experiment_mechanism_and_data_with_one_line(capsys):
    main(["--help"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    for group in ("experiment", "mechanism", "data"):
        section = out.split(f"({group}=<name>):\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert [line.split()[0] for line in section] == options(CONF_DIR, group)
        assert all(len(line.split()) > 2 for line in section), "every entry has a description"
    fig3a = next(line for line in lines if line.split()[:1] == ["fig3a"])
    assert "Figure 3(a): total update time vs memory" in fig3a
    qr_pmw = next(line for line in lines if line.split()[:1] == ["qr_pmw"])
    assert "[qr_database] Private multiplicative weights" in qr_pmw


@pytest.mark.parametrize(("args", "line"), [
    (["epsilon=-1"], "error: epsilon=-1: must be a finite number > 0"),
    (["delta=1.5"], "error: delta=1.5: must be in the open interval (0, 1)"),
    (["width=0"], "error: width=0: must be an integer >= 1"),
    (["data.skew=abc"], "error: data.skew=abc: must be a number (default 1.3)"),
    (["data.skew=-1"], "error: data.skew=-1: must be a number > 0"),  # raised by zipf_stream inside the trial
    (["data.skeww=2"], "error: data.skeww=2: unknown config key; keys of data: _target_, kind, length, name, skew"),
    (["epsilonn=1"], "error: epsilonn=1: unknown config key; top-level keys: backend, data, data_dir, delta"),
    (["experiment=fig9z"], "error: experiment=fig9z: unknown experiment; allowed: all, audit_power,"),
    (["mechanism=qr_pmw", "data=zipf"],
     "error: data=zipf: mechanism qr_pmw reads data of kind qr_database, but data=zipf is of kind stream; "
     "data that fit mechanism=qr_pmw: qr_fair, qr_mixture"),
    # data named: a mechanism named alone gets its natural data instead (test_every_mechanism_alone.py)
    (["mechanism=svt_tm", "data=zipf"], "error: data=zipf: mechanism svt_tm reads data of kind svt_atoms, but "
                                        "data=zipf is of kind stream; data that fit mechanism=svt_tm: svt_atoms"),
    (["mechanism=punctual_hh", "data=zipf"], "error: data.universe=1000000: mechanism punctual_hh needs "
                                             "data.universe <= mechanism.universe_size=1024 (data=zipf)"),
    (["mechanism=svt_theory", "data=none", "width=7"], "error: width=7: set (on the command line) but no mechanism"),
])
def test_config_error_is_one_line_naming_the_typed_key_and_exits_2(capsys, tmp_path, args, line):
    assert one_error_line(capsys, [*args, "profile=smoke", "trials=1", f"results_dir={tmp_path}"]).startswith(line)


def test_experiment_file_with_a_typo_key_is_rejected_naming_the_allowed_keys(capsys, tmp_path):
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "typo.yaml").write_text(
        "id: typo\ntitle: a typo\nfixed: {mechanism: cms}\ngrdi: {width: [10, 20]}\n")
    line = one_error_line(capsys, [f"hydra.searchpath=[file://{tmp_path}]", "experiment=typo", "profile=smoke",
                                   f"results_dir={tmp_path}"])
    assert line.startswith("error: experiment=typo: unknown key 'grdi' in experiment 'typo'; allowed keys: id, "
                           "title, paper_claim, trials, fixed, grid, zip,")


def test_profile_block_typo_and_non_list_sweep_are_rejected():
    with pytest.raises(ConfigError, match=r"unknown key 'profiles.smoke.gird'"):
        check_experiment({"id": "x", "profiles": {"smoke": {"gird": {"width": [1]}}}}, "x")
    with pytest.raises(ConfigError, match=r"grid.width must be a non-empty list"):
        check_experiment({"id": "x", "grid": {"width": 5}}, "x")
    check_experiment({"id": "x", "grid": {"width": [5]}, "profiles": {"smoke": {"trials": 1}}}, "x")


def test_full_traceback_only_with_hydra_full_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0, got -1"):
        main(["epsilon=-1", f"results_dir={tmp_path}"])


def test_every_mechanism_and_data_declares_what_it_reads_and_is():
    for name in options(CONF_DIR, "mechanism"):
        assert set(data_kinds(load_option(CONF_DIR, "mechanism", name))) <= set(DATA_KINDS), name
    assert {data_kind(load_option(CONF_DIR, "data", name)) for name in options(CONF_DIR, "data")} <= set(DATA_KINDS)


def test_every_experiment_passes_the_checks_at_paper_scale(compose_cfg):
    """``experiment=all`` expands every part (schema, keys, mechanism/data pairs) without running a trial.

    The smoke profile runs every experiment in test_harness.py.
    """
    planned = plan(compose_cfg(["experiment=all", "profile=paper"]), CONF_DIR)
    aggregates = {n for n in options(CONF_DIR, "experiment") if load_option(CONF_DIR, "experiment", n).get("parts")}
    assert {spec["id"] for spec, _ in planned.experiments} == set(options(CONF_DIR, "experiment")) - aggregates


def test_punctual_hh_fits_a_universe_within_its_size(compose_cfg):
    cfg = compose_cfg(["mechanism=punctual_hh", "data.universe=1024", "profile=smoke"])
    (_, params), = plan(cfg, CONF_DIR, ["mechanism=punctual_hh", "data.universe=1024"]).experiments
    assert params[0]["data"]["universe"] == 1024
    assert "kind" not in params[0]["data"] and "data_kinds" not in params[0]["mechanism"], "declarations are dropped"


def test_cfg_job_shows_the_expanded_config_with_the_profile_applied(capsys, tmp_path):
    main(["--cfg", "job", "experiment=fig3a", "profile=smoke", f"results_dir={tmp_path}"])
    out = capsys.readouterr().out
    assert out.startswith("# fig3a: 12 configurations x 2 trials (profile smoke")
    assert "length: 65536" in out and "memory_kb: 8" in out


def test_aggregate_prints_one_line_per_experiment_and_a_summary(tmp_path, capsys):
    conf = fake_conf(tmp_path)
    (conf / "experiment" / "both.yaml").write_text("id: both\nparts: [e1, e2]\n")
    (conf / "experiment" / "e2.yaml").write_text(
        "id: e2\ntitle: second\ntrials: 1\nfixed: {mechanism: fake}\ngrid: {epsilon: [1.0]}\n"
        "claims: _harness_fake:claims\n")
    run(fake_cfg(conf, tmp_path, experiment=load_option(conf, "experiment", "both")), conf)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("[1/2] e1: 24 trials (24 computed in ")
    assert lines[1].startswith("[2/2] e2: 1 trials (1 computed in ")
    assert lines[1].endswith("claims: 1 confirmed, 0 not confirmed, 0 inconclusive, 0 n/a (1 claims)")
    assert lines[3].startswith("2 experiments, 25 trials (25 computed) in ")
    assert lines[4] == "verdicts: 1 confirmed, 0 not confirmed, 0 inconclusive, 0 n/a (1 claims)"
    assert lines[5].startswith(f"tables: {tmp_path / 'results' / 'runs' / 'both-none-'}") and len(lines) == 6


@pytest.mark.slow
def test_a_sweep_is_one_run_with_one_table_in_100_columns_and_the_keys_of_single_runs(tmp_path):
    common = ["trials=1", "profile=smoke", "data.length=4096", f"results_dir={tmp_path / 'r'}"]
    out = subprocess.run([*COMMAND, "-m", "mechanism=cms,lazycms", "width=40,60", *common],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    shown = [line for line in lines if not line.startswith("table: ")]  # a path is as long as it is
    assert sum(line.startswith("== sweep-") for line in lines) == 1 and max(map(len, shown)) <= 100, out.stdout
    assert sum(line.startswith("table: ") for line in lines) == 1 and len(lines) <= 30, out.stdout
    (folder,) = (tmp_path / "r" / "runs").iterdir()
    (table,) = (folder / "tables").glob("sweep-*.csv")
    rows = pd.read_csv(table)
    assert sorted(zip(rows["mechanism.name"], rows["width"], strict=True)) == [("cms", 40), ("cms", 60),
                                                                              ("lazycms", 40), ("lazycms", 60)]
    assert "swept: mechanism: ['cms', 'lazycms']; width: [40, 60]" in (folder / "config.yaml").read_text()
    single = subprocess.run([*COMMAND, "mechanism=lazycms", "width=60", *common], capture_output=True, text=True,
                            cwd=tmp_path, timeout=600)
    assert "1 trials (0 computed" in single.stdout, "a point of the sweep has the store key of the single run"


def test_a_sweep_splits_into_one_run_and_its_grid():
    args, sweep = split_sweep(["-m", "mechanism=cms,lazycms", "epsilon=range(1,3)", "data=glob(zipf*)", "seed=4",
                               "experiment=fig3a,fig3b"])
    assert args == ["mechanism=cms", "epsilon=1", "data=zipf", "seed=4", "experiment=fig3a"]
    assert sweep == {"mechanism": ["cms", "lazycms"], "epsilon": [1, 2], "data": ["zipf"],
                     "experiment": ["fig3a", "fig3b"]}
    for arg in ("trials=1,2", "profile=smoke,paper", "n_jobs=1,2"):
        with pytest.raises(ConfigError, match="a run setting, not a parameter"):
            split_sweep(["-m", arg])


def test_a_bad_swept_value_is_named_not_the_first_value(capsys, tmp_path, monkeypatch):
    """Review 4, finding 6: ``epsilon=0.3,-1`` was reported as ``epsilon=0.3`` (the typed key's first value)."""
    line = one_error_line(capsys, ["-m", "mechanism=lazycms", "epsilon=0.3,-1", "profile=smoke", "trials=1",
                                   "data.length=1000", f"results_dir={tmp_path}"])
    assert line == "error: epsilon=-1: must be a finite number > 0"
    assert not list(tmp_path.rglob("*.jsonl"))  # refused before the first trial (the point 0.3 ran, then failed)
    for typed, swept, message, shown in [
            ("1", [1, 0], "epsilon must be a finite number > 0, got 0.0", "epsilon=0:"),
            ("0.001", [0.001, 2], "delta must be in the open interval (0, 1), got 2", "delta=2:"),
            ("1.2", [1.2, -1], "skew must be a number > 0, got -1.0", "data.skew=-1:"),
            ("0.3", [0.3, 0.5], "epsilon must be a finite number > 0, got 7.5", "epsilon=7.5:")]:  # a derived value
        key = shown.split("=")[0]
        monkeypatch.setattr("dpstream.cli.SWEEP", {key: swept})
        assert explain(ValueError(message), [(key, typed)]).startswith(f"error: {shown} must "), message
    monkeypatch.setattr("dpstream.cli.SWEEP", {})
    assert explain(ValueError("epsilon must be a finite number > 0, got -1.0"), [("epsilon", "-1")]) == \
        "error: epsilon=-1: must be a finite number > 0"  # as typed, not the validator's float


def test_a_sweep_of_a_key_the_experiment_sweeps_is_refused(compose_cfg):
    with pytest.raises(ConfigError, match="memory_kb is swept by experiment 'fig3a'"):
        plan(compose_cfg(["experiment=fig3a", "profile=smoke"]), CONF_DIR, [], {"memory_kb": [8, 16]})


def test_an_experiment_key_typed_on_the_command_line_wins_over_the_profile(compose_cfg):
    """fig3b's smoke block sweeps memory_kb [8, 24]; a grid the user types replaces it, the rest stays shrunk."""
    typed = ["experiment=fig3b", "profile=smoke", "experiment.grid.memory_kb=[16]"]
    (spec, params), = plan(compose_cfg(typed), CONF_DIR, typed).experiments
    assert spec["grid"]["memory_kb"] == [16]
    assert {p["memory_kb"] for p in params} == {16}
    assert {p["data"]["length"] for p in params} == {65536}, "the profile still shrinks the keys left alone"
    (spec, _), = plan(compose_cfg(typed[:2]), CONF_DIR, typed[:2]).experiments
    assert spec["grid"]["memory_kb"] == [8, 24]


def test_an_experiment_key_typed_with_an_aggregate_is_refused(compose_cfg):
    """The parts of fig3 load their own files: a grid typed for the aggregate would reach none of them."""
    typed = ["experiment=fig3", "profile=smoke", "+experiment.grid.memory_kb=[16]"]
    with pytest.raises(ConfigError, match=r"experiment.grid.memory_kb=\[16\]: experiment 'fig3' runs the parts"):
        plan(compose_cfg(typed), CONF_DIR, typed)


def children(pid: int) -> set[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stopping_a_parallel_run_leaves_no_worker_processes(tmp_path, signum):
    (tmp_path / "conf" / "mechanism").mkdir(parents=True)
    (tmp_path / "conf" / "mechanism" / "slow.yaml").write_text(
        "name: slow\ntrial: _harness_fake:run_trial\nuses: [epsilon, delta]\ndata_kinds: [none]\nsleep: 2.0\n")
    proc = subprocess.Popen([*COMMAND, f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "mechanism=slow",
                             "data=none", "trials=20", "n_jobs=2", f"results_dir={tmp_path / 'r'}"],
                            env=child_env(), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=ctrl_c_as_at_a_terminal)
    deadline = time.time() + 60
    while time.time() < deadline and len(children(proc.pid)) < 3:  # two loky workers and a resource tracker
        time.sleep(0.1)
    spawned = children(proc.pid)
    assert len(spawned) >= 3, "the run should have started its workers"
    os.kill(proc.pid, signum)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    err = proc.communicate()[1].decode()
    assert proc.returncode in (128 + signum, -signum), err[-3000:]
    # resource trackers leave when their pipe closes; workers are killed by joblib's abort
    while time.time() < deadline and any(Path(f"/proc/{p}").exists() for p in spawned):
        time.sleep(0.1)
    assert not [p for p in spawned if Path(f"/proc/{p}").exists()], "orphan worker processes left behind"
    assert "stopped: finished trials are in the results store" in err


def test_results_are_read_from_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DPSTREAM_RESULTS", raising=False)
    assert results_dir().resolve() == tmp_path / "results"


def test_dask_and_jupytext_are_imported_only_when_used():
    code = ("import sys, dpstream.cli, dpstream.harness.runner, dpstream.harness.results\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed', 'jupytext'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr[-1000:]


def test_missing_dask_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(ConfigError, match=r"backend=dask: needs dask.distributed, not installed: pip install "
                                          r"'dpstream\[dask\]'"):
        with parallel_backend("dask", 2, None):
            pass


def test_hydra_sweep_syntax_passes_the_pre_check():
    precheck(["-m", "experiment=glob(fig3*)", "epsilon=range(1,3)", "experiment.trials=1", "width=40,60",
              "seed=${trials}", "hydra.job.chdir=false"])
    with pytest.raises(ConfigError, match="extra=1: unknown config key"):  # an added key no config reads
        precheck(["-m", "+extra=1"])
    with pytest.raises(ConfigError, match="width=abc: must be a number"):
        precheck(["-m", "width=40,abc"])


def test_claims_of_an_experiment_with_an_added_key_are_judged_at_each_of_its_values(monkeypatch):
    from dpstream.claims import Claim
    from dpstream.harness import runner

    def decide(df, spec):
        assert df["trial"].is_unique, "a rule sees its own grid: one row per trial"
        return [Claim("x grows", "rule", f"{len(df)} rows", "confirmed")]

    monkeypatch.setattr(runner, "import_object", lambda path: decide)
    df = pd.DataFrame({"seed": [1, 1, 2, 2], "trial": [0, 1, 0, 1]})
    assert [c.claim for c in runner.judge({"claims": "m:f"}, df, ("seed",))] == ["[seed=1] x grows", "[seed=2] x grows"]
    with pytest.raises(AssertionError, match="one row per trial"):
        runner.judge({"claims": "m:f"}, df)
