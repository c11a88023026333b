"""``dpstream live``: the page and ``/releases`` served from JSON lines that grow, and bad input in one line.

The fixture ``watch-releases.jsonl`` is every sixth line of a seeded run of ``dpstream watch`` (derived noise, not
deployable) on a generated capture of 3e6 packets from six heavy hosts: ``dpstream watch demo.pcap --seed 1
--noise derived --k 32 --k-tilde 256 --every 32768 --horizon 524288``. The browser check is test_live_chromium.py.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS, child_env

from dpstream.cli import main as cli_main
from dpstream.live.releases import Releases, parse
from dpstream.live.server import LiveServer, main

WATCH_LINES = TESTS / "fixtures" / "live" / "watch-releases.jsonl"


def release(step: int, epoch: int = 0, labels: tuple[str, ...] = ("10.0.0.1", "10.0.0.2"),
            deployable: Any = True) -> dict[str, Any]:
    """A release in the documented shape (docs/guide/watch.md), its numbers made from its step."""
    items = [{"label": label, "estimate": step / (i + 2), "epoch_estimate": step / (i + 3),
              "epoch_interval": [step / (i + 3) - 40.5, step / (i + 3) + 40.5]} for i, label in enumerate(labels)]
    return {"step": step, "time": "2026-11-29T03:00:00Z", "epoch": epoch, "epoch_step": step, "key_id": "ab" * 8,
            "items": items, "interval_confidence": 0.95,
            "privacy": {"relation": "replace one packet", "epsilon": 1.0, "delta": 8.4e-6}, "deployable": deployable}


def jsonl(releases: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in releases)


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def releases_at(url: str, since: int = 0) -> dict[str, Any]:
    status, kind, body = get(f"{url}releases?since={since}")
    assert status == 200 and kind == "application/json"
    return json.loads(body)


def wait_for(url: str, count: int, timeout: float = 10.0) -> dict[str, Any]:
    """The answer of /releases once it holds ``count`` releases (fails after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while (answer := releases_at(url))["next"] < count:
        assert time.monotonic() < deadline, f"only {answer['next']} of {count} releases after {timeout} s"
        time.sleep(0.05)
    return answer


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[LiveServer, Path]]:
    """A server on a free port following ``releases.jsonl`` in tmp_path (written by the test)."""
    path = tmp_path / "releases.jsonl"
    path.write_bytes(b"")
    server = LiveServer(open(path, "rb"), str(path), follow=True, port=0)
    thread = threading.Thread(target=server.serve)
    thread.start()
    yield server, path
    server.shutdown()
    thread.join(timeout=10)
    server.close()
    assert not thread.is_alive()


def test_page_is_served_self_contained(served: tuple[LiveServer, Path]) -> None:
    server, _ = served
    status, kind, page = get(server.url)
    assert status == 200 and kind == "text/html; charset=utf-8"
    text = page.decode()
    assert 'id="deployable"' in text and 'id="chart"' in text and "releases?since=" in text
    # nothing from another host: no external script, style, font or image; the only URL is the SVG namespace
    assert "<link" not in text and "src=" not in text and "@import" not in text and "url(" not in text
    assert set(re.findall(r"[a-z]+://[^\s\"']*", text)) == {"http://www.w3.org/2000/svg"}
    assert get(server.url + "nothing")[0] == 404 and get(server.url + "releases?since=-1")[0] == 400


def test_endpoint_returns_the_watch_lines_parsed(served: tuple[LiveServer, Path]) -> None:
    server, path = served
    lines = WATCH_LINES.read_bytes()
    path.write_bytes(lines)
    expected = [json.loads(line) for line in lines.splitlines()]
    answer = wait_for(server.url, len(expected))
    assert answer["releases"] == expected and answer["first"] == 0 and answer["next"] == len(expected)
    assert answer["source"] == str(path) and answer["ended"] is False  # a file is followed, never ended
    assert releases_at(server.url, 10)["releases"] == expected[10:]
    assert releases_at(server.url, len(expected)) == {**answer, "first": len(expected), "releases": []}


def test_a_growing_file_is_followed_line_by_line(served: tuple[LiveServer, Path]) -> None:
    """Lines appended while served, one cut in the middle, arrive whole, in order, and nothing else does."""
    server, path = served
    written = [release(4096 * (i + 1), epoch=i // 4, labels=("10.0.0.1", f"10.0.{i}.9")) for i in range(12)]
    data = jsonl(written)
    cuts = [0, len(jsonl(written[:3])), len(jsonl(written[:7])) + 17, len(data)]  # the third piece ends mid-line
    with path.open("ab") as out:
        for piece, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False)):
            out.write(data[a:b])
            out.flush()
            whole = [len(jsonl(written[:n])) <= b for n in range(len(written) + 1)].count(True) - 1
            answer = wait_for(server.url, whole)
            time.sleep(0.3 if piece == 1 else 0)  # more than one look at the file while a line is cut
            assert releases_at(server.url)["releases"] == written[:whole]
    assert releases_at(server.url)["releases"] == written
    assert answer["next"] == len(written)


