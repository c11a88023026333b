"""Packet traces (e.g. CAIDA) as streams of IPv4 source addresses, read without loading the file.

Formats (``fmt``): ``pcap`` and ``pcapng`` (framing by dpkt; link types Ethernet incl. VLAN tags,
raw IP, IPv4, Linux cooked v1/v2, BSD loopback), ``csv`` (a packet-capture export, e.g. Wireshark /
tshark: one row per packet, the source address in column ``column``, a name or a 0-based index),
``raw4`` (4-byte IPv4 addresses, one per packet) and ``raw13`` (13-byte 5-tuple records: source IP,
destination IP, source port, destination port, protocol -- the format common in sketch research).
``auto`` recognises pcap / pcapng by their magic numbers and csv / raw4 / raw13 by the extensions
``.csv`` (``.txt``), ``.raw4`` and ``.raw13``.

Items are source addresses as uint32 (network byte order read as a big-endian number, so 1.2.3.4 is
0x01020304; ``byteorder`` switches raw records to little-endian). Frames that are not IPv4 (IPv6,
ARP, ..., or a CSV source that is not a dotted quad) are skipped and counted in ``TraceStats``; so are
IPv4 frames captured too short to hold the source address. A final record cut short (file truncated)
raises ``TruncatedTraceError`` by default; ``on_truncated="skip"`` drops it and counts it instead.
``caida_trace`` reports the records read and skipped to the trials (``rows_read``, ``rows_skipped``) and
warns when it keeps under half of them.
"""

from __future__ import annotations

import os
import re
import struct
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dpkt
import numpy as np
import pandas as pd

from dpstream.data.cache import cached_arrays, file_fingerprint
from dpstream.data.capture import KNOWN_LINKTYPES, ScanCounts, UnknownLinkType, scan_capture
from dpstream.data.columns import csv_column
from dpstream.data.stream import FileStream
from dpstream.noise import SeedLike
from dpstream.validation import check_choice, check_positive_int

FORMATS = ("auto", "pcap", "pcapng", "csv", "raw4", "raw13")
RECORD_BYTES = {"raw4": 4, "raw13": 13}
CHUNK_RECORDS = 1 << 20
IPV6_CHOICES = ("skip", "key")

OBTAIN_CAIDA = (
    "CAIDA's anonymized Internet traces (the paper used the 2019 passive dataset) are free for research "
    "after requesting access at https://www.caida.org/catalog/datasets/passive_dataset/ "
    "(https://www.caida.org/data/passive/passive_2019_dataset.xml); download a .pcap(.gz: gunzip it first), "
    "or export one to CSV (tshark -r trace.pcap -T fields -E separator=, -E header=y -e frame.number "
    "-e frame.time_relative -e ip.src) and pass its path as data.path (with data.format and data.column as "
    "needed). Without a trace, use data=caida_like (a synthetic stand-in).")

class TruncatedTraceError(ValueError):
    """The trace's final record is cut short (a file truncated mid-record)."""


@dataclass
class TraceStats:
    """What a reader saw: records read, items kept, and what was skipped (and why)."""

    records: int = 0
    items: int = 0
    non_ipv4: int = 0
    too_short: int = 0
    truncated: int = 0

    @property
    def skipped(self) -> int:
        """Records read but not in the stream (non-IPv4, too short, a truncated final record)."""
        return self.non_ipv4 + self.too_short + self.truncated

    def reasons(self) -> str:
        """The skipped records by reason, for messages."""
        return f"non-IPv4 {self.non_ipv4}, too short {self.too_short}, truncated {self.truncated}"


DPKT_DECODERS: dict[int, Any] = {9: dpkt.ppp.PPP, 105: dpkt.ieee80211.IEEE80211, 127: dpkt.radiotap.Radiotap}
"""Link types the compiled scan does not decode, read through dpkt instead (PPP, 802.11, radiotap)."""


