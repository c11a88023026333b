"""Sources that never end: item keys chunk by chunk from stdin, a growing file, or a folder of rotated captures.

A source is a sequence of byte streams (one per capture file; stdin and a single file are one stream), each read in
blocks of up to ``CHUNK_BYTES`` as they arrive (``read_waiting``: what a pipe holds, never waiting for more, so a live
``tcpdump -w - -U`` is handled within one block). Each stream's first bytes choose its decoder:

* pcap or pcapng: ``CaptureKeys`` runs ``data.capture``'s compiled kernels (``scan_pcap``, ``fast_pcapng``,
  ``scan_pcapng``) over a buffer refilled from the stream. A record cut at the end of the buffer waits for the next
  block; keys are the IPv4 source addresses read big-endian, as for a capture file.
* anything else: a text or CSV line stream (``LineKeys``), one item a line in column ``column`` (0: the first field),
  integers or IPv4 addresses, parsed a block at a time by pandas' C reader. A first line that is neither is a header.
  A line's key depends on that line alone (``_line_items``): never a float round trip.

Following (``follow=True``): a file at its end is polled every ``poll`` seconds for more bytes; in a folder, the
files are read in the rotation's order (``natural_key``: digit runs compare as numbers, so tcpdump -C's cap9 comes
before cap10) and the reader moves to the next file once a later one exists and the current one is at its end.
A name that does not fit the first file's rotation (``fits``) is refused.

``Reading`` records the (name, size, packets, fingerprint, mtime) of each file read, the list a restart checks
before it skips the packets a state released (``check_resume``). The fingerprint holds no packet: it is a digest of
the file's capture header (pcap global header, or pcapng section and interface blocks; nothing of a line stream)
and its inode, so a state file stays a function of the configuration and public values (``fingerprint``).
``probe`` reads a file source's first block before any state is touched, so a bad source is refused before an
epoch opens.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import ipaddress
import os
import re
import select
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISFIFO, S_ISREG, S_ISSOCK
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpstream.data.capture import (
    E_CAPLEN,
    KNOWN_LINKTYPES,
    MAX_INTERFACES,
    OK,
    PCAP_MAGIC,
    PCAPNG_MAGIC,
    S_BIG,
    TRUNCATED,
    UnknownLinkType,
    _error,
    _header,
    _u32,
    fast_pcapng,
    ipv6_hash_key,
    scan_pcap,
    scan_pcapng,
)
from dpstream.hashing import canonical_keys

CHUNK_BYTES = 1 << 22
"""The largest block read at once (``read_waiting``; a pipe may give fewer)."""
PIPE_BYTES = 1 << 20
"""The pipe buffer asked for stdin (``widen_pipe``): Linux's default ceiling for an unprivileged process."""
HEAD_BYTES = 1 << 12
"""Bytes of a block joined with a record cut at the end of the previous one (``CaptureKeys.feed``)."""
STDIN = "-"


def ipv4_label(key: int) -> str:
    """The dotted form of an IPv4 key (1.2.3.4 is 0x01020304); keys of 2^32 and above are IPv6 keys, shown as such."""
    return str(ipaddress.IPv4Address(key)) if 0 <= key < 1 << 32 else f"ipv6-key:{key:x}"


