"""Every bad input of issue 33 (finding 15) ends in one line naming it and exit status 2, with nothing finished lost.

Command-line cases run in-process through ``dpstream.cli.main``; API cases raise one ``ValueError`` naming the
argument. Sizes are checked before allocation against a memory fixed by the test (8 GB), so the limits printed do not
depend on the machine.
"""

from __future__ import annotations

import errno
import gzip
import os
import struct
from pathlib import Path

import pytest

from dpstream import validation
from dpstream.cli import explain, main
from dpstream.data.items import items_stream
from dpstream.errors import bad_input
from dpstream.harness.store import ResultsStore, StoreError
from dpstream.sketches import LazyCMS, PunctualCMS

MEMORY = 8_000_000_000


@pytest.fixture
def memory_8gb(tmp_path, monkeypatch):
    """This process may use 8 GB (a container limit), whatever the machine has."""
    limit = tmp_path / "memory.max"
    limit.write_text(f"{MEMORY}\n")
    monkeypatch.setattr(validation, "CGROUP_LIMITS", (str(limit),))
    real = os.sysconf
    machine = {"SC_PHYS_PAGES": 10**7, "SC_PAGE_SIZE": 4096}  # 41 GB of RAM
    monkeypatch.setattr(validation.os, "sysconf", lambda name: machine.get(name) or real(name))
    assert validation.physical_memory() == MEMORY


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    """(exit status, stderr) of ``dpstream args`` run in this process."""
    try:
        main(args)
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else 1
    return status, capsys.readouterr().err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# each typed value, and a phrase of its one line; before: a traceback (OverflowError, TypeError, KeyError,
# NotADirectoryError, FileNotFoundError, MemoryError) or, for ++foo=1, a run that ignored the key
BEFORE_THE_RUN = [
    (["width=99999999999999999999"], "error: width=99999999999999999999: must be an integer <= 4611686018427387904"),
    (["memory_kb=abc"], "error: memory_kb=abc: must be a number (default null)"),
    (["~epsilon"], "error: ~epsilon: a key of the config cannot be deleted"),
    (["results_dir=/dev/null"], "error: results_dir=/dev/null: must be a folder, but /dev/null is a file"),
    (["results_dir=/dev/null/x"], "error: results_dir=/dev/null/x: must be a folder, but /dev/null is a file"),
    (["results_dir=/proc/self"], "error: results_dir=/proc/self: cannot write in /proc/self"),
    (["data_dir=/dev/null"], "error: data_dir=/dev/null: must be a folder, but /dev/null is a file"),
    (["++foo=1"], "error: foo=1: unknown config key"),
    (["++mechanism.foo=1"], "error: mechanism.foo=1: unknown config key"),
    (["trials=100000000"], "error: trials=100000000: must be at most"),
    (["-m", "results_dir=/dev/null", "epsilon=0.3,1"], "error: results_dir=/dev/null: must be a folder"),
]


@pytest.mark.parametrize(("args", "says"), BEFORE_THE_RUN)
def test_bad_values_are_one_line_before_the_run(args, says, tmp_path, monkeypatch, capsys, memory_8gb):
    monkeypatch.chdir(tmp_path)
    status, err = run_cli([*args, "profile=smoke"], capsys)
    assert status == 2 and one_error_line(err).startswith(says), err


def test_a_lazyhh_whose_delta_tilde_reaches_one_is_refused_naming_epsilon(tmp_path, monkeypatch, capsys, memory_8gb):
    """Epsilon 10 at delta 1e-3: LazyHH's delta~ is 44.06, no guarantee, so the run is refused (not run uncertified)."""
    monkeypatch.chdir(tmp_path)
    status, err = run_cli(["mechanism=lazyhh", "epsilon=10", "profile=smoke"], capsys)
    assert status == 2 and one_error_line(err).startswith("error: epsilon=10: must be below 6.212 at delta=0.001"), err


def test_too_many_trials_are_refused_with_the_estimate_before_building_them(tmp_path, monkeypatch, capsys,
                                                                             memory_8gb):
    monkeypatch.chdir(tmp_path)
    status, err = run_cli(["trials=100000000", "--cfg", "job"], capsys)
    line = one_error_line(err)
    assert status == 2 and "1 configuration(s) x 100000000 trials would need ~" in line
    assert "GB of trial configs and rows, more than its 8.0 GB of memory" in line
    most = int(line.split("must be at most ")[1].split()[0])
    assert 100_000 < most < 100_000_000
    status, err = run_cli(["experiment=fig3b", "experiment.trials=1000000", "--cfg", "job"], capsys)
    assert status == 2 and "36 configuration(s) x 1000000 trials" in one_error_line(err)  # a sweep multiplies them


def test_a_results_folder_that_cannot_be_written_is_one_line(tmp_path, monkeypatch, capsys):
    # as root a chmod 555 folder is still writable, so the refusal of the file system is simulated
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("dpstream.cli.tempfile.mkdtemp", refuse)
    status, err = run_cli([f"results_dir={tmp_path / 'ro' / 'results'}"], capsys)
    assert status == 2
    assert one_error_line(err) == (f"error: results_dir={tmp_path / 'ro' / 'results'}: cannot write in {tmp_path} "
                                   "(Permission denied); choose a folder you can write to")


