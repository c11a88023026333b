"""Two commits' speed in one process: an old commit's package imported under another name beside the new one.

    python benchmarks/commit_pair.py --old REV [--new-path WORKTREE | --new REV] [--repeats 21] [--cells 32768]
                                     [--length 2097152] [--hh-length 131072] [--qr-n 1000] [--trace-packets 262144]
                                     [--watch-packets 262144] [--only TEXT ...] [--only-skipped RECORD]
                                     [--clock cpu|wall] [--no-control] [--processes 1] [--parallel 1] [--out PATH]

The old commit's ``src/dpstream`` (``git archive REV``) is written to a temporary directory as the package
``dpstream_old``: every ``dpstream`` word of its sources and configuration files (imports, module paths in strings
and YAML) is rewritten, so the packages share no module, and their numba caches live beside their own sources
(numba names a cache directory after the source file's path, and each package clears its own by its own digest,
``dpstream._numba_cache``). ``check_isolation`` asserts both at the end of the run. The new package is the
``dpstream`` this interpreter imports, that of ``--new-path WORKTREE`` (its ``src`` first on ``sys.path``), or
commit ``--new REV``'s, exported as ``dpstream_new`` the same way (it then compiles its kernels in the run too). A
third arm, the A/A control, is a copy of the new package under the name ``dpstream_copy`` (``--no-control`` leaves it
out): the same code compiled again in the same process, whose ratio to the new package shows how far two identical
codes differ in this run (kernels compiled twice are laid out differently in memory; their arrays too).

Every workload is built through the public API by configuration names (``counter_class(counter, node_noise)``,
``LazyCMS(..., node_noise=...)``, ``LazyHH``), once per package, on the same seeded data and seeds. One warm-up call
each compiles the kernels (the old package compiles all of its own: a minute or two); a timed call repeats the
operation until it lasts ``MIN_SECONDS`` on the old arm, the same number of times in every arm; then the arms run in
interleaved repetitions (``dpstream.timing.interleaved_ratios``, the order rotated every round), so a burst of load
from another job hits every arm: this is what lets the run share a loaded machine. ``--clock cpu`` (the default)
times the process's CPU time, which leaves out the waits for a core. A row's ratio is old time / new time, the new
commit's throughput relative to the old one's, with its distribution-free interval. The verdict is the issue's rule
(issue 36), fixed before the run: ``worse`` when the whole interval is below 1, ``better`` when it is wholly above
1, ``same within noise`` otherwise. Beside it: the control's ratio with its verdict by the same rule, and
``beyond_control``, the new-against-old interval against the control's (``worse`` when it lies wholly below the
control's interval). Each row also says whether the arms released the same values after the warm-up call (integers
exactly, floats within ``RTOL``): a change of the released values is a change of the mechanism, not of its speed.

Workloads (``--only`` keeps those whose name contains one of the given texts; ``--only-skipped RECORD`` those that
the run written to RECORD skipped):
- every counter x node noise the new commit registers (``counters.COUNTERS``), ``--cells`` counters over a horizon
  of 2^16: ``push`` (8 steps of every counter a call) and ``release`` (4 releases of every counter at step 127, its 7
  lowest tree levels set, a call);
- LazyCMS ``extend`` over ``--length`` Zipf items (skew 1.3, universe 10^6; the speed page's setting: w 55, d 3,
  eps 0.3, delta 1e-3) with derived noise and multiply-shift hashing, with stored noise and mod-p hashing, and at
  24 KB with exact discrete noise (``discrete_secure`` and ``discrete_secure_ct``, built by ``from_memory``);
  ``query_many`` of 2^16 keys; CMS mod p (w 2000) ``extend``;
- LazyHH ``extend`` over ``--hh-length`` items (k 128, k~ 512, eps 0.5, delta 1e-3, beta 5e-4) with stored, derived
  and the three exact discrete node noises;
- the speed page's other sections: the Algorithm 3 game of an E2 trial (d 12, ``--qr-n`` records, eps 10); reading
  a trace of ``--trace-packets`` records (``data.traces.iter_trace``) as ``traces.py``'s pcapng, as a classic pcap
  and as CSV; Sparse and ThresholdMonitor, 256 runs a call, with continuous and exact discrete Laplace noise;
  ``dpstream watch``'s path (pcap bytes through ``data.live.CaptureKeys`` in blocks into ``EpochWatcher``, flush
  every 64, seeded) over ``--watch-packets`` packets, derived and ``discrete_secure_ahead`` noise, multiply-shift and
  mod p;
- the rows above stand in for some of the page's at other sizes or settings; ``page_rows`` adds those at the page's
  own: ``secure_noise.py``'s per-draw rows (50,000 binary-tree counters at step 1; 200,000 exact Laplace draws),
  its LazyCMS rows over 2^16 and 2^20 items with 16 whole-table releases (exact and constant-time noise; Honaker's
  estimate over stored exact nodes), LazyHH at k~ = 128; ``watch.py``'s host cap 8 and flush-every sweep (1, 4, 8,
  16, 32) writing JSON lines; the game at n = 4,000; then ``watch`` at flush every 64 in JSON lines keyed from the
  operating system, as ``watch.py`` runs it (the arms' releases differ: ``outputs differ``), and the game at
  n = 4,000 on the wall clock (a row's own clock, whatever ``--clock`` says).

A sketch, game, sparse-vector or watch row's call builds its object afresh: construction is timed with it. A row the
old commit cannot build, run or read (a node noise, a module or a method it did not have yet) is left out and
recorded with the old package's error (``skipped``).

``--processes N`` (``make bench-pair`` uses 6) runs the whole measurement in N fresh processes (``--parallel`` of them
at a time) and pools them. Within one process identical code does not run at identical speed: where each arm's
arrays and kernels lie in memory is fixed for the process, so the A/A control's within-process interval missed 1 on
11 to 20 of 58 rows of a quiet run, by up to 1.95x. Each process therefore lays its arms out differently (process
``i`` builds them in an order rotated by ``i``, each after a heap allocation whose size is drawn from
``layout_entropy + i``: ``layout_pad``), and a pooled row's ratio is the median of the processes' ratios, its
interval their range: the distribution-free interval of that median for independent processes, covering it with
probability 1 - 2^(1-N) (96.9% for 6; an upper bound here, since layouts are not fully independent), and a
difference that holds in one layout only does not move it. The verdict is the same rule on the pooled interval: a
row is worse only when the new commit is slower in every process.

Writes ``benchmarks/results/commit_pair.json`` in the speed page's shape (``benchmarks/speed_page.py``) with both
commits named, and prints a line a row. ``make bench-pair OLD=REV [NEW_PATH=WORKTREE]`` runs it at nice 10.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import io
import ipaddress
import json
import math
import os
import platform
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("results") / "commit_pair.json"
PACKAGE = "dpstream"
OLD_NAME = "dpstream_old"
NEW_NAME = "dpstream_new"
COPY_NAME = "dpstream_copy"


def package_word(name: str) -> re.Pattern[str]:
    """A package's name as a word: ``dpstream.x``, ``from dpstream``, ``"dpstream.sketches"``, ``pkg://dpstream``.

    Not ``dpstream_sources`` (``_`` is a word character), not ``DPSTREAM_SEEDS``, and not at the start of a bytes
    literal (``b"dpstream-epoch"``): those are hash personalisations, part of what a mechanism computes (and blake2b
    takes at most 16 bytes of one).
    """
    return re.compile(rf"(?<![bB][\"'])\b{re.escape(name)}\b")


WORD = package_word(PACKAGE)
TEXT_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".toml", ".txt", ".cfg", ".ini", ".md")
"""Files of the exported package whose text is rewritten (the others, data, are copied as they are)."""
RTOL = 1e-9
"""Relative tolerance of float outputs of the two arms (a float's last bits may differ between two codes that
compute the same value in another order)."""
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
MIN_SECONDS = 0.02
"""A timed call lasts at least this long (on the old arm): shorter operations are repeated inside it."""
CELLS, HORIZON, PUSH_STEPS, RELEASE_STEP, RELEASES = 1 << 15, 1 << 16, 8, 127, 4
QUERIES = 1 << 16


def git(repo: Path, *args: str) -> str:
    """``git -C repo args`` (its stdout, stripped)."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def export(rev: str, dest: Path, name: str = OLD_NAME, repo: Path = ROOT) -> Path:
    """Write commit ``rev``'s ``src/dpstream`` to ``dest/name`` as the package ``name`` (``renamed``); its directory."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", rev, f"src/{PACKAGE}"],
                             check=True, capture_output=True).stdout
    staging = Path(tempfile.mkdtemp(dir=dest))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(staging, filter="data")
    return renamed(staging / "src" / PACKAGE, dest / name)


def renamed(source: Path, target: Path) -> Path:
    """Copy the package directory ``source`` to ``target`` (no caches), as the package ``target.name``; ``target``.

    Every whole word naming the package (``source.name``) in its text files (``TEXT_SUFFIXES``) becomes the new name.
    """
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.pyc"))
    word = package_word(source.name)
    for path in target.rglob("*"):
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            text = path.read_text()
            if word.search(text):
                path.write_text(word.sub(target.name, text))
    return target


def import_old(root: Path) -> ModuleType:
    """Import the exported package at ``root`` (a directory named after it) under its own name."""
    name = root.name
    if name in sys.modules:
        raise RuntimeError(f"a package {name!r} is already imported (from {sys.modules[name].__file__})")
    sys.path.append(str(root.parent))
    return importlib.import_module(name)


def import_new(new_path: Path | None) -> ModuleType:
    """The new package: ``dpstream`` of ``new_path/src`` (first on ``sys.path``), else the one this interpreter has."""
    if new_path is not None:
        if PACKAGE in sys.modules:
            raise RuntimeError(f"{PACKAGE} is already imported (from {sys.modules[PACKAGE].__file__})")
        sys.path.insert(0, str(new_path.resolve() / "src"))
    module = importlib.import_module(PACKAGE)
    if new_path is not None and not package_root(module).is_relative_to(new_path.resolve()):
        raise RuntimeError(f"{PACKAGE} was imported from {package_root(module)}, not from {new_path}/src")
    return module


def package_root(module: ModuleType) -> Path:
    """The directory of a package."""
    return Path(module.__file__ or "").resolve().parent


def modules_of(name: str) -> dict[str, ModuleType]:
    """The imported modules of package ``name``."""
    return {k: m for k, m in list(sys.modules.items()) if k == name or k.startswith(f"{name}.")}


def numba_cache_paths(modules: Iterable[ModuleType]) -> list[Path]:
    """The cache directory of every cached numba kernel defined in ``modules`` (one entry a kernel)."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    caches = [getattr(value, "_cache", None) for module in modules for value in list(vars(module).values())
              if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__]
    return [Path(cache.cache_path).resolve() for cache in caches if not isinstance(cache, NullCache | None)]