class CaptureKeys:
    """The keys of one pcap / pcapng byte stream, fed block by block (``feed``); state carried between blocks."""

    label_kind = "ipv4"

    def __init__(self, head: bytes, name: str, ipv6: str | np.ndarray = "skip") -> None:
        """Read the format from the stream's first bytes (at least 24 for pcap; ``data.capture._header``).

        ``ipv6``: "skip", "key" (a secret drawn from the OS for this reader) or the kernels' IPv6 argument itself
        (``ipv6_hash_key``), shared by the readers of one source so an IPv6 host has one key in every file.
        """
        self.name = name
        self.fmt, self.state, self._skip = _header(Path(name), head)
        self.if_link = np.zeros(MAX_INTERFACES, dtype=np.int64)
        self.if_snap = np.zeros(MAX_INTERFACES, dtype=np.int64)
        self.tallies = np.zeros(4, dtype=np.int64)  # records, non-IPv4, too short, IPv6 keyed (capture.C_*)
        self.secret = ipv6_hash_key(ipv6) if isinstance(ipv6, str) else ipv6
        if self.secret.dtype != np.uint64 or self.secret.shape not in ((0,), (2,)):
            raise ValueError(f"ipv6 must be 'skip', 'key' or a uint64 array of 0 or 2 words (ipv6_hash_key), got "
                             f"{self.secret.dtype} of shape {self.secret.shape}")
        self._rest = b""  # bytes from a record or block start, not yet complete
        self._offset = 0  # stream offset of _rest[0] (for error messages)

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete record held for the next block (at the end of a stream: a truncated record)."""
        return len(self._rest)

    def feed(self, data: bytes | memoryview) -> np.ndarray:
        """The keys of every record completed by ``data`` (uint32; int64 with ``ipv6="key"``).

        ``data`` is read in place: only a record cut at the end of the previous block is joined with the first
        ``HEAD_BYTES`` of this one (more if the record is longer), and the bytes of a record cut at its end are kept.
        """
        view = memoryview(data).cast("B")
        skip = min(self._skip, len(view))
        self._skip -= skip
        self._offset += skip
        view = view[skip:]
        out = np.empty((len(self._rest) + len(view)) // 12 + 1, dtype=np.int64 if self.secret.size else np.uint32)
        n = 0  # keys written (a record takes >= 12 bytes)
        head = HEAD_BYTES
        while self._rest:  # finish the held record from the head of ``view``
            held, whole = len(self._rest), head >= len(view)
            joined = self._rest + view[:head]
            n, pos = self._scan(joined, len(joined) if whole else held, out, n)
            self._offset += pos
            if whole:
                self._rest = joined[pos:]
                return out[:n]
            if pos >= held:
                view, self._rest = view[pos - held:], b""
                break
            self._rest = self._rest[pos:]  # a record longer than the head: a longer one
            head *= 8
        n, pos = self._scan(view, len(view), out, n)
        self._offset += pos
        self._rest = bytes(view[pos:])
        return out[:n]

    def _scan(self, data: bytes | memoryview, stop: int, out: np.ndarray, n: int) -> tuple[int, int]:
        """Key the records of ``data`` (starting at a record) that start before ``stop`` into out[n:]: (n, end).

        The end is the first byte not consumed: ``stop`` or beyond, or the start of a record cut short.
        """
        buf = np.frombuffer(data, dtype=np.uint8)
        words = np.frombuffer(data, dtype=np.uint32, count=buf.size // 4)
        pos = 0
        while pos < stop:
            if self.fmt == "pcap":
                pos, got, status, a, b = scan_pcap(buf, pos, stop, self.state, self.secret, out[n:], self.tallies)
            else:
                pos, got = fast_pcapng(buf, words, pos, stop, self.state, self.if_link, self.if_snap, self.secret,
                                       out[n:], self.tallies)
                n += got
                got, status, a, b = 0, OK, 0, 0
                if pos < stop:  # a block the fast loop leaves to the checked one
                    pos, got, status, a, b = scan_pcapng(buf, pos, pos + 1, self.state, self.if_link, self.if_snap,
                                                         self.secret, out[n:], self.tallies)
            n += got
            if status >= E_CAPLEN:
                btype = _u32(buf, pos, self.state[S_BIG]) if self.fmt == "pcapng" else 0
                raise _error(Path(self.name), self.fmt, self._offset + pos, status, a, b, btype)
            if status == TRUNCATED:
                break
        return n, pos


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

    def feed(self, data: bytes | memoryview, final: bool = False) -> np.ndarray:
        """The items of the lines completed by ``data`` (all of them when ``final``), as int64 keys."""
        joined = self._rest + data
        cut = len(joined) if final else joined.rfind(b"\n") + 1
        self._rest = joined[cut:]
        if cut == 0 or not joined[:cut].strip():
            return np.empty(0, dtype=np.int64)
        try:
            frame = pd.read_csv(io.BytesIO(joined[:cut]), header=None, usecols=[self.column], dtype=str,
                                skip_blank_lines=True, skipinitialspace=True)
        except ValueError as exc:  # pandas' errors name neither the stream nor the line
            if "usecols" in str(exc).lower():  # pandas: "usecols ..." or "Usecols do not match columns ..."
                first = joined[:cut].lstrip(b"\r\n").split(b"\n", 1)[0].decode("utf-8", "replace")
                fields = len(next(csv.reader([first], skipinitialspace=True), [""]))
                columns = "0" if fields == 1 else f"0 to {fields - 1}"
                raise ValueError(f"{self.name}: --column {self.column} (0-based) asks for field {self.column + 1}, "
                                 f"but the lines from line {self._line + 1} on have {fields} field(s), column(s) "
                                 f"{columns}; allowed: --column {columns}") from None
            what = "bytes that are not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc).strip()
            raise ValueError(f"{self.name}: the lines from line {self._line + 1} on: {what}; allowed: a pcap or "
                             "pcapng capture, or text lines of integers or IPv4 addresses") from None
        values = frame.iloc[:, 0].str.strip()
        first_line, self._line = self._line, self._line + len(values)
        if self.label_kind is None and len(values):
            self.label_kind = self._kind(values.iloc[0])
            if self.label_kind == "header":  # its line counted, its value dropped
                self.label_kind, values, first_line = None, values.iloc[1:], first_line + 1
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
            if numbers.dtype.kind == "i":  # every line an int64, parsed exactly
                return numbers.to_numpy(dtype=np.int64)
            if not values.isna().any():
                return _line_items(values)
            keys = np.where(values.isna(), np.nan, 0.0)  # an empty field: refused below
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
            value = "" if pd.isna(value) else value  # an empty field
            raise ValueError(f"{self.name}: line {first_line + int(wrong[0]) + 1}: item {value!r} in column "
                             f"{self.column}: allowed: "
                             f"{'an integer' if self.label_kind == 'int' else 'an IPv4 address a.b.c.d'}, "
                             "as on the stream's first line")
        return keys.astype(np.int64)


_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def _line_items(values: pd.Series) -> np.ndarray:
    """The int64 keys of an integer stream's lines, each from its own text alone (never via a float).

    An integer that fits int64 is itself (``_tracker.as_items`` canonicalises it, as any integer item); any other
    line, a larger integer or text that is not an integer, is its canonical key (``hashing.canonical_keys``: the
    integer's bytes or the UTF-8 text, hashed mod 2^61 - 1), as a trace's or item file's values are keyed.
    """
    out = np.empty(len(values), dtype=np.int64)
    short = values.str.fullmatch(r"[+-]?[0-9]{1,18}").to_numpy(dtype=bool)  # < 10^18: fits int64
    out[short] = pd.to_numeric(values[short]).to_numpy(dtype=np.int64)
    rest = np.flatnonzero(~short)
    if rest.size:  # few lines: long digit runs, or text
        items = [int(v) if re.fullmatch(r"[+-]?[0-9]+", v) else v for v in values.iloc[rest]]
        fits = np.array([isinstance(v, int) and _INT64_MIN <= v <= _INT64_MAX for v in items], dtype=bool)
        out[rest[fits]] = np.array([v for v, f in zip(items, fits, strict=True) if f], dtype=np.int64)
        other = [v for v, f in zip(items, fits, strict=True) if not f]
        if other:
            out[rest[~fits]] = canonical_keys(np.array(other, dtype=object)).astype(np.int64)
    return out


Decoder = CaptureKeys | LineKeys


def widen_pipe(fd: int) -> None:
    """Grow ``fd``'s pipe buffer to ``PIPE_BYTES`` when it is a smaller pipe (Linux ``F_SETPIPE_SZ``).

    A read of a pipe returns at most its buffer, 64 KiB by default. Anything else (a file, a terminal, a pipe already
    as large, a system without the call, a limit below ``PIPE_BYTES`` in ``/proc/sys/fs/pipe-max-size``) is left as
    it is.
    """
    try:
        if fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < PIPE_BYTES:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError):
        pass


def joins(fd: int) -> bool:
    """Whether ``read_waiting`` joins the reads of ``fd``: a pipe or a socket, whose end stays seen once reached.

    A regular file gives a whole buffer a read anyway, and a terminal's end (Ctrl-D) is read once, then gone.
    """
    mode = os.fstat(fd).st_mode
    return S_ISFIFO(mode) or S_ISSOCK(mode)


def read_waiting(fd: int, buffer: bytearray, join: bool = True) -> memoryview:
    """One read of ``fd`` into ``buffer`` (blocking until something arrives), then, with ``join``, what else waits.

    Returns the bytes read as a read-only view of ``buffer`` (empty at the end of ``fd``). Nothing waits for input
    that has not arrived, so a slow link's packets are handled as they come. A live pipe hands a read at most its
    buffer, so at line rate the joined reads give the watcher blocks as large as ``buffer``, not one per pipe read
    (docs/guide/watch.md, "Through the command itself"). Read-only, the view types as the joined ``bytes`` do in the
    compiled readers, so they compile once.
    """
    view = memoryview(buffer)
    size = os.readv(fd, [view])
    if join and 0 < size < len(buffer):
        waiting = select.poll()
        waiting.register(fd, select.POLLIN)
        while size < len(buffer) and waiting.poll(0):
            got = os.readv(fd, [view[size:]])
            if not got:  # the end of a pipe: the next read sees it again
                break
            size += got
    return view[:size].toreadonly()


def _blocks_of(fd: int, follow: Callable[[], bool] | None, poll: float) -> Iterator[memoryview]:
    """Blocks read from ``fd`` (``read_waiting``); at its end, while ``follow()`` holds, wait ``poll`` s and read again.

    Each block is a view of one buffer, overwritten by the next read: a caller keeping a block copies it.
    Once ``follow()`` fails, ``fd`` is read to its end once more: bytes written between the last read and that
    check (a writer's last flush before it opens the next file) are not lost. ``follow=None`` (stdin, which a
    terminal would block on after its end): read to the end once.
    """
    widen_pipe(fd)
    buffer, join = bytearray(CHUNK_BYTES), joins(fd)
    while True:
        data = read_waiting(fd, buffer, join)
        if data:
            yield data
        elif follow is None:
            return
        elif follow():
            time.sleep(poll)
        else:  # a later file exists, so the writer closed this one: what it flushed last is read to the end
            while data := read_waiting(fd, buffer, join):
                yield data
            return


def streams(source: str, follow: bool = False, poll: float = 0.2) -> Iterator[tuple[str, Iterator[memoryview]]]:
    """(name, blocks) of each byte stream of ``source``: ``-`` (stdin), a file or a folder of rotated files.

    A block is valid until the next one is read (``_blocks_of``): ``bytes(block)`` keeps it.

    A folder's files are read in the rotation's order (``rotation_files``).
    """
    if source == STDIN:
        yield "<stdin>", _blocks_of(sys.stdin.fileno(), None, poll)
        return
    path = Path(source)
    if path.is_dir():
        yield from _folder(path, follow, poll)
        return
    if not path.exists():
        raise ValueError(f"source {source!r} does not exist; allowed: {SOURCES}")
    fd = os.open(path, os.O_RDONLY)
    try:
        yield str(path), _blocks_of(fd, lambda: follow, poll)
    finally:
        os.close(fd)


SOURCES = "'-' (stdin), a capture or text file, or a folder of rotated captures"
"""What ``dpstream watch`` reads, as its refusals name it."""
PROBE_BYTES = 1 << 16
"""Bytes of a file source's first file read and decoded before anything is opened (``probe``)."""
FINGERPRINT_BYTES = 1 << 12
"""Bytes of a file's start in which its capture header is looked for (``capture_header``; ``FileRead``)."""


def natural_key(name: str) -> tuple[tuple[str | int, ...], str]:
    """Sort key of a rotated file's name: digit runs compare as numbers (cap, cap1, cap2, ..., cap9, cap10)."""
    parts = re.split(r"(\d+)", name)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), name


