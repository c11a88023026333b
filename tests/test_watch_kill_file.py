"""kill -9 of ``dpstream watch`` reading a file, while it works, and the restart on the same file and state.

The child's stdout is a pipe of one page (4096 bytes, about one release line) that the test reads as it goes: the
child can get at most a couple of releases ahead of the lines read before a write blocks it, so a kill right after
the n-th line lands while packets are still to come, never at the end of the input, however loaded the machine.

Two kills: right after the n-th line, while the child works on the next packets; and between a release's save and
its line, made deterministic from outside: the child is stopped (SIGSTOP), the pipe drained, and it is killed only
when its ledger holds a release whose line is not (wholly) in the pipe, so it can never be printed; else it goes on
(SIGCONT) and the check is repeated. Once the test stops reading, the pipe fills and the child blocks writing a line
it has saved, so the window stays open until the check sees it.

The noise is the default exact discrete noise, seeded (``--seed``: each epoch's key from the seed and the epoch's
index), so that an in-process watcher gives the same releases to the last bit: what the child printed and saved,
and what its restart printed, are compared exactly with what an unkilled watcher and a watcher restarted from the
killed ledger on the packets after its last release give.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import child_env
from test_watch import SMALL, assert_estimates_add_up, epoch_estimates, watch_command, zipf_sources

from dpstream.data.live import ipv4_label
from dpstream.data.synthetic_capture import pcap_bytes
from dpstream.heavy_hitters.epochs import EpochWatcher, WatchConfig

# issue 37: make test keeps one warm pipe test of the command (test_watch.py's kill -9); the others are long
pytestmark = pytest.mark.long  # each runs dpstream watch twice as a child, 5-12 s

PACKETS = 16384 + 32768 + 20000  # epoch 0, epoch 1, and 4 releases and 3616 packets of epoch 2
CONFIG = WatchConfig(**SMALL, seed=1)
SEEDED = ["--seed", "1"]
PIPE_PAGE = 4096
WAIT = 120.0  # seconds a read of the child's stdout may wait (a cold start loads or compiles the kernels)


class Lines:
    """The JSON lines a child writes to the pipe whose read end is ``fd``, read as they come.

    ``lines`` holds the complete lines (a release is printed once its newline is written); ``rest`` the bytes of a
    line not yet complete.
    """

    def __init__(self, fd: int) -> None:
        """Nothing read yet."""
        self.fd = fd
        self.lines: list[dict] = []
        self.rest = b""

    def read(self, timeout: float = WAIT) -> bool:
        """One read of what is waiting (waiting up to ``timeout`` s for something); False at the pipe's end."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        assert ready, f"no output from the watcher in {timeout} s"
        data = os.read(self.fd, 1 << 16)
        *done, self.rest = (self.rest + data).split(b"\n")
        self.lines += [json.loads(line) for line in done]
        return bool(data)

    def until(self, count: int) -> None:
        """Read until ``count`` lines are complete."""
        while len(self.lines) < count:
            assert self.read(), f"the watcher stopped after {len(self.lines)} release line(s), before {count}"

    def drain(self) -> None:
        """Read whatever is waiting, without waiting for more."""
        while select.select([self.fd], [], [], 0)[0] and self.read(0):
            pass


def saved_step(state: Path) -> int:
    """The global step of the last release a ledger holds."""
    last = json.loads(state.read_text())["epochs"][-1]
    return last["start"] + last["released"]


def kill_while_busy(child: subprocess.Popen, lines: Lines, state: Path, count: int) -> None:
    """SIGKILL right after the ``count``-th release line is read, while the child works on the next packets."""
    lines.until(count)
    child.send_signal(signal.SIGKILL)


def kill_between_save_and_print(child: subprocess.Popen, lines: Lines, state: Path, count: int) -> None:
    """Read ``count`` lines, then SIGKILL the child once stopped with a saved release that is not printed.

    Each try stops the child (SIGSTOP, waited for), drains the pipe, and compares the ledger's last release with the
    last complete line: while stopped neither can move, so a kill then lands between that release's save and its
    line. Otherwise the child goes on (SIGCONT) and the test tries again.
    """
    lines.until(count)
    for _ in range(600):
        child.send_signal(signal.SIGSTOP)
        _, status = os.waitpid(child.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), f"the watcher ended (wait status {status}) instead of stopping"
        lines.drain()
        if saved_step(state) > lines.lines[-1]["step"]:
            child.send_signal(signal.SIGKILL)  # kills a stopped process too
            return
        child.send_signal(signal.SIGCONT)
        time.sleep(0.05)
    raise AssertionError("the watcher was never stopped between a release's save and its line")


