"""Trace reading speed: the compiled pcapng scan and the pyarrow CSV path against their references.

    python benchmarks/traces.py [--packets N] [--dpkt-packets M] [--repeats R] [--json]

Rows (interleaved A/B repetitions in one process, ``dpstream.timing.interleaved_ratios``; ratio > 1 means
the reader is faster):

- ``reader / bare scan``: ``dpstream.data.traces.iter_trace`` (the checked scan of ``dpstream.data.capture``, chunks
  yielded, every length checked) against a bare compiled loop over the same memory-mapped file that reads each
  block header and the source address at its offset (past the VLAN tags), with no checks. Target >= 0.45x. The
  bare loop knows the file's layout (little endian, Simple Packet Blocks on Ethernet, Enhanced on raw IP) and runs
  over one mapping kept across repetitions, while the reader maps the file at each call.
- ``reader / bare scan, mapped per call``: the same with the bare loop also mapping the file at each call, as
  reading a file must (the page-table work of a fresh mapping, which costs the bare loop 1.1-1.8x on this machine,
  then counts in both arms). Target >= 0.45x.
- ``reader / dpkt``: against today's previous reader, dpkt's pcapng reader with a Python decode per packet. dpkt runs
  on the first ``--dpkt-packets`` packets of a file of the same make-up, and its time is scaled per packet to the
  full file (it also skips the Simple Packet Blocks it cannot read, so this flatters dpkt). Target >= 50x.
- ``csv pyarrow / pandas``: ``iter_trace`` on a tshark ``-T fields`` CSV export against the previous path (pandas
  ``read_csv`` in chunks, a regular expression per value). Target >= 5x.

The capture is a pcapng file of N packets: Simple Packet Blocks on an Ethernet interface (a third of them with one
802.1Q tag, a sixth with two stacked tags) and Enhanced Packet Blocks on a raw-IP interface, in turn.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import mmap
import os
import platform
import re
import struct
import sys
import tempfile
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd
from numba import njit

from dpstream.data.traces import iter_trace
from dpstream.timing import RatioEstimate, interleaved_ratios

RESULTS = Path(__file__).parent / "results" / "traces.json"
TARGETS = {"reader / bare scan": 0.45, "reader / bare scan, mapped per call": 0.45, "reader / dpkt": 50.0,
           "csv pyarrow / pandas": 5.0}
MAC = b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb"


def _block(btype: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def ipv4_packet(src: int) -> bytes:
    """A 40-byte IPv4 TCP packet from ``src`` to 10.0.0.1 (no payload)."""
    return struct.pack(">BBHHHBBHII", 0x45, 0, 40, 0, 0, 64, 6, 0, src, 0x0A000001) + bytes(20)


def write_capture(path: Path, packets: int, seed: int = 0) -> np.ndarray:
    """The benchmark pcapng file (module docstring); returns the expected keys."""
    rng = np.random.default_rng(seed)
    sources = (rng.zipf(1.3, packets) % 100_000 + 0x0B000000).astype(np.uint32)
    tags = (b"", b"", struct.pack(">HH", 0x8100, 7), b"", struct.pack(">HHHH", 0x88A8, 3, 0x8100, 7),
            struct.pack(">HH", 0x8100, 9))
    with open(path, "wb") as fh:
        fh.write(_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        fh.write(_block(1, struct.pack("<HHI", 1, 0, 0)))
        fh.write(_block(1, struct.pack("<HHI", 101, 0, 0)))
        out = []
        for i, src in enumerate(sources.tolist()):
            if i % 2 == 0:
                frame = MAC + tags[i % 6] + b"\x08\x00" + ipv4_packet(src)
                out.append(_block(3, struct.pack("<I", len(frame)) + frame))
            else:
                frame = ipv4_packet(src)
                out.append(_block(6, struct.pack("<IIIII", 1, 0, i, len(frame), len(frame)) + frame))
            if len(out) == 65536:
                fh.write(b"".join(out))
                out.clear()
        fh.write(b"".join(out))
    return sources


@njit(cache=True)
def bare_scan(buf: np.ndarray, out: np.ndarray) -> int:
    """Keys of the benchmark file with no checks: per block its type and length, the address at its offset."""
    pos, n = 0, 0
    while pos + 12 <= buf.size:
        btype = np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8)
        blen = np.int64(buf[pos + 4]) | (np.int64(buf[pos + 5]) << 8) | (np.int64(buf[pos + 6]) << 16)
        if btype == 3:
            off = pos + 12 + 12
            while buf[off] == 0x81 or buf[off] == 0x88:
                off += 4
            q = off + 2 + 12
        elif btype == 6:
            q = pos + 28 + 12
        else:
            pos += blen
            continue
        out[n] = (np.int64(buf[q]) << 24) | (np.int64(buf[q + 1]) << 16) | (np.int64(buf[q + 2]) << 8) | \
            np.int64(buf[q + 3])
        n += 1
        pos += blen
    return n


def bare_mapped(path: Path, out: np.ndarray) -> int:
    """``bare_scan`` over a fresh read-only mapping of ``path``, as the reader maps the file."""
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        buf = np.frombuffer(mapped, dtype=np.uint8)
        n = bare_scan(buf, out)
        del buf  # the mapping cannot close while an array views it
    return n


def dpkt_reader(path: Path) -> int:
    """The previous reader's work per packet: dpkt's pcapng framing, then the Ethernet / VLAN decode in Python."""
    n = 0
    with open(path, "rb") as fh:
        for _, frame in dpkt.pcapng.Reader(fh):
            etype, off = int.from_bytes(frame[12:14], "big"), 14
            while etype in (0x8100, 0x88A8) and len(frame) >= off + 4:
                etype, off = int.from_bytes(frame[off + 2:off + 4], "big"), off + 4
            if etype == 0x0800 and frame[off + 12:off + 16]:
                n += 1
    return n


_QUAD = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")


def pandas_csv(path: Path) -> int:
    """The previous CSV path: pandas read_csv in chunks of 2^20 rows, dotted quads by a regular expression."""
    n = 0
    for frame in pd.read_csv(path, usecols=["ip.src"], dtype=str, keep_default_na=False, chunksize=1 << 20):
        s = frame.iloc[:, 0].astype(str).str.strip()
        parts = s.str.extract(_QUAD)
        valid = np.array(parts.notna().all(axis=1), dtype=bool)
        octets = parts[valid].astype(np.int64).to_numpy()
        keys = (octets[:, 0] << 24) | (octets[:, 1] << 16) | (octets[:, 2] << 8) | octets[:, 3]
        n += int(keys.size)
    return n


def write_csv(path: Path, sources: np.ndarray) -> None:
    """A tshark ``-T fields -E header=y -e frame.number -e frame.time_relative -e ip.src`` export (1% non-IPv4)."""
    text = pd.Series([f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}.{a & 255}" for a in sources.tolist()])
    text[::100] = ""
    frame = pd.DataFrame({"frame.number": np.arange(1, sources.size + 1),
                          "frame.time_relative": np.arange(sources.size) * 1e-6, "ip.src": text})
    frame.to_csv(path, index=False)


def _drop_cached(path: Path) -> None:
    """Drop the file's pages from the page cache, so the runs read it back as a trace on disk is read.

    Just written, the file sits in the page cache as the writer left it, and mapping it was 1.2-1.7x cheaper for
    the reader than for a file read back from disk; where the OS cannot drop them, the file stays as written.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _reader(path: Path) -> int:
    return sum(arr.size for arr in iter_trace(path))