def check_isolation(*packages: ModuleType) -> dict[str, int]:
    """Assert the packages share no module and no numba cache directory; counts of what was checked.

    Every module of each package is a file under that package's own directory, no module object belongs to two
    packages, no module of another name was loaded from a package's directory, and the cache directory of every
    cached kernel of each package is its own (beside its sources, or in ``NUMBA_CACHE_DIR`` or numba's per-user
    directory under a name numba derives from the source directory) and no other package's.
    """
    roots = {p.__name__: package_root(p) for p in packages}
    if len(set(roots.values())) < len(roots):
        raise AssertionError(f"two packages are imported from one directory: {roots}")
    found = {name: modules_of(name) for name in roots}
    check_modules(found, roots)
    subpath = sub(packages[-1], "_numba_cache").numba_subpath
    kernels = {name: check_caches(modules, roots[name], subpath) for name, modules in found.items()}
    seen: dict[Path, str] = {}
    for name, paths in kernels.items():
        for path in paths:
            if seen.setdefault(path, name) != name:
                raise AssertionError(f"{seen[path]} and {name} share the numba cache directory {path}")
    return {**{f"{name}_modules": len(m) for name, m in found.items()},
            **{f"{name}_cached_kernels": len(k) for name, k in kernels.items()}}


def check_modules(found: dict[str, dict[str, ModuleType]], roots: dict[str, Path]) -> None:
    """Assert every module of each package (``found``) is under its root and no module is two packages'."""
    owners: dict[int, str] = {}
    for name, modules in found.items():
        for key, module in modules.items():
            path = Path(getattr(module, "__file__", None) or "").resolve()
            if not path.is_relative_to(roots[name]):
                raise AssertionError(f"{key} is {path}, outside {roots[name]}")
            if owners.setdefault(id(module), name) != name:
                raise AssertionError(f"{key} belongs to {owners[id(module)]} and to {name}")
    for key, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        for name, root in roots.items():
            if file and Path(file).resolve().is_relative_to(root) and key not in found[name]:
                raise AssertionError(f"{key} was loaded from {name}'s directory ({file})")


def check_caches(modules: dict[str, ModuleType], root: Path, subpath: Callable[[Path], str]) -> list[Path]:
    """The cache directories of the package's cached kernels, each asserted to be the package's own.

    numba caches a source file's kernels in ``__pycache__`` beside it, or (``NUMBA_CACHE_DIR``, its per-user
    directory) in a directory named ``subpath`` of the abspath of the file's directory.
    """
    own = {subpath(Path(os.path.abspath(m.__file__)).parent) for m in modules.values() if m.__file__}
    paths = numba_cache_paths(modules.values())
    for path in paths:
        if not (path.is_relative_to(root) or path.name in own):
            raise AssertionError(f"kernel cache {path} is not the package's own ({root})")
    return paths


