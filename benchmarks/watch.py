"""``dpstream watch`` at line rate: packets in, releases out, against a bare Count-Min loop (issue 37, item 3).

    python benchmarks/watch.py [--json] [--packets N] [--repeats R]
    python benchmarks/watch.py --hour [--packets 2500000000]      # make watch-hour
    python benchmarks/watch.py --cli --repeats 3 [--packets 100000000] [--noise N] [--json PATH]
    python benchmarks/watch.py --warm-start [--json results/watch_warm_start.json]

Ratios (one process, interleaved repetitions, process CPU time): the end-to-end path of ``dpstream watch`` (a
generated pcap, Ethernet + IPv4, captured length 96, fed to the streaming reader ``data.live.CaptureKeys`` in
``CHUNK_BYTES`` blocks; keys into ``heavy_hitters.epochs.EpochWatcher``, k = 128, k~ = 512, eps = 1, a release every
2^17 packets, each release serialised to a JSON line) against a bare compiled Count-Min loop (``bare_loop``: the
sketches' own 2-word ``hashing.multiply_shift``, one key and row at a time) of the same depth (LazyHH's d for the
epoch's horizon) and width k~ over the same packets' keys; and the same with mod-p hashing in both (the bare loop
``benchmarks/hashing.py:reference_loop_modp``). Arms: derived node noise, and the deployable default
(discrete_secure_ahead, OS key, its refreshes' node noise drawn a period ahead on a second thread: ``--clock wall``
counts the two threads' work once, the default CPU clock adds them). ``--host-cap N``: the same arms again with the
host cap on. ``--flush-every B``: the watcher's counter clock (default the watcher's, ``epochs.FLUSH_EVERY``; 1 is
LazyHH as the paper). Targets: >= 0.35x with derived noise, >= 0.2x deployable.

``--cli``: the command itself: ``dpstream watch -`` at its defaults (d 55 for an hour at 1e6 packets/s, B 64, a release
every 5 s of packets), once per node noise (``--noise``, default both), run as a child process and fed a generated pcap
through a real pipe, with its ledger written and fsynced at each release and its lines read from its stdout; packets
per CPU second of the child (all threads, everything) against the bare loop of the same depth timed in this process
before and after it, over the whole run (``RUSAGE_CHILDREN``: its start included) and for the running watcher (from
its first release line to its last, the child's CPU read from ``/proc`` as each line arrives).

``--warm-start``: the time from starting ``dpstream watch -`` (default noise, ``--rate 1000``: a release every 32,768
packets) on a small pcap fed through a pipe to its first release line, wall and the child's CPU (``/proc``), once the
numba cache is filled (a first run fills it, then ``--repeats`` runs are timed).

``--hour``: a one-hour backbone trace (2.5e9 packets by default) generated a chunk at a time and streamed through
the same reader and watcher (deployable default, one-hour first epoch), never stored: packets/s (CPU, reader and
watcher only; generation excluded), the ratio to the bare loop measured in the same process, and peak memory.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from hashing import reference_loop_modp  # benchmarks/hashing.py: the bare compiled mod-p Count-Min loop
from numba import njit

from dpstream.data.live import CHUNK_BYTES, CaptureKeys, ipv4_label
from dpstream.data.synthetic_capture import pcap_header, pcap_records
from dpstream.hashing import canonical_keys, draw_hash_params, multiply_shift
from dpstream.heavy_hitters.epochs import FLUSH_EVERY, EpochWatcher, WatchConfig
from dpstream.privacy.heavy_hitters import lazy_hh_depth
from dpstream.timing import RatioEstimate, interleaved_ratios
from dpstream.watch import config_of
from dpstream.watch import parser as watch_parser

RESULTS = Path(__file__).resolve().parent / "results" / "watch.json"
CAPLEN = 96
EVERY = 1 << 17
TARGETS = {"derived": 0.35, "discrete_secure_ahead": 0.2}


def sources(n: int, seed: int) -> np.ndarray:
    """Heavy-tailed IPv4 sources: Zipf-like ranks (skew 1.1) over 2^20 hosts."""
    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.1, n), 1 << 20)
    return (0x0A000000 + ranks).astype(np.uint32)


def config(packets: int, node_noise: str, hash_family: str = "multiply_shift",
           host_cap: int | None = None, flush_every: int = FLUSH_EVERY) -> WatchConfig:
    """One epoch covering ``packets``: k = 128, k~ = 512, eps = 1, delta = 1e-6, a release every 2^17 packets.

    ``flush_every`` B: the counters step once per B k~ packets (the watcher's default unless given).
    """
    horizon = -(-packets // EVERY) * EVERY
    return WatchConfig(k=128, k_tilde=512, epsilon=1.0, delta=1e-6, beta=5e-7, every=EVERY, horizon=horizon,
                       node_noise=node_noise, hash_family=hash_family, host_cap=host_cap, flush_every=flush_every)


def end_to_end(data: bytes, cfg: WatchConfig) -> int:
    """Packets in, JSON lines out: the reader on ``data`` in blocks, the watcher on its keys. Returns the lines."""
    lines: list[str] = []
    watcher = EpochWatcher(cfg, None, lambda line: lines.append(json.dumps(line)), label=ipv4_label)
    view = memoryview(data)
    decoder = CaptureKeys(bytes(view[:24]), "bench")
    for start in range(0, len(data), CHUNK_BYTES):
        watcher.feed(decoder.feed(view[start:start + CHUNK_BYTES]))
    return len(lines)


@njit  # not cached: it calls the package's kernels, whose changes numba's cache would not see here
def bare_loop(keys: np.ndarray, params: np.ndarray, counts: np.ndarray) -> None:
    """counts[i, (h_i(x) w) >> 32] += 1 for every key and row, h_i the sketches' ``multiply_shift``: no blocks."""
    depth, width = counts.shape
    w = np.uint64(width)
    for k in range(keys.shape[0]):
        x = keys[k]
        for i in range(depth):
            counts[i, np.int64((multiply_shift(params[i, 0], params[i, 1], params[i, 2], x) * w) >> np.uint64(32))] += 1


def bare(keys: np.ndarray, depth: int, width: int, family: str = "multiply_shift") -> np.ndarray:
    """The bare loop of ``family`` (``bare_loop``, or ``hashing.py:reference_loop_modp``): its counts after ``keys``."""
    params = draw_hash_params(depth, np.random.SeedSequence(0), family)
    counts = np.zeros((depth, width), dtype=np.int64)
    (bare_loop if family == "multiply_shift" else reference_loop_modp)(keys, params, counts)
    return counts


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
"""Process CPU time (the default) or wall time (``--clock wall``: both threads' work counted once)."""


def ratios(packets: int, repeats: int, families: tuple[str, ...] = ("multiply_shift", "modp"),
           noises: tuple[str, ...] = tuple(TARGETS), clock: str = "cpu", host_cap: int | None = None,
           flush_every: int = FLUSH_EVERY) -> list[dict]:
    """The end-to-end arms (``noises``) against the bare loops of ``families`` on ``clock`` (module docstring).

    ``host_cap``: the watcher counts at most that many packets a host and epoch (``--host-cap``); ``flush_every``:
    the watcher's B (``--flush-every``).
    """
    src = sources(packets, 1)
    data = pcap_header(CAPLEN) + pcap_records(src, CAPLEN)
    keys = canonical_keys(src.astype(np.int64))
    depth = lazy_hh_depth(config(packets, "derived").horizon, 5e-7)
    rows = []
    for family in families:
        for noise in noises:
            target = TARGETS[noise]
            cfg = config(packets, noise, family, host_cap, flush_every)
            end_to_end(data, cfg)  # compile / load the kernels
            bare(keys, depth, 512, family)
            est = interleaved_ratios({"watch": lambda cfg=cfg: end_to_end(data, cfg),
                                      "bare loop": lambda family=family: bare(keys, depth, 512, family)},
                                     "bare loop", repeats, CLOCKS[clock])["watch"]
            cap = "" if host_cap is None else f", host cap {host_cap}"
            name = (f"watch end to end, {noise}, {family}, flush every {flush_every}{cap} "
                    f"({'deployable' if cfg.deployable else 'not deployable'})")
            rows.append({**est.as_dict(), "name": name, "clock": clock,
                         "reference": f"bare {family} Count-Min loop (d {depth}, w 512)", "row": name,
                         "target": target, "met": RatioEstimate.decide(est, target), "flush_every": flush_every,
                         f"packets_per_{clock}_s": packets / est.candidate_seconds})
            print(f"{name}: {est}; {packets / est.candidate_seconds / 1e6:.2f} M packets per {clock} second; "
                  f"target >= {target}x: {rows[-1]['met']}", flush=True)
    return rows


def hour(packets: int, chunk: int = 1 << 18, flush_every: int = FLUSH_EVERY) -> dict:
    """Stream ``packets`` generated packets through the reader and the deployable watcher (module docstring).

    Generated ``chunk`` packets at a time, each chunk dropped before the next is made: the generator's records (a
    chunk's array and its bytes, 2 x 112 bytes a packet) stay small next to the watcher's own memory.
    """
    cfg = config(packets, "discrete_secure_ahead", flush_every=flush_every)
    lines = 0

    def count(line: dict) -> None:
        nonlocal lines
        json.dumps(line)
        lines += 1

    watcher = EpochWatcher(cfg, None, count, label=ipv4_label)
    decoder = CaptureKeys(pcap_header(CAPLEN), "hour")
    decoder.feed(pcap_header(CAPLEN))
    sample = canonical_keys(sources(1 << 20, 0).astype(np.int64))
    depth = watcher.tracker.depth
    bare(sample, depth, 512)
    t0 = time.process_time()
    bare(sample, depth, 512)
    bare_rate = sample.size / (time.process_time() - t0)
    del sample
    cpu = 0.0
    wall0 = time.perf_counter()
    done = 0
    while done < packets:
        n = min(chunk, packets - done)
        data = pcap_records(sources(n, 2 + done // chunk), CAPLEN, first=done)
        c0 = time.process_time()
        view = memoryview(data)
        for start in range(0, len(data), CHUNK_BYTES):
            watcher.feed(decoder.feed(view[start:start + CHUNK_BYTES]))
        cpu += time.process_time() - c0
        view.release()
        del data, view
        done += n
        if done % (chunk * 1024) == 0 or done == packets:
            print(f"{done:.3e} packets, {done / cpu / 1e6:.2f} M/s (CPU), peak RSS "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB", file=sys.stderr, flush=True)
    rate = packets / cpu
    return {"packets": packets, "flush_every": flush_every, "releases": lines, "packets_per_cpu_s": rate,
            "bare_loop_per_cpu_s": bare_rate,
            "ratio": rate / bare_rate, "wall_s": time.perf_counter() - wall0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child_cpu(pid: int) -> float:
    """The CPU seconds (user + system, all threads) a running process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cli_run(chunks: Iterator[bytes], options: list[str]) -> dict:
    """``dpstream watch - options`` as a child fed ``chunks`` through a pipe by a thread of this process.

    Wall and child CPU from the start to its first release line; each release's step and the child's CPU when its
    line was read (``/proc``); the child's CPU over the whole run (``RUSAGE_CHILDREN``, read before and after: this
    process starts no other child meanwhile).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as folder:
        cmd = [sys.executable, "-m", "dpstream", "watch", "-", *options, "--state", f"{folder}/state.json"]
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None

        def feed() -> None:
            for chunk in chunks:
                child.stdin.write(chunk)  # type: ignore[union-attr]
            child.stdin.close()  # type: ignore[union-attr]

        writer = threading.Thread(target=feed)
        writer.start()
        first = child.stdout.readline()
        first_wall = time.perf_counter() - t0
        releases = [(json.loads(line)["step"], child_cpu(child.pid)) for line in itertools.chain([first], child.stdout)
                    if line]
        err = child.stderr.read().decode()
        writer.join()
        code = child.wait()
        wall = time.perf_counter() - t0
    if code != 0 or not first:
        raise SystemExit(f"{' '.join(cmd)}: exit {code}, {len(releases)} line(s): {err[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"first_release_wall_s": first_wall, "first_release_cpu_s": releases[0][1], "lines": len(releases),
            "releases": [{"step": step, "cpu_s": at} for step, at in releases], "cpu_s": cpu, "wall_s": wall}


def generated(packets: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """A pcap (captured length 96) of ``packets`` Zipf-like sources, generated ``chunk`` packets at a time."""
    yield pcap_header(CAPLEN)
    for done in range(0, packets, chunk):
        yield pcap_records(sources(min(chunk, packets - done), 2 + done // chunk), CAPLEN, first=done)


def warm_start(repeats: int, packets: int = 40_000) -> dict:
    """Start to first release of ``dpstream watch - --rate 1000`` on a ``packets``-packet pcap, warm (module doc)."""
    options = ["--rate", "1000"]
    data = list(generated(packets))
    cli_run(iter(data), options)  # fills the numba cache if it is empty
    load = os.getloadavg()[0]
    runs = [cli_run(iter(data), options) for _ in range(repeats)]
    for run in runs:
        print(f"first release after {run['first_release_wall_s']:.2f} s wall, {run['first_release_cpu_s']:.2f} s "
              f"CPU of the child; whole run {run['cpu_s']:.2f} s CPU, {run['lines']} line(s)", flush=True)
    return {"packets": packets, "options": options, "load_average_1min_at_start": load, "runs": runs,
            "median_first_release_wall_s": statistics.median(r["first_release_wall_s"] for r in runs),
            "median_first_release_cpu_s": statistics.median(r["first_release_cpu_s"] for r in runs)}


def cli(packets: int, noise: str, repeats: int) -> dict:
    """``dpstream watch - --noise noise`` through a pipe, ``repeats`` times, against the bare loop of its depth.

    Two figures a run, both the child's packets per CPU second over the bare loop's (timed before and after the
    child): the whole run (its start included) and the running watcher (from its first release line to its last).
    Each is met when its lowest ratio over the runs, each against the faster of its two bare-loop timings, reaches the
    target; a run's start is its first release's CPU less that release's packets at the running rate.
    """
    options = ["--noise", noise]
    cfg = config_of(watch_parser().parse_args(["-", *options]))
    depth = lazy_hh_depth(cfg.horizon, cfg.beta)
    sample = canonical_keys(sources(1 << 20, 0).astype(np.int64))
    bare(sample, depth, cfg.k_tilde)

    def bare_rate() -> float:
        t0 = time.process_time()
        bare(sample, depth, cfg.k_tilde)
        return sample.size / (time.process_time() - t0)

    cli_run(generated(2 * cfg.every), options)  # fills the numba cache if it is empty
    load = os.getloadavg()[0]
    runs = []
    for _ in range(repeats):
        rate_before = bare_rate()
        run = cli_run(generated(packets), options)
        rate_after = bare_rate()
        first, last = run["releases"][0], run["releases"][-1]
        running = (last["step"] - first["step"]) / (last["cpu_s"] - first["cpu_s"])
        rates = {"whole": packets / run["cpu_s"], "running": running}
        low, high = sorted((rate_before, rate_after))
        figures = {name: {"packets_per_cpu_s": rate, "ratio": rate / ((low + high) / 2),
                          "ratio_range": [rate / high, rate / low]} for name, rate in rates.items()}
        runs.append({**run, "start_cpu_s": first["cpu_s"] - first["step"] / running,
                     "bare_loop_per_cpu_s_before": rate_before, "bare_loop_per_cpu_s_after": rate_after, **figures})
        print(f"dpstream watch - {' '.join(options)}, d {depth}, B {cfg.flush_every}: {packets} packets, "
              f"{run['lines']} lines, {run['cpu_s']:.1f} s CPU of the child (start {runs[-1]['start_cpu_s']:.2f} s); "
              f"bare loop {rate_before / 1e6:.1f} / {rate_after / 1e6:.1f} M per CPU second before / after; "
              + "; ".join(f"{name} {f['packets_per_cpu_s'] / 1e6:.2f} M packets per CPU second, {f['ratio']:.3f}x "
                          f"(target {TARGETS[noise]}x)" for name, f in figures.items()), flush=True)
    lowest = {name: min(run[name]["ratio_range"][0] for run in runs) for name in ("whole", "running")}
    return {"noise": cfg.node_noise, "deployable": noise != "derived", "packets": packets, "depth": depth,
            "k_tilde": cfg.k_tilde, "flush_every": cfg.flush_every, "every": cfg.every, "horizon": cfg.horizon,
            "load_average_1min_at_start": load, "target": TARGETS[noise], "runs": runs, "lowest_ratio": lowest,
            "met": {name: value >= TARGETS[noise] for name, value in lowest.items()}}


def main() -> None:
    """Run the ratios (``--json``: write benchmarks/results/watch.json) or the one-hour stream (``--hour``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=None, help="default 1e6 (ratios), 2.5e9 (--hour)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--hour", action="store_true", help="stream a generated one-hour trace (make watch-hour)")
    parser.add_argument("--cli", action="store_true",
                        help="dpstream watch - at its defaults as a child fed through a pipe (default 1e8 packets)")
    parser.add_argument("--warm-start", action="store_true",
                        help="warm start to the first release of dpstream watch - through a pipe")
    parser.add_argument("--json", nargs="?", const=RESULTS, type=Path, default=None, metavar="PATH",
                        help=f"write the rows as JSON to PATH (default {RESULTS})")
    parser.add_argument("--family", choices=("multiply_shift", "modp"), action="append",
                        help="only this hash family's arms (repeatable; default both)")
    parser.add_argument("--noise", choices=tuple(TARGETS), action="append",
                        help="only this node noise's arms (repeatable; default both)")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu", help="process CPU time or wall time")
    parser.add_argument("--host-cap", type=int, action="append", default=None,
                        help="also time the arms with the watcher's host cap N (repeatable)")
    parser.add_argument("--flush-every", type=int, nargs="+", default=[FLUSH_EVERY],
                        help=f"the watcher's B: counters stepped once per B k~ packets (default {FLUSH_EVERY}; "
                             "several values: a sweep of B, every arm at each)")
    args = parser.parse_args()
    if args.cli:
        arms = [cli(args.packets or 100_000_000, noise, args.repeats) for noise in args.noise or TARGETS]
        if args.json:
            title = (f"dpstream watch - at its defaults as a child process, {arms[0]['packets']} generated packets "
                     f"(pcap, captured length {CAPLEN}) through a pipe, ledger and stdout included, {args.repeats} "
                     "runs per node noise; child CPU (all threads) per packet against the bare multiply-shift loop "
                     "of the same depth: 'whole' from its start, 'running' from its first release to its last; met: "
                     "the lowest ratio over the runs against the faster bare-loop timing reaches the target")
            write_record(args.json, {"title": title, "arms": arms})
        return
    if args.warm_start:
        result = warm_start(args.repeats)
        if args.json:
            write_record(args.json, {"title": "dpstream watch - on a warm numba cache: from the start to the first "
                                              f"release line, {result['packets']} generated packets (pcap) through a "
                                              "pipe, the default (deployable) noise", **result})
        return
    if args.hour:
        result = hour(args.packets or 2_500_000_000, flush_every=args.flush_every[0])
        print(json.dumps(result))
        if args.json:
            write_record(args.json, {"title": f"make watch-hour: {result['packets']} generated packets (pcap, captured "
                                              f"length {CAPLEN}) through the streaming reader and the deployable "
                                              "watcher, never stored", **result})
        return
    packets = args.packets or 1_000_000
    rows = [row for flush_every in args.flush_every for cap in (None, *(args.host_cap or ()))
            for row in ratios(packets, args.repeats, tuple(args.family or ("multiply_shift", "modp")),
                              tuple(args.noise or TARGETS), args.clock, cap, flush_every)]
    if args.json:
        write_record(args.json, {
            "title": f"dpstream watch end to end: {packets} packets (pcap, captured length {CAPLEN}) through the "
                     f"streaming reader and LazyHH in epochs (k 128, k~ 512, counters stepped once per "
                     f"{'/'.join(map(str, args.flush_every))} x k~ packets), a JSON line every 2^17 packets",
            "rows": rows})


def write_record(path: Path, record: dict) -> None:
    """``record`` as JSON at ``path``, after its title, with the command and the machine it was measured with."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "title": record["title"],
        "command": "python benchmarks/watch.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        **{k: v for k, v in record.items() if k != "title"}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
