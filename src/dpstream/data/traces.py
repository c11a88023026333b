"""Packet traces (e.g. CAIDA) as streams of IPv4 source addresses, read chunk by chunk without loading the file.

Formats (``fmt``): ``pcap`` and ``pcapng``, read by the compiled scan of ``dpstream.data.capture`` over a memory-
mapped file (both byte orders, nanosecond pcap, pcapng sections of either byte order, per-interface link types,
Enhanced / Simple / obsolete Packet Blocks; link types Ethernet with stacked VLAN tags, raw IP, IPv4, IPv6, Linux
cooked v1 / v2, BSD loopback; a pcap file of another link type falls back to dpkt with a warning); ``csv`` (a
packet-capture export, e.g. ``tshark -T fields``: one row per packet, read with ``pyarrow.csv``; the source address
in the column ``column``, a header name or a 0-based index; not given: the column named ``ip.src`` / ``Source`` /
``src`` ..., or the only column); ``raw4`` (4-byte IPv4 addresses, one per packet) and ``raw13`` (13-byte 5-tuple
records: source IP, destination IP, source port, destination port, protocol -- the format common in sketch research).
``auto`` recognises pcap / pcapng by their magic numbers and csv / raw4 / raw13 by the extensions ``.csv``
(``.txt``), ``.raw4`` and ``.raw13``.

Items are source addresses as uint32 (network byte order read as a big-endian number, so 1.2.3.4 is
0x01020304; ``byteorder`` switches raw records to little-endian); pcap / pcapng with ``ipv6="key"`` also key IPv6
sources (int64, above 2^32). Frames that are not IPv4 (IPv6, ARP, ..., or a CSV source that is not a dotted quad)
are skipped and counted in ``TraceStats``; so are IPv4 frames captured too short to hold the source address. A
malformed pcap / pcapng structure raises ``MalformedCaptureError`` naming the file and byte offset. A final record
cut short (file truncated) raises ``TruncatedTraceError`` by default; ``on_truncated="skip"`` drops it and counts
it instead. ``caida_trace`` reports the records read and skipped to the trials (``rows_read``, ``rows_skipped``) and
warns when it keeps under half of them.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dpkt
import numpy as np

from dpstream.data.cache import _cache_file as cache_file  # one cache layout for every converted file
from dpstream.data.cache import file_fingerprint, seed_token
from dpstream.data.capture import IPV6_CHOICES, KNOWN_LINKTYPES, ScanCounts, UnknownLinkType, scan_capture
from dpstream.data.columns import csv_batches, csv_names
from dpstream.data.quads import MALFORMED, NON_IPV4, parse_quads
from dpstream.data.sniff import check_file_kind
from dpstream.data.stream import FileStream
from dpstream.files import write_atomically
from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.validation import check_choice, check_positive_int

FORMATS = ("auto", "pcap", "pcapng", "csv", "raw4", "raw13")
RECORD_BYTES = {"raw4": 4, "raw13": 13}
CHUNK_RECORDS = 1 << 20

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


def _pcap_chunks(path: Path, stats: TraceStats, chunk: int, ipv6: str, progress: bool,
                 seed: SeedLike) -> Iterator[np.ndarray]:
    """Source keys of a pcap / pcapng file by the compiled scan (``dpstream.data.capture``), ``chunk`` at a time."""
    counts = ScanCounts()
    try:
        yield from scan_capture(path, ipv6, chunk, counts, progress, seed=seed)
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


def _csv_chunks(path: Path, stats: TraceStats, column: int | str | None, header: bool,
                on_truncated: str) -> Iterator[np.ndarray]:
    """Source addresses of a CSV export (pyarrow.csv, compiled dotted-quad parsing), one array per parsed block."""
    last, ends_nl = _last_line(path)
    short_last: list[bool] = []

    def invalid_row(row: Any) -> str:  # a row with the wrong number of fields: only the cut-off last line is allowed
        if not ends_nl and row.text.encode() == last.rstrip(b"\r"):
            short_last.append(True)
            return "skip"
        return "error"

    column = _csv_source_column(path, column, header)
    rows_done = 0
    pending = None
    for values in csv_batches(path, column, header, invalid_row):
        if pending is not None:
            yield from _csv_values(pending, stats, rows_done - len(pending), header, False, on_truncated, path)
        pending = values
        rows_done += len(values)
    if short_last:
        stats.truncated += 1
        _truncation(path, on_truncated, "its last CSV line is incomplete")
    if pending is not None:
        final = not ends_nl and not short_last
        yield from _csv_values(pending, stats, rows_done - len(pending), header, final, on_truncated, path)


SOURCE_NAMES = ("ip.src", "Source", "source", "src", "src_ip", "srcip", "saddr")
"""Header names taken as the source-address column of a CSV export when ``column`` is not given."""


def _csv_source_column(path: Path, column: int | str | None, header: bool) -> int | str:
    """``column``, or when not given the header column named like a source address, or the only column."""
    if column is not None:
        return column
    names = csv_names(path, header)
    found = [name for name in SOURCE_NAMES if name in names] if header else []
    if found:
        return found[0]
    if len(names) == 1:
        return 0
    raise ValueError(f"{path}: which column holds the source address? Set column to a header name or a 0-based "
                     f"index; its columns: {names} (found none named {', '.join(SOURCE_NAMES)})")


def _csv_values(values: Any, stats: TraceStats, first_row: int, header: bool, final: bool, on_truncated: str,
                path: Path) -> Iterator[np.ndarray]:
    addrs, kind = parse_quads(values)
    if final and kind.size and kind[-1] == MALFORMED:  # the file ends mid-address: its last line is incomplete
        stats.truncated += 1
        _truncation(path, on_truncated, "its last CSV line is incomplete")
        kind = kind[:-1]
    bad = np.flatnonzero(kind == MALFORMED)
    if bad.size:
        row = first_row + int(bad[0]) + (2 if header else 1)
        raise ValueError(f"{path}: line {row} holds a malformed IPv4 address {values[int(bad[0])].as_py()!r}")
    stats.records += int(kind.size)
    stats.non_ipv4 += int((kind == NON_IPV4).sum())
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


def iter_trace(path: str | Path, fmt: str = "auto", column: int | str | None = None, header: bool = True,
               byteorder: str = "big", on_truncated: str = "error", chunk: int = CHUNK_RECORDS,
               stats: TraceStats | None = None, ipv6: str = "skip", progress: bool = False,
               seed: SeedLike = None) -> Iterator[np.ndarray]:
    """Yield the trace's IPv4 source addresses as uint32 chunks, reading ``chunk`` records at a time.

    pcap / pcapng: ``ipv6="key"`` also keys IPv6 sources (int64 chunks, ``dpstream.data.capture``, its secret drawn
    from ``seed``); ``progress`` shows a bar of the bytes read.
    """
    path = _readable(path)
    fmt = check_choice(fmt, "trace format", FORMATS)
    check_choice(on_truncated, "on_truncated", ("error", "skip"))
    check_choice(byteorder, "byteorder", ("big", "little"))
    check_choice(ipv6, "ipv6", IPV6_CHOICES)
    chunk = check_positive_int(chunk, "chunk")
    stats = TraceStats() if stats is None else stats
    check_file_kind(path, fmt)  # a compressed file (or one not of the format given) is named before detection
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt in ("pcap", "pcapng"):
        chunks = _pcap_chunks(path, stats, chunk, ipv6, progress, seed)
    elif fmt == "csv":
        chunks = _csv_chunks(path, stats, column, header, on_truncated)
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


def read_trace(path: str | Path, fmt: str = "auto", column: int | str | None = None, header: bool = True,
               byteorder: str = "big", on_truncated: str = "error", chunk: int = CHUNK_RECORDS,
               ipv6: str = "skip", seed: SeedLike = None) -> tuple[np.ndarray, TraceStats]:
    """The whole trace's source addresses (uint32, in packet order) and what was skipped (``seed``: ``iter_trace``)."""
    stats = TraceStats()
    parts = list(iter_trace(path, fmt, column, header, byteorder, on_truncated, chunk, stats, ipv6, seed=seed))
    items = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)
    _check_nonempty(path, fmt, column, items.size, stats)
    return items, stats


