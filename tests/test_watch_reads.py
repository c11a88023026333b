"""``dpstream watch``'s reads (``data.live.read_waiting``): a pipe widened, the bytes waiting joined, one buffer."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import numpy as np
import pytest
from capture_files import pcapng_of

from dpstream.data import live
from dpstream.data.synthetic_capture import pcap_bytes

DEFAULT_PIPE = 1 << 16  # Linux's pipe buffer before F_SETPIPE_SZ


def test_a_read_joins_the_bytes_waiting_and_never_waits_for_more(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.readv
    # each read gives at most 1,000 bytes, as a small pipe buffer would
    monkeypatch.setattr(live.os, "readv", lambda fd, buffers: real(fd, [buffers[0][:1000]]))
    read, write = os.pipe()
    data = bytes(range(256)) * 20  # 5,120 bytes
    os.write(write, data)
    buffer = bytearray(4096)
    first = bytes(live.read_waiting(read, buffer))  # five reads joined
    second = bytes(live.read_waiting(read, buffer))  # the 1,024 left; the writer is still open, nothing more waits
    os.close(write)
    end = live.read_waiting(read, buffer)
    os.close(read)
    assert first == data[:4096] and second == data[4096:] and len(end) == 0


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
    sources = (0x0A000000 + np.random.default_rng(3).integers(1, 50, 3000)).astype(np.uint32)
    data = {"pcap": lambda: pcap_bytes(sources, caplen=96),
            "pcapng": lambda: pcapng_of(sources.tolist()),
            "lines": lambda: "".join(f"{v}\n" for v in sources.tolist()).encode()}[kind]()
    path = tmp_path / "cap"
    path.write_bytes(data)
    whole = np.concatenate(list(live.source_keys(str(path))))
    monkeypatch.setattr(live, "CHUNK_BYTES", 1000)  # blocks of 1,000 bytes cut records and lines, buffer reused
    blocks = list(live.source_keys(str(path)))
    assert len(blocks) > len(data) // 2000  # many blocks, not one
    np.testing.assert_array_equal(np.concatenate(blocks), whole)
    assert whole.size == sources.size and set(whole.tolist()) == set(sources.tolist())
