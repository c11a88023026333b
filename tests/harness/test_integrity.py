"""Results nothing corrupts: where runs write, sweeps kept apart, whole rows, checksums, no orphans, no path escapes.

Each test reproduces one finding of the hostile-tester report (issue 33, findings 6 to 11) and checks it is fixed.
"""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import matplotlib.figure
import pandas as pd
import pytest
from conftest import CONF_DIR, ROOT, child_env
from test_cli import COMMAND, one_error_line
from test_cli_reliability import descendants
from test_harness import fake_cfg, fake_conf

from dpstream.cli import main
from dpstream.errors import ConfigError
from dpstream.harness import store as store_module
from dpstream.harness.layout import RUNS, check_path_name, data_label, inside, panel_title
from dpstream.harness.runner import plan, run
from dpstream.harness.store import CHECKSUM, STORE_FORMAT, ResultsStore, StoreError

# ---- finding 6: a user's run never writes the committed reproduction ----------------------------------------------


def committed_copy(results: Path) -> dict[Path, bytes]:
    """A results folder holding a stand-in of the committed fig3b files; returns their bytes."""
    files = {results / "tables" / "fig3b.csv": b"committed table\n",
             results / "tables" / "fig3b.claims.csv": b"committed claims\n",
             results / "figures" / "fig3b.png": b"committed figure"}
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return files


def test_a_panel_on_ones_own_data_leaves_the_committed_files_and_names_its_file(tmp_path, compose_cfg, monkeypatch,
                                                                                capsys):
    """``dpstream experiment=fig3b data=items data.path=my_items.txt`` rewrote results/figures/fig3b.png (finding 6)."""
    results = tmp_path / "results"
    committed = committed_copy(results)
    items = tmp_path / "my_items.txt"
    items.write_text("\n".join(f"w{i % 37}" for i in range(3000)) + "\n")
    titles = []
    original = matplotlib.figure.Figure.suptitle
    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle",
                        lambda self, t, **kw: titles.append(t) or original(self, t, **kw))
    overrides = ["data=items", f"data.path={items}"]  # the command line beats the panel's own data
    cfg = compose_cfg(["experiment=fig3b", *overrides, "profile=smoke", f"results_dir={results}",
                       f"data_dir={tmp_path / 'data'}", "experiment.grid.mechanism=[punctualcms]",
                       "experiment.profiles.smoke.grid.memory_kb=[8]", "experiment.profiles.smoke.trials=1"])
    run(cfg, CONF_DIR, overrides)
    assert {p: p.read_bytes() for p in committed} == committed, "the committed files are untouched"
    (folder,) = (results / RUNS).iterdir()
    assert folder.name.startswith("fig3b-my_items-")
    assert (folder / "tables" / "fig3b.csv").exists() and (folder / "figures" / "fig3b.png").exists()
    assert "data: my_items.txt" in titles[-1] and "skew" not in titles[-1]
    (heading,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("== fig3b")]
    assert "data: my_items.txt" in heading and "skew" not in heading, "the console names the file as the figure does"
    assert sorted(p.name for p in results.iterdir()) == \
        ["figures", "privacy_ledger.jsonl", RUNS, "store", "tables"]  # the ledger is shared by every run's folder


def test_runs_with_other_parameters_get_other_folders_and_the_same_command_the_same(tmp_path):
    conf = fake_conf(tmp_path)
    for seed in (7, 7, 8):
        run(fake_cfg(conf, tmp_path, seed=seed), conf)
    folders = sorted((tmp_path / "results" / RUNS).iterdir())
    assert len(folders) == 2 and all(f.name.startswith("e1-none-") for f in folders)
    assert not (tmp_path / "results" / "tables").exists()


def test_reproduction_true_writes_the_committed_layout_and_refuses_a_users_file(tmp_path, compose_cfg):
    conf = fake_conf(tmp_path)
    run(fake_cfg(conf, tmp_path, reproduction=True), conf)
    assert (tmp_path / "results" / "tables" / "e1.csv").exists() and not (tmp_path / "results" / RUNS).exists()
    items = tmp_path / "items.txt"
    items.write_text("a\nb\n")
    cfg = compose_cfg(["mechanism=cms", "data=items", f"data.path={items}", "reproduction=true",
                       f"results_dir={tmp_path / 'r'}"])
    with pytest.raises(ConfigError, match=r"reproduction=true: writes the committed reproduction, which is not made "
                                          r"from data.path=.*items.txt"):
        plan(cfg, CONF_DIR)


def test_panel_title_drops_the_synthetic_settings_a_file_does_not_have():
    spec = {"title": "Figure 3(b): ARE vs memory, eps=0.3, skew=1.3", "fixed": {"data.skew": 1.3}}
    assert panel_title(spec, [{"data": {"name": "zipf", "skew": 1.3}}]) == spec["title"]
    assert panel_title(spec, [{"data": {"name": "items", "path": "/d/w.txt"}}]) == \
        "Figure 3(b): ARE vs memory, eps=0.3; data: w.txt"
    assert data_label({"name": "items", "path": "/x/my words (2).csv"}) == "my_words_2"