def _pcap_chunks(path: Path, stats: TraceStats, chunk: int, ipv6: str, progress: bool) -> Iterator[np.ndarray]:
    """Source keys of a pcap / pcapng file by the compiled scan (``dpstream.data.capture``), ``chunk`` at a time."""
    counts = ScanCounts()
    try:
        yield from scan_capture(path, ipv6, chunk, counts, progress)
    except UnknownLinkType as unknown:
        yield from _dpkt_fallback(path, unknown.linktype, stats, chunk)
        return
    finally:
        stats.records += counts.records
        stats.non_ipv4 += counts.non_ipv4
        stats.too_short += counts.too_short
        stats.truncated += counts.truncated


def _dpkt_fallback(path: Path, linktype: int, stats: TraceStats, chunk: int) -> Iterator[np.ndarray]:
    """IPv4 sources of a pcap file of a link type the scan does not know, decoded by dpkt (slow; says so)."""
    if linktype not in DPKT_DECODERS:
        known = ", ".join(map(str, KNOWN_LINKTYPES))
        raise ValueError(f"{path}: unsupported pcap link type {linktype}; supported: {known} (compiled scan) and "
                         f"{', '.join(map(str, DPKT_DECODERS))} (through dpkt)")
    warnings.warn(f"{path}: link type {linktype} is not decoded by the compiled scan; reading it with dpkt (slow)",
                  stacklevel=2)
    decode = DPKT_DECODERS[linktype]
    keys: list[int] = []
    with open(path, "rb") as fh:
        try:
            for _, frame in dpkt.pcap.Reader(fh):
                stats.records += 1
                layer: Any = decode(frame)
                while not isinstance(layer, dpkt.ip.IP) and isinstance(getattr(layer, "data", None), dpkt.Packet):
                    layer = layer.data
                if isinstance(layer, dpkt.ip.IP):
                    keys.append(int.from_bytes(layer.src, "big"))
                else:
                    stats.non_ipv4 += 1
                if len(keys) == chunk:
                    yield np.array(keys, dtype=np.uint32)
                    keys.clear()
        except (dpkt.UnpackError, struct.error, ValueError):
            stats.truncated += 1
    if keys:
        yield np.array(keys, dtype=np.uint32)


_QUAD = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")