def test_only_the_last_keep_releases_are_kept() -> None:
    kept = Releases(keep=3)
    for step in range(1, 6):
        kept.add(release(step))
    assert kept.since(0) == {"first": 2, "next": 5, "ended": False, "releases": [release(3), release(4), release(5)]}
    assert kept.since(4)["releases"] == [release(5)] and kept.since(9)["releases"] == []


def test_stdin_through_the_command(tmp_path: Path) -> None:
    """``dpstream live -`` in its own process: releases piped in are served, and the end of the pipe is told."""
    written = [release(512 * (i + 1), deployable="not deployable: seeded (--seed)") for i in range(5)]
    proc = subprocess.Popen([sys.executable, "-m", "dpstream", "live", "-", "--port", "0"], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=child_env(), cwd=tmp_path)
    try:
        assert proc.stderr is not None and proc.stdin is not None
        first = proc.stderr.readline().decode()
        assert first.startswith("serving http://127.0.0.1:"), first
        url = first.split()[1]
        proc.stdin.write(jsonl(written[:2]))
        proc.stdin.flush()
        assert wait_for(url, 2)["releases"] == written[:2]
        proc.stdin.write(jsonl(written[2:]).rstrip(b"\n"))  # the last line ends with the pipe, not a newline
        proc.stdin.close()
        assert proc.stderr.readline().decode().startswith("end of input: 5 release(s) read; still serving")
        assert releases_at(url) == {"first": 0, "next": 5, "ended": True, "releases": written, "source": "stdin"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


BAD_LINES = [
    (b"{not json", "line 2: not JSON"),
    (b"[1, 2]", "line 2: a JSON list, not an object"),
    (json.dumps(release(8192) | {"step": 4096}).encode(), "line 2: step 4096 does not follow step 8192"),
    (json.dumps(release(9000) | {"step": -1}).encode(), "line 2: step -1 is not a count"),
    (json.dumps(release(9000, deployable=False)).encode(), "line 2: deployable false is neither true nor"),
    (json.dumps(release(9000) | {"privacy": {"relation": "x"}}).encode(), "line 2: no privacy statement"),
    (json.dumps(release(9000) | {"items": [{"label": 3, "estimate": 1}]}).encode(), "line 2: an item without"),
    (json.dumps(release(9000) | {"items": [{"label": "a", "estimate": 1, "epoch_interval": [2, 1]}]}).encode(),
     "line 2: an item whose epoch_interval is [2, 1], not [low, high]"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_a_line_that_is_not_a_release_is_named(line: bytes, message: str) -> None:
    with pytest.raises(ValueError, match="allowed: the JSON lines of dpstream watch") as error:
        parse(line, "r.jsonl line 2", last_step=8192)
    assert str(error.value).startswith(f"r.jsonl {message}")


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("serving ")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_missing_file_port_in_use_and_bad_options_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.jsonl"
    assert main([str(missing), "--port", "0"]) == 2
    assert one_error(capsys) == f"error: {missing}: No such file or directory (no such file or folder)"
    path = tmp_path / "r.jsonl"
    path.write_bytes(jsonl([release(1)]))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([str(path), "--port", str(port)]) == 2
        assert one_error(capsys).startswith(f"error: --bind 127.0.0.1 --port {port}: Address already in use "
                                            "(another program listens there); allowed: a free port")
    assert main([str(path), "--port", "70000"]) == 2
    assert one_error(capsys) == "error: --port 70000: allowed: 0 to 65535 (0: any free port)"
    assert main([str(path), "--port", "x"]) == 2
    assert one_error(capsys).startswith("error: argument --port: invalid int value: 'x'; see dpstream live --help")
    with pytest.raises(SystemExit) as stop:  # through the dpstream command
        cli_main(["live", str(tmp_path), "--port", "0"])
    assert stop.value.code == 2 and one_error(capsys) == f"error: {tmp_path}: Is a directory (a folder where a file " \
        "belongs)"


def test_a_bad_line_written_while_served_stops_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(jsonl([release(1), release(2)]))
    writer = threading.Timer(0.5, lambda: path.open("ab").write(b'{"step": 3}\n'))
    writer.start()
    started = time.monotonic()
    assert main([str(path), "--port", "0"]) == 2
    writer.join()
    assert time.monotonic() - started < 10
    assert one_error(capsys) == f"error: {path} line 3: epoch null is not a count; allowed: the JSON lines of " \
        "dpstream watch (docs/guide/watch.md)"
