"""``dpstream watch``: refused restarts, bad options, and the falling-behind warning.

A restart that could put a packet in two epochs is refused, a bad option is one line and exit 2, and a watcher
slower than its --rate says so once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from dpstream.data.synthetic_capture import pcap_bytes
from dpstream.heavy_hitters.epochs import EpochRecord, Ledger, WatchConfig
from dpstream.watch import Pace, check_restart, main, parser

SMALL = {"k": 8, "k_tilde": 128, "epsilon": 4.0, "delta": 1e-6, "beta": 5e-7, "every": 4096, "horizon": 16384,
         "flush_every": 16}
SEEDED = {**SMALL, "node_noise": "derived", "seed": 1}
OPTIONS = ["--noise", "derived", "--seed", "1", *[f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items()]]


def released_ledger(state: Path, source: str, step: int = 4096) -> None:
    """A ledger that has released ``step`` packets of ``source`` (written directly: public values only)."""
    Ledger(WatchConfig(**SEEDED), [EpochRecord(0, "0123456789abcdef", 16384, 0, step, [])], source).save(state)


def test_restart_on_stdin_is_refused_without_stdin_is_new(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "s.json"
    released_ledger(state, "stdin")
    before = state.read_text()
    assert main(["-", "--state", str(state), *OPTIONS]) == 2  # stdin is not read: pytest's stdin would raise
    err = capsys.readouterr().err
    assert err.startswith(f"error: state {state} has released 4096 packets and stdin cannot skip them")
    assert "--stdin-is-new" in err and err.count("\n") == 1
    assert state.read_text() == before  # no epoch opened


def test_stdin_is_new_and_unreleased_states_are_allowed(tmp_path: Path) -> None:
    state = tmp_path / "s.json"
    config = WatchConfig(**SEEDED)
    args = parser().parse_args(["-", "--state", str(state), *OPTIONS])
    check_restart(args, state, config)  # no state yet
    released_ledger(state, "stdin", step=0)
    check_restart(args, state, config)  # nothing released: nothing can be counted twice
    released_ledger(state, "stdin")
    with pytest.raises(ValueError, match="stdin cannot skip"):
        check_restart(args, state, config)
    check_restart(parser().parse_args(["-", "--state", str(state), "--stdin-is-new", *OPTIONS]), state, config)


def test_a_file_restart_needs_the_same_source_read_the_same_way(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    first, other = tmp_path / "a.pcap", tmp_path / "b.pcap"
    first.write_bytes(pcap_bytes(0x0A000000 + rng.integers(0, 50, 9000)))
    other.write_bytes(first.read_bytes())
    state = tmp_path / "s.json"
    assert main([str(first), "--state", str(state), *OPTIONS]) == 0
    out = capsys.readouterr()
    assert [json.loads(line)["step"] for line in out.out.splitlines()] == [4096, 8192]
    assert json.loads(state.read_text())["source"] == f"file {first.resolve()} column=0 ipv6=skip"

    for source, extra in ((other, []), (first, ["--ipv6", "key"]), ("-", [])):
        assert main([str(source), "--state", str(state), *OPTIONS, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "allowed:" in err
    # the same source skips the 8192 released packets
    assert main([str(first), "--state", str(state), *OPTIONS]) == 0
    out = capsys.readouterr()
    assert out.out == "" and "step 8192 released; the 808 packet(s) after" in out.err
    # a file that changed since its packets were released is refused, naming it, before any epoch opens
    saved = state.read_text()
    size = first.stat().st_size
    # rewritten in place (the same inode) shorter; a new file renamed over it (created while the old one exists:
    # another inode). A last file rewritten in place to at least its size is not told from one that grew: the
    # state holds no byte of a packet (docs/guide/watch.md, Restarts)
    for packets, why in ((5000, f"it is now {5000 * 50 + 24} bytes"),
                         (9500, "it is another file (its inode or capture header differ from the one read)")):
        if packets == 5000:
            first.write_bytes(pcap_bytes(0x0A000000 + rng.integers(0, 50, packets)))
        else:
            new = tmp_path / "new.pcap"
            new.write_bytes(pcap_bytes(0x0A000000 + rng.integers(0, 50, packets)))
            new.replace(first)
        assert main([str(first), "--state", str(state), "--rate", "1000", *OPTIONS]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: state {state}: file 1 of the source was 'a.pcap' ({size} bytes read, 8192 "
                              f"packets released), but {why};") and err.count("\n") == 1, err
        assert state.read_text() == saved


def test_skip_none_is_gone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-", "--skip", "none", "--state", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unrecognized arguments: --skip none") and err.count("\n") == 1


BAD = [("--k-tilde", "0"), ("--k-tilde", "4"), ("--k", "0"), ("--k", "-3"), ("--k", "1.5"), ("--rate", "inf"),
       ("--rate", "nan"), ("--rate", "0"), ("--rate", "-1"), ("--rate", "1e20"), ("--epsilon", "0"),
       ("--epsilon", "inf"), ("--epsilon", "nan"), ("--delta", "0"), ("--delta", "0.5"), ("--delta", "nan"),
       ("--beta", "1e-6"), ("--beta", "0"), ("--every", "0"), ("--every", "100"), ("--horizon", "-4096"),
       ("--horizon", "1000"), ("--host-cap", "0"), ("--column", "-1"), ("--seed", "-1"),
       ("--flush-every", "0"), ("--flush-every", "2.5")]


@pytest.mark.parametrize(("option", "value"), BAD)
def test_bad_numeric_option_is_one_line_naming_it(option: str, value: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "s.json"
    assert main(["-", option, value, "--state", str(state)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "allowed" in err or "invalid" in err or "must be" in err, err
    assert option.lstrip("-").replace("-", "_") in err.replace("-", "_"), err
    assert value in err or repr(float(value)) in err, err
    assert not state.exists()


@pytest.mark.parametrize(("rate", "warnings"), [("7e10", 1), ("1000", 0)])
def test_a_watcher_behind_its_rate_warns_once(rate: str, warnings: int, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.pcap"  # 6 MB: two blocks of the reader, so an interval after the warm-up one is judged
    path.write_bytes(pcap_bytes(0x0A000000 + np.random.default_rng(4).integers(0, 50, 120000)))
    assert main([str(path), "--state", str(tmp_path / "s.json"), "--rate", rate, *OPTIONS]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: falling behind:") == warnings
    assert warnings == 0 or f"below --rate {float(rate):g}" in err


class SlowWatcher:
    """Stands in for an ``EpochWatcher``: each block takes 20 ms."""

    def feed(self, keys: np.ndarray) -> None:
        time.sleep(0.02)


def test_pace_warns_once_when_behind_and_never_when_not(capsys: pytest.CaptureFixture[str]) -> None:
    keys = np.zeros(100, dtype=np.int64)
    behind = Pace(rate=1e6, every=200)  # 100 packets in 20 ms: 5,000 packets/s
    for _ in range(2):
        behind.feed(SlowWatcher(), keys)  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""  # the first interval is warm-up
    for _ in range(6):
        behind.feed(SlowWatcher(), keys)  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: falling behind: ") and "over the last 200 packets" in err
    rate = float(err.split("falling behind: ")[1].split(" ")[0])
    assert 1e3 < rate <= 5e3 * 1.01
    keeping_up = Pace(rate=100.0, every=200)
    for _ in range(6):
        keeping_up.feed(SlowWatcher(), keys)  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""