def _dotted_quads(values: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(uint32 addresses of the valid quads, mask of valid quads, mask of malformed IPv4-like values).

    A value is non-IPv4 (skipped) when it is empty or holds a ':' (IPv6, MAC) or a letter; a value of
    only digits and dots that is not a valid dotted quad is malformed.
    """
    s = values.astype(str).str.strip()
    parts = s.str.extract(_QUAD)
    valid = np.array(parts.notna().all(axis=1), dtype=bool)
    octets = parts[valid].astype(np.int64).to_numpy()
    in_range = (octets <= 255).all(axis=1)
    valid_idx = np.flatnonzero(valid)
    valid[valid_idx[~in_range]] = False
    octets = octets[in_range]
    addrs = ((octets[:, 0] << 24) | (octets[:, 1] << 16) | (octets[:, 2] << 8) | octets[:, 3]).astype(np.uint32)
    ipv4_like = s.str.fullmatch(r"[\d.]+").to_numpy(dtype=bool)
    return addrs, valid, ipv4_like & ~valid


def _last_line(path: Path) -> tuple[bytes, bool]:
    """The file's last line and whether the file ends with a newline."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 65536))
        tail = fh.read()
    ends_nl = tail.endswith(b"\n")
    lines = tail.rstrip(b"\r\n").split(b"\n")
    return lines[-1], ends_nl


def _csv_chunks(path: Path, stats: TraceStats, column: int | str, header: bool, chunk: int,
                on_truncated: str) -> Iterator[np.ndarray]:
    last, ends_nl = _last_line(path)
    with open(path, "rb") as fh:
        first = fh.readline()
    n_fields = first.count(b",") + 1
    last_short = not ends_nl and last.count(b",") + 1 < n_fields
    reader = csv_column(path, column, header, chunksize=chunk)
    rows_done = 0
    pending: pd.Series | None = None
    try:
        for frame in reader:
            if pending is not None:
                yield from _csv_values(pending, stats, rows_done - pending.size, header, final=False,
                                       last_short=False, on_truncated=on_truncated, path=path)
            pending = frame.iloc[:, 0]
            rows_done += pending.size
    except ValueError as exc:
        raise ValueError(f"{path}: cannot read column {column!r} as CSV ({exc})") from exc
    if pending is not None:
        yield from _csv_values(pending, stats, rows_done - pending.size, header, final=not ends_nl,
                               last_short=last_short, on_truncated=on_truncated, path=path)


def _csv_values(values: pd.Series, stats: TraceStats, first_row: int, header: bool, final: bool,
                last_short: bool, on_truncated: str, path: Path) -> Iterator[np.ndarray]:
    addrs, valid, malformed = _dotted_quads(values)
    if final and values.size and (last_short or malformed[-1]):
        # the file ends mid-record: its last line is incomplete
        stats.truncated += 1
        _truncation(path, on_truncated, "its last CSV line is incomplete")
        keep = np.ones(values.size, bool)
        keep[-1] = False
        addrs = addrs[:int(valid[:-1].sum())]
        valid, malformed = valid[keep], malformed[keep]
    if malformed.any():
        row = first_row + int(np.flatnonzero(malformed)[0]) + (2 if header else 1)
        raise ValueError(f"{path}: line {row} holds a malformed IPv4 address "
                         f"{values.iloc[int(np.flatnonzero(malformed)[0])]!r}")
    stats.records += int(valid.size)
    stats.non_ipv4 += int((~valid).sum())
    if addrs.size:
        yield addrs


def _raw_chunks(path: Path, fmt: str, stats: TraceStats, chunk: int, byteorder: str,
                on_truncated: str) -> Iterator[np.ndarray]:
    size = RECORD_BYTES[fmt]
    dtype = np.dtype(">u4" if byteorder == "big" else "<u4")
    with open(path, "rb") as fh:
        while True:
            data = fh.read(size * chunk)
            whole = len(data) // size * size
            if whole:
                records = np.frombuffer(data[:whole], dtype=np.uint8).reshape(-1, size)
                addrs = records[:, :4].copy().view(dtype).ravel().astype(np.uint32)
                stats.records += addrs.size
                yield addrs
            if whole < len(data):
                stats.truncated += 1
                _truncation(path, on_truncated, f"its size is not a multiple of the {size}-byte record")
            if len(data) < size * chunk:
                break


def _truncation(path: Path, on_truncated: str, why: str) -> None:
    msg = f"{path}: the final record is truncated ({why}; was the file cut short?)"
    if on_truncated == "error":
        raise TruncatedTraceError(msg + "; pass on_truncated='skip' to drop it")
    warnings.warn(msg + "; dropped it", stacklevel=3)


def detect_format(path: Path) -> str:
    """Pcap / pcapng from the magic number; csv (.csv, .txt), raw4 (.raw4) and raw13 (.raw13) from the extension."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
        return "pcap"
    if magic == b"\x0a\x0d\x0d\x0a":
        return "pcapng"
    suffix = path.suffix.lower()
    if suffix in (".csv", ".txt"):
        return "csv"
    if suffix in (".raw4", ".raw13"):
        return suffix[1:]
    raise ValueError(f"cannot tell the format of {path}; set format to one of {', '.join(FORMATS[1:])}")


def iter_trace(path: str | Path, fmt: str = "auto", column: int | str = 2, header: bool = True,
               byteorder: str = "big", on_truncated: str = "error", chunk: int = CHUNK_RECORDS,
               stats: TraceStats | None = None, ipv6: str = "skip", progress: bool = False) -> Iterator[np.ndarray]:
    """Yield the trace's IPv4 source addresses as uint32 chunks, reading ``chunk`` records at a time.

    pcap / pcapng: ``ipv6="key"`` also keys IPv6 sources (int64 chunks, ``dpstream.data.capture``); ``progress``
    shows a bar of the bytes read.
    """
    path = _readable(path)
    fmt = check_choice(fmt, "trace format", FORMATS)
    check_choice(on_truncated, "on_truncated", ("error", "skip"))
    check_choice(byteorder, "byteorder", ("big", "little"))
    check_choice(ipv6, "ipv6", IPV6_CHOICES)
    chunk = check_positive_int(chunk, "chunk")
    stats = TraceStats() if stats is None else stats
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt in ("pcap", "pcapng"):
        chunks = _pcap_chunks(path, stats, chunk, ipv6, progress)
    elif fmt == "csv":
        chunks = _csv_chunks(path, stats, column, header, chunk, on_truncated)
    else:
        chunks = _raw_chunks(path, fmt, stats, chunk, byteorder, on_truncated)
    for arr in chunks:
        stats.items += arr.size
        yield arr
    if fmt in ("pcap", "pcapng") and stats.truncated:
        _truncation(path, on_truncated, "its last packet record is shorter than its header says")


def _readable(path: str | Path) -> Path:
    if path is None or str(path) in ("", "None", "???"):
        raise ValueError(f"no trace path given (data.path, or the DPSTREAM_CAIDA_TRACE environment variable). "
                         f"{OBTAIN_CAIDA}")
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"trace file {str(p)!r} does not exist or is not a file. {OBTAIN_CAIDA}")
    if not os.access(p, os.R_OK):
        raise PermissionError(f"trace file {str(p)!r} is not readable (permissions). {OBTAIN_CAIDA}")
    return p


def read_trace(path: str | Path, fmt: str = "auto", column: int | str = 2, header: bool = True,
               byteorder: str = "big", on_truncated: str = "error",
               chunk: int = CHUNK_RECORDS) -> tuple[np.ndarray, TraceStats]:
    """The whole trace's source addresses (uint32, in packet order) and what was skipped."""
    stats = TraceStats()
    parts = list(iter_trace(path, fmt, column, header, byteorder, on_truncated, chunk, stats))
    items = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)
    if items.size == 0:
        csv = fmt == "csv" or (fmt == "auto" and Path(path).suffix.lower() in (".csv", ".txt"))
        raise ValueError(f"trace {path}{f' (column {column!r})' if csv else ''} holds no IPv4 packets "
                         f"({asdict(stats)}). {OBTAIN_CAIDA}")
    return items, stats


