"""``dpstream watch`` on rotated files and restarts (review4 findings 2, 7 and 9).

The rotation's order, the files a state released, the source checked before an epoch opens, and the current
epoch's numbers at startup.

The rotation is tcpdump -C's: cap, cap1, ..., cap9, cap10, ... (plain name order puts cap10 before cap2). Each
file here is a text stream of 4096 items, one a line.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from dpstream.data.live import content_digest, fits, natural_key, rotation_files, source_keys
from dpstream.heavy_hitters.epochs import (
    LEDGER_FORMAT_1,
    LEDGER_FORMAT_2,
    EpochWatcher,
    WatchConfig,
    epoch_after,
    reportable_share,
    statement,
)
from dpstream.watch import main, share_text

LINES = 4096
# the review's watcher: k = 2 (an item needs half of an epoch's packets), a release per file
OPTIONS = ["--k", "2", "--k-tilde", "64", "--flush-every", "1", "--every", "4096", "--horizon", "131072",
           "--epsilon", "4", "--noise", "derived", "--seed", "1"]


def rotation_name(index: int) -> str:
    """The tcpdump -C name of its index-th file: cap, cap1, cap2, ..."""
    return "cap" if index == 0 else f"cap{index}"


def items(index: int) -> np.ndarray:
    """File index's items: cap8/cap9 90% item 888, cap10/cap11 90% item 1010, the others spread over 40,000."""
    rng = np.random.default_rng(index)
    spread = rng.integers(2000, 42_000, LINES)
    heavy = {8: 888, 9: 888, 10: 1010, 11: 1010}.get(index)
    return spread if heavy is None else np.where(rng.random(LINES) < 0.9, heavy, spread)


def write(folder: Path, index: int) -> Path:
    path = folder / rotation_name(index)
    path.write_text("".join(f"{v}\n" for v in items(index)))
    return path


def rotation(tmp_path: Path, files: int) -> Path:
    """A folder ``rot`` holding the first ``files`` files of a ``tcpdump -C`` rotation (``write``)."""
    folder = tmp_path / "rot"
    folder.mkdir()
    for i in range(files):
        write(folder, i)
    return folder


def watched(tmp_path: Path, files: int) -> tuple[Path, Path, list[str]]:
    """(folder, state, args) after one watch of a rotation of ``files`` files to its end."""
    folder = rotation(tmp_path, files)
    state = tmp_path / "st.json"
    args = [str(folder), "--state", str(state), *OPTIONS]
    assert main(args) == 0
    return folder, state, args