def test_git_ignores_the_run_folders():
    """Run folders never show up as untracked files beside the committed results."""
    for path in ("results/runs/fig3b-my_items-0123abcd/tables/fig3b.csv",
                 "results/runs/sweep-zipf-0123abcd/config.yaml",
                 "results/smoke/runs/run-cms-zipf-0123abcd/figures/x.png"):
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0, path


# ---- finding 7: two sweeps keep their own folders and tables -----------------------------------------------------


def fake_mechanism(tmp_path: Path, sleep: float = 0.0) -> str:
    """``mechanism=fake`` (``_harness_fake:run_trial``, ``sleep`` s a trial) in a config dir; returns its searchpath."""
    (tmp_path / "conf" / "mechanism").mkdir(parents=True)
    (tmp_path / "conf" / "mechanism" / "fake.yaml").write_text(
        f"name: fake\ntrial: _harness_fake:run_trial\nuses: [epsilon, delta]\ndata_kinds: [none]\nsleep: {sleep}\n")
    return f"hydra.searchpath=[file://{tmp_path / 'conf'}]"


def test_two_sweeps_get_their_own_folders_and_tables(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["dpstream"])
    searchpath = fake_mechanism(tmp_path)
    results = tmp_path / "r"
    for epsilons in ("0.1,0.2", "0.5,0.6,0.7"):
        main(["-m", searchpath, "mechanism=fake", "data=none", "trials=2", f"epsilon={epsilons}",
              f"results_dir={results}"])
    tables = sorted((results / RUNS).glob("sweep-*/tables/sweep-*.csv"), key=lambda p: p.stat().st_mtime)
    assert [sorted(set(pd.read_csv(t)["epsilon"])) for t in tables] == [[0.1, 0.2], [0.5, 0.6, 0.7]]
    assert [len(pd.read_csv(t)) for t in tables] == [4, 6]
    assert not (results / "tables").exists()
    assert sum(line.startswith("== sweep-") for line in capsys.readouterr().out.splitlines()) == 2


# ---- finding 8: whole lines or nothing --------------------------------------------------------------------------


def new_store(tmp_path: Path) -> ResultsStore:
    store = ResultsStore(tmp_path / "s.jsonl")
    store.append({"key": "a", "v": 1})
    return store


