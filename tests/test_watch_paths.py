"""``dpstream watch`` through its command line on the sources otherwise tested only below it (``source_keys``).

pcapng on stdin, a growing file followed, a multi-column CSV read as a file and as a line stream on stdin: each gives
the releases of the same packets read from a pcap file (seeded derived noise, so equal runs release equal values).
And a seeded run at the default noise says "not deployable" in every line it prints.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from capture_files import pcapng_of
from conftest import ctrl_c_as_at_a_terminal
from test_watch import SMALL, SMALL_OPTIONS, zipf_sources

from dpstream.data.live import ipv4_label
from dpstream.data.synthetic_capture import pcap_bytes
from dpstream.watch import main

# issue 37: make test keeps one warm pipe test of the command (test_watch.py's kill -9); the others are long
pytestmark = pytest.mark.long  # each runs dpstream watch as a child, 3-10 s

SIZES = ["--rate", "1000", *SMALL_OPTIONS]
SEEDED = [*SIZES, "--seed", "1", "--noise", "derived"]
SOURCES = zipf_sources(3 * SMALL["every"] + 500, 21)  # three releases, 500 packets after the last
COMMAND = [sys.executable, "-m", "dpstream", "watch"]


def releases(out: str | bytes) -> list[tuple]:
    """(step, epoch, [(label, estimate), ...]) of each JSON line: what two runs on the same packets must share."""
    lines = [json.loads(line) for line in out.splitlines()]
    return [(r["step"], r["epoch"], [(i["label"], i["estimate"]) for i in r["items"]]) for r in lines]


def in_process(argv: list[str]) -> tuple[str, str]:
    """``dpstream watch argv`` in this process, exit code 0: its stdout and stderr."""
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(argv)
    assert code == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


def on_stdin(data: bytes, state: Path, *extra: str) -> list[tuple]:
    """The releases of ``dpstream watch -`` as a child process, ``data`` written into its stdin (a pipe)."""
    done = subprocess.run([*COMMAND, "-", *SEEDED, "--state", str(state), *extra], input=data, capture_output=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return releases(done.stdout)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    """The releases of ``SOURCES`` read from a pcap file, in process: three, the heavy hosts reported."""
    folder = tmp_path_factory.mktemp("reference")
    (folder / "c.pcap").write_bytes(pcap_bytes(SOURCES))
    out, _ = in_process([str(folder / "c.pcap"), *SEEDED, "--state", str(folder / "s.json")])
    got = releases(out)
    assert [r[0] for r in got] == [4096, 8192, 12288]
    assert {ipv4_label(0x0A000001 + h) for h in range(3)} <= {label for label, _ in got[-1][2]}
    return got


def test_pcapng_on_stdin(reference: list[tuple], tmp_path: Path) -> None:
    assert on_stdin(pcapng_of(SOURCES), tmp_path / "s.json") == reference


def test_a_multi_column_csv_as_a_file_and_as_a_line_stream_on_stdin(reference: list[tuple], tmp_path: Path) -> None:
    rows = [f"{i},{6 + i % 11},{ipv4_label(int(h))},{40 + i % 1400}" for i, h in enumerate(SOURCES)]
    text = "\n".join(["time,proto,src,bytes", *rows]) + "\n"
    path = tmp_path / "flows.csv"
    path.write_text(text)
    out, _ = in_process([str(path), "--column", "2", *SEEDED, "--state", str(tmp_path / "f.json")])
    assert releases(out) == reference
    assert on_stdin(text.encode(), tmp_path / "s.json", "--column", "2") == reference


def test_a_growing_file_is_followed_until_interrupted(reference: list[tuple], tmp_path: Path) -> None:
    """The file holds a release and a half at start, cut inside a record; the rest is appended once it is read."""
    data = pcap_bytes(SOURCES)
    cut = len(data) * 3 // 8 + 5
    path = tmp_path / "growing.pcap"
    path.write_bytes(data[:cut])
    child = subprocess.Popen([*COMMAND, str(path), "--follow", *SEEDED, "--state", str(tmp_path / "s.json")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ctrl_c_as_at_a_terminal)
    guard = threading.Timer(300, child.kill)  # a follower never ends by itself
    guard.start()
    try:
        assert child.stdout is not None
        lines = [child.stdout.readline()]
        with path.open("ab") as grow:
            grow.write(data[cut:])
        lines += [child.stdout.readline() for _ in range(2)]
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        guard.cancel()
    assert child.returncode == 130, err.decode()[-2000:]
    assert "stopped: every release is in the state file" in err.decode()
    assert releases(b"".join(lines)) == reference


def test_every_line_of_a_seeded_run_says_not_deployable(tmp_path: Path) -> None:
    """At the default (exact discrete) noise ``--seed`` alone makes the run a test: each line says so, stderr once."""
    path = tmp_path / "c.pcap"
    path.write_bytes(pcap_bytes(SOURCES))
    out, err = in_process([str(path), *SIZES, "--seed", "2", "--state", str(tmp_path / "s.json")])
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 3 and {line["deployable"] for line in lines} == {"not deployable: seeded (--seed)"}
    assert err.count("not deployable") == 1
    assert lines[-1]["items"]  # the lines carry releases: the heavy hosts are reported by the last