def _pattern(name: str) -> str:
    return re.sub(r"\d+", "\0", name)


def fits(name: str, first: str) -> bool:
    """Whether ``name`` belongs to the rotation whose first file is ``first``.

    Its digit runs may differ (tcpdump -G's strftime fields, zero-padded counters), and it may add one number at the
    end (tcpdump -C names its files cap, cap1, cap2, ...; with -G too: cap-0900.pcap, cap-0900.pcap1, ...).
    """
    pattern, own = _pattern(first), _pattern(name)
    return own in (pattern, pattern + "\0")


def rotation_files(path: Path, first: str | None = None) -> list[str]:
    """The names of the files in folder ``path`` in rotation order (``natural_key``), hidden files left out.

    Every name must fit the rotation of ``first`` (by default the first name in that order; ``fits``): a file that
    does not, which could sort anywhere among them, is refused.
    """
    return Rotation(path, first).names()


class Rotation:
    """The files of a rotation folder as they appear: each new name checked once (``fits``), all kept in order.

    A followed folder is listed at every poll; only names not seen before are checked and sorted in, so a folder of
    many files costs a listing a poll, not a sort.
    """

    def __init__(self, path: Path, first: str | None = None) -> None:
        """No name seen yet; ``first``: the rotation's first file (default: the first in order of the first listing)."""
        self.path, self.first = path, first
        self.seen: set[str] = set()
        self.order: list[str] = []

    def names(self) -> list[str]:
        """Every file's name in rotation order, after listing the folder again (a foreign name refused)."""
        new = []
        with os.scandir(self.path) as entries:
            for entry in entries:
                if entry.name not in self.seen and not entry.name.startswith(".") and entry.is_file():
                    new.append(entry.name)
        if new:
            self.order = sorted([*self.order, *new], key=natural_key)
            self.first = self.first or self.order[0]
            for name in new:
                if not fits(name, self.first):
                    raise ValueError(f"folder {self.path}: file {name!r} does not fit the rotation of its first file "
                                     f"{self.first!r} (the same name with other numbers, or one number added at its "
                                     "end, as tcpdump -C and -G name them); allowed: only the rotated captures in the "
                                     "folder")
            self.seen.update(new)
        return self.order