def _check_nonempty(path: str | Path, fmt: str, column: int | str | None, n: int, stats: TraceStats) -> None:
    if n == 0:
        csv = fmt == "csv" or (fmt == "auto" and Path(path).suffix.lower() in (".csv", ".txt"))
        raise ValueError(f"trace {path}{f' (column {column!r})' if csv else ''} holds no IPv4 packets "
                         f"({asdict(stats)}). {OBTAIN_CAIDA}")


def _write_keys(path: Path, chunks: Iterator[np.ndarray], dtype: np.dtype, out: Path) -> int:
    """Write the key chunks as the ``.npy`` file ``out`` (atomically, never holding more than one chunk)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with tempfile.TemporaryFile(dir=out.parent) as raw:
        for arr in chunks:
            raw.write(np.ascontiguousarray(arr, dtype=dtype).tobytes())
            n += arr.size
        raw.seek(0)

        def write(fh: Any) -> None:
            np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                      "fortran_order": False, "shape": (n,)})
            shutil.copyfileobj(raw, fh, 1 << 22)

        write_atomically(out, write)
    return n


def _cached_trace(p: Path, cache_dir: str | Path, key: dict[str, Any], fmt: str, column: int | str | None,
                  header: bool, byteorder: str, on_truncated: str, ipv6: str,
                  seed: SeedLike) -> tuple[np.ndarray, TraceStats]:
    """The trace's keys as a read-only memory map of ``<cache_dir>/trace/trace-<hash>.npy``, built chunk by chunk.

    Its ``TraceStats`` are kept beside it as JSON; neither the build nor the map holds the whole stream in memory.
    """
    keys_file = cache_file(cache_dir, "trace", key, ".npy")
    stats_file = keys_file.with_suffix(".json")
    if not (keys_file.exists() and stats_file.exists()):
        stats = TraceStats()
        chunks = iter_trace(p, fmt, column, header, byteorder, on_truncated, CHUNK_RECORDS, stats, ipv6,
                            progress=True, seed=seed)
        n = _write_keys(p, chunks, np.dtype(np.int64 if ipv6 == "key" else np.uint32), keys_file)
        _check_nonempty(p, fmt, column, n, stats)
        write_atomically(stats_file, lambda fh: fh.write(json.dumps(asdict(stats)).encode()))
    stats = TraceStats(**json.loads(stats_file.read_text()))
    return np.load(keys_file, mmap_mode="r"), stats


def caida_trace(path: str, format: str = "auto", column: int | str | None = None, header: bool = True,
                byteorder: str = "big", on_truncated: str = "error", ipv6: str = "skip", length: int | None = None,
                seed: SeedLike = None, cache_dir: str | Path | None = None) -> FileStream:
    """A real packet trace as a stream of IPv4 source addresses (uint32) -- the ``data=caida`` source.

    Returns a ``FileStream``: the addresses and the records read and skipped (``TraceStats``; keeping under
    half of them warns). Converted once, chunk by chunk, and cached as ``<cache_dir>/trace/*.npy`` keyed by the file's
    content (xxh3-128, ``file_fingerprint``) and the reading options, then read back as a memory map (so a trace
    larger than memory streams through); ``length`` keeps the first ``length`` packets. ``ipv6="key"`` keys IPv6
    sources too (int64), under a secret drawn from ``seed`` (the trial's data seed; ``dpstream.data.capture``), so
    the conversion is cached per seed. Otherwise a real trace is fixed and ``seed`` is not used.
    """
    p = _readable(path)
    check_choice(ipv6, "ipv6", IPV6_CHOICES)
    key: dict[str, Any] = {"xxh3_128": file_fingerprint(p), "format": format, "column": column, "header": header,
                           "byteorder": byteorder, "on_truncated": on_truncated}
    seed = as_seed_sequence(seed)
    if ipv6 != "skip":
        key |= {"ipv6": ipv6, "ipv6_key_seed": seed_token(seed)}
    if cache_dir is None:
        items, stats = read_trace(p, format, column, header, byteorder, on_truncated, ipv6=ipv6, seed=seed)
    else:
        items, stats = _cached_trace(p, cache_dir, key, format, column, header, byteorder, on_truncated, ipv6, seed)
    if length is not None:
        length = check_positive_int(length, "length")
        items = items[:length]
    return FileStream(items, str(p), stats.records + stats.truncated, stats.skipped, stats.reasons())
