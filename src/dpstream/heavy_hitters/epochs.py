"""LazyHH on a stream that never ends: epochs with a fresh key, fresh counters and a doubling horizon.

LazyHH (Holland, Alg. 6) needs its horizon T up front: its depth d = ceil(log2(4T/beta)) and its noise term gamma
grow with T. ``EpochWatcher`` runs it in epochs: epoch e is a new ``LazyHH`` of horizon T_e = 2^e T_0 (capped at
``MAX_HORIZON``) keyed afresh (from the operating system unless seeded), fed the stream's next T_e items. A restart
opens a new epoch. Each epoch's LazyHH steps its counters once per B k~ items (``WatchConfig.flush_every`` = B,
``LazyHH``'s ``flush_every``: ~d/B node draws an item instead of d, the threshold's lazy delay B k~). Releases fall
every ``every`` items of an epoch (a multiple of B k~, so a release is an output step of Alg. 6; T_0 is a multiple
of ``every``, so an epoch ends on a release).

What is saved (``Ledger``, a JSON file written to a temporary file and renamed into place) is the configuration and
what was released: per epoch its key id, horizon, first global step and its last release, and of a file or folder
source the (name, size, packets, fingerprint, mtime) of each file the released packets came from
(``data.live.Reading``; the fingerprint digests the capture header and the inode, no packet), which a restart
checks before it skips them. No packet's contents, nor anything computed from them but releases, and no secret
state (key, counters, pending counts, candidates) is ever written, so a restarted watcher cannot continue an old
epoch's noise on other items: it opens a new epoch with a new key.

Release: an item's estimate is the sum over epochs of its estimate in that epoch's last release (0 in an epoch that
did not report it), the current epoch's included; the reported items are the current epoch's. A new epoch starts
with the past epochs' reported items as its candidate set C (public: post-processing of releases). Each reported
item's epoch estimate carries an interval (``intervals``) that holds, for all the refresh's candidates together, the
sketch's answer without its noise with probability at least ``CONFIDENCE``: so it holds for the items the threshold
selected among them.

Privacy (``statement``): under replace-one neighbouring streams (one item, a packet, replaced; the length public,
so a release carries its step) a neighbour differs in one epoch only. That epoch's releases are (eps, delta~)-DP
(LazyHH); earlier epochs are independent of the item and later ones are post-processing of released values and
their own identical items. So every release of every epoch together is (eps, delta~)-DP: parallel composition.
A group of n items (a host's n packets) is covered only by group privacy, (n eps, n e^((n-1) eps) delta~) when its
items lie in one epoch, and its budgets add up over the epochs it sends in.

Host cap (``WatchConfig.host_cap`` = N, off by default; ``_host_cap``): a host's packets beyond its N-th in an epoch
are replaced by a placeholder key that no release reports. Removing one host from an epoch (its packets replaced by
the placeholder at the same positions: the packet count and timing stay public) then changes at most N packets of
the capped stream, so that epoch's releases are (N eps, delta~ sum_{i<N} e^(i eps))-DP for the host (``group``,
at most (N eps, N e^((N-1) eps) delta~)), and a host present in E epochs has E times that (basic composition).
The cap costs the packet-level statement: replacing one packet's source also moves which packets of its old and its
new host fall past the cap, at most 3 capped packets in all, so one packet is (3 eps, delta~ (1 + e^eps +
e^(2 eps)))-DP while the cap is on.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpstream.files import write_atomically
from dpstream.heavy_hitters._host_cap import PLACEHOLDER_KEY, HostCap
from dpstream.heavy_hitters.lazy_hh import LazyHH
from dpstream.heavy_hitters.thresholds import noise_term, thresholds
from dpstream.privacy.composition import group
from dpstream.privacy.heavy_hitters import check_final_delta, lazy_hh_depth
from dpstream.privacy.statement import Privacy

LEDGER_FORMAT = "dpstream-watch-ledger/3"
LEDGER_FORMAT_2 = "dpstream-watch-ledger/2"
"""The format whose file records held a digest of each file's first 4 KiB (packets): still read, and a restart
checks those records as then (``data.live.check_resume``); the next save writes format 3 records."""
LEDGER_FORMAT_1 = "dpstream-watch-ledger/1"
"""The format before the list of files read (``Ledger.files``): still read, its ``files`` None."""
MAX_HORIZON = 1 << 48
"""Largest epoch horizon: the doubling stops there (2.8e14 items, about 3 years at 3 M packets/s)."""
CONFIDENCE = 0.95
"""The joint confidence of a release's intervals (``intervals``)."""
FLUSH_EVERY = 64
"""The watcher's default ``flush_every`` B: its counters step once per 64 k~ packets (docs/guide/watch.md, Speed)."""
NODE_NOISE = ("discrete_secure_ahead", "discrete_secure", "derived")
"""Node noise with a key (an epoch's key id is its fingerprint); the first is the default, the only deployable ones
are the discrete_secure ones without a seed."""