@pytest.fixture
def fake_mechanism(tmp_path):
    """A mechanism whose trial is a seeded draw (tests/_harness_fake.py), from a search-path config dir."""
    conf = tmp_path / "conf" / "mechanism"
    conf.mkdir(parents=True)
    (conf / "fake.yaml").write_text("name: fake\ntrial: _harness_fake:run_trial\nuses: [epsilon, delta]\n"
                                    "data_kinds: [none]\nprivate: false\n")
    return [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "mechanism=fake", "data=none", "n_jobs=1"]


def store_bytes(results: Path) -> bytes:
    return (results / "store" / "trials.jsonl").read_bytes()


def test_a_full_disk_during_the_run_is_one_line_and_loses_no_finished_trial(tmp_path, monkeypatch, capsys,
                                                                            fake_mechanism):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    assert run_cli([*fake_mechanism, "trials=2", f"results_dir={results}"], capsys)[0] == 0
    before = store_bytes(results)
    assert before.count(b"\n") == 2

    def full(self, row, replace=False):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))

    monkeypatch.setattr(ResultsStore, "append", full)
    status, err = run_cli([*fake_mechanism, "trials=4", f"results_dir={results}"], capsys)
    assert status == 2
    assert one_error_line(err) == (f"error: {results / 'store' / 'trials.jsonl'}: No space left on device (the disk "
                                   "is full: free some space and run the same command again (finished trials are "
                                   "kept))")
    assert store_bytes(results) == before


def test_a_store_that_is_a_folder_or_holds_a_bad_byte_is_one_line_naming_file_and_line(tmp_path, monkeypatch, capsys,
                                                                                      fake_mechanism):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    (results / "store" / "trials.jsonl").mkdir(parents=True)
    status, err = run_cli([*fake_mechanism, "trials=1", f"results_dir={results}"], capsys)
    assert status == 2 and "trials.jsonl is a folder, not a file" in one_error_line(err)
    (results / "store" / "trials.jsonl").rmdir()
    assert run_cli([*fake_mechanism, "trials=2", f"results_dir={results}"], capsys)[0] == 0
    good = store_bytes(results)
    (results / "store" / "trials.jsonl").write_bytes(good + b'{"key": "\xff\xfe"}\n')
    status, err = run_cli([*fake_mechanism, "trials=2", f"results_dir={results}"], capsys)
    line = one_error_line(err)
    assert status == 2 and f"results file {results / 'store' / 'trials.jsonl'} is corrupt at line 3" in line
    assert "move the file away or delete that line" in line
    assert store_bytes(results) == good + b'{"key": "\xff\xfe"}\n'  # nothing cut or rewritten


@pytest.mark.long
def test_a_store_error_in_a_sweep_is_one_line(tmp_path, monkeypatch, capfd, fake_mechanism):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    (results / "store").mkdir(parents=True)
    (results / "store" / "trials.format").write_text("2\n")
    (results / "store" / "trials.jsonl").write_bytes(b'{"nokey": 1}\n')
    status, err = run_cli(["-m", *fake_mechanism, "trials=1", "epsilon=0.5,0.6", f"results_dir={results}"], capfd)
    assert status == 2 and "is corrupt at line 1" in one_error_line(err)  # once: a sweep is one run


DURING_THE_TRIAL = [
    (["data.length=10000000000"], "error: data.length=10000000000: must be at most 333333333 on this machine: "
                                  "10000000000 stream items would need ~240.0 GB, more than its 8.0 GB of memory"),
    (["release_times=1000000000"], "error: release_times=1000000000: must be at most 250000000 on this machine: "
                                   "1000000000 release times would need ~32.0 GB, more than its 8.0 GB of memory"),
]


@pytest.mark.parametrize(("args", "says"), DURING_THE_TRIAL)
def test_sizes_read_by_the_trial_are_checked_before_allocating(args, says, tmp_path, monkeypatch, capsys,
                                                              memory_8gb):
    # before: numpy's MemoryError for 74.5 GiB, or 7.45 GiB of release times, inside a traceback
    monkeypatch.chdir(tmp_path)
    status, err = run_cli([*args, "profile=smoke", "trials=1", "n_jobs=1"], capsys)
    assert status == 2 and one_error_line(err) == says


