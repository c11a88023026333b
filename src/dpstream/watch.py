"""``dpstream watch``: private heavy hitters of a live link, one JSON line per release (docs/guide/watch.md).

    tcpdump -i eth0 -w - -U | dpstream watch -          # pcap on stdin, releases on stdout
    dpstream watch /var/log/caps/ --follow               # a folder of rotated captures, followed
    dpstream watch flows.csv --column 2                  # a text / CSV line stream (integers or IPv4 addresses)
    dpstream watch - --host-cap 5                        # at most 5 packets a host per epoch: host-level too

LazyHH (Holland, Alg. 6) in epochs (``heavy_hitters.epochs``): a fresh key from the operating system and fresh
counters per epoch, the horizon doubling from one epoch to the next, a new epoch at every start. Only the
configuration and the releases are saved (``--state``), atomically before each line is written, with the source
they came from and the (name, size, packets) of each file they were read from: a restart checks those files and
skips their released packets (refused when they changed), and is refused on stdin unless ``--stdin-is-new``
asserts that the pipe carries only packets never fed before, so each packet lies in one epoch. The source is
checked (it exists, its first block decodes) before the state is touched, and an epoch opens with the first packet
read after the released ones.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from dpstream.data.live import (
    STDIN,
    CaptureKeys,
    Decoder,
    LineKeys,
    Reading,
    check_resume,
    ipv4_label,
    probe,
    rotation_files,
    source_keys,
)
from dpstream.errors import command_args
from dpstream.heavy_hitters import epochs
from dpstream.heavy_hitters.epochs import (
    MAX_HORIZON,
    NODE_NOISE,
    EpochWatcher,
    Ledger,
    WatchConfig,
    epoch_after,
    reportable_share,
)

DEFAULT_RATE = 1e6
MAX_RATE = MAX_HORIZON // 3600
"""The largest --rate: an hour of packets at it still fits the largest epoch horizon."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit code 2 (no usage block)."""

    def error(self, message: str) -> Any:
        """Print ``error: message`` and exit 2."""
        self.exit(2, f"error: {message}; see dpstream watch --help\n")


def parser() -> argparse.ArgumentParser:
    """The command's options."""
    p = OneLineParser(prog="dpstream watch", description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="'-' (stdin: pcap, pcapng or lines), a file, or a folder of rotated captures")
    p.add_argument("--follow", action="store_true", help="at the end of a file or folder, wait for more")
    p.add_argument("--column", type=int, default=0, help="0-based field of a line stream's items (default 0)")
    p.add_argument("--state", default="dpstream-watch.json",
                   help="the ledger of configuration and releases (default ./dpstream-watch.json)")
    p.add_argument("--k", type=int, default=128, help="heavy-hitter parameter k (default 128, as the paper)")
    p.add_argument("--k-tilde", type=int, default=512, help="candidates k~ = sketch width (default 512)")
    p.add_argument("--epsilon", type=float, default=1.0, help="epsilon per packet over the whole run (default 1)")
    p.add_argument("--delta", type=float, default=1e-6, help="LazyHH's delta (default 1e-6)")
    p.add_argument("--beta", type=float, default=None, help="utility failure probability, < delta (default delta/2)")
    p.add_argument("--rate", type=float, default=DEFAULT_RATE,
                   help="expected packets/s: sizes the defaults of --every and --horizon (default 1e6)")
    p.add_argument("--flush-every", type=int, default=epochs.FLUSH_EVERY, metavar="B",
                   help=f"the counters step once per B x k~ packets (default {epochs.FLUSH_EVERY}; 1 = LazyHH as the "
                        "paper): fewer exact noise draws a packet, a refresh every B x k~ packets")
    p.add_argument("--every", type=int, default=None,
                   help="packets between releases, a multiple of k~ (default: 5 s at --rate)")
    p.add_argument("--horizon", type=int, default=None,
                   help="first epoch's packets, a multiple of --every (default: one hour at --rate); doubles after")
    p.add_argument("--noise", choices=NODE_NOISE, default=NODE_NOISE[0],
                   help="node noise (default discrete_secure_ahead: exact, keyed from the OS, deployable)")
    p.add_argument("--seed", type=int, default=None, help="seeded noise for tests: NOT deployable")
    p.add_argument("--host-cap", type=int, default=None, metavar="N",
                   help="count at most N packets a host (item) per epoch, for a host-level guarantee (default off)")
    p.add_argument("--ipv6", choices=("skip", "key"), default="skip", help="IPv6 packets of a capture")
    p.add_argument("--stdin-is-new", action="store_true",
                   help="a restart on stdin: assert the pipe carries only packets never fed to this --state before "
                        "(a live tcpdump -w - -U pipe); without it such a restart is refused")
    return p