def releases(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_the_rotation_order_is_numeric_and_foreign_names_are_refused(tmp_path: Path) -> None:
    names = [rotation_name(i) for i in range(12)]
    assert sorted(names, key=natural_key) == names and sorted(names) != names  # cap10 < cap2 as text
    # tcpdump -G's strftime names, with -C's count added; zero-padded counters
    assert sorted(["c-1000.pcap", "c-0900.pcap1", "c-0900.pcap", "c-0900.pcap10", "c-0900.pcap2"],
                  key=natural_key) == ["c-0900.pcap", "c-0900.pcap1", "c-0900.pcap2", "c-0900.pcap10", "c-1000.pcap"]
    assert fits("c-0900.pcap1", "c-0900.pcap") and fits("c-1000.pcap", "c-0900.pcap") and fits("cap007", "cap000")
    assert not fits("notes.txt", "cap") and not fits("dap1", "cap") and not fits("cap1.gz", "cap")
    folder = tmp_path / "rot"
    folder.mkdir()
    for i in (11, 0, 10, 2, 1, 9):
        (folder / rotation_name(i)).write_text("1\n")
    (folder / ".hidden").write_text("x")
    (folder / "sub1").mkdir()
    assert rotation_files(folder) == ["cap", "cap1", "cap2", "cap9", "cap10", "cap11"]
    (folder / "notes.txt").write_text("1\n")
    with pytest.raises(ValueError, match=r"file 'notes.txt' does not fit the rotation of its first file 'cap'"):
        rotation_files(folder)


def test_a_followed_rotation_moves_past_cap9(tmp_path: Path) -> None:
    """--follow reads cap10 and cap11 once they appear (plain name order stalled at cap9 for ever)."""
    folder = rotation(tmp_path, 10)
    got: list[np.ndarray] = []

    def read() -> None:
        for keys in source_keys(str(folder), follow=True, poll=0.02):
            got.append(keys)
            if sum(k.size for k in got) >= 12 * LINES:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(1.0)
    write(folder, 10)
    write(folder, 11)
    reader.join(30)
    assert not reader.is_alive(), f"stalled after {sum(k.size for k in got)} items"
    np.testing.assert_array_equal(np.concatenate(got), np.concatenate([items(i) for i in range(12)]))


def test_a_file_that_appears_before_the_ones_read_is_refused(tmp_path: Path) -> None:
    """It would never be read: following cap3, cap1 appears (a file copied in late, or a renumbering)."""
    for name in ("cap", "cap2", "cap3"):
        (tmp_path / name).write_text("1\n2\n")
    errors: list[str] = []

    def read() -> None:
        try:
            for _ in source_keys(str(tmp_path), follow=True, poll=0.02):
                pass
        except ValueError as exc:
            errors.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(0.5)
    (tmp_path / "cap1").write_text("5\n")
    reader.join(10)
    assert errors == [f"folder {tmp_path}: file 'cap1' appeared after 'cap3' was read, but comes before it in the "
                      "rotation's order, so it would never be read; allowed: files that come after the ones read"]


def test_a_restart_reads_the_new_rotated_files_and_nothing_released_again(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The review's repro: cap..cap9 watched, cap10 and cap11 written, restart.

    Plain name order would skip 40960 packets of cap, cap1, cap10, cap11, cap2, ..., cap7 and feed cap8/cap9
    (888, released in epoch 0) to epoch 1; the rotation's order feeds cap10/cap11, and 888 is not reported again.
    """
    folder, state, args = watched(tmp_path, 10)
    first = releases(capsys.readouterr().out)
    assert [line["step"] for line in first] == [LINES * (i + 1) for i in range(10)]
    assert first[-1]["items"] == []  # 888 is 18% of epoch 0: below 1/k
    saved = json.loads(state.read_text())
    assert saved["format"] == "dpstream-watch-ledger/3"
    assert [f[:3] for f in saved["files"]] == [[rotation_name(i), (folder / rotation_name(i)).stat().st_size, LINES]
                                               for i in range(10)]
    write(folder, 10)
    write(folder, 11)
    assert main(args) == 0
    captured = capsys.readouterr()
    second = releases(captured.out)
    assert "opening epoch 1" in captured.err
    assert [(line["epoch"], line["step"], line["epoch_step"]) for line in second] == [(1, 45056, 4096),
                                                                                     (1, 49152, 8192)]
    assert [item["label"] for item in second[-1]["items"]] == ["1010"]
    assert 0.8 * 2 * LINES < second[-1]["items"][0]["epoch_estimate"] < 2 * LINES
    assert [f[0] for f in json.loads(state.read_text())["files"]] == [rotation_name(i) for i in range(12)]


@pytest.mark.parametrize("change", ["gone", "renumbered", "rewritten", "same size", "replaced", "grown", "foreign"])
def test_a_restart_on_changed_files_is_refused_naming_the_file(change: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder, state, args = watched(tmp_path, 4)
    capsys.readouterr()
    saved = state.read_text()
    size = (folder / "cap2").stat().st_size
    if change == "gone":  # a rotation that deletes its oldest files
        (folder / "cap2").unlink()
        why = "'cap3' is in its place"
    elif change == "renumbered":  # logrotate style: every file moves up a number, a new first one
        size0 = (folder / "cap").stat().st_size
        for i in range(3, -1, -1):
            (folder / rotation_name(i)).rename(folder / f"cap{i + 1}")
        write(folder, 0)  # here the same lines as the old first file, in a new file: caught at the first
        why = "it is another file (its inode or capture header differ from the one read)"
    elif change == "rewritten":  # a ring buffer (tcpdump -W) overwrote it
        (folder / "cap2").write_text("".join(f"{v}\n" for v in items(7)))
        why = f"it is now {(folder / 'cap2').stat().st_size} bytes"
    elif change == "same size":  # rewritten in place (the same inode) to its old size: its mtime moved
        text = (folder / "cap2").read_text().splitlines(keepends=True)
        (folder / "cap2").write_text("".join(text[::-1]))
        mtime = (folder / "cap2").stat().st_mtime_ns
        os.utime(folder / "cap2", ns=(mtime + 10**9, mtime + 10**9))  # past any coarse clock tick
        why = "it was modified after it was read to its end"
    elif change == "replaced":  # a new file renamed over it, the same bytes: another inode
        (folder / "new").write_bytes((folder / "cap2").read_bytes())
        (folder / "new").rename(folder / "cap2")
        why = "it is another file (its inode or capture header differ from the one read)"
    elif change == "grown":  # a file read to its end, then a later one, grew
        with (folder / "cap2").open("a") as fh:
            fh.write("5\n")
        why = f"it is now {size + 2} bytes"
    else:
        (folder / "cap2.gz").write_text("1\n")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    if change == "foreign":
        assert err.startswith(f"error: folder {folder}: file 'cap2.gz' does not fit the rotation of its first file "
                              "'cap'"), err
    elif change == "renumbered":
        assert err.startswith(f"error: state {state}: file 1 of the source was 'cap' ({size0} bytes read, {LINES} "
                              f"packets released), but {why}; "), err
    else:
        assert err.startswith(f"error: state {state}: file 3 of the source was 'cap2' ({size} bytes read, {LINES} "
                              f"packets released), but {why}; "), err
    assert "allowed:" in err and state.read_text() == saved  # no epoch opened


def test_a_state_of_format_1_is_migrated_or_refused_with_a_how_to(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Format 1 kept no list of files: migrated when the orders agree, else refused saying what to do.

    A file, or a folder whose rotation order is plain name order, is skipped by count as then (and the list is
    recorded from then on); a folder whose orders differ is refused.
    """
    folder, state, args = watched(tmp_path, 3)
    capsys.readouterr()
    old = json.loads(state.read_text())
    old["format"] = LEDGER_FORMAT_1
    del old["files"]
    state.write_text(json.dumps(old))
    write(folder, 3)
    assert main(args) == 0  # cap, cap1, cap2, cap3: the same order both ways
    assert [line["step"] for line in releases(capsys.readouterr().out)] == [4 * LINES]
    assert [f[0] for f in json.loads(state.read_text())["files"]] == ["cap", "cap1", "cap2", "cap3"]

    state.write_text(json.dumps(old))  # format 1 again, 3 files released
    for i in range(4, 11):
        write(folder, i)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: state {state} was written by an older dpstream watch, which read a folder's "
                          "files in plain name order") and "allowed: a new --state" in err and err.count("\n") == 1
    assert json.loads(state.read_text()) == old


def test_a_state_of_format_2_is_migrated_or_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Format 2 recorded a digest of each file's first 4 KiB (packets): checked once as then, never written again.

    A restart on the files as they were reads on, and its saves write format 3 records (no digest of packets); one
    whose first bytes changed is refused in one line, naming the file, before any epoch opens.
    """
    folder, state, args = watched(tmp_path, 3)
    capsys.readouterr()
    old = json.loads(state.read_text())
    old["format"] = LEDGER_FORMAT_2
    old["files"] = [[name, size, packets, content_digest((folder / name).read_bytes()[:4096])]
                    for name, size, packets, _, _ in old["files"]]
    state.write_text(json.dumps(old))
    write(folder, 3)
    assert main(args) == 0
    assert [line["step"] for line in releases(capsys.readouterr().out)] == [4 * LINES]
    new = json.loads(state.read_text())
    assert new["format"] == "dpstream-watch-ledger/3" and [len(f) for f in new["files"]] == [5] * 4
    assert not {f[3] for f in old["files"]} & {f[3] for f in new["files"]}  # the old digests are gone

    state.write_text(json.dumps(old))
    text = (folder / "cap1").read_text().splitlines(keepends=True)
    (folder / "cap1").write_text("".join(text[::-1]))  # the same size, other first bytes
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: state {state}: file 2 of the source was 'cap1'") and err.count("\n") == 1, err
    assert "its first bytes differ from those read" in err and "allowed:" in err
    assert json.loads(state.read_text()) == old


@pytest.mark.parametrize("source", ["itemz.txt", "bad.txt", "bad.pcap", "items.gz", "column", "flows.csv"])
def test_a_bad_source_is_one_line_and_writes_nothing(source: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped or unreadable source: one line naming it, exit 2, no state or lock file, no epoch used up."""
    good = tmp_path / "items.txt"
    good.write_text("".join(f"{v}\n" for v in items(3)))
    (tmp_path / "bad.txt").write_text("item,x\n12,a\n,b\n")  # an empty field (text that is not an integer is keyed)
    (tmp_path / "bad.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(16) + (999).to_bytes(4, "little"))  # link 999
    (tmp_path / "items.gz").write_bytes(gzip.compress(b"1\n2\n"))
    (tmp_path / "flows.csv").write_text("".join(f"{i},10.0.0.{i % 7},10.1.0.1\n" for i in range(50)))  # 3 fields
    state = tmp_path / "st.json"
    extra = {"column": ["--column", "3"], "flows.csv": ["--column", "7"]}.get(source, [])
    path = good if source == "column" else tmp_path / source
    assert main([str(path), "--state", str(state), *OPTIONS, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    wanted = {"itemz.txt": f"source {str(path)!r} does not exist; allowed: '-' (stdin), a capture or text file, or a "
                           "folder of rotated captures",
              "bad.txt": "line 3: item '' in column 0: allowed: an integer",
              "bad.pcap": "bad.pcap: pcap link type 999 is not one the reader decodes; allowed: link types 0,",
              "items.gz": "items.gz: the lines from line 1 on: bytes that are not UTF-8 text; allowed: a pcap",
              "column": "items.txt: --column 3 (0-based) asks for field 4, but the lines from line 1 on have 1 "
                        "field(s), column(s) 0; allowed: --column 0",
              "flows.csv": "flows.csv: --column 7 (0-based) asks for field 8, but the lines from line 1 on have 3 "
                           "field(s), column(s) 0 to 2; allowed: --column 0 to 2"}[source]
    assert wanted in err, err
    assert "Usecols" not in err and "usecols" not in err  # not pandas' words
    assert not list(tmp_path.glob("st.json*"))
    assert main([str(good), "--state", str(state), *OPTIONS]) == 0  # the next run is epoch 0, its horizon the first
    captured = capsys.readouterr()
    assert captured.err.startswith("epoch 0: ") and "horizon 131072 packets" in captured.err


def test_an_empty_source_opens_no_epoch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    assert main([str(empty), "--state", str(tmp_path / "st.json"), *OPTIONS]) == 0
    assert capsys.readouterr().err == "end of input: no packet after the 0 released before; no epoch opened\n"
    assert not (tmp_path / "st.json").exists()


def test_the_startup_share_after_an_hour_is_the_hours_epochs(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """With a horizon under an hour at --rate, an hour falls many epochs on: its share is that epoch's, then."""
    config = WatchConfig(k=8, k_tilde=128, epsilon=4.0, every=4096, horizon=16384, flush_every=4)
    # 3.6e9 packets in an hour: epochs 0..17 hold 16384 (2^18 - 1) = 4294950912, so the hour is in epoch 17
    assert epoch_after(config, 0, 3_600_000_000) == (17, 3_600_000_000 - 16384 * (2**17 - 1))
    assert epoch_after(config, 0, 16384) == (0, 16384) and epoch_after(config, 0, 16385) == (1, 1)
    assert epoch_after(config, 2, 65536 + 1) == (3, 1)
    hour = reportable_share(config, 3_600_000_000 - 16384 * (2**17 - 1), config.epoch_horizon(17))
    assert hour == pytest.approx(1 / 8, abs=1e-3) and reportable_share(config, 3_600_000_000) > 0.17  # epoch 0's end
    path = tmp_path / "items.txt"
    path.write_text("1\n2\n3\n")
    assert main([str(path), "--state", str(tmp_path / "st.json"), "--rate", "1e6", "--k", "8", "--k-tilde", "128",
                 "--flush-every", "4", "--every", "4096", "--horizon", "16384", "--epsilon", "4", "--noise",
                 "derived", "--seed", "1"]) == 0
    err = capsys.readouterr().err
    assert (f"after an hour {100 * hour:.3g}% of the packets (epoch 17, {3_600_000_000 - 16384 * (2**17 - 1)} "
            "packets into it)") in err, err


def test_startup_share_and_statement_are_the_current_epochs(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """After a restart the startup share is epoch e's (horizon 2^e T_0), and each epoch states its own privacy."""
    config = WatchConfig(k=16, k_tilde=64, epsilon=4.0, every=4096, horizon=8192, flush_every=1)
    one = config.epoch_horizon(1)
    assert reportable_share(config, 8192, one) > reportable_share(config, 8192)  # a longer horizon, more noise
    path = tmp_path / "items.txt"
    state = tmp_path / "st.json"
    args = [str(path), "--state", str(state), "--rate", "100", *OPTIONS]
    args[args.index("--horizon") + 1], args[args.index("--k") + 1] = "8192", "16"
    for run in range(2):
        with path.open("a") as fh:  # epoch 0's 8192 items, then 4096 more
            fh.write("".join(f"{v}\n" for v in np.concatenate([items(8), items(9)][:2 - run])))
        assert main(args) == 0
        err = capsys.readouterr().err
        # run 0 opens epoch 0 and, at its horizon, epoch 1; run 1 opens epoch 2
        epoch = 2 * run
        assert (f"reported, at 100 packets/s from now: after a minute {share_text(config, 100, 60, epoch)}, after "
                f"an hour {share_text(config, 100, 3600, epoch)}") in err, err
        assert f"after a minute {reportable_share(config, 6000, config.epoch_horizon(epoch)) * 100:.3g}% of the " \
               f"packets (epoch {epoch})" in err  # a minute is 6000 packets, within the epoch just opened
    assert share_text(config, 100, 60, 2) != share_text(config, 100, 60)
    # exact discrete noise: the statement of each epoch is computed from its own counters
    lines: list[dict] = []
    watcher = EpochWatcher(WatchConfig(k=2, k_tilde=64, epsilon=4.0, every=4096, horizon=4096, flush_every=1,
                                       seed=3), None, lines.append)
    trackers = [watcher.tracker]
    for _ in range(3):
        watcher.feed(items(1)[:4096] if len(trackers) % 2 else items(2)[:4096])
        trackers.append(watcher.tracker)
    assert [line["epoch"] for line in lines] == [0, 1, 1]
    for line, tracker in zip(lines, trackers, strict=False):
        privacy = tracker.privacy
        assert privacy is not None
        assert {k: line["privacy"][k] for k in ("epsilon", "delta")} == {k: statement(privacy)[k]
                                                                          for k in ("epsilon", "delta")}
    assert "largest epsilon and delta of the epochs" in lines[0]["privacy"]["over_epochs"]


def test_a_last_line_without_a_newline_is_no_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its item is counted at the end of the stream: a restart reads it again as released, then what was added."""
    path = tmp_path / "items.txt"
    path.write_text("\n".join(str(7 if i % 2 else i) for i in range(2 * LINES)))  # no newline at the end
    args = [str(path), "--state", str(tmp_path / "st.json"), *OPTIONS]
    expected = ["step 8192 released; the 0 packet(s)", "no packet after the 8192 released before; no epoch opened",
                "step 12288 released; the 0 packet(s)"]
    for run in range(3):
        assert main(args) == 0
        assert capsys.readouterr().err.splitlines()[-1].startswith(f"end of input: {expected[run]}")
        if run == 1:
            with path.open("a") as fh:
                fh.write("\n" + "9\n" * LINES)