@pytest.mark.parametrize(("cls", "kwargs", "says"), [
    (LazyCMS, {"width": 10**20}, "width must be an integer <= 4611686018427387904 (2^62), got 100000000000000000000"),
    (PunctualCMS, {"width": 10**20}, "width must be an integer <= 4611686018427387904"),
    (LazyCMS, {"horizon": 2**70}, "horizon must be an integer <= 4611686018427387904 (2^62), got 11805916207174113"),
    (LazyCMS, {"width": 2**63}, "width must be an integer <= 4611686018427387904 (2^62), got 9223372036854775808"),
    (LazyCMS, {"node_noise": None}, "unknown node_noise None; allowed: stored, derived, discrete_secure"),
    (PunctualCMS, {"node_noise": None}, "unknown node_noise None; allowed: stored, derived, discrete_secure"),
])
def test_the_api_names_the_argument_in_one_valueerror(cls, kwargs, says):
    # before: OverflowError (Python int too large to convert to C long), AttributeError ('NoneType' object has no
    # attribute 'startswith'), and "horizon must be an integer >= 1, got 0" for width=2**63
    with pytest.raises(ValueError) as err:
        cls(**{"width": 16, "depth": 3, "epsilon": 1.0, "delta": 1e-3, "horizon": 4096, "seed": 1, **kwargs})
    assert str(err.value).startswith(says) and "\n" not in str(err.value)


def pcap_bytes() -> bytes:
    return struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + bytes(16)


@pytest.mark.parametrize(("name", "content", "says"), [
    ("items.txt", lambda: gzip.compress(b"a\nb\n"), "items.txt is gzip-compressed: decompress it first (gunzip"),
    ("items.csv", lambda: gzip.compress(b"item\na\nb\n"), "items.csv is gzip-compressed"),
    ("items.txt.gz", lambda: gzip.compress(b"a\nb\n"), "items.txt.gz is gzip-compressed"),
    ("capture.npy", pcap_bytes, "capture.npy is not a .npy file (a pcap file)"),
    ("capture.txt", pcap_bytes, "capture.txt is a pcap file, not txt text"),
])
def test_a_file_of_another_kind_is_named_as_such(tmp_path, name, content, says):
    # before: a gzip .csv was "empty", a pcap .npy got numpy's message about pickled data
    path = tmp_path / name
    path.write_bytes(content())
    with pytest.raises(ValueError) as err:
        items_stream(str(path), cache_dir=tmp_path / "cache")
    assert says in str(err.value) and "pickle" not in str(err.value)


def test_a_byte_order_mark_is_not_part_of_the_first_item(tmp_path):
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_text("apple\nbanana\napple\n")
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a = items_stream(str(plain), cache_dir=tmp_path / "cache", seed=0)
    b = items_stream(str(marked), cache_dir=tmp_path / "c", seed=0)  # one seed: one key of the item hash
    assert b.items.tolist() == a.items.tolist() and sorted(b.labels.values()) == ["apple", "banana"]


def test_errors_behind_errors_are_found_and_said_in_one_line():
    try:
        try:
            raise StoreError("results file x is corrupt at line 3: ...")
        except StoreError as exc:
            raise RuntimeError("a job failed") from exc  # as a launcher wraps a job's error
    except RuntimeError as wrapped:
        assert isinstance(bad_input(wrapped), StoreError)
        assert explain(wrapped, []) == "error: results file x is corrupt at line 3: ..."
    try:
        try:
            raise ValueError("bad")
        except ValueError:
            raise KeyError("a defect while handling it")  # noqa: B904 (only __context__: stays a defect)
    except KeyError as defect:
        assert bad_input(defect) is None
    assert explain(OverflowError("Python int too large to convert to C long"), []) == \
        "error: a number too large for 64-bit arithmetic (Python int too large to convert to C long); choose " \
        "smaller sizes"
    assert explain(MemoryError(), []).startswith("error: out of memory; choose smaller sizes")


def test_a_swept_dotted_key_is_changed_by_the_override_its_error_suggests(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    base = ["experiment=counters_empirical", "profile=smoke", f"results_dir={tmp_path / 'results'}"]
    status, err = run_cli([*base, "data.length=1024"], capsys)
    line = one_error_line(err)
    assert status == 2 and "change the sweep with 'experiment.grid={data.length:[...]}' instead" in line
    status, err = run_cli([*base, "mechanism.counter=sqrt"], capsys)  # a key of the experiment's zip
    assert status == 2 and "'experiment.zip={mechanism.counter:[...]}'" in one_error_line(err)
    # the Hydra path to the dotted key is refused, naming the form that reaches it
    status, err = run_cli([*base, "experiment.grid.data.length=[1024,4096]"], capsys)
    assert status == 2 and "set it with 'experiment.grid={data.length:[1024,4096]}'" in one_error_line(err)
    # the suggested form sets the sweep, merged into the experiment's grid
    main([*base[:1], *base[2:], "experiment.grid={data.length:[1024,4096]}", "--cfg", "job"])
    swept = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("# swept: "))
    assert swept.startswith("# swept: data.length: [1024, 4096]; mechanism.counter: ")


def test_the_counter_board_on_a_file_names_the_data_it_needs(tmp_path, monkeypatch, capsys):
    # before: KeyError 'length' in a traceback from the trial
    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.txt").write_text("".join(f"{i % 7}\n" for i in range(200)))
    status, err = run_cli(["mechanism=counter_board", "data=items", f"data.path={tmp_path / 'items.txt'}",
                           "profile=smoke", "trials=1", "n_jobs=1"], capsys)
    assert status == 2 and one_error_line(err) == (
        "error: data=items: counter_board runs at T = data.length: a generated stream that declares its length "
        "(data=zipf, data=wordfreq); a file declares none")