def at_least(name: str, value: float | None, low: float) -> None:
    """Refuse ``value`` of option ``name`` unless it is a finite number >= ``low`` (None: the option is unset)."""
    if value is not None and not (math.isfinite(value) and value >= low):
        raise ValueError(f"{name} {value!r}: allowed: a finite number >= {low:g}")


def check_options(args: argparse.Namespace) -> None:
    """Refuse a bad numeric option before anything is computed from it: one line naming option, value and range."""
    for name in ("--k", "--k-tilde", "--flush-every", "--every", "--horizon", "--host-cap"):
        at_least(name, getattr(args, name[2:].replace("-", "_")), 1)
    at_least("--column", args.column, 0)
    at_least("--seed", args.seed, 0)
    if args.k_tilde < args.k:
        raise ValueError(f"--k-tilde {args.k_tilde}: allowed: an integer >= --k = {args.k}")
    if not (math.isfinite(args.epsilon) and args.epsilon > 0):
        raise ValueError(f"--epsilon {args.epsilon!r}: allowed: a finite number > 0")
    if not 0 < args.delta < 0.5:
        raise ValueError(f"--delta {args.delta!r}: allowed: a number in the open interval (0, 0.5)")
    if args.beta is not None and not 0 < args.beta < args.delta:
        raise ValueError(f"--beta {args.beta!r}: allowed: a number in the open interval (0, --delta = {args.delta:g})")
    if not (math.isfinite(args.rate) and 0 < args.rate <= MAX_RATE):
        raise ValueError(f"--rate {args.rate!r}: allowed: a number of packets/s > 0 and at most {MAX_RATE:.3g} (an "
                         "hour at it fits the largest epoch horizon)")


def round_up(value: float, unit: int) -> int:
    """The smallest positive multiple of ``unit`` at or above ``value``."""
    return max(unit, math.ceil(value / unit) * unit)


def config_of(args: argparse.Namespace) -> WatchConfig:
    """The ``WatchConfig`` of the options (``check_options`` first; --every and --horizon default from --rate)."""
    check_options(args)
    every = args.every if args.every is not None else round_up(5 * args.rate, args.k_tilde * args.flush_every)
    horizon = args.horizon if args.horizon is not None else round_up(3600 * args.rate, every)
    return WatchConfig(k=args.k, k_tilde=args.k_tilde, epsilon=args.epsilon, delta=args.delta,
                       beta=args.delta / 2 if args.beta is None else args.beta, every=every, horizon=horizon,
                       node_noise=args.noise, hash_family="multiply_shift", seed=args.seed,
                       host_cap=args.host_cap, flush_every=args.flush_every)


def share_text(config: WatchConfig, rate: float, seconds: float, epoch: int = 0) -> str:
    """The smallest share an item needs ``seconds`` at ``rate`` after epoch ``epoch`` opened (``reportable_share``).

    'x% of epoch e's packets' in the epoch those packets fall in (``epochs.epoch_after``: with a short horizon an
    hour is many epochs on), its own horizon's (a later epoch's longer horizon raises the threshold), at its step
    then; 'nothing' before that epoch's first release.
    """
    later, t = epoch_after(config, epoch, int(rate * seconds))
    share = reportable_share(config, t, config.epoch_horizon(later))
    where = f"epoch {later}" if later == epoch else f"epoch {later}, {t} packets into it"
    return f"nothing (no release yet in {where})" if math.isinf(share) else (
        f"{100 * min(share, 1.0):.3g}% of the packets ({where})")


def announce(watcher: EpochWatcher, rate: float, resumed: int) -> None:
    """The startup lines on stderr: state, epoch, the smallest reportable share, the deployable warning."""
    config, epoch = watcher.config, watcher.epoch
    say = print
    if resumed:
        say(f"state: {resumed} earlier epoch(s), step {epoch.start} released; opening epoch {epoch.epoch} with a "
            "new key (no secret state is saved, so no noise is replayed)", file=sys.stderr)
    say(f"epoch {epoch.epoch}: key id {epoch.key_id}, horizon {epoch.horizon} packets (doubling per epoch), a "
        f"release every {config.every} packets, counters stepped once per {config.period} packets (k~ "
        f"{config.k_tilde} x --flush-every {config.flush_every})", file=sys.stderr)
    say(f"smallest share of its epoch's packets an item needs before it can be reported, at {rate:g} packets/s "
        f"from now: after a minute {share_text(config, rate, 60, epoch.epoch)}, after an hour "
        f"{share_text(config, rate, 3600, epoch.epoch)}", file=sys.stderr)
    p = watcher.privacy
    say(f"privacy: ({p['epsilon']:g}, {p['delta']:.3g})-DP per packet over the whole run ({p['over_epochs']}); "
        f"{p['not_covered']}", file=sys.stderr)
    if "host" in p:
        h = p["host"]
        say(f"host cap {h['cap']}: ({h['epsilon_per_epoch']:g}, {h['delta_per_epoch']:.3g})-DP per host per epoch "
            f"({h['relation']}); {h['over_epochs']}; {p['packet_under_cap']}", file=sys.stderr)
    if watcher.deployable is not True:
        say(f"warning: {watcher.deployable}: for tests only, never for real traffic", file=sys.stderr)
    sys.stderr.flush()


