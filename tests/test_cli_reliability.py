"""The command line answers like a tool: --version, Hydra grammar errors in one line, Ctrl-C of a sweep, the cache."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CONF_DIR, child_env, ctrl_c_as_at_a_terminal
from test_cli import COMMAND, children

import dpstream
from dpstream.cli import catalog, main, one_line
from dpstream.harness.runner import Terminated, stop_status


def descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        kids = children(todo.pop())
        out |= kids
        todo += list(kids)
    return out


def test_version_is_dpstreams(capsys):
    main(["--version"])
    assert capsys.readouterr().out == f"dpstream {dpstream.__version__}\n"


@pytest.mark.parametrize(("arg", "says"), [
    ("hydra.run.dir=[", "error: hydra.run.dir=[: no viable alternative at input '['"),
    ("epsilon=0.3)", "error: epsilon=0.3): must be a number"),
    ("~nokey", "error: Could not delete from config. 'nokey' does not exist."),
    ("+epsilon=1", "error: Could not append to config. An item is already at 'epsilon'."),
    ("trials=1,2", "error: Ambiguous value for argument 'trials=1,2'"),
    ("+unknown_key=1", "error: unknown_key=1: unknown config key; top-level keys: backend,"),
])
def test_hydra_grammar_errors_and_added_keys_are_one_line_with_status_2(arg, says, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([arg, "trials=1"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "results").exists()


def test_help_descriptions_are_whole():
    text = catalog()
    assert not [line for line in text.splitlines() if line.rstrip().endswith("...")]
    for group in ("experiment", "mechanism", "data"):
        for path in sorted((CONF_DIR / group).glob("*.yaml")):
            words = one_line(path).split()
            assert " ".join(words) in " ".join(text.split()), path.name  # wrapped, never cut


def test_cache_list_and_clear_show_and_remove_data_with_sizes(tmp_path, capsys):
    data = tmp_path / "data"
    (data / "zipf").mkdir(parents=True)
    (data / "zipf" / "a.npy").write_bytes(b"x" * 2500)
    (data / "words").mkdir()
    (data / "words" / "w.txt").write_bytes(b"y" * 10)
    with pytest.raises(SystemExit) as stop:
        main(["cache", "list", f"data_dir={data}"])
    out = capsys.readouterr().out
    assert stop.value.code == 0
    assert "2.5 kB" in out and str(data / "zipf") in out and "10 B" in out and "total" in out
    with pytest.raises(SystemExit) as stop:
        main(["cache", "clear", "nope", f"data_dir={data}"])
    assert stop.value.code == 2 and "no cached data named nope" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["cache", "clear", "zipf", f"data_dir={data}"])
    assert "removed 1 files (2.5 kB)" in capsys.readouterr().out
    assert not (data / "zipf").exists() and (data / "words" / "w.txt").exists()
    with pytest.raises(SystemExit):
        main(["cache", "clear", f"data_dir={data}"])
    assert not any(data.rglob("*.*"))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_ctrl_c_of_a_sweep_prints_one_line_exits_130_and_leaves_no_worker(tmp_path):
    (tmp_path / "conf" / "mechanism").mkdir(parents=True)
    (tmp_path / "conf" / "mechanism" / "slow.yaml").write_text(
        "name: slow\ntrial: _harness_fake:run_trial\nuses: [epsilon, delta]\ndata_kinds: [none]\nsleep: 1.0\n")
    results = tmp_path / "r"
    proc = subprocess.Popen([*COMMAND, "-m", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "mechanism=slow",
                             "data=none", "trials=30", "n_jobs=2", "epsilon=0.1,0.2", f"results_dir={results}"],
                            env=child_env(), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=ctrl_c_as_at_a_terminal)
    deadline = time.time() + 120
    store = list(results.rglob("trials.jsonl"))
    while time.time() < deadline and sum(len(p.read_text().splitlines()) for p in store) < 2:
        time.sleep(0.2)
        store = list(results.rglob("trials.jsonl"))
    spawned = descendants(proc.pid)
    assert spawned, "the sweep should have started its workers"
    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    err = proc.stderr.read().decode()
    while time.time() < deadline and any(Path(f"/proc/{p}").exists() for p in spawned):
        time.sleep(0.2)
    assert not [p for p in spawned if Path(f"/proc/{p}").exists()], "worker processes left behind"
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("stopped: finished trials are in the results store"), err
    assert "resumes" in lines[0] and "leaked" not in err and "Traceback" not in err


def test_the_entry_point_answers_version_in_a_subprocess(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dpstream", "--version"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120, env=child_env())
    assert out.returncode == 0 and out.stdout.strip() == f"dpstream {dpstream.__version__}"


def test_an_error_raised_while_a_stop_unwinds_ends_the_run_as_stopped(tmp_path, capsys, monkeypatch):
    (tmp_path / "conf" / "mechanism").mkdir(parents=True)
    (tmp_path / "conf" / "mechanism" / "broken.yaml").write_text(
        "name: broken\ntrial: _harness_fake:stopped_while_aborting\nuses: [epsilon, delta]\ndata_kinds: [none]\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "mechanism=broken", "data=none", "trials=1",
              "n_jobs=1", f"results_dir={tmp_path / 'r'}"])
    assert stop.value.code == 130
    assert "stopped: finished trials are in the results store" in capsys.readouterr().err


def test_stop_status_follows_the_exception_chain():
    def raised_during(first: BaseException) -> RuntimeError:
        try:
            try:
                raise first
            except BaseException:
                raise RuntimeError("while aborting")  # noqa: B904
        except RuntimeError as second:
            return second

    assert stop_status(KeyboardInterrupt()) == 130 and stop_status(Terminated(143)) == 143
    assert stop_status(raised_during(KeyboardInterrupt())) == 130
    assert stop_status(raised_during(Terminated(143))) == 143
    assert stop_status(raised_during(ValueError("bad"))) is None and stop_status(RuntimeError()) is None