def _folder(path: Path, follow: bool, poll: float) -> Iterator[tuple[str, Iterator[memoryview]]]:
    """The files of ``path`` in rotation order (``Rotation``); following, new files as they appear.

    A file is followed until a later one exists. A file that appears sorting before the one being read would never
    be read: it is refused.
    """
    rotation = Rotation(path)
    last = ""  # the last file read
    read = 0  # files read: the first ``read`` of the order, unless one appeared among them
    done: set[str] = set()
    while True:
        names = rotation.names()
        if read and names[read - 1] != last:
            early = next(n for n in names if n not in done and natural_key(n) < natural_key(last))
            raise ValueError(f"folder {path}: file {early!r} appeared after {last!r} was read, but comes "
                             "before it in the rotation's order, so it would never be read; allowed: files that come "
                             "after the ones read")
        if read == len(names):
            if not follow:
                return
            time.sleep(poll)
            continue
        current = names[read]

        def newer(name: str = current, index: int = read) -> bool:  # follow it until a later one (or an early
            names = rotation.names()  # one, refused below) exists
            return follow and names[-1] == name and names[index] == name

        try:
            fd = os.open(path / current, os.O_RDONLY)
        except OSError as exc:
            raise ValueError(f"folder {path}: file {current!r}: {exc.strerror}; allowed: rotated files that stay "
                             "until read") from None
        try:
            yield str(path / current), _blocks_of(fd, newer, poll)
        finally:
            os.close(fd)
        read += 1
        last = current
        done.add(current)