def caida_trace(path: str, format: str = "auto", column: int | str = 2, header: bool = True,
                byteorder: str = "big", on_truncated: str = "error", length: int | None = None,
                seed: SeedLike = None, cache_dir: str | Path | None = None) -> FileStream:
    """A real packet trace as a stream of IPv4 source addresses (uint32) -- the ``data=caida`` source.

    Returns a ``FileStream``: the addresses and the records read and skipped (``TraceStats``; keeping under
    half of them warns). Converted once and cached as ``<cache_dir>/trace/*.npz`` keyed by the file's content
    (xxh3-128, ``file_fingerprint``) and the reading options; ``length`` keeps the first ``length`` packets.
    A real trace is fixed: ``seed`` (the shared call of every stream source) is ignored.
    """
    p = _readable(path)
    key: dict[str, Any] = {"xxh3_128": file_fingerprint(p), "format": format, "column": column, "header": header,
                           "byteorder": byteorder, "on_truncated": on_truncated}

    def build() -> dict[str, np.ndarray]:
        items, stats = read_trace(p, format, column, header, byteorder, on_truncated)
        return {"stream": items, **{name: np.array(v, dtype=np.int64) for name, v in asdict(stats).items()}}

    read = cached_arrays(cache_dir, "trace", key, build)
    stats = TraceStats(**{name: int(read[name]) for name in asdict(TraceStats())})
    items = read["stream"]
    if length is not None:
        length = check_positive_int(length, "length")
        items = items[:length]
    return FileStream(items, str(p), stats.records + stats.truncated, stats.skipped, stats.reasons())