def test_a_short_write_is_continued_until_the_line_is_whole(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    real = os.write
    monkeypatch.setattr(store_module.os, "write", lambda fd, data: real(fd, bytes(data[:7])))  # 7 bytes a call
    store.append({"key": "b", "v": 2.5})
    monkeypatch.undo()
    lines = store.path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["v"] == 2.5
    assert ResultsStore(store.path).get("b") == {"key": "b", "v": 2.5}


def test_a_full_disk_leaves_the_store_as_it_was_and_the_next_append_works(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    before = store.path.read_bytes()
    real = os.write

    def full_disk(fd, data):
        if len(data) > 10:
            return real(fd, bytes(data[:10]))  # a short write, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_module.os, "write", full_disk)
    with pytest.raises(StoreError, match=r"s\.jsonl: trial b could not be written \(No space left on device\); the 1 "
                                         r"rows stored before it are intact"):
        store.append({"key": "b", "v": 2})
    monkeypatch.undo()
    assert store.path.read_bytes() == before and "b" not in store
    store.append({"key": "c", "v": 3})
    assert sorted(ResultsStore(store.path)._rows) == ["a", "c"]


def test_a_partial_last_line_is_cut_off_and_said(tmp_path, capsys):
    store = new_store(tmp_path)
    with open(store.path, "ab") as fh:
        fh.write(b'{"key": "b", "v')
    reopened = ResultsStore(store.path)
    assert list(reopened._rows) == ["a"] and store.path.read_bytes().endswith(b"}\n")
    assert "cut off a partial last line (15 bytes of an interrupted write)" in capsys.readouterr().err


def test_an_append_after_a_crashed_write_cuts_the_partial_line_first(tmp_path, capsys):
    """A store opened before another process crashed mid-line: the next append must not glue onto the fragment."""
    store = new_store(tmp_path)
    with open(store.path, "ab") as fh:
        fh.write(b'{"key": "x", "v')
    store.append({"key": "b", "v": 2})
    assert sorted(ResultsStore(store.path)._rows) == ["a", "b"]
    assert "cut off a partial last line (15 bytes" in capsys.readouterr().err


# ---- finding 10: a checksum catches a changed row ---------------------------------------------------------------


def test_a_hand_edited_row_is_refused_naming_file_and_line(tmp_path):
    store = new_store(tmp_path)
    store.append({"key": "b", "are_top15": 0.25})
    lines = store.path.read_text().splitlines()
    assert CHECKSUM in json.loads(lines[1]) and CHECKSUM not in ResultsStore(store.path).get("b")
    store.path.write_text(lines[0] + "\n" + lines[1].replace("0.25", "-12345") + "\n")
    with pytest.raises(StoreError) as refused:
        ResultsStore(store.path)
    message = str(refused.value)
    assert message.startswith(f"results file {store.path} line 2: the row does not match its checksum")
    assert "\n" not in message


def test_rows_without_a_checksum_load_as_the_committed_stores_do(tmp_path):
    committed = ROOT / "results" / "verify" / "paper" / "seed_0" / "store"
    shutil.copytree(committed, tmp_path / "store")
    store = ResultsStore(tmp_path / "store" / "trials.jsonl")
    lines = (committed / "trials.jsonl").read_bytes().count(b"\n")
    assert len(store) > 0 and lines >= len(store)
    assert (tmp_path / "store" / "trials.jsonl").read_bytes() == (committed / "trials.jsonl").read_bytes()
    plain = tmp_path / "old.jsonl"
    plain.with_suffix(".format").write_text(f"{STORE_FORMAT}\n")
    plain.write_text(json.dumps({"key": "a", "v": 1}) + "\n")
    assert ResultsStore(plain).get("a") == {"key": "a", "v": 1}


# ---- finding 9: a killed sweep takes its workers with it -------------------------------------------------------


def stored_lines(results: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in results.rglob("trials.jsonl"))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_kill_minus_nine_of_a_sweep_leaves_no_worker_and_no_more_rows(tmp_path):
    results = tmp_path / "r"
    sweep = ["-m", fake_mechanism(tmp_path, sleep=0.3), "mechanism=fake", "data=none", "trials=60", "n_jobs=2",
             "epsilon=0.1,0.2", f"results_dir={results}"]
    proc = subprocess.Popen([*COMMAND, *sweep], env=child_env(), cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and stored_lines(results) < 4:
        time.sleep(0.1)
    workers = descendants(proc.pid)  # the run's loky workers, each computing trials
    assert stored_lines(results) >= 4 and len(workers) >= 2, "the sweep should be running its jobs"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    gone = time.time() + 5
    while time.time() < gone and any(Path(f"/proc/{p}").exists() for p in workers):
        time.sleep(0.05)
    alive = [p for p in workers if Path(f"/proc/{p}").exists()]
    assert not alive, f"orphan workers {alive} outlive the killed sweep"
    rows = stored_lines(results)
    time.sleep(3)
    assert stored_lines(results) == rows, "no row is written after the kill"


LIFELINE_CHILD = """
import os, sys, time
import dpstream.harness.lifeline as lifeline
if sys.argv[1] == "poll":
    lifeline._parent_death_signal = lambda: False  # where prctl is missing: the watching thread
lifeline.die_with(os.getppid())
print("armed", flush=True)
time.sleep(60)
"""
MIDDLE = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE, text=True)
assert child.stdout.readline() == "armed\\n"
print(child.pid, flush=True)
child.wait()
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
@pytest.mark.parametrize("way", ["prctl", "poll"])
def test_a_worker_armed_with_die_with_ends_when_its_parent_is_killed(way):
    """A loky worker of a run's trials arms this lifeline (``runner._keyed``)."""
    middle = subprocess.Popen([sys.executable, "-c", MIDDLE, LIFELINE_CHILD, way], stdout=subprocess.PIPE, text=True,
                              env=child_env())
    child = int(middle.stdout.readline())
    assert Path(f"/proc/{child}").exists()
    os.kill(middle.pid, signal.SIGKILL)
    middle.wait()
    gone = time.time() + 5
    while time.time() < gone and running(child):
        time.sleep(0.02)
    alive = running(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive, "the child outlived its killed parent"


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# ---- finding 11: names used as paths --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", "a\\b", ""])
def test_a_name_with_a_separator_or_dotdot_is_refused(name):
    with pytest.raises(ConfigError, match="may hold no path separator"):
        check_path_name(name, "mechanism.name")
    assert check_path_name("lazycms_v2.1", "mechanism.name") == "lazycms_v2.1"


def test_nothing_is_written_outside_results_dir(tmp_path):
    with pytest.raises(ConfigError, match="would be written outside it; refused"):
        inside(tmp_path / "r" / ".." / "x.csv", tmp_path / "r")


def test_mechanism_name_with_dotdot_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = one_error_line(capsys, ["mechanism=cms", "mechanism.name=../../x", "trials=1", "data.length=4096",
                                  f"results_dir={tmp_path / 'a' / 'b' / 'r'}"])
    assert err.startswith("error: mechanism.name=../../x: names a file, so it may hold no path separator")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.suffix in (".csv", ".png")) == []


def test_experiment_id_with_dotdot_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "escape.yaml").write_text(
        "id: ../../x\ntitle: escape\ntrials: 1\nfixed: {mechanism: cms, data.length: 4096}\ngrid: {width: [40]}\n")
    err = one_error_line(capsys, [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "experiment=escape",
                                  f"results_dir={tmp_path / 'a' / 'b' / 'r'}"])
    assert err.startswith("error: experiment.id=../../x: names a file, so it may hold no path separator")
    assert not (tmp_path / "a" / "x.csv").exists() and not list(tmp_path.rglob("x.csv"))