def capture_header(head: bytes) -> bytes:
    """The capture header at the start of ``head`` (a file's first bytes): no packet, no line.

    A pcap file's 24-byte global header (magic, version, snaplen, link type); a pcapng file's section header block
    and the interface description blocks that follow it, up to the first other block; nothing (b"") for a text or
    CSV line stream, whose first line may be an item. Only whole blocks within ``head`` are taken.
    """
    if head[:4] in PCAP_MAGIC:
        return head[:24]
    if head[:4] != PCAPNG_MAGIC or len(head) < 12:
        return b""
    order: Literal["little", "big"] = "little" if head[8:12] == b"\x4d\x3c\x2b\x1a" else "big"
    end = 0
    while end + 8 <= len(head):
        kind = int.from_bytes(head[end:end + 4], order)
        length = int.from_bytes(head[end + 4:end + 8], order)
        if kind not in (0x0A0D0D0A, 1) or (kind == 0x0A0D0D0A and end) or length < 12 or end + length > len(head):
            break
        end += length
    return head[:end]


def fingerprint(head: bytes, inode: int) -> str:
    """16 hex digits of BLAKE2b over a file's capture header (``capture_header`` of ``head``) and its inode.

    Nothing in it depends on a packet: two captures that differ in any packet's contents, with the same header, in
    the same file, have the same fingerprint. A file replaced under its name (a new file, another inode), or a
    capture with another header, has another.
    """
    blob = capture_header(head[:FINGERPRINT_BYTES]) + int(inode).to_bytes(8, "little")
    return hashlib.blake2b(blob, digest_size=8, person=b"dpstream-file/3").hexdigest()