def killed_run(command: list[str], state: Path, kill: str, err: Path) -> tuple[list[dict], dict]:
    """Start ``command`` with stdout on a pipe of one page, kill it (``kill``); its release lines and its ledger."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, PIPE_PAGE)
    with err.open("wb") as stderr:
        child = subprocess.Popen(command, stdout=write_end, stderr=stderr, env=child_env(PYTHONUNBUFFERED="1"))
    os.close(write_end)
    lines = Lines(read_end)
    try:
        if kill == "while busy":  # 6 lines: in epoch 1, the next save at most a release or two away
            kill_while_busy(child, lines, state, 6)
        else:  # 5 lines read, then none: the child blocks writing release 7's line at the latest
            kill_between_save_and_print(child, lines, state, 5)
        assert child.wait(timeout=30) == -signal.SIGKILL, err.read_text()
        while lines.read():
            pass
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(read_end)
    return lines.lines, json.loads(state.read_text())


def watched(state: Path | None, keys: np.ndarray) -> list[dict]:
    """The release lines of an in-process watcher on ``state`` fed ``keys``, as JSON gives them back."""
    out: list[dict] = []
    watcher = EpochWatcher(CONFIG, state, out.append, label=ipv4_label)
    for part in np.array_split(keys, 7):
        watcher.feed(part)
    return [json.loads(json.dumps(line)) for line in out]


def untimed(lines: list[dict]) -> list[dict]:
    """``lines`` without their wall time."""
    return [{k: v for k, v in line.items() if k != "time"} for line in lines]


def ledger_estimates(record: dict) -> dict[str, float]:
    """Label -> estimate of an epoch record's last release."""
    return {ipv4_label(int(key)): value for key, value in record["items"]}


@pytest.mark.parametrize("kill", ["while busy", "between save and print"])
def test_kill_9_while_reading_a_file_and_restart_on_it(kill: str, tmp_path: Path) -> None:
    """SIGKILL while the watcher reads a file, then a restart on the same file and state (module docstring).

    Checked, rules fixed before the run:
    - the kill lands before the input's end; the ledger holds the last printed release, or (the kill between a save
      and its line) one more release, never printed;
    - every line printed is the unkilled watcher's, and every release the ledger holds equals its line (one saved
      but not printed equals the unkilled watcher's next);
    - the restart opens the next epoch index with a key no earlier epoch had, re-emits no step, leaves the old
      epochs' records as they were, and starts its epoch at the ledger's step: its lines are those of a watcher
      restarted in process from the killed ledger on the packets after that step, so it skips exactly the packets
      released and counts every later one once; it releases up to the last whole release of the file;
    - the final estimates are the current epoch's plus each past epoch's last released estimates, exactly.

    Broken restarts fail it in both kills: one that skips nothing (the watcher's own file accounting stops it), one
    packet too few (the lines differ from the reference's), the previous epoch's key again (a shared key id), and
    estimates that forget the past epochs or count epoch 0 twice (they do not add up).
    """
    every = CONFIG.every
    sources = zipf_sources(PACKETS, 14)
    path = tmp_path / "c.pcap"
    path.write_bytes(pcap_bytes(sources))
    unkilled = watched(None, sources)  # in process: also compiles the kernels the children load from the cache
    state = tmp_path / "state.json"
    command = watch_command(str(path), state, *SEEDED)
    printed, ledger = killed_run(command, state, kill, tmp_path / "first.err")

    released = ledger["epochs"][-1]["start"] + ledger["epochs"][-1]["released"]
    unprinted = released - printed[-1]["step"]  # a release saved, never printed: the kill came between the two
    assert unprinted == every if kill == "between save and print" else unprinted in (0, every)
    assert released < unkilled[-1]["step"]  # killed before the end of the input
    assert len(ledger["epochs"]) >= 2 and ledger["files"][0][2] == released
    assert untimed(printed) == untimed(unkilled[:len(printed)])
    for record in ledger["epochs"]:
        if not record["released"]:  # opened at the previous epoch's horizon, killed before its first release
            continue
        line = next((line for line in printed if (line["epoch"], line["epoch_step"]) == (record["epoch"],
                                                                                         record["released"])), None)
        if line is None:  # the release saved, never printed: the kill came between the two
            assert record is ledger["epochs"][-1] and released == printed[-1]["step"] + every
            line = unkilled[len(printed)]
            assert (line["epoch"], line["epoch_step"]) == (record["epoch"], record["released"])
        assert ledger_estimates(record) == epoch_estimates(line) and record["key_id"] == line["key_id"]

    shutil.copy(state, tmp_path / "reference.json")
    second = subprocess.run(command, capture_output=True, env=child_env(), timeout=300, check=True)
    after = [json.loads(line) for line in second.stdout.splitlines()]
    epoch = len(ledger["epochs"])
    assert f"step {released} released; opening epoch {epoch} with a new key" in second.stderr.decode()
    final = json.loads(state.read_text())
    assert final["epochs"][:epoch] == ledger["epochs"]
    assert final["epochs"][epoch]["start"] == released
    assert (after[0]["epoch"], after[0]["epoch_step"], after[0]["step"]) == (epoch, every, released + every)
    old_keys = {record["key_id"] for record in ledger["epochs"]} | {line["key_id"] for line in printed}
    assert not old_keys & {line["key_id"] for line in after}
    steps = [line["step"] for line in printed + after]
    assert steps == sorted(set(steps))  # no step re-emitted
    assert untimed(after) == untimed(watched(tmp_path / "reference.json", sources[released:]))
    assert after[-1]["step"] == final["epochs"][-1]["start"] + final["epochs"][-1]["released"]
    assert PACKETS - every < after[-1]["step"] <= PACKETS
    current = after[-1]["epoch"]
    assert_estimates_add_up(after[-1], [ledger_estimates(r) for r in final["epochs"] if r["epoch"] < current])