EXIT_READER_GONE = 141
"""Exit code when stdout's reader has gone (128 + SIGPIPE, what a shell reports of a writer killed by it)."""


class ReaderGone(Exception):
    """stdout's reader went away while release ``step`` was written (it is in the state: released)."""

    def __init__(self, step: int) -> None:
        """The release's global step."""
        super().__init__(step)
        self.step = step


def emit(line: dict[str, Any]) -> None:
    """One release as one JSON line on stdout, flushed (``ReaderGone`` when the pipe's reader has gone)."""
    try:
        sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise ReaderGone(line["step"]) from None


def reader_gone(step: int | None) -> int:
    """One line on stderr about a release nobody may have received; stdout pointed at /dev/null; the exit code.

    The release was computed and saved before it was written, so it counts as released: its privacy is spent, its
    packets are skipped by a restart on a file, and the next run opens a new epoch.
    """
    try:  # Python's flush of stdout at exit would fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (a captured stdout)
        pass
    which = "a release" if step is None else f"the release at step {step}"
    print(f"error: stdout's reader has gone (broken pipe): {which} is in the state and counts as released, but may "
          f"not have been received; stopped (exit {EXIT_READER_GONE}); a restart opens a new epoch",
          file=sys.stderr)
    return EXIT_READER_GONE


def hold(state: Path) -> TextIO:
    """An exclusive lock on ``<state>.lock``: two watchers on one ledger would open the same epoch index twice."""
    state.parent.mkdir(parents=True, exist_ok=True)
    fh = open(state.with_name(state.name + ".lock"), "w")  # open for the process's lifetime
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise ValueError(f"state {state} is in use by another dpstream watch; allowed: one watcher per --state "
                         "file") from None
    return fh


def source_id(args: argparse.Namespace) -> str:
    """What the ledger records of the source: its kind and absolute path, and what decides its keys' count."""
    if args.source == STDIN:
        return "stdin"
    path = Path(args.source).resolve()
    return f"{'folder' if path.is_dir() else 'file'} {path} column={args.column} ipv6={args.ipv6}"


def check_restart(args: argparse.Namespace, state: Path, config: WatchConfig) -> Reading:
    """Refuse a restart that could put a packet into a second epoch (none when nothing was released yet).

    A file or folder source skips the packets already released, which is right only for the same source read the
    same way: the ledger records it and the (name, size, packets) of each file released (``data.live.Reading``),
    and the files must be those (``check_resume``). stdin cannot be skipped, so its packets must be new
    (``--stdin-is-new``). The ``Reading`` that skips what was released.
    """
    if not state.exists():
        return Reading()
    ledger = Ledger.load(state, config)
    if ledger.step == 0:
        return Reading()
    here = source_id(args)
    if here == "stdin" and not args.stdin_is_new:
        raise ValueError(f"state {state} has released {ledger.step} packets and stdin cannot skip them, so a restart "
                         "could count them in a second epoch; allowed: --stdin-is-new when the pipe carries only "
                         "packets never fed before (a live tcpdump -w - -U), the same file or folder source, or a "
                         "new --state")
    if here != "stdin" and ledger.source != here:
        raise ValueError(f"source {here} differs from the source of the state's {ledger.step} released packets "
                         f"({ledger.source}), so skipping them could count packets in two epochs; allowed: the same "
                         "source with the same --column and --ipv6, or a new --state")
    if here == "stdin":
        return Reading()
    if ledger.files is None:  # format 1: read a folder in plain name order and kept no list of its files
        path = Path(args.source)
        names = rotation_files(path) if path.is_dir() else []
        if names != sorted(names):
            moved = next(a for a, b in zip(names, sorted(names), strict=True) if a != b)
            raise ValueError(f"state {state} was written by an older dpstream watch, which read a folder's files in "
                             f"plain name order and kept no list of them, and {moved!r} now comes elsewhere in the "
                             "rotation's order, so its released packets cannot be told from the rest; allowed: a new "
                             "--state (its releases stay valid; give it a folder of the files not yet read)")
        return Reading(skip=ledger.step, state=str(state))  # the same order as then: skipped by count, as then
    check_resume(args.source, ledger.files, str(state))
    return Reading(ledger.files, state=str(state))