def content_digest(head: bytes) -> str:
    """The fingerprint a format-2 state recorded: BLAKE2b over a file's first ``FINGERPRINT_BYTES`` (packets too).

    Only checked (``check_resume``), never written again: the next save records ``fingerprint`` instead.
    """
    return hashlib.blake2b(head[:FINGERPRINT_BYTES], digest_size=8, person=b"dpstream-file").hexdigest()


@dataclass
class FileRead:
    """One file of a source as far as it was read: its name, the bytes read, the packets (keys) they gave.

    ``inode`` is the file's when it was opened; ``mtime`` (ns) its modification time once read to its end (None
    before). Its first bytes are held in memory only until its capture header is known (``fingerprint``).
    """

    name: str
    path: str = ""
    size: int = 0
    packets: int = 0
    inode: int = 0
    mtime: int | None = None
    _head: bytes = b""
    _fingerprint: str | None = None

    def add(self, data: bytes | memoryview) -> None:
        """Count a block read from the file (its first ``FINGERPRINT_BYTES`` kept until fingerprinted)."""
        self.size += len(data)
        if self._fingerprint is None:
            self._head += bytes(data[:FINGERPRINT_BYTES - len(self._head)])
            if len(self._head) == FINGERPRINT_BYTES:
                self._fingerprint, self._head = fingerprint(self._head, self.inode), b""

    @property
    def fingerprint(self) -> str:
        """``fingerprint`` of the bytes read so far (of the first ``FINGERPRINT_BYTES`` of them) and the inode."""
        return self._fingerprint or fingerprint(self._head, self.inode)