@dataclass
class Arm:
    """One package's side of a workload: ``run`` is timed, ``output`` is compared between the packages."""

    run: Callable[[], object]
    output: Callable[[], np.ndarray]


@dataclass(frozen=True)
class Workload:
    """A row: its name and how to build one package's arm (``build(pkg, sizes)``)."""

    name: str
    build: Callable[[ModuleType, argparse.Namespace], Arm]
    calls: int | None = None
    """How many ``run`` calls an arm can take (a counter's horizon), or None for any number."""
    clock: str | None = None
    """The row's own clock (``CLOCKS``), or None for ``--clock``."""


def sub(pkg: ModuleType, module: str) -> ModuleType:
    """``pkg.module``, whatever the package is called."""
    return importlib.import_module(f"{pkg.__name__}.{module}")


def zipf_items(length: int, seed: int = 0) -> np.ndarray:
    """The benchmarks' Zipf stream (skew 1.3, universe 10^6), drawn here so both arms read the same array."""
    return (np.random.default_rng(seed).zipf(1.3, length) % 10**6).astype(np.int64)


def counter_push(counter: str, noise: str) -> Workload:
    """Every counter takes ``PUSH_STEPS`` steps a call (increments of 1), from step 1 on."""

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        built = sub(pkg, "counters").counter_class(counter, noise)(
            n=sizes.cells, horizon=HORIZON, epsilon=1.0, delta=1e-6, seed=1)
        cells, ones, clock = np.arange(sizes.cells), np.ones(sizes.cells, dtype=np.int64), [0]

        def run() -> None:
            for _ in range(PUSH_STEPS):
                clock[0] += 1
                built.push(cells, np.full(sizes.cells, clock[0], dtype=np.int64), ones)

        return Arm(run, lambda: built.release_all(np.full(sizes.cells, clock[0], dtype=np.int64)))

    return Workload(f"{counter} {noise} push", build, HORIZON // PUSH_STEPS)


def counter_release(counter: str, noise: str) -> Workload:
    """``RELEASES`` releases of every counter at step ``RELEASE_STEP`` (pushed there, increments of 1, untimed)."""

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        built = sub(pkg, "counters").counter_class(counter, noise)(
            n=sizes.cells, horizon=HORIZON, epsilon=1.0, delta=1e-6, seed=1)
        cells = np.tile(np.arange(sizes.cells), RELEASE_STEP)
        built.push(cells, np.repeat(np.arange(1, RELEASE_STEP + 1), sizes.cells), np.ones(cells.size, dtype=np.int64))
        at = np.full(sizes.cells, RELEASE_STEP, dtype=np.int64)
        def run() -> None:
            for _ in range(RELEASES):
                built.release_all(at)

        return Arm(run, lambda: built.release_all(at))

    return Workload(f"{counter} {noise} release", build)


LAZY_CMS = {"width": 55, "depth": 3, "epsilon": 0.3, "delta": 1e-3, "seed": 1}
LAZY_HH = {"k": 128, "k_tilde": 512, "epsilon": 0.5, "delta": 1e-3, "beta": 5e-4, "seed": 1}


def queried(sketch: Any) -> np.ndarray:
    """A sketch's estimates of the keys 0..``QUERIES``-1 (``query_many``)."""
    return np.asarray(sketch.query_many(np.arange(QUERIES)))


def reported(tracker: Any) -> np.ndarray:
    """A heavy-hitter tracker's reported (item, estimate) pairs: ``estimate()``, ``heavy_hitters()`` in old commits."""
    out = tracker.estimate() if hasattr(tracker, "estimate") else tracker.heavy_hitters()
    return np.column_stack([out.items, out.estimates])


def sketch_extend(label: str, make: Callable[[ModuleType, int], Any], length: str = "length",
                  output: Callable[[Any], np.ndarray] = queried,
                  stream: Callable[[argparse.Namespace], np.ndarray] | None = None) -> Workload:
    """A fresh sketch ``make(pkg, n)`` a call, ``extend`` over ``stream(sizes)`` (default ``sizes.<length>`` items)."""

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        items = zipf_items(getattr(sizes, length)) if stream is None else stream(sizes)
        last: list[Any] = []

        def run() -> None:
            last[:] = [make(pkg, items.size)]
            last[0].extend(items)

        return Arm(run, lambda: output(last[0]))

    return Workload(label, build)


def lazy_cms_query(noise: str) -> Workload:
    """``query_many`` of ``QUERIES`` keys on a LazyCMS that has read the whole stream."""

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        items = zipf_items(sizes.length)
        sketch = sub(pkg, "sketches").LazyCMS(**LAZY_CMS, horizon=items.size, node_noise=noise)
        sketch.extend(items)
        keys = np.arange(QUERIES, dtype=np.int64)
        return Arm(lambda: sketch.query_many(keys), lambda: np.asarray(sketch.query_many(keys)))

    return Workload(f"LazyCMS {noise} (w 55) query_many 2^16 keys", build)


def lazy_cms_memory(noise: str) -> Workload:
    """LazyCMS ``extend`` at 24 KB (``from_memory``, depth 3, eps 1, delta 1e-6) with node noise ``noise``."""
    return sketch_extend(f"LazyCMS {noise} 24 KB extend", lambda pkg, n: sub(pkg, "sketches").LazyCMS.from_memory(
        kilobytes=24, depth=3, epsilon=1.0, delta=1e-6, horizon=n, seed=0, model="actual", node_noise=noise))


def lazy_hh(noise: str) -> Workload:
    """LazyHH ``extend`` over ``--hh-length`` items with node noise ``noise``."""
    return sketch_extend(f"LazyHH {noise} (k~ 512) extend", lambda pkg, n: sub(pkg, "heavy_hitters").LazyHH(
        **LAZY_HH, horizon=n, **({} if noise == "stored" else {"node_noise": noise})), "hh_length", reported)


SECURE_PAGE = {"depth": 3, "epsilon": 1.0, "delta": 1e-6, "seed": 0}
"""``benchmarks/secure_noise.py``'s LazyCMS (24 KB by ``from_memory``, ``model="actual"``) and counters."""
SECURE_RELEASES, NODE_DRAWS, SVT_DRAWS = 16, 50_000, 200_000


def page_stream(log2: int, seed: int) -> Callable[[argparse.Namespace], np.ndarray]:
    """``secure_noise.py``'s stream of 2^``log2`` items: Zipf (skew 1.3) drawn with ``seed``, not folded."""
    return lambda sizes: np.random.default_rng(seed).zipf(1.3, 1 << log2).astype(np.int64)


def node_draw(noise: str) -> Workload:
    """The per-draw rows: a binary-tree release of ``NODE_DRAWS`` counters at step 1 (one node each, horizon 2^20)."""

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        counter = sub(pkg, "counters").counter_class("binary", noise)(
            n=NODE_DRAWS, horizon=1 << 20, epsilon=SECURE_PAGE["epsilon"], delta=SECURE_PAGE["delta"],
            m=2 * SECURE_PAGE["depth"], seed=SECURE_PAGE["seed"])
        cells, steps = np.arange(NODE_DRAWS), np.ones(NODE_DRAWS, dtype=np.int64)
        return Arm(lambda: counter.release(cells, steps), lambda: np.asarray(counter.release(cells, steps)))

    return Workload(f"binary {noise} draw ({NODE_DRAWS:,} counters at step 1)", build)


def svt_laplace_draw() -> Workload:
    """The sparse vector's exact discrete Laplace: ``SVT_DRAWS`` draws at scale 8 (``KeyedLaplace.draw``)."""

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        laplace = sub(pkg, "secure.laplace")
        keyed, grid = laplace.KeyedLaplace(0), laplace.laplace_grid(8.0)

        def draw() -> np.ndarray:
            return keyed.draw("query", grid, 0, 1, 0, SVT_DRAWS)

        return Arm(draw, draw)

    return Workload(f"SVT discrete_secure Laplace draw ({SVT_DRAWS:,})", build)


def lazy_cms_releases(label: str, noise: str, log2: int, seed: int, counter: str | None = None) -> Workload:
    """``secure_noise.py``'s LazyCMS rows: a fresh sketch over 2^``log2`` items in ``SECURE_RELEASES`` chunks.

    Every cell is released after each chunk (``cells()`` of its state, as the page does). The sketch has 24 KB, or
    with Honaker's estimate (``counter``) the width 24 KB gives it.
    """
    widths: dict[str, int] = {}  # Honaker's width, found once a package (in the untimed warm-up call)

    def make(pkg: ModuleType, n: int) -> Any:
        lazy = sub(pkg, "sketches").LazyCMS
        if counter is None:
            return lazy.from_memory(kilobytes=24, **SECURE_PAGE, horizon=n, model="actual", node_noise=noise)
        if pkg.__name__ not in widths:
            widths[pkg.__name__] = lazy.from_memory(kilobytes=24, **SECURE_PAGE, horizon=n, model="actual",
                                                    counter=counter).width
        return lazy(width=widths[pkg.__name__], **SECURE_PAGE, horizon=n, node_noise=noise, counter=counter)

    class Releasing:
        """A sketch whose ``extend`` releases every cell after each of ``SECURE_RELEASES`` chunks."""

        def __init__(self, pkg: ModuleType, n: int) -> None:
            self.sketch, self.cells = make(pkg, n), np.empty(0)

        def extend(self, items: np.ndarray) -> None:
            for chunk in np.array_split(items, SECURE_RELEASES):
                self.sketch.extend(chunk)
                self.cells = self.sketch._state.cells()

    return sketch_extend(f"{label}, T = 2^{log2}, {SECURE_RELEASES} releases", Releasing,
                         output=lambda releasing: releasing.cells, stream=page_stream(log2, seed))


def lazy_hh_page(noise: str) -> Workload:
    """``secure_noise.py``'s LazyHH rows: k = k~ = 128 over 2^14 items."""
    return sketch_extend(f"LazyHH {noise} (k~ 128) extend", lambda pkg, n: sub(pkg, "heavy_hitters").LazyHH(
        **{**LAZY_HH, "k_tilde": LAZY_HH["k"], "seed": 0}, horizon=n, node_noise=noise), output=reported,
        stream=page_stream(14, 2))


QR_DATA = {"d": 12, "components": 3, "concentration": 0.5, "workload": "conjunctions", "analysts": 10}
"""The speed page's query-release problem (E2: d = 12, 10 analysts, conjunctions); ``n`` is ``--qr-n``."""


def query_release_game(records: int | None = None, clock: str | None = None) -> Workload:
    """The Algorithm 3 game (``PrivateEquilibriumRelease.play``, eps 10, T = n / 6.4, s = 24 T) of an E2 trial.

    ``records`` n (default ``--qr-n``); ``clock`` the row's own (default ``--clock``).
    """

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        n = sizes.qr_n if records is None else records
        data = {**QR_DATA, "_target_": f"{pkg.__name__}.query_release.product_mixture", "n": n}
        data_seed, workload_seed, mech_seed = sub(pkg, "noise").children(np.random.SeedSequence(0, spawn_key=(0,)), 3)
        _, work, true, analysts = sub(pkg, "trials.query_release").build_problem({"data": data}, data_seed,
                                                                                 workload_seed)
        last: list[np.ndarray] = []

        def run() -> None:
            game = sub(pkg, "query_release").PrivateEquilibriumRelease(
                workload=work, analysts=analysts, epsilon=10.0, delta=1e-6, n=n,
                rounds_rule="data_private", s_factor=24, seed=mech_seed)
            last[:] = [game.play(true)[0]]

        return Arm(run, lambda: last[0])

    return Workload(f"Alg 3 game (d 12, n {'--qr-n' if records is None else records}) play"
                    f"{'' if clock is None else f', {clock} clock'}", build, clock=clock)


def beside(name: str) -> ModuleType:
    """The benchmark script ``name``.py beside this one, imported as the module ``name`` (once)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


TRACE_FILES: dict[tuple[str, int], Path] = {}
"""The trace files of this process, written once (``trace_file``) and read by every arm."""


def trace_file(kind: str, packets: int) -> Path:
    """A trace file of ``packets`` records, written once a process.

    ``traces.py``'s pcapng (SPB and EPB, Ethernet with VLAN tags and raw IP) and CSV, or a classic pcap of raw IPv4
    packets (linktype 101, 40 bytes each) from the same sources.
    """
    if (kind, packets) not in TRACE_FILES:
        traces = beside("traces")
        folder = Path(tempfile.mkdtemp(prefix="commit_pair_traces_"))
        path = folder / f"trace.{kind}"
        sources = traces.write_capture(folder / "trace.pcapng", packets)
        if kind == "csv":
            traces.write_csv(path, sources)
        elif kind == "pcap":
            record = struct.pack("<IIII", 0, 0, 40, 40)
            path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)
                             + b"".join(record + traces.ipv4_packet(int(src)) for src in sources))
        TRACE_FILES[kind, packets] = path
    return TRACE_FILES[kind, packets]


def trace_read(kind: str) -> Workload:
    """``data.traces.iter_trace`` over the whole trace file of ``--trace-packets`` records (the speed page's)."""

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        path = trace_file(kind, sizes.trace_packets)
        last: list[np.ndarray] = []

        def run() -> None:
            last[:] = [np.concatenate([np.empty(0, np.uint32), *sub(pkg, "data.traces").iter_trace(path)])]

        return Arm(run, lambda: last[0])

    return Workload(f"trace {kind} read (--trace-packets)", build)


SVT_EPS, SVT_QUERIES, SVT_RUNS = 1.0, 4096, 256


def svt_batch(mechanism: Any) -> Callable[..., Any]:
    """A sparse-vector mechanism's batch of runs: ``run(..., n_runs=)``, ``run_many`` in older commits."""
    return getattr(mechanism, "run_many", None) or mechanism.run


def svt_run(kind: str, noise: str) -> Workload:
    """Sparse (c 8) over 4,096 integer answers, or ThresholdMonitor (k 4) over 1,024 linear queries; 256 runs a call.

    The speed page's sparse-vector rows; ``noise`` continuous (numpy Laplace) or ``discrete_secure``; a call makes
    the mechanism and draws its noise.
    """

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        svt, extra = sub(pkg, "svt"), {} if noise == "continuous" else {"svt_noise": noise}
        if kind == "Sparse":
            answers = np.random.default_rng(1).integers(0, 120, SVT_QUERIES)

            def work() -> Any:
                mech = svt.Sparse(epsilon=SVT_EPS, threshold=100, c=8, seed=0, **extra)
                return svt_batch(mech)(answers, n_runs=SVT_RUNS, noise=mech.draw_noise(SVT_QUERIES, SVT_RUNS))
        else:
            atoms = np.random.default_rng(2).integers(0, 400, 64)
            queries = (np.random.default_rng(3).random((SVT_QUERIES // 4, 64)) < 0.1).astype(float)

            def work() -> Any:
                mech = svt.ThresholdMonitor(epsilon=SVT_EPS, delta=1e-6, threshold=1500, k=4, seed=0, **extra)
                return svt_batch(mech)(queries, atoms, n_runs=SVT_RUNS)

        last: list[Any] = []
        return Arm(lambda: last.__setitem__(slice(None), [work()]), lambda: last[0].outcomes)

    return Workload(f"SVT {kind} {noise} run", build)


WATCH = {"k": 128, "k_tilde": 512, "epsilon": 1.0, "delta": 1e-6, "beta": 5e-7, "every": 1 << 17, "seed": 1,
         "flush_every": 64}
"""The speed page's ``dpstream watch`` setting (``benchmarks/watch.py``), seeded so the arms' releases compare."""
WATCHED = [(noise, family) for noise in ("derived", "discrete_secure_ahead") for family in ("multiply_shift", "modp")]
"""The watch rows' node noises and hash families."""


def address_estimate(item: dict[str, Any]) -> tuple[int, float]:
    """A released item's IPv4 address (as an integer) and estimate."""
    return int(ipaddress.IPv4Address(item["label"])), item["estimate"]


def json_released(lines: list[str]) -> np.ndarray:
    """Each JSON line's step, epoch and number of items, then its items' (address, estimate), as one array."""
    out: list[float] = []
    for line in map(json.loads, lines):
        out += [line["step"], line["epoch"], len(line["items"])]
        out += [v for item in line["items"] for v in address_estimate(item)]
    return np.array(out, dtype=float)


def watch_end_to_end(noise: str, family: str, **page: Any) -> Workload:
    """``dpstream watch``'s path: pcap bytes through ``CaptureKeys`` in blocks, ``EpochWatcher`` on the keys.

    ``--watch-packets`` heavy-tailed IPv4 sources (Zipf 1.1 over 2^20 hosts), one epoch, a release every 2^17
    packets; the output is every release's (label, estimate) pairs. With ``page`` (``flush_every``, ``host_cap``),
    the speed page's own rows (``benchmarks/watch.py``): that setting, each release written as a JSON line.
    """
    setting = {**WATCH, **page}

    def build(pkg: ModuleType, sizes: argparse.Namespace) -> Arm:
        live, capture = sub(pkg, "data.live"), sub(pkg, "data.synthetic_capture")
        packets = sizes.watch_packets
        ranks = np.minimum(np.random.default_rng(1).zipf(1.1, packets), 1 << 20)
        data = capture.pcap_header(96) + capture.pcap_records((0x0A000000 + ranks).astype(np.uint32), 96)
        horizon = -(-packets // WATCH["every"]) * WATCH["every"]
        config = sub(pkg, "heavy_hitters.epochs").WatchConfig(**setting, horizon=horizon, node_noise=noise,
                                                               hash_family=family)
        lines: list[Any] = []
        emit = (lambda line: lines.append(json.dumps(line))) if page else lines.append

        def run() -> None:
            lines.clear()
            watcher = sub(pkg, "heavy_hitters.epochs").EpochWatcher(config, None, emit,
                                                                    label=live.ipv4_label, clock=lambda: 0.0)
            view = memoryview(data)
            decoder = live.CaptureKeys(bytes(view[:24]), "bench")
            for start in range(0, len(data), live.CHUNK_BYTES):
                watcher.feed(decoder.feed(view[start:start + live.CHUNK_BYTES]))

        if page:
            return Arm(run, lambda: json_released(lines))
        return Arm(run, lambda: np.array([address_estimate(item) for line in lines for item in line["items"]]))

    detail = "".join(", OS key" if key == "seed" and value is None else f", {key.replace('_', ' ')} {value}"
                     for key, value in page.items())
    return Workload(f"watch end to end {noise} {family}{detail}{', JSON lines' if page else ''} (--watch-packets)",
                    build)


def workloads(pairs: Iterable[tuple[str, str]]) -> list[Workload]:
    """Every row: the counters of ``pairs`` (push, release), the sketches, then the speed page's other sections."""
    out = [w for counter, noise in sorted(pairs) for w in (counter_push(counter, noise),
                                                           counter_release(counter, noise))]

    def lazy_cms(**kw: Any) -> Callable[[ModuleType, int], Any]:
        return lambda pkg, n: sub(pkg, "sketches").LazyCMS(**LAZY_CMS, horizon=n, **kw)

    out += [
        sketch_extend("LazyCMS derived multiply-shift (w 55) extend",
                      lazy_cms(node_noise="derived", hash_family="multiply_shift")),
        sketch_extend("LazyCMS stored mod p (w 55) extend", lazy_cms(node_noise="stored")),
        lazy_cms_memory("discrete_secure"),
        lazy_cms_query("derived"),
        lazy_cms_query("stored"),
        sketch_extend("CMS mod p (w 2000) extend",
                      lambda pkg, n: sub(pkg, "sketches").CMS(width=2000, depth=3, horizon=n, seed=1)),
        lazy_hh("stored"),
        lazy_hh("derived"),
    ]
    out += [lazy_hh(noise) for noise in ("discrete_secure", "discrete_secure_ct", "discrete_secure_ahead")]
    out.append(lazy_cms_memory("discrete_secure_ct"))
    out += [query_release_game(), *(trace_read(kind) for kind in ("pcapng", "pcap", "csv"))]
    out += [svt_run(kind, noise) for kind in ("Sparse", "ThresholdMonitor")
            for noise in ("continuous", "discrete_secure")]
    out += [watch_end_to_end(noise, family) for noise, family in WATCHED]
    return out + page_rows()


def page_rows() -> list[Workload]:
    """The speed page's rows that the rows above stand in for at other sizes or settings, at the page's own.

    ``secure_noise.py``'s per-draw rows, its LazyCMS rows with their whole-table releases (T = 2^16 and 2^20; blocks
    of 2^1 are the exact noise's default), Honaker's estimate over stored exact nodes, LazyHH at k~ = 128;
    ``watch.py``'s host cap and flush-every sweep with JSON lines; the game at n = 4,000.
    """
    out = [node_draw(noise) for noise in ("derived", "discrete_secure", "discrete_secure_ct")]
    out.append(svt_laplace_draw())
    out += [lazy_cms_releases(f"LazyCMS {noise} 24 KB", noise, log2, 1) for log2 in (16, 20)
            for noise in ("discrete_secure", "discrete_secure_ct")]
    out.append(lazy_cms_releases("LazyCMS honaker discrete_secure_stored 24 KB", "discrete_secure_stored", 16, 2,
                                 counter="honaker"))
    out += [lazy_hh_page(noise) for noise in ("discrete_secure", "discrete_secure_ct", "discrete_secure_ahead")]
    out += [watch_end_to_end(noise, family, flush_every=64, host_cap=8) for noise, family in WATCHED]
    out += [watch_end_to_end(noise, family, flush_every=every) for every in (1, 4, 8, 16, 32)
            for noise, family in WATCHED]
    out.append(query_release_game(4000))
    out += [watch_end_to_end(noise, family, flush_every=64, seed=None) for noise, family in WATCHED]
    out.append(query_release_game(4000, "wall"))
    return out


def same_output(a: np.ndarray, b: np.ndarray) -> bool:
    """Integers (and float arrays holding only integers) equal exactly; other floats within ``RTOL``."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    exact = a.dtype.kind in "iub" or (np.all(np.isfinite(a)) and np.array_equal(a, np.round(a)))
    return bool(np.array_equal(a, b) if exact else np.allclose(a, b, rtol=RTOL, atol=0.0, equal_nan=True))


def verdict(low: float, high: float) -> str:
    """The rule fixed before the run: worse when the whole interval is below 1, better when wholly above."""
    if high < 1:
        return "worse"
    if low > 1:
        return "better"
    return "same within noise"


def beyond(row: dict[str, Any], control: dict[str, Any]) -> str:
    """New against old judged against the A/A control: worse when the whole interval is below the control's."""
    if row["high"] < control["low"]:
        return "worse"
    if row["low"] > control["high"]:
        return "better"
    return "same within noise"


def judge_control(row: dict[str, Any], control: dict[str, Any]) -> str:
    """Record the A/A ``control`` (ratio, low, high) on ``row`` with its verdicts; the note saying them."""
    row["control"] = {k: control[k] for k in ("ratio", "low", "high")}
    row["control_verdict"] = verdict(control["low"], control["high"])
    row["beyond_control"] = beyond(row, control)
    return (f"A/A control {control['ratio']:.3g}x [{control['low']:.3g}, {control['high']:.3g}]: "
            f"{row['control_verdict']}; against it: {row['beyond_control']}")


def measure(work: Iterable[Workload], packages: dict[str, ModuleType], sizes: argparse.Namespace,
            ) -> Iterator[dict[str, Any]]:
    """Each workload's row: ``packages`` are (old, new[, control]) by their labels; the row is new against old.

    After one warm-up call of every arm (its output compared with the new arm's) and one timed call of the old arm,
    every timed call repeats ``run`` often enough for the old arm's call to take ``MIN_SECONDS`` (within the
    workload's ``calls``), the same number of times in every arm. The arms are interleaved with the new one as the
    reference: old against new is the inverse of the returned ratio and interval (an exact inversion of the median
    and its order statistics on the log scale); so is the control's, the new commit against its own copy.
    """
    labels = list(packages)
    new_label = labels[1]
    timing_module = sub(packages[new_label], "timing")
    rng = None if sizes.layout_seed is None else np.random.default_rng(sizes.layout_seed)
    for workload in work:
        clock = CLOCKS[workload.clock or sizes.clock]
        arms = built_arms(workload, packages, sizes, rng)
        for arm in arms.values():
            arm.run()
        outputs = {label: arm.output() for label, arm in arms.items()}
        start = clock()
        arms[labels[0]].run()
        once = clock() - start
        for label in labels[1:]:
            arms[label].run()
        inner = max(1, math.ceil(MIN_SECONDS / max(once, 1e-9)))
        if workload.calls is not None:
            inner = max(1, min(inner, (workload.calls - 2) // sizes.repeats))
        timed = {label: repeated(arm.run, inner) for label, arm in arms.items()}
        gc.collect()
        if not sizes.keep_gc:
            gc.disable()  # as timeit does: a collection started by one arm's garbage would be timed in another's
        try:
            estimates = timing_module.interleaved_ratios(timed, new_label, sizes.repeats, clock)
        finally:
            gc.enable()
        row = inverted(estimates[labels[0]])
        same = same_output(outputs[labels[0]], outputs[new_label])
        notes = [] if same else ["outputs differ"]
        if len(labels) > 2:
            if not same_output(outputs[labels[2]], outputs[new_label]):
                notes.append("the control's outputs differ")
            control = inverted(estimates[labels[2]])
            notes.append(judge_control(row, control))
        row.update(name=f"{workload.name}, {new_label}", reference=f"{workload.name}, {labels[0]}",
                   target="not worse: interval not wholly below 1", verdict=verdict(row["low"], row["high"]),
                   same_output=same, calls_per_repetition=inner, note="; ".join(notes))
        row["met"] = row["verdict"] != "worse"
        yield row


def buildable(work: list[Workload], old: ModuleType, sizes: argparse.Namespace,
              ) -> tuple[list[Workload], list[dict[str, str]]]:
    """The workloads the old package can build, run and read; a record (name, old package's error) of each other.

    An old commit from before a setting or a method existed (a node noise, ``query_many`` on LazyHH) refuses it; that
    row has nothing to compare, and the record says so rather than leaving it out unseen.
    """
    kept, skipped = [], []
    for workload in work:
        try:
            arm = workload.build(old, sizes)  # thrown away after one call and one output
            arm.run()  # a sketch row makes its sketch in the call
            arm.output()
        except Exception as error:  # any refusal by the old API: the row is not comparable
            skipped.append({"name": workload.name, "old_error": f"{type(error).__name__}: {error}"[:300]})
            print(f"skipped, the old commit cannot build it: {workload.name} ({skipped[-1]['old_error']})",
                  flush=True)
        else:
            kept.append(workload)
    return kept, skipped


def built_arms(workload: Workload, packages: dict[str, ModuleType], sizes: argparse.Namespace,
               rng: np.random.Generator | None) -> dict[str, Arm]:
    """Each package's arm of ``workload``.

    With ``rng``, the arms are built in an order rotated by ``sizes.rotation``, each after a heap allocation of
    random size (``layout_pad``) held until the arms are built.
    """
    if rng is None:
        return {label: workload.build(pkg, sizes) for label, pkg in packages.items()}
    labels = list(packages)
    shift = sizes.rotation % len(labels)
    arms, pads = {}, []
    for label in labels[shift:] + labels[:shift]:
        pads.append(layout_pad(rng))
        arms[label] = workload.build(packages[label], sizes)
    return {label: arms[label] for label in labels}


def layout_pad(rng: np.random.Generator) -> np.ndarray:
    """A heap block of 16 to 64 KB in steps of 16 bytes, so that what is allocated next lies at another offset."""
    return np.ones(int(rng.integers(1, 4097)) * 16, dtype=np.uint8)


def repeated(run: Callable[[], object], times: int) -> Callable[[], None]:
    """``run`` called ``times`` times."""

    def call() -> None:
        for _ in range(times):
            run()

    return call


def inverted(estimate: Any) -> dict[str, Any]:
    """The record of a ``RatioEstimate`` of the reference against the candidate (ratio, interval, times swapped)."""
    return {"ratio": 1 / estimate.ratio, "low": 1 / estimate.high, "high": 1 / estimate.low,
            "coverage": estimate.coverage, "repeats": estimate.repeats,
            "candidate_seconds": estimate.reference_seconds, "reference_seconds": estimate.candidate_seconds}


def machine() -> str:
    """CPU model and core count."""
    model = platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def describe(repo: Path, rev: str = "HEAD") -> dict[str, Any]:
    """A commit: its hash, subject and package tree (commits of one tree hold the same package).

    For ``HEAD``, also whether ``repo``'s work tree has uncommitted package sources.
    """
    commit = git(repo, "rev-parse", f"{rev}^{{commit}}")
    record: dict[str, Any] = {"commit": commit, "subject": git(repo, "log", "-1", "--format=%s", commit),
                              "package_tree": git(repo, "rev-parse", f"{commit}:src/{PACKAGE}")}
    if rev == "HEAD":
        record["uncommitted_sources"] = bool(git(repo, "status", "--porcelain", "--", f"src/{PACKAGE}"))
    return record


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--old", required=True, help="the old commit (any git revision of this repository)")
    new = parser.add_mutually_exclusive_group()
    new.add_argument("--new-path", type=Path, help="a work tree whose src/dpstream is the new package "
                                                   "(default: the dpstream this interpreter imports)")
    new.add_argument("--new", help="a commit whose package, exported as dpstream_new like the old one, is the new one")
    parser.add_argument("--repeats", type=int, default=21, help="interleaved repetitions a row (>= 5)")
    parser.add_argument("--cells", type=int, default=CELLS, help="counters of the counter rows")
    parser.add_argument("--length", type=int, default=1 << 21, help="stream length of the LazyCMS and CMS rows")
    parser.add_argument("--hh-length", type=int, default=1 << 17, help="stream length of the LazyHH rows")
    parser.add_argument("--qr-n", type=int, default=1000, help="records n of the query-release game row")
    parser.add_argument("--trace-packets", type=int, default=1 << 18, help="records of the trace-reading rows")
    parser.add_argument("--watch-packets", type=int, default=1 << 18, help="packets of the watch rows")
    parser.add_argument("--only", nargs="+", action="extend", default=[],
                        help="only the rows whose name contains one of these (repeatable)")
    parser.add_argument("--only-skipped", type=Path, metavar="RECORD",
                        help="only the rows that the run written to RECORD (this script's JSON) skipped: an older "
                             "commit could not build them")
    parser.add_argument("--clock", choices=CLOCKS, default="cpu",
                        help="the process's CPU time (default: a shared machine's waits for a core are not the "
                             "code's) or the wall clock")
    parser.add_argument("--keep-gc", action="store_true",
                        help="leave Python's garbage collector on during the timed repetitions (default: off, as "
                             "timeit does)")
    parser.add_argument("--no-control", dest="control", action="store_false",
                        help="leave out the A/A control (a copy of the new package as a third arm, the spread of "
                             "verdicts between identical codes; it costs half as much time again)")
    parser.add_argument("--processes", type=int, default=1,
                        help="fresh processes, each with its own layout, pooled into one row a workload (>= 1)")
    parser.add_argument("--parallel", type=int, default=1, help="processes run at a time (with --processes)")
    parser.add_argument("--layout-entropy", type=int, default=None,
                        help="the seed of the processes' heap pads (default: fresh, recorded in the output)")
    parser.add_argument("--layout-seed", type=int, default=None, help=argparse.SUPPRESS)  # one process's pads
    parser.add_argument("--rotation", type=int, default=0, help=argparse.SUPPRESS)  # one process's build order
    parser.add_argument("--head", default=None, help=argparse.SUPPRESS)  # the work tree's HEAD as the parent read it
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.processes < 1 or args.parallel < 1:
        parser.error(f"--processes and --parallel must be >= 1, got {args.processes} and {args.parallel}")
    if args.layout_seed is not None and args.processes != 1:
        parser.error("--layout-seed is one process's layout: it takes no --processes")
    if args.layout_entropy is None:
        args.layout_entropy = int(np.random.SeedSequence().generate_state(1)[0])
    args.only_skipped_record = args.only_skipped
    if args.only_skipped is not None:
        try:
            args.only_skipped = {row["name"] for row in json.loads(args.only_skipped.read_text())["skipped"]}
        except (OSError, ValueError, KeyError, TypeError) as error:
            parser.error(f"--only-skipped {args.only_skipped}: not a commit_pair record with skipped rows ({error})")
    return args


def pooled(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row a workload from the records of ``--processes`` runs: the median of their ratios, their range.

    The range of n independent ratios covers their median with probability 1 - 2^(1-n) (``coverage``); ``repeats``
    is n, the ratios the interval rests on. The arms' seconds are each the median over processes. The control is
    pooled the same way, and the verdicts are the rules of a single run applied to the pooled intervals.
    """
    rows = []
    for same_rows in zip(*(run["rows"] for run in runs), strict=True):
        first = same_rows[0]
        if any(r["name"] != first["name"] for r in same_rows):
            raise ValueError(f"the processes measured other rows: {[r['name'] for r in same_rows]}")
        ratios = [r["ratio"] for r in same_rows]
        row = {"ratio": float(np.median(ratios)), "low": min(ratios), "high": max(ratios),
               "coverage": 1 - 2.0 ** (1 - len(ratios)), "repeats": len(ratios),
               "repeats_per_process": first["repeats"],
               "candidate_seconds": float(np.median([r["candidate_seconds"] for r in same_rows])),
               "reference_seconds": float(np.median([r["reference_seconds"] for r in same_rows])),
               "processes": [{k: r[k] for k in ("ratio", "low", "high")} | {"control": r.get("control")}
                             for r in same_rows]}
        same = all(r["same_output"] for r in same_rows)
        notes = [] if same else ["outputs differ"]
        if "control" in first:
            controls = [r["control"]["ratio"] for r in same_rows]
            notes.append(judge_control(row, {"ratio": float(np.median(controls)), "low": min(controls),
                                             "high": max(controls)}))
        row.update(name=first["name"], reference=first["reference"], target=first["target"],
                   verdict=verdict(row["low"], row["high"]), same_output=same,
                   calls_per_repetition=first["calls_per_repetition"], note="; ".join(notes))
        row["met"] = row["verdict"] != "worse"
        rows.append(row)
    return rows


def child_command(args: argparse.Namespace, old: str, new: str | None, rotation: int, out: Path,
                  head: str = "HEAD") -> list[str]:
    """The command of one process of ``--processes``: this run's settings, resolved commits, its layout, its file.

    ``head``: the new work tree's HEAD as resolved when the run started (without ``--new``).
    """
    command = [sys.executable, str(Path(__file__).resolve()), "--old", old, "--repeats", str(args.repeats),
               "--cells", str(args.cells), "--length", str(args.length), "--hh-length", str(args.hh_length),
               "--qr-n", str(args.qr_n), "--trace-packets", str(args.trace_packets), "--watch-packets",
               str(args.watch_packets),
               "--clock", args.clock, "--layout-seed", str(args.layout_entropy + rotation), "--rotation",
               str(rotation), "--out", str(out)]
    if new is not None:
        command += ["--new", new]
    else:  # the rows are named by the commit the parent read: a commit made during the run does not rename them
        command += ["--head", head] + (["--new-path", str(args.new_path)] if args.new_path is not None else [])
    command += ["--keep-gc"] * args.keep_gc + ["--no-control"] * (not args.control)
    if args.only_skipped_record is not None:
        command += ["--only-skipped", str(args.only_skipped_record)]
    return command + ([f"--only={text}" for text in args.only])


def run_processes(args: argparse.Namespace, old: str, new: str | None, head: str = "HEAD",
                  ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The rows pooled over ``args.processes`` runs of this script, and the first run's isolation counts.

    Run ``i`` builds its arms in an order rotated by ``i`` (``--rotation``; with 3 arms, N a multiple of 3 gives every
    order as often) after pads drawn from ``layout_entropy + i``; ``args.parallel`` run at a time. The commits are
    passed resolved; every run must have measured the same new sources (``source_digest``), or nothing is pooled.
    """
    with tempfile.TemporaryDirectory(prefix="commit_pair_runs_") as tmp:
        outs = [Path(tmp) / f"run_{i}.json" for i in range(args.processes)]
        commands = [child_command(args, old, new, i, out, head) for i, out in enumerate(outs)]
        for start in range(0, len(commands), args.parallel):
            running = [subprocess.Popen(c) for c in commands[start:start + args.parallel]]
            failed = [c for c, proc in zip(commands[start:], running, strict=False) if proc.wait() != 0]
            if failed:
                raise SystemExit(f"commit_pair: a process failed: {shlex.join(failed[0])}")
        runs = [json.loads(out.read_text()) for out in outs]
    digests = {run["new_source_digest"] for run in runs}
    if len(digests) != 1:
        raise SystemExit(f"commit_pair: the new package's sources changed during the run ({len(digests)} digests "
                         "over its processes); nothing is pooled: run it again on sources left as they are")
    args.new_source_digest = digests.pop()
    args.skipped = runs[0].get("skipped", [])
    return pooled(runs), runs[0]["isolation"]


def measure_here(args: argparse.Namespace, labels: tuple[str, str], old: str, new_commit: dict[str, Any],
                 ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every row measured in this process (printed as it comes), and the isolation counts."""
    with tempfile.TemporaryDirectory(prefix="commit_pair_") as tmp:
        new = (import_old(export(new_commit["commit"], Path(tmp), NEW_NAME)) if args.new
               else import_new(args.new_path))
        packages = {labels[0]: import_old(export(old, Path(tmp))), labels[1]: new}
        if args.control:
            packages["copy of new"] = import_old(renamed(package_root(new), Path(tmp) / COPY_NAME))
        work = [w for w in workloads(sub(new, "counters").COUNTERS) if selected(w.name, args)]
        work, args.skipped = buildable(work, packages[labels[0]], args)
        print(f"{labels[1]} against {labels[0]}{' and its own copy' if args.control else ''}: {len(work)} rows, "
              f"{args.repeats} interleaved repetitions, {args.clock} clock"
              + ("" if args.layout_seed is None else f", layout {args.layout_seed}"), flush=True)
        rows = []
        for row in measure(work, packages, args):
            rows.append(row)
            show(row)
        args.new_source_digest = sub(new, "_numba_cache").source_digest(package_root(new))
        return rows, check_isolation(*packages.values())


def selected(name: str, args: argparse.Namespace) -> bool:
    """Whether the row ``name`` is measured: it contains an ``--only`` text, and ``--only-skipped``'s run skipped it."""
    return ((not args.only or any(text in name for text in args.only))
            and (args.only_skipped is None or name in args.only_skipped))


def show(row: dict[str, Any]) -> None:
    """A row's line."""
    note = f" ({row['note']})" if row["note"] else ""
    print(f"{row['name']}: {row['ratio']:.3g} [{row['low']:.3g}, {row['high']:.3g}] {row['verdict']}{note}", flush=True)


def main(argv: list[str] | None = None) -> None:
    """Export, import, measure every row (or pool ``--processes`` runs), check isolation, write the JSON record."""
    args = parse(argv)
    argv = list(argv if argv is not None else sys.argv[1:])
    new_repo = args.new_path.resolve() if args.new_path else ROOT
    old_commit, new_commit = describe(ROOT, args.old), describe(new_repo, args.new or args.head or "HEAD")
    labels = (f"old {old_commit['commit'][:7]}", f"new {new_commit['commit'][:7]}")
    if args.processes > 1:
        rows, isolation = run_processes(args, old_commit["commit"], new_commit["commit"] if args.new else None,
                                        new_commit["commit"])
        print(f"pooled over {args.processes} processes (median ratio, range):")
        for row in rows:
            show(row)
    else:
        rows, isolation = measure_here(args, labels, old_commit["commit"], new_commit)
    where = "One process" if args.processes == 1 else f"{args.processes} processes pooled"
    record = {"title": f"{where}, two commits: {labels[1]} ({new_commit['subject'][:60]}) against {labels[0]} "
                       f"({old_commit['subject'][:60]})",
              "command": shlex.join(["python", "benchmarks/commit_pair.py", *argv]), "machine": machine(),
              "clock": args.clock, "processes": args.processes, "layout_entropy": args.layout_entropy,
              "new_source_digest": getattr(args, "new_source_digest", None), "old": old_commit, "new": new_commit,
              "isolation": isolation, "skipped": args.skipped, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    for kind in ("verdict", "control_verdict", "beyond_control"):
        worse = [r["name"] for r in rows if r.get(kind) == "worse"]
        print(f"{kind}: {len(worse)} of {len(rows)} rows worse" + (f": {'; '.join(worse)}" if worse else ""))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