def watch(args: argparse.Namespace) -> int:
    """Run the watcher over the source until it ends (never, when followed or on a live pipe), holding the state.

    The options and the source (``probe``: it exists, its names fit one rotation, its first block decodes) are
    checked before the state or its lock is touched, so a mistyped source writes nothing and opens no epoch.
    """
    config = config_of(args)
    probe(args.source, args.column, args.ipv6)
    state = Path(args.state)
    with hold(state):  # the kernel drops the lock when the process ends, even on kill -9
        reading = check_restart(args, state, config)
        return run(args, config, state, reading)


class Pace:
    """Warns once on stderr when the watcher processes packets slower than ``rate``, measured over a release interval.

    Only the time inside ``EpochWatcher.feed`` counts (not the wait for input), read once a block, not a packet. The
    first interval is warm-up (the kernels' first calls load or compile them) and is not judged.
    """

    def __init__(self, rate: float, every: int) -> None:
        """Measure over at least ``every`` packets at a time."""
        self.rate, self.every = rate, every
        self.busy, self.packets, self.warm, self.warned = 0.0, 0, False, False

    def feed(self, watcher: EpochWatcher, keys: Any) -> None:
        """``watcher.feed(keys)``, timed."""
        start = time.perf_counter()
        watcher.feed(keys)
        self.busy += time.perf_counter() - start
        self.packets += keys.size
        if self.packets >= self.every and not self.warned:
            achieved = self.packets / self.busy if self.busy > 0 else math.inf
            if self.warm and achieved < self.rate:
                print(f"warning: falling behind: {achieved:.3g} packets/s processed over the last "
                      f"{self.packets} packets, below --rate {self.rate:g}; a pipe backs up and the capture drops "
                      "packets (docs/guide/watch.md, Speed)", file=sys.stderr)
                sys.stderr.flush()
                self.warned = True
            self.busy, self.packets, self.warm = 0.0, 0, True


def run(args: argparse.Namespace, config: WatchConfig, state: Path, reading: Reading) -> int:
    """Feed every key of the source to a watcher on ``state``, skipping those already released (``reading``).

    The epoch opens (and the ledger is written) only with the first packet read after the released ones: a source
    whose first block does not decode, or that holds nothing new, opens none.
    """
    label: Callable[[int], str] = str  # the label of the keys read so far
    watcher: EpochWatcher | None = None  # once open

    def on_stream(decoder: Decoder) -> None:
        nonlocal label
        ipv4 = isinstance(decoder, CaptureKeys) or (isinstance(decoder, LineKeys) and decoder.label_kind == "ipv4")
        label = ipv4_label if ipv4 else str
        if watcher is not None:
            watcher.label = label

    keys = source_keys(args.source, args.follow, args.column, args.ipv6, on_stream=on_stream, reading=reading)
    first = next(keys, None)
    if first is None:
        left = f"; the source holds {reading.skip} packet(s) fewer than were released before" if reading.skip else ""
        print(f"end of input: no packet after the {Ledger.load(state, config).step} released before; no epoch "
              f"opened{left}", file=sys.stderr)
        return 0
    restart = Ledger.load(state, config).step > 0
    assumes = None
    if args.source == STDIN and restart:  # a restart on stdin, allowed by --stdin-is-new
        assumes = ("--stdin-is-new: this run's pipe carries only packets that no earlier run on this state read; a "
                   "replayed packet would lie in two epochs")
    watcher = EpochWatcher(config, state, emit, label=label, source=source_id(args), assumes=assumes,
                           files=None if args.source == STDIN else reading.released)
    announce(watcher, args.rate, len(watcher.ledger.epochs) - 1)
    pace = Pace(args.rate, watcher.config.every)
    pace.feed(watcher, first)
    for block in keys:
        pace.feed(watcher, block)
    print(f"end of input: step {watcher.ledger.step} released; the {watcher.unreleased} packet(s) after the last "
          "release are not released", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    """``dpstream watch ...``: the exit code.

    0 at the end of the input, 2 on bad input (one line), 130 on Ctrl-C, 141 when stdout's reader has gone
    (``reader_gone``).
    """
    args = command_args(parser(), argv)
    if isinstance(args, int):
        return args
    try:
        return watch(args)
    except ValueError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped: every release is in the state file; a restart opens a new epoch", file=sys.stderr)
        return 130
    except ReaderGone as gone:
        return reader_gone(gone.step)
    except BrokenPipeError:
        return reader_gone(None)
