"""``dpstream watch``'s reads (``data.live.read_waiting``): a pipe widened, the bytes waiting joined, one buffer."""

from __future__ import annotations

import fcntl
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from capture_files import pcapng_of

from dpstream.data import live
from dpstream.data.synthetic_capture import pcap_bytes

DEFAULT_PIPE = 1 << 16  # Linux's pipe buffer before F_SETPIPE_SZ


@pytest.fixture
def within_5s() -> Iterator[None]:
    """Fail a test whose reads block for 5 s (SIGALRM), rather than at pytest's timeout."""
    def late(signum: int, frame: object) -> None:
        raise TimeoutError("a read blocked for 5 s")

    old = signal.signal(signal.SIGALRM, late)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_a_read_joins_the_bytes_waiting_and_never_waits_for_more(monkeypatch: pytest.MonkeyPatch,
                                                                 within_5s: None) -> None:
    real = os.readv
    # each read gives at most 1,000 bytes, as a small pipe buffer would
    monkeypatch.setattr(live.os, "readv", lambda fd, buffers: real(fd, [buffers[0][:1000]]))
    read, write = os.pipe()
    data = bytes(range(256)) * 20  # 5,120 bytes
    os.write(write, data)
    buffer = bytearray(4096)
    first = live.read_waiting(read, buffer)  # five reads joined
    assert first.readonly and bytes(first) == data[:4096]
    second = bytes(live.read_waiting(read, buffer))  # the 1,024 left; the writer is still open, nothing more waits
    os.close(write)
    end = live.read_waiting(read, buffer)
    os.close(read)
    assert second == data[4096:] and len(end) == 0


def test_one_ctrl_d_ends_a_terminal(within_5s: None) -> None:
    terminal, reader = os.openpty()
    os.write(terminal, b"1\n2\n\x04")  # two lines, then Ctrl-D: the end, read once
    assert not live.joins(reader)
    got = b"".join(bytes(block) for block in live._blocks_of(reader, None, 0.2))
    os.close(terminal)
    os.close(reader)
    assert got == b"1\n2\n"


def test_a_pipe_is_widened_and_a_file_left_as_it_is(tmp_path: Path) -> None:
    read, write = os.pipe()
    live.widen_pipe(read)
    size = fcntl.fcntl(read, fcntl.F_GETPIPE_SZ)
    os.close(read)
    os.close(write)
    ceiling = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    assert size == (live.PIPE_BYTES if ceiling >= live.PIPE_BYTES else DEFAULT_PIPE)
    (tmp_path / "f").write_bytes(b"1\n")
    with open(tmp_path / "f", "rb") as fh:
        live.widen_pipe(fh.fileno())  # not a pipe: no error, nothing changed


@pytest.mark.parametrize("kind", ["pcap", "pcapng", "lines"])
def test_blocks_of_one_reused_buffer_give_the_keys_of_one_read(kind: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 5,003 bytes (more than ``HEAD_BYTES``, a multiple of no record or line) cut records and lines."""
    sources = (0x0A000000 + np.random.default_rng(3).integers(1, 50_000, 3000)).astype(np.uint32)
    data = {"pcap": lambda: pcap_bytes(sources, caplen=96),
            "pcapng": lambda: pcapng_of(sources.tolist()),
            "lines": lambda: "".join(f"{v}\n" for v in (sources - 0x0A000000).tolist()).encode()}[kind]()
    path = tmp_path / "cap"
    path.write_bytes(data)
    whole = np.concatenate(list(live.source_keys(str(path))))
    block = 5003
    assert block > live.HEAD_BYTES
    monkeypatch.setattr(live, "CHUNK_BYTES", block)
    decoders: list[live.Decoder] = []
    pending = []
    keys = []
    for got in live.source_keys(str(path), on_stream=decoders.append):
        keys.append(got)
        pending.append(decoders[0].pending_bytes)
    assert len(keys) > len(data) // block // 2 and sum(p > 0 for p in pending) > len(pending) // 2  # most cut
    np.testing.assert_array_equal(np.concatenate(keys), whole)
    assert whole.size == sources.size