@dataclass(frozen=True)
class WatchConfig:
    """What a watcher is configured with (saved in its ledger; a restart must use the same)."""

    k: int = 128
    k_tilde: int = 512
    epsilon: float = 1.0
    delta: float = 1e-6
    beta: float = 5e-7
    every: int = 1 << 22
    horizon: int = 1 << 32
    node_noise: str = "discrete_secure_ahead"
    hash_family: str = "multiply_shift"
    seed: int | None = None
    host_cap: int | None = None
    flush_every: int = FLUSH_EVERY

    def __post_init__(self) -> None:
        """Check the release period and the first horizon against k~, and that delta~ < 1 (LazyHH checks the rest)."""
        check_final_delta(self.epsilon, self.delta)
        if self.node_noise not in NODE_NOISE:
            raise ValueError(f"node_noise must be one of {', '.join(NODE_NOISE)}, got {self.node_noise!r}")
        if isinstance(self.flush_every, bool) or not isinstance(self.flush_every, int) or self.flush_every < 1:
            raise ValueError(f"flush_every must be a positive integer (the counters step once per flush_every x "
                             f"k_tilde packets), got {self.flush_every!r}")
        if self.k_tilde < 1 or self.every < 1 or self.every % self.period:
            raise ValueError(f"every must be a positive multiple of k_tilde x flush_every = {self.period} (a "
                             f"release is an output step of LazyHH), got {self.every!r}")
        if self.host_cap is not None and (isinstance(self.host_cap, bool) or not isinstance(self.host_cap, int)
                                          or self.host_cap < 1):
            raise ValueError(f"host_cap must be a positive number of packets a host per epoch (or off), got "
                             f"{self.host_cap!r}")
        if self.horizon % self.every or self.horizon > MAX_HORIZON:
            raise ValueError(f"horizon must be a multiple of every = {self.every} (an epoch ends on a release) and "
                             f"at most {MAX_HORIZON}, got {self.horizon!r}")

    @property
    def period(self) -> int:
        """Packets between two refreshes of LazyHH (its counters' step): k~ x ``flush_every``."""
        return self.k_tilde * self.flush_every

    def epoch_horizon(self, epoch: int) -> int:
        """T_e = 2^e T_0, capped at ``MAX_HORIZON`` (a multiple of ``every`` either way)."""
        return self.horizon << min(epoch, int(math.log2(MAX_HORIZON // self.horizon)))

    @property
    def deployable(self) -> bool:
        """Exact discrete noise keyed from OS entropy: no seed and a discrete_secure node noise."""
        return self.seed is None and self.node_noise.startswith("discrete_secure")

    def lazy_hh(self, epoch: int) -> LazyHH:
        """Epoch ``epoch``'s LazyHH: a fresh key (from the OS, or from (seed, epoch) when seeded)."""
        seed = None if self.seed is None else np.random.SeedSequence(self.seed, spawn_key=(epoch,))
        tracker = LazyHH(k=self.k, k_tilde=self.k_tilde, epsilon=self.epsilon, delta=self.delta, beta=self.beta,
                         horizon=self.epoch_horizon(epoch), seed=seed, node_noise=self.node_noise,
                         hash_family=self.hash_family, flush_every=self.flush_every)
        if self.node_noise == "derived":
            if tracker._suffix is None:
                tracker.use_line_rate()
        else:
            tracker.prefetch_noise()
        return tracker


PACKET_MOVES = 3
"""Capped packets one replaced packet changes while the host cap is on: its own, and the first packet past the cap
of its old host and of its new host."""


def statement(privacy: Privacy, host_cap: int | None = None) -> dict[str, Any]:
    """The privacy statement a release line carries: its epoch's LazyHH ``privacy``, and what holds for the run.

    Each line states the (epsilon, delta~) computed from the noise its epoch holds (``EpochWatcher`` computes it
    per epoch). LazyHH's does not depend on its horizon, so every epoch's is the same up to rounding (1e-14
    relative), and the epochs compose in parallel (module docstring): the run is DP with the largest of them.
    With a ``host_cap`` N, the per-packet numbers are those of a group of ``PACKET_MOVES`` and a ``host`` entry
    states the host-level guarantee of a group of N per epoch (``group``).
    """
    packet = privacy if host_cap is None else group(privacy, PACKET_MOVES)
    out: dict[str, Any] = {
        "relation": "replace one packet (event level): neighbouring streams differ in one packet's source, "
                    "lengths equal and public",
        "epsilon": packet.epsilon,
        "delta": packet.delta,
        "over_epochs": "parallel composition: each packet lies in exactly one epoch, so all releases of all epochs "
                       "together are (epsilon, delta)-DP with the largest epsilon and delta of the epochs; each line "
                       "states its own epoch's, which are the same for every epoch up to rounding",
        "notion": privacy.notion,
        "not_covered": "one packet is hidden, not a host: a host with n packets in one epoch is a group of n, "
                       "covered only by (n epsilon, n e^((n-1) epsilon) delta), and its budget adds up over the "
                       "epochs it sends in",
    }
    if host_cap is not None:
        host = group(privacy, host_cap)
        out["packet_under_cap"] = (f"the host cap moves at most {PACKET_MOVES} capped packets per replaced packet, "
                                   f"so a packet is a group of {PACKET_MOVES}: epsilon = {PACKET_MOVES} x "
                                   f"{privacy.epsilon:g}")
        out["host"] = {
            "cap": host_cap,
            "relation": f"one host's packets in one epoch removed (replaced by a placeholder at the same positions: "
                        f"packet count and timing public); at most {host_cap} of them are counted, a group of "
                        f"{host_cap}",
            "epsilon_per_epoch": host.epsilon,
            "delta_per_epoch": host.delta,
            "over_epochs": "basic composition: a host present in E epochs is (E epsilon_per_epoch, "
                           "E delta_per_epoch)-DP",
        }
        out["not_covered"] = (f"a host's packets past its {host_cap}-th in an epoch are not counted; the host "
                              "guarantee is per epoch and adds up over the epochs the host sends in")
    return out


def clock_statement(tracker: LazyHH) -> dict[str, Any]:
    """The epoch's counter clock, read from the counters it holds: the privacy statement's horizon in steps and B.

    Each of the d k~ counters is a binary tree over ``horizon_steps`` = ceil(T_e / (B k~)) steps, its node noise
    calibrated for that horizon and Thm 2's m = 2d (``LazyHH``'s docstring).
    """
    cells = tracker.sketch._state.counters
    return {"flush_every": tracker.flush_every, "horizon_steps": int(cells.horizon),
            "counter_step": f"every counter steps once per {tracker.period} packets (k~ {tracker.k_tilde} x "
                            f"flush_every {tracker.flush_every}), a schedule fixed by the packet count alone"}


def reportable_share(config: WatchConfig, items: int, horizon: int | None = None) -> float:
    """The smallest share of an epoch's first ``items`` items an item needs before LazyHH may report it.

    An item is reported at step t only when its estimate exceeds tau(t) = max(t/k, t/k~ + lambda1 + 2 lambda2) + 1
    (``thresholds.thresholds``, lambda1 and gamma at the configured ``flush_every``), so tau(t)/t at the last release
    step t <= ``items`` of an epoch of ``horizon`` items (its gamma and depth grow with it; default: epoch 0's). Inf
    before the first release.
    """
    horizon = config.horizon if horizon is None else horizon
    t = min(items, horizon) // config.every * config.every
    if t == 0:
        return math.inf
    depth = lazy_hh_depth(horizon, config.beta)
    gamma = noise_term(horizon, config.k_tilde, config.epsilon, config.delta, depth, config.beta,
                       flush_every=config.flush_every)
    return thresholds(t, config.k, config.k_tilde, gamma, config.flush_every).tau / t


def epoch_after(config: WatchConfig, epoch: int, items: int) -> tuple[int, int]:
    """(e, t): the epoch, and the step within it, that ``items`` items after epoch ``epoch`` opened fall in.

    Epochs follow each other at their horizons (``WatchConfig.epoch_horizon``); an item at an epoch's horizon is its
    last (the epoch ends on that release).
    """
    while items > (horizon := config.epoch_horizon(epoch)):
        if horizon == MAX_HORIZON:  # no more doubling: whole epochs of MAX_HORIZON
            skip = (items - 1) // MAX_HORIZON
            return epoch + skip, items - skip * MAX_HORIZON
        items -= horizon
        epoch += 1
    return epoch, items


def intervals(tracker: LazyHH, items: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """[low, high] of each reported item's epoch estimate, jointly over every candidate of the refresh: (n, 2).

    A refresh chooses its reported items among at most (B + 1) k~ candidates (the k~ kept and a period of B k~ items,
    B = ``flush_every``), so each interval is the sketch's (``BlockTracker.query_interval_many``) at confidence
    1 - (1 - c) / ((B + 1) k~): all
    the candidates' intervals hold together with probability at least c (union bound), whichever the threshold
    picks. Each holds what the sketch would answer without its noise (the same hashes and pushes), not the
    item's count: Count-Min collisions move the estimate up and the pushes' lag moves it down (docs/guide/api.md).
    Half-widths come from the noise variances alone (public): post-processing.
    """
    joint = 1 - (1 - confidence) / ((tracker.flush_every + 1) * tracker.k_tilde)
    interval = tracker.query_interval_many(items, joint)
    return np.column_stack([interval.lower, interval.upper])


def key_id(tracker: LazyHH) -> str:
    """A public fingerprint of an epoch's noise key: 16 hex digits of BLAKE2b over the key and the hash parameters.

    One-way: it tells epochs' keys apart without revealing them.
    """
    sketch = tracker.sketch
    key = sketch._state.counters._key
    blob = np.ascontiguousarray(key).tobytes() + np.ascontiguousarray(sketch._params).tobytes()
    return hashlib.blake2b(blob, digest_size=8, person=b"dpstream-epoch").hexdigest()


@dataclass
class EpochRecord:
    """What the ledger keeps of one epoch: all public (released, or chosen before any item was read)."""

    epoch: int
    key_id: str
    horizon: int
    start: int  # the global step before its first item (the sum of earlier epochs' released steps)
    released: int = 0  # its step at its last release
    items: list[list[float]] = field(default_factory=list)  # [key, estimate] of its last release

    def estimates(self) -> dict[int, float]:
        """Key -> estimate of its last release."""
        return {int(k): float(v) for k, v in self.items}


@dataclass
class Ledger:
    """The watcher's saved state: configuration and releases, nothing secret (``save`` is atomic)."""

    config: WatchConfig
    epochs: list[EpochRecord] = field(default_factory=list)
    source: str | None = None  # what the latest run read (``dpstream.watch.source_id``): a restart checks it
    files: list[list[Any]] | None = None  # [name, size, packets, fingerprint, mtime] of the files the released
    # packets came from (``data.live.Reading.released``: their packets add up to ``step``; format 2: the first 4,
    # its fingerprint a digest of the file's first bytes); None: written by format 1

    @property
    def step(self) -> int:
        """Items in releases so far: the global step of the last release."""
        return self.epochs[-1].start + self.epochs[-1].released if self.epochs else 0

    def to_json(self) -> str:
        """The ledger as JSON."""
        return json.dumps({"format": LEDGER_FORMAT, "config": asdict(self.config), "source": self.source,
                           "epochs": [asdict(e) for e in self.epochs], "files": self.files or []}, indent=1)

    def save(self, path: Path) -> None:
        """Write to ``path`` atomically: a temporary file in its folder, flushed to disk, renamed into place."""
        def write(fh: Any) -> None:
            fh.write(self.to_json().encode())
            fh.flush()
            os.fsync(fh.fileno())

        write_atomically(path, write)

    @classmethod
    def load(cls, path: Path, config: WatchConfig) -> Ledger:
        """The ledger at ``path`` (a new one when absent); its configuration must equal ``config``.

        A ledger of format 1 (``LEDGER_FORMAT_1``) is read with ``files`` None: it kept no list of the files read. One
        of format 2 (``LEDGER_FORMAT_2``) is read with its 4-field file records, which only a restart's check reads.
        """
        if not path.exists():
            return cls(config, files=[])
        try:
            raw = json.loads(path.read_text())
            if raw.get("format") not in (LEDGER_FORMAT, LEDGER_FORMAT_2, LEDGER_FORMAT_1):
                raise ValueError(f"format {raw.get('format')!r}")
            saved = WatchConfig(**{"flush_every": 1, **raw["config"]})  # written before the option: B = 1
            epochs = [EpochRecord(**e) for e in raw["epochs"]]
            source = raw.get("source")
            files = None if raw["format"] == LEDGER_FORMAT_1 else [list(f) for f in raw["files"]]
            fields = 5 if raw["format"] == LEDGER_FORMAT else 4
            if files is not None and any(len(f) != fields for f in files):
                raise ValueError(f"a file record without {fields} fields")
            released = epochs[-1].start + epochs[-1].released if epochs else 0
            if files is not None and source not in (None, "stdin") and sum(f[2] for f in files) != released:
                raise ValueError(f"its files hold {sum(f[2] for f in files)} released packets, its epochs {released}")
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"state {path}: not a {LEDGER_FORMAT} file ({exc}); allowed: a ledger written by "
                             "dpstream watch, or a new --state path") from None
        differ = [f"{name}={value!r} (the state's {getattr(saved, name)!r})"
                  for name, value in asdict(config).items() if getattr(saved, name) != value]
        if differ:  # every field named: a derived one (every, from flush_every x k~) would hide its cause
            raise ValueError(f"{', '.join(differ)} differ from the state {path}; allowed: the same configuration, "
                             f"or a new --state path")
        return cls(saved, epochs, source, files)


class EpochWatcher:
    """Feeds items to the current epoch's LazyHH and writes a JSON line at each release (module docstring).

    ``emit`` receives each release (a dict); it is called after the ledger at ``state`` (if any) has been saved.
    ``source``, when given, is recorded in the ledger as the source of the releases from now on; ``files``, when
    given, maps a global step to the files its packets came from (``data.live.Reading.released``), recorded with
    each save. ``assumes`` is added to every line's privacy statement (what the run takes for granted).
    """

    def __init__(self, config: WatchConfig, state: Path | None, emit: Callable[[dict[str, Any]], None],
                 label: Callable[[int], str] = str, clock: Callable[[], float] = time.time,
                 source: str | None = None, files: Callable[[int], list[list[Any]]] | None = None,
                 assumes: str | None = None) -> None:
        """Load the ledger (or start one) and open a new epoch."""
        self.config = config
        self.state = state
        self.ledger = Ledger.load(state, config) if state is not None else Ledger(config)
        if source is not None:
            self.ledger.source = source
        self.files = files
        self.assumes = assumes
        self.emit = emit
        self.label = label
        self.clock = clock
        self._held = np.empty(0, dtype=np.int64)
        self._open_epoch()
        self.deployable: bool | str = True if self.tracker.deployable else (
            f"not deployable: {'seeded (--seed)' if config.seed is not None else config.node_noise + ' noise'}")

    @property
    def epoch(self) -> EpochRecord:
        """The current epoch's record."""
        return self.ledger.epochs[-1]

    def _open_epoch(self) -> None:
        index = len(self.ledger.epochs)
        self.tracker = self.config.lazy_hh(index)
        self.host_cap = None if self.config.host_cap is None else HostCap(self.config.host_cap)
        self._past = self._past_estimates()
        if self._past:
            keys = np.fromiter(self._past, dtype=np.int64, count=len(self._past))
            values = np.fromiter(self._past.values(), dtype=np.float64, count=len(self._past))
            if keys.size > self.config.k_tilde:
                keys = keys[np.argsort(-values, kind="stable")[:self.config.k_tilde]]
            self.tracker.carry(np.sort(keys))
        self.ledger.epochs.append(EpochRecord(index, key_id(self.tracker), self.tracker.horizon, self.ledger.step))
        self._clock = clock_statement(self.tracker)
        privacy = self.tracker.privacy  # this epoch's own (the same for every epoch up to rounding: module docstring)
        assert privacy is not None  # WatchConfig refuses a delta~ >= 1 (check_final_delta)
        self.privacy = statement(privacy, self.config.host_cap)
        if self.assumes is not None:
            self.privacy["assumes"] = self.assumes
        if self.files is not None:
            self.ledger.files = self.files(self.ledger.step)
        if self.state is not None:  # saved before any item: a crash before its first release still uses up its index
            self.ledger.save(self.state)

    def _past_estimates(self) -> dict[int, float]:
        """Key -> sum of its estimates in every past epoch's last release."""
        total: dict[int, float] = {}
        for record in self.ledger.epochs:
            for key, value in record.estimates().items():
                total[key] = total.get(key, 0.0) + value
        return total

    @property
    def unreleased(self) -> int:
        """Items given to ``feed`` since the last release (lost if the input ends or the process stops now)."""
        return self.tracker.t - self.epoch.released + self._held.size

    def feed(self, keys: np.ndarray) -> None:
        """Process ``keys`` in order: releases at every ``every`` items of an epoch, a new epoch at its horizon.

        Items go to LazyHH in whole periods of k~ x ``flush_every`` (its compiled path); the rest, fewer, waits for
        the next call. Release points are multiples of the period, so no release waits.
        """
        if self._held.size:
            keys = np.concatenate([self._held, keys])
        cut = keys.size - keys.size % self.config.period
        keys, self._held = keys[:cut], keys[cut:].copy()
        pos = 0
        every = self.config.every
        while pos < keys.size:
            t = self.tracker.t
            take = keys[pos:pos + every - t % every]
            pos += take.size
            self.tracker.extend(take if self.host_cap is None else self.host_cap.apply(take))
            if self.tracker.t % every == 0:
                self._release()
                if self.tracker.t == self.tracker.horizon:
                    self._open_epoch()

    def _release(self) -> None:
        out = self.tracker.estimate()
        if self.host_cap is not None:
            real = out.items != PLACEHOLDER_KEY  # the tracker reports canonical keys
            out = out._replace(items=out.items[real], estimates=out.estimates[real])
        record = self.epoch
        record.released = self.tracker.t
        record.items = [[int(k), float(v)] for k, v in zip(out.items, out.estimates, strict=True)]
        if self.files is not None:
            self.ledger.files = self.files(self.ledger.step)
        if self.state is not None:
            self.ledger.save(self.state)
        bounds = intervals(self.tracker, out.items)
        combined = [(self._past.get(int(k), 0.0) + float(v), int(k), float(v), [float(lo), float(hi)])
                    for k, v, (lo, hi) in zip(out.items, out.estimates, bounds, strict=True)]
        combined.sort(key=lambda c: (-c[0], c[1]))
        self.emit({
            "step": self.ledger.step,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock())),
            "epoch": record.epoch,
            "epoch_step": record.released,
            "key_id": record.key_id,
            "items": [{"label": self.label(k), "estimate": total, "epoch_estimate": own, "epoch_interval": interval}
                      for total, k, own, interval in combined],
            "interval_confidence": CONFIDENCE,
            "privacy": {**self.privacy, **self._clock},
            "flush_every": self.config.flush_every,
            "deployable": self.deployable,
        })
