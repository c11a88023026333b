"""Sources that never end: item keys chunk by chunk from stdin, a growing file, or a folder of rotated captures.

A source is a sequence of byte streams (one per capture file; stdin and a single file are one stream), each read in
blocks of up to ``CHUNK_BYTES`` as they arrive (``os.read`` returns what a pipe holds, so a live ``tcpdump -w - -U``
is handled within one block). Each stream's first bytes choose its decoder:

* pcap or pcapng: ``CaptureKeys`` runs ``data.capture``'s compiled kernels (``scan_pcap``, ``fast_pcapng``,
  ``scan_pcapng``) over a buffer refilled from the stream. A record cut at the end of the buffer waits for the next
  block; keys are the IPv4 source addresses read big-endian, as for a capture file.
* anything else: a text or CSV line stream (``LineKeys``), one item a line in column ``column`` (0: the first field),
  integers or IPv4 addresses, parsed a block at a time by pandas' C reader. A first line that is neither is a header.

Following (``follow=True``): a file at its end is polled every ``poll`` seconds for more bytes; in a folder, the
files are read in name order and the reader moves to the next file once one with a later name exists and the current
one is at its end.
"""

from __future__ import annotations

import io
import ipaddress
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from dpstream.data.capture import (
    E_CAPLEN,
    MAX_INTERFACES,
    OK,
    PCAP_MAGIC,
    PCAPNG_MAGIC,
    S_BIG,
    TRUNCATED,
    _error,
    _header,
    _u32,
    fast_pcapng,
    ipv6_hash_key,
    scan_pcap,
    scan_pcapng,
)

CHUNK_BYTES = 1 << 22
"""Bytes asked of the source per read (a pipe may return fewer)."""
STDIN = "-"


def ipv4_label(key: int) -> str:
    """The dotted form of an IPv4 key (1.2.3.4 is 0x01020304); keys of 2^32 and above are IPv6 keys, shown as such."""
    return str(ipaddress.IPv4Address(key)) if 0 <= key < 1 << 32 else f"ipv6-key:{key:x}"