class Reading:
    """What a file or folder source has read, file by file; on a restart, the files a state released, skipped.

    ``released(step)`` is the list a state records: ``[name, size, packets, fingerprint, mtime]`` of each file the
    first ``step`` packets came from, in order (the last one's packets those before ``step``, its size the bytes
    read; ``FileRead``).
    With ``resume`` (such a list), the source's first files must be those, the same (``check_resume`` before
    anything is read; while reading, each file's packets): their released packets are dropped, and every other
    file, or a changed one, is refused. With ``skip`` (a state of format 1, which kept no list), the first ``skip``
    packets are dropped, whatever files they come from.
    """

    def __init__(self, resume: list[list[Any]] | None = None, skip: int = 0, state: str = "the state") -> None:
        """Nothing read yet."""
        self.files: list[FileRead] = []
        self.resume = resume or []
        self.skip = skip
        self.state = state

    def blocks(self, name: str, blocks: Iterator[memoryview]) -> Iterator[memoryview]:
        """The blocks of a new stream, counted (a resumed file's name checked against the state's)."""
        index = len(self.files)
        if index < len(self.resume) and Path(name).name != self.resume[index][0]:
            raise self._changed(index, f"{Path(name).name!r} is read in its place")
        stat = _stat(name)
        entry = FileRead(Path(name).name, path=name, inode=0 if stat is None else stat.st_ino)
        self.files.append(entry)
        for data in blocks:
            entry.add(data)
            yield data

    def take(self, keys: np.ndarray) -> np.ndarray:
        """The keys of the current file less those a state released (counted either way)."""
        index, entry = len(self.files) - 1, self.files[-1]
        before = entry.packets
        entry.packets += keys.size
        if index < len(self.resume):
            record = self.resume[index]
            if entry.size > record[1] and entry.packets < record[2]:  # beyond its bytes then (a last line
                # without a newline, counted at the end of the stream then, is counted here once one follows it)
                raise self._changed(index, f"its first {entry.size} bytes now hold {entry.packets} packets")
            return keys[max(0, min(keys.size, record[2] - before)):]
        drop = min(keys.size, self.skip)
        self.skip -= drop
        return keys[drop:]

    def ended(self) -> None:
        """The current file is read to its end: a resumed one must hold the packets the state released of it."""
        index, entry = len(self.files) - 1, self.files[-1]
        stat = _stat(entry.path)
        entry.mtime = None if stat is None else stat.st_mtime_ns
        if index < len(self.resume):
            record = self.resume[index]
            last = index == len(self.resume) - 1
            if entry.packets < record[2] or (not last and entry.packets != record[2]):
                raise self._changed(index, f"it now holds {entry.packets} packets")

    def released(self, step: int) -> list[list[Any]]:
        """``[name, size, packets, fingerprint, mtime]`` of each file the first ``step`` packets came from."""
        out: list[list[Any]] = []
        total = 0
        for entry in self.files:
            if total >= step:
                break
            packets = min(entry.packets, step - total)
            out.append([entry.name, entry.size, packets, entry.fingerprint, entry.mtime])
            total += packets
        if total != step:
            raise AssertionError(f"{total} packets read, {step} released")
        return out

    def _changed(self, index: int, what: str) -> ValueError:
        return changed(self.state, index, self.resume[index], what)


def _stat(name: str) -> os.stat_result | None:
    """``os.stat`` of a file a source reads (None for stdin, or a file gone)."""
    try:
        return os.stat(name) if name != "<stdin>" else None
    except OSError:
        return None


def changed(state: str, index: int, record: list[Any], what: str) -> ValueError:
    """The one-line refusal of a restart whose ``index``-th file is not the one the state ``record``-ed."""
    return ValueError(f"state {state}: file {index + 1} of the source was {record[0]!r} ({record[1]} bytes read, "
                      f"{record[2]} packets released), but {what}; the source's files changed since, so its released "
                      "packets cannot be skipped and could be counted in two epochs; allowed: the files as they were "
                      "read (a file may only grow at its end, and only the last one read), or a new --state")


def check_resume(source: str, resume: list[list[Any]], state: str = "the state") -> None:
    """Refuse a restart unless ``source``'s first files are those a state read (``resume``, ``Reading``).

    Names in order, sizes (the same; the last one's at least), the fingerprints (capture header and inode: a file
    replaced under its name is refused) and, of each file but the last, the modification time it had when read to
    its end (a file rewritten in place to its old size is refused). The last file may have grown, so its mtime is not
    checked: one rewritten in place, same inode and header, to at least its recorded size is not told from one that
    grew (docs/guide/watch.md: no ring buffers). A record of a format-2 state (4 fields, a digest of the first 4 KiB,
    ``content_digest``) is checked as then; the next save records the new fields. The refusal is one line naming
    the file.
    """
    path = Path(source)
    names = rotation_files(path) if path.is_dir() else [path.name]
    files = [path / n for n in names] if path.is_dir() else [path]
    for index, record in enumerate(resume):
        if index >= len(names):
            raise changed(state, index, record, "it is gone")
        if names[index] != record[0]:
            raise changed(state, index, record, f"{names[index]!r} is in its place")
        stat = files[index].stat()
        if not S_ISREG(stat.st_mode):
            raise changed(state, index, record, "it is a pipe or device, which cannot be read again")
        last = index == len(resume) - 1
        if stat.st_size < record[1] or (not last and stat.st_size != record[1]):
            raise changed(state, index, record, f"it is now {stat.st_size} bytes")
        with open(files[index], "rb") as fh:
            head = fh.read(min(record[1], FINGERPRINT_BYTES))
        if len(record) == 4:  # format 2: a digest of the first bytes, checked once (the next save drops it)
            if content_digest(head) != record[3]:
                raise changed(state, index, record, "its first bytes differ from those read")
            continue
        if fingerprint(head, stat.st_ino) != record[3]:
            raise changed(state, index, record, "it is another file (its inode or capture header differ from the "
                          "one read)")
        if not last and record[4] is not None and stat.st_mtime_ns != record[4]:
            raise changed(state, index, record, "it was modified after it was read to its end")


