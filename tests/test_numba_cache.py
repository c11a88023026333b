"""The numba on-disk cache is stable across processes, and a counter defined outside the package runs uncached.

Every cached kernel takes arrays and scalars only (``counters._kernels.specialise``): a fresh process that finds
the cache filled compiles nothing and writes no cache file, whatever mechanism it runs, and whatever capture
``dpstream watch`` reads on stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from dpstream.counters import BinaryTree, CounterDescriptor
from dpstream.counters import _kernels as kernels
from dpstream.counters.binary import tree_noises
from dpstream.counters.tree_noise import PHILOX_NODES
from dpstream.sketches import LazyCMS
from dpstream.sketches import _kernels as sketch_kernels

PROBE = Path(__file__).with_name("numba_probe.py")
SRC = Path(__file__).resolve().parents[1] / "src"


def probe_run(mode: str, cache: Path, results: Path) -> dict:
    """One fresh process of ``numba_probe.py`` sharing the cache directory ``cache``: its JSON line."""
    path = f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": path}
    done = subprocess.run([sys.executable, str(PROBE), mode, str(results)], env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def cache_files(cache: Path) -> list[str]:
    """Every file under the cache directory (index and compiled objects), relative."""
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())


@pytest.mark.long
def test_the_second_and_third_process_compile_nothing_and_add_no_cache_file(tmp_path):
    # the default job and every mechanism family (sketches with every counter, heavy hitters with stored and
    # derived noise, SVT, query release, GaussBM with every counter)
    cache = tmp_path / "numba_cache"
    first = probe_run("families", cache, tmp_path / "results")
    files = cache_files(cache)
    assert first["compiles"] > 0 and files  # the cache was empty: the probe does compile and write
    for _ in range(2):
        again = probe_run("families", cache, tmp_path / "results")
        assert again == {"compiles": 0, "compiled": []}
        assert cache_files(cache) == files


@pytest.mark.long
def test_a_second_watch_process_compiles_nothing_and_adds_no_cache_file(tmp_path):
    # dpstream watch - on stdin through a real pipe: the pcap and pcapng readers, the deployable default's refresh
    # and prefetch, and the host cap, each to a release
    cache = tmp_path / "numba_cache"
    first = probe_run("watch", cache, tmp_path / "results")
    files = cache_files(cache)
    assert first["compiles"] > 0 and files
    again = probe_run("watch", cache, tmp_path / "results")
    assert again == {"compiles": 0, "compiled": []}
    assert cache_files(cache) == files


@njit(inline="always")
def toy_push(state, cell, step, c, noise, z):
    """A counter's own push (the derived tree's): the exact count only."""
    exact = state[0]
    exact[0, cell] += c
    return z


class ToyDerived(BinaryTree):
    """A counter defined outside the package: its own compiled push, so its loops are compiled uncached."""

    NOISES = tree_noises(PHILOX_NODES)
    kind = kernels.EXTERNAL
    push_kernel = toy_push


def test_a_counter_with_its_own_push_gets_an_uncached_loop_with_the_same_result(monkeypatch):
    from dpstream.counters import COUNTERS

    monkeypatch.setitem(COUNTERS, ("toy_derived", "derived"), CounterDescriptor(ToyDerived))
    stream = np.random.default_rng(1).integers(0, 100, 3000)
    ours = LazyCMS(width=16, depth=3, epsilon=1.0, delta=1e-3, horizon=4096, seed=3, node_noise="derived")
    toy = LazyCMS(width=16, depth=3, epsilon=1.0, delta=1e-3, horizon=4096, seed=3, counter="toy_derived",
                  node_noise="derived")
    ours.extend(stream)
    toy.extend(stream)
    assert type(toy._state.counters) is ToyDerived
    assert np.array_equal(ours._state.counters.state.exact, toy._state.counters.state.exact)
    loop = sketch_kernels.lazy_extend(ToyDerived.kind, toy_push)
    assert type(loop._cache).__name__ == "NullCache"  # compiled in this process, never written to the cache


class ToyShared(BinaryTree):
    """A counter written as docs/harness.md shows: its push a class attribute, read through each instance."""

    NOISES = tree_noises(PHILOX_NODES)
    kind = kernels.EXTERNAL
    push_kernel = toy_push


def test_a_second_instance_of_an_external_counter_compiles_nothing(monkeypatch):
    # each instance reads push_kernel as a new bound method (numba's Dispatcher.__get__); keyed on that, every
    # instance compiled its loop again (about a second each)
    from numba.core.event import install_recorder

    from dpstream.counters import COUNTERS

    monkeypatch.setitem(COUNTERS, ("toy_shared", "derived"), CounterDescriptor(ToyShared))
    cells, steps, values = np.array([1, 2, 1]), np.array([1, 1, 2]), np.array([1, 1, 1])
    first = ToyShared(n=8, horizon=64, epsilon=1.0, delta=1e-3, seed=1)
    assert first.push_kernel is not ToyShared(n=8, horizon=64, epsilon=1.0, delta=1e-3, seed=1).push_kernel
    first.push(cells, steps, values)
    with install_recorder("numba:compile") as compiles:
        second = ToyShared(n=8, horizon=64, epsilon=1.0, delta=1e-3, seed=2)
        second.push(cells, steps, values)
        LazyCMS(width=4, depth=2, epsilon=1.0, delta=1e-3, horizon=64, seed=3, counter="toy_shared",
                node_noise="derived").extend(np.arange(10))
        LazyCMS(width=4, depth=2, epsilon=1.0, delta=1e-3, horizon=64, seed=4, counter="toy_shared",
                node_noise="derived").extend(np.arange(10))
    pushes = [e for e in compiles.buffer if "push_many" in str(e[1].data.get("dispatcher", ""))]
    assert pushes == []
    assert np.array_equal(second.state.exact, first.state.exact)
    assert kernels.push_many(ToyShared.kind, first.push_kernel) is kernels.push_many(ToyShared.kind, toy_push)