class CaptureKeys:
    """The keys of one pcap / pcapng byte stream, fed block by block (``feed``); state carried between blocks."""

    label_kind = "ipv4"

    def __init__(self, head: bytes, name: str, ipv6: str = "skip") -> None:
        """Read the format from the stream's first bytes (at least 24 for pcap; ``data.capture._header``)."""
        self.name = name
        self.fmt, self.state, self._skip = _header(Path(name), head)
        self.if_link = np.zeros(MAX_INTERFACES, dtype=np.int64)
        self.if_snap = np.zeros(MAX_INTERFACES, dtype=np.int64)
        self.tallies = np.zeros(4, dtype=np.int64)  # records, non-IPv4, too short, IPv6 keyed (capture.C_*)
        self.mode = ipv6_hash_key(ipv6)  # the secret of the IPv6 keys, from the OS: new per reader
        self._rest = b""  # bytes from a record or block start, not yet complete
        self._offset = 0  # stream offset of _rest[0] (for error messages)

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete record held for the next block (at the end of a stream: a truncated record)."""
        return len(self._rest)

    def feed(self, data: bytes) -> np.ndarray:
        """The keys of every record completed by ``data`` (uint32; int64 with ``ipv6="key"``)."""
        joined = self._rest + data
        buf = np.frombuffer(joined, dtype=np.uint8)
        words = np.frombuffer(joined, dtype=np.uint32, count=len(joined) // 4)
        size = buf.size
        pos, self._skip = min(self._skip, size), max(0, self._skip - size)
        out = np.empty(size // 12 + 1, dtype=np.int64 if self.mode.size else np.uint32)  # a record takes >= 12 bytes
        n = 0
        while pos < size:
            if self.fmt == "pcap":
                pos, got, status, a, b = scan_pcap(buf, pos, size, self.state, self.mode, out[n:], self.tallies)
            else:
                pos, got = fast_pcapng(buf, words, pos, size, self.state, self.if_link, self.if_snap, self.mode,
                                       out[n:], self.tallies)
                n += got
                got, status, a, b = 0, OK, 0, 0
                if pos < size:  # a block the fast loop leaves to the checked one
                    pos, got, status, a, b = scan_pcapng(buf, pos, pos + 1, self.state, self.if_link, self.if_snap,
                                                         self.mode, out[n:], self.tallies)
            n += got
            if status >= E_CAPLEN:
                btype = _u32(buf, pos, self.state[S_BIG]) if self.fmt == "pcapng" else 0
                raise _error(Path(self.name), self.fmt, self._offset + pos, status, a, b, btype)
            if status == TRUNCATED:
                break
        self._offset += pos
        self._rest = joined[pos:]
        return out[:n]


class LineKeys:
    """The items of a text or CSV line stream: integers or IPv4 addresses in one column, block by block."""

    def __init__(self, name: str, column: int = 0) -> None:
        """Items from field ``column`` (0-based) of each line; the kind (integer or IPv4) is fixed by the first line."""
        self.name = name
        self.column = column
        self.label_kind: str | None = None
        self._rest = b""
        self._line = 0

    @property
    def pending_bytes(self) -> int:
        """Bytes of a line not yet ended by a newline."""
        return len(self._rest)

    def feed(self, data: bytes, final: bool = False) -> np.ndarray:
        """The items of the lines completed by ``data`` (all of them when ``final``), as int64 keys."""
        joined = self._rest + data
        cut = len(joined) if final else joined.rfind(b"\n") + 1
        self._rest = joined[cut:]
        if cut == 0 or not joined[:cut].strip():
            return np.empty(0, dtype=np.int64)
        frame = pd.read_csv(io.BytesIO(joined[:cut]), header=None, usecols=[self.column], dtype=str,
                            skip_blank_lines=True, skipinitialspace=True)
        values = frame.iloc[:, 0].str.strip()
        first_line, self._line = self._line, self._line + len(values)
        if self.label_kind is None and len(values):
            self.label_kind = self._kind(values.iloc[0])
            if self.label_kind == "header":
                self.label_kind, values = None, values.iloc[1:]
                if len(values):
                    self.label_kind = self._kind(values.iloc[0])
        return self._keys(values, first_line)

    @staticmethod
    def _kind(value: str) -> str:
        if value.lstrip("-").isdigit():
            return "int"
        parts = value.split(".")
        return "ipv4" if len(parts) == 4 and all(p.isdigit() for p in parts) else "header"

    def _keys(self, values: pd.Series, first_line: int) -> np.ndarray:
        if self.label_kind == "int":
            numbers = pd.to_numeric(values, errors="coerce")
            if numbers.dtype.kind == "i":  # exact: no float round trip for ids above 2^53
                return numbers.to_numpy(dtype=np.int64)
            keys = numbers.to_numpy(dtype=np.float64)
        else:
            octets = values.str.split(".", expand=True)
            if octets.shape[1] != 4:
                octets = octets.reindex(columns=range(4))
            parts = octets.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
            bad = np.isnan(parts).any(axis=1) | (parts < 0).any(axis=1) | (parts > 255).any(axis=1)
            keys = np.where(bad, np.nan, parts @ np.array([1 << 24, 1 << 16, 1 << 8, 1], dtype=np.float64))
        wrong = np.flatnonzero(np.isnan(keys))
        if wrong.size:
            value = values.iloc[int(wrong[0])]
            raise ValueError(f"{self.name}: line {first_line + int(wrong[0]) + 1}: item {value!r} in column "
                             f"{self.column}: allowed: "
                             f"{'an integer' if self.label_kind == 'int' else 'an IPv4 address a.b.c.d'}, "
                             "as on the stream's first line")
        return keys.astype(np.int64)


Decoder = CaptureKeys | LineKeys


def _blocks_of(fd: int, follow: Callable[[], bool], poll: float) -> Iterator[bytes]:
    """Blocks read from ``fd``; at its end, while ``follow()`` holds, wait ``poll`` seconds and read again."""
    while True:
        data = os.read(fd, CHUNK_BYTES)
        if data:
            yield data
        elif follow():
            time.sleep(poll)
        else:
            return


def streams(source: str, follow: bool = False, poll: float = 0.2) -> Iterator[tuple[str, Iterator[bytes]]]:
    """(name, blocks) of each byte stream of ``source``: ``-`` (stdin), a file or a folder of files in name order."""
    if source == STDIN:
        yield "<stdin>", _blocks_of(sys.stdin.fileno(), lambda: False, poll)
        return
    path = Path(source)
    if path.is_dir():
        yield from _folder(path, follow, poll)
        return
    if not path.exists():
        raise ValueError(f"source {source!r} does not exist; allowed: '-' (stdin), a capture or text file, or a "
                         "folder of rotated captures")
    fd = os.open(path, os.O_RDONLY)
    try:
        yield str(path), _blocks_of(fd, lambda: follow, poll)
    finally:
        os.close(fd)


def _folder(path: Path, follow: bool, poll: float) -> Iterator[tuple[str, Iterator[bytes]]]:
    """The files of ``path`` in name order (hidden files left out); following, new files as they appear."""
    done: str | None = None
    while True:
        later = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                       and (done is None or p.name > done))
        if not later:
            if not follow:
                return
            time.sleep(poll)
            continue
        current = later[0]

        def newer(name: str = current.name) -> bool:  # follow this file until a later one exists
            return follow and not any(p.name > name for p in path.iterdir() if not p.name.startswith("."))

        fd = os.open(current, os.O_RDONLY)
        try:
            yield str(current), _blocks_of(fd, newer, poll)
        finally:
            os.close(fd)
        done = current.name


def decoder_for(head: bytes, name: str, column: int = 0, ipv6: str = "skip") -> Decoder:
    """A ``CaptureKeys`` when ``head`` starts with a pcap or pcapng magic, else a ``LineKeys``."""
    if head[:4] in PCAP_MAGIC or head[:4] == PCAPNG_MAGIC:
        return CaptureKeys(head, name, ipv6)
    return LineKeys(name, column)


def source_keys(source: str, follow: bool = False, column: int = 0, ipv6: str = "skip", poll: float = 0.2,
                on_stream: Callable[[Decoder], None] | None = None) -> Iterator[np.ndarray]:
    """Item keys of every stream of ``source`` in order, a block at a time (see the module docstring).

    ``on_stream`` is called with each stream's decoder once its format is known (labels), and again when the stream
    ends (a capture's ``pending_bytes`` then count a record cut off at its end).
    """
    for name, blocks in streams(source, follow, poll):
        for keys in _stream_keys(name, blocks, column, ipv6, on_stream or (lambda decoder: None)):
            if keys.size:
                yield keys


def _stream_keys(name: str, blocks: Iterator[bytes], column: int, ipv6: str,
                 on_stream: Callable[[Decoder], None]) -> Iterator[np.ndarray]:
    """The keys of one stream: its format from its first 24 bytes (or its first line, or all of a shorter stream).

    ``on_stream`` hears of the decoder before the first keys whose labels it fixes: a capture's at once, a line
    stream's once its first item (not a header) has fixed the kind, integer or IPv4.
    """
    head = b""
    decoder: Decoder | None = None
    told: str | None = None
    for data in blocks:
        if decoder is None:
            head += data
            magic = head[:4] in PCAP_MAGIC or head[:4] == PCAPNG_MAGIC
            if len(head) < 24 and (magic or b"\n" not in head):
                continue
            decoder, data = decoder_for(head, name, column, ipv6), head
        keys = decoder.feed(data)
        told = _tell(decoder, told, on_stream)
        yield keys
    if decoder is None:
        if not head:
            return
        decoder = decoder_for(head, name, column, ipv6)
        keys = decoder.feed(head)
        told = _tell(decoder, told, on_stream)
        yield keys
    if isinstance(decoder, LineKeys):
        keys = decoder.feed(b"", final=True)
        _tell(decoder, told, on_stream)
        yield keys
    on_stream(decoder)


def _tell(decoder: Decoder, told: str | None, on_stream: Callable[[Decoder], None]) -> str | None:
    """Call ``on_stream`` when the decoder's label kind is newly known; the kind told so far."""
    kind = decoder.label_kind if isinstance(decoder, LineKeys) else "capture"
    if kind is not None and kind != told:
        on_stream(decoder)
    return kind or told
