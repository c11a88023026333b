"""Peak memory of `dpstream mechanism=lazyhh data=caida` on a generated multi-GB capture (``make trace-memory``).

    python benchmarks/trace_memory.py [--gigabytes 3] [--trials 1] [--mechanism lazyhh] [--keep]

``--mechanism lazycms`` (any sketch) measures the sketch trial instead: it feeds the memory-mapped keys block by block
and counts the exact top 15 block by block too (``metrics.prefix_top_k``).

Writes a pcap file of about the given size into a temporary directory under /tmp (Ethernet frames of 64 captured
bytes: a 16-byte record header + 64 = 80 bytes per packet, so 3 GB is about 40 million packets; sources drawn from a
Zipf law over 10^6 addresses so there are heavy hitters), runs the command in a child process with its data cache
and results in the same directory, and reports the child's peak resident set size (``resource.getrusage``
``ru_maxrss`` of the children) and wall time. The directory is deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RECORD = 80
BATCH = 1 << 20
LIMIT_BYTES = 1 << 30


def write_pcap(path: Path, packets: int, seed: int = 0) -> None:
    """A little-endian Ethernet pcap of ``packets`` 64-byte frames, IPv4 sources Zipf-distributed."""
    frame = bytearray(b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\x08\x00")
    frame += struct.pack(">BBHHHBBHII", 0x45, 0, 50, 0, 0, 64, 6, 0, 0, 0x0A000001) + bytes(30)
    record = np.frombuffer(struct.pack("<IIII", 0, 0, 64, 64) + bytes(frame), dtype=np.uint8)
    rng = np.random.default_rng(seed)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        done = 0
        while done < packets:
            n = min(BATCH, packets - done)
            block = np.tile(record, (n, 1))
            sources = (rng.zipf(1.2, n) % 1_000_000 + 0x0B000000).astype(">u4")
            block[:, 16 + 14 + 12:16 + 14 + 16] = sources.view(np.uint8).reshape(n, 4)
            fh.write(block.tobytes())
            done += n


def main() -> None:
    """Generate the capture, run the command, report peak RSS."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=3.0)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--mechanism", default="lazyhh")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dpstream-trace-memory-", dir="/tmp"))
    try:
        trace = work / "trace.pcap"
        packets = int(args.gigabytes * 1e9 // RECORD)
        start = time.perf_counter()
        write_pcap(trace, packets)
        print(f"wrote {trace}: {trace.stat().st_size / 1e9:.2f} GB, {packets} packets "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
        command = [sys.executable, "-m", "dpstream.cli", f"mechanism={args.mechanism}", "data=caida",
                   f"data.path={trace}",
                   f"trials={args.trials}", f"data_dir={work / 'data'}", f"results_dir={work / 'results'}"]
        print("running:", " ".join(command[2:]), flush=True)
        start = time.perf_counter()
        subprocess.run(command, check=True, cwd=work)
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux reports kilobytes
        print(f"peak RSS {peak / 2**20:.0f} MiB (limit {LIMIT_BYTES / 2**20:.0f} MiB: "
              f"{'met' if peak < LIMIT_BYTES else 'NOT met'}), wall {seconds:.0f} s, "
              f"{trace.stat().st_size / 1e9:.2f} GB, {packets} packets")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