def run(packets: int, dpkt_packets: int, repeats: int) -> list[dict]:
    """Time every row; returns the result rows."""
    with tempfile.TemporaryDirectory() as tmp:
        big, small, csv = Path(tmp) / "bench.pcapng", Path(tmp) / "small.pcapng", Path(tmp) / "bench.csv"
        sources = write_capture(big, packets)
        _drop_cached(big)
        write_capture(small, dpkt_packets)
        keys = np.concatenate(list(iter_trace(big)))
        mapped = np.memmap(big, dtype=np.uint8, mode="r")
        out = np.empty(packets, dtype=np.int64)
        assert bare_scan(mapped, out) == packets and np.array_equal(keys, sources)
        assert np.array_equal(out, sources)
        scan = interleaved_ratios({"reader": lambda: _reader(big), "bare scan": lambda: bare_scan(mapped, out)},
                                  "bare scan", repeats)["reader"]
        per_call = interleaved_ratios({"reader": lambda: _reader(big), "bare scan, mapped per call": lambda:
                                       bare_mapped(big, out)}, "bare scan, mapped per call", repeats)["reader"]
        vs_dpkt = interleaved_ratios({"reader": lambda: _reader(big), "dpkt": lambda: dpkt_reader(small)}, "dpkt",
                                     repeats)["reader"]
        scale = packets / dpkt_packets  # dpkt's time per packet on the small file, times the big file's packets
        vs_dpkt = dataclasses.replace(vs_dpkt, ratio=vs_dpkt.ratio * scale, low=vs_dpkt.low * scale,
                                      high=vs_dpkt.high * scale, reference_seconds=vs_dpkt.reference_seconds * scale,
                                      reference=f"dpkt (on {dpkt_packets} packets, scaled per packet)")
        write_csv(csv, sources)
        assert _reader(csv) == pandas_csv(csv)
        csv_est = interleaved_ratios({"pyarrow": lambda: _reader(csv), "pandas": lambda: pandas_csv(csv)}, "pandas",
                                     repeats)["pyarrow"]
    rows = []
    for name, est in (("reader / bare scan", scan), ("reader / bare scan, mapped per call", per_call),
                      ("reader / dpkt", vs_dpkt), ("csv pyarrow / pandas", csv_est)):
        rows.append({**est.as_dict(), "row": name, "target": TARGETS[name],
                     "met": RatioEstimate.decide(est, TARGETS[name])})
        print(f"{name}: {est}  target >= {TARGETS[name]}x: {rows[-1]['met']}")
    return rows


def main() -> None:
    """Run the benchmark (module docstring) and write benchmarks/results/traces.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=1_000_000)
    parser.add_argument("--dpkt-packets", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", action="store_true", help=f"write {RESULTS}")
    args = parser.parse_args()
    rows = run(args.packets, args.dpkt_packets, args.repeats)
    if args.json:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({
            "title": f"Trace reading: {args.packets} packets (pcapng: SPB + EPB, Ethernet with VLAN tags + raw IP), "
                     f"{args.packets} CSV rows",
            "command": "python benchmarks/traces.py " + " ".join(sys.argv[1:]),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