def probe(source: str, column: int = 0, ipv6: str = "skip") -> None:
    """Refuse a source that cannot be read, before any state is touched: one line naming it and what is allowed.

    It must exist; a folder's names must fit one rotation (``rotation_files``); a file's (a folder's first file's)
    first ``PROBE_BYTES`` must decode (a pcap or pcapng header and records, or lines of integers or IPv4 addresses
    in ``column``). stdin and pipes are not read here: their first block is read before an epoch opens.
    """
    if source == STDIN:
        return
    path = Path(source)
    try:
        if not path.exists():
            raise ValueError(f"source {source!r} does not exist; allowed: {SOURCES}")
        if path.is_dir():
            names = rotation_files(path)
            if not names:
                return
            path = path / names[0]
        if not path.is_file():
            return
        with open(path, "rb") as fh:
            head = fh.read(PROBE_BYTES)
    except OSError as exc:
        raise ValueError(f"source {source!r}: {exc.strerror or exc}; allowed: {SOURCES}, readable") from None
    if not head:
        return
    decoder = decoder_for(head, str(path), column, ipv6)
    if isinstance(decoder, LineKeys):
        decoder.feed(head, final=len(head) < PROBE_BYTES)
    else:
        decoder.feed(head)


def decoder_for(head: bytes, name: str, column: int = 0, ipv6: str | np.ndarray = "skip") -> Decoder:
    """A ``CaptureKeys`` when ``head`` starts with a pcap or pcapng magic, else a ``LineKeys``."""
    if head[:4] in PCAP_MAGIC or head[:4] == PCAPNG_MAGIC:
        try:
            return CaptureKeys(head, name, ipv6)
        except UnknownLinkType as unknown:
            raise ValueError(f"{name}: pcap link type {unknown.linktype} is not one the reader decodes; allowed: link "
                             f"types {', '.join(map(str, KNOWN_LINKTYPES))}") from None
    return LineKeys(name, column)


def source_keys(source: str, follow: bool = False, column: int = 0, ipv6: str = "skip", poll: float = 0.2,
                on_stream: Callable[[Decoder], None] | None = None,
                reading: Reading | None = None) -> Iterator[np.ndarray]:
    """Item keys of every stream of ``source`` in order, a block at a time (see the module docstring).

    ``on_stream`` is called with each stream's decoder once its format is known (labels), and again when the stream
    ends (a capture's ``pending_bytes`` then count a record cut off at its end). ``reading`` counts what each file
    gave (and skips what a state released: ``Reading``). With ``ipv6="key"`` one secret is drawn from the operating
    system per call, shared by every stream's reader: an IPv6 host has one key in every file of a rotation.
    """
    reading = reading if reading is not None else Reading()
    secret = ipv6_hash_key(ipv6)
    for name, blocks in streams(source, follow, poll):
        for keys in _stream_keys(name, reading.blocks(name, blocks), column, secret,
                                 on_stream or (lambda decoder: None)):
            keys = reading.take(keys)
            if keys.size:
                yield keys
        reading.ended()


def _stream_keys(name: str, blocks: Iterator[memoryview], column: int, ipv6: np.ndarray,
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
            decoder, data = decoder_for(head, name, column, ipv6), memoryview(head)
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
