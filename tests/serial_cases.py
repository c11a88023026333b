"""Every serialised streaming object: how to build it, feed it a stream and read what it releases.

Shared by the round-trip test (``test_serial_roundtrip.py``) and the fuzzer (``fuzz_serial.py``). The option grid of a
class is derived from its constructor signature: every parameter with a default is either an option whose values are
listed in ``OPTIONS`` (all valid combinations are built) or fixed in the case's ``base``; a parameter in neither makes
``option_grid`` fail, so a new option cannot escape the round-trip test.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from dpstream.counters import COUNTERS, NODE_NOISES
from dpstream.counters.gauss_bm import GaussBM
from dpstream.hashing import HASH_FAMILIES
from dpstream.heavy_hitters import CMSHeap, LazyHH, PunctualHH
from dpstream.privacy.calibration import CALIBRATIONS
from dpstream.privacy.svt import SVT_NOISES
from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS
from dpstream.sketches.estimators import ESTIMATORS
from dpstream.svt.monitor import ThresholdMonitor, ThresholdMonitorEvolving

OPTIONS: dict[str, tuple[Any, ...]] = {
    "node_noise": NODE_NOISES,  # a tree counter: the names of its NOISES
    "calibration": CALIBRATIONS,
    "hash_family": HASH_FAMILIES,
    "estimator": ESTIMATORS,
    "count_dtype": (np.int32, np.int64),
    "kappa": (1.0, 0.5),
    "svt_noise": SVT_NOISES,
    "arity": (2, 19),
}
"""Every value of every option a streaming object's constructor takes (``counter`` goes with ``node_noise``)."""
NOT_STATE = {"seed", "memory_kb", "flush_every"}
"""Constructor parameters that are not written as such: the seed (its generators' states are), a size budget
(written as the width it chose) and LazyHH's ``flush_every``, whose every value but the default 1 refuses ``to_bytes``
(``tests/test_watch_flush.py``)."""
HORIZON = 600
SPLIT = 233  # 233 = 33 * 7 + 2: Lazy is mid-column, the trees mid-node, the trackers between refresh points
CHUNKS = [(233, 234), (234, 400), (400, 599), (599, 600)]


def _stream(seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).zipf(1.4, HORIZON) % 50).astype(np.int64)


@dataclass
class Case:
    """``cls(**base, **options)`` fed ``feed(obj, lo, hi)`` for the stream positions [lo, hi).

    ``feed`` returns what the step released (or None); ``releases(obj, t)`` what the object releases after t.
    """

    cls: type
    base: dict[str, Any]
    feed: Callable[[Any, int, int], Any]
    releases: Callable[[Any, int], tuple]
    counters: tuple[str, ...] | None = None
    """The counters the grid takes with every node noise (None: all of ``COUNTERS``)."""

    @property
    def name(self) -> str:
        """The class name."""
        return self.cls.__name__

    def build(self, **options: Any) -> Any:
        """The object with these options."""
        return self.cls(**self.base, **options)


# -- sketches ----------------------------------------------------------------------------------------------
KEYS = np.arange(-5, 60)
_ITEMS = _stream()


def _feed_sketch(obj: Any, lo: int, hi: int) -> None:
    obj.extend(_ITEMS[lo:hi])


def _sketch_releases(obj: Any, t: int) -> tuple:
    return obj.query_many(KEYS), obj.variance_many(KEYS), obj.t


SKETCH_KW = {"width": 7, "depth": 3, "epsilon": 1.0, "delta": 1e-3, "horizon": HORIZON, "seed": 11}


# -- heavy-hitter trackers ---------------------------------------------------------------------------------
def _tracker_releases(obj: Any, t: int) -> tuple:
    out = obj.estimate()
    return out.items, out.estimates, out.time, obj.candidates, obj.t


_SMALL = _stream(5) % 40


def _feed_small(obj: Any, lo: int, hi: int) -> None:
    obj.extend(_SMALL[lo:hi])


# -- counters, GaussBM --------------------------------------------------------------------------------------
N_COUNTERS = 4
_INCREMENTS = np.random.default_rng(6).integers(0, 3, (HORIZON, N_COUNTERS))
COUNTER_KW = {"n": N_COUNTERS, "horizon": HORIZON, "epsilon": 1.0, "delta": 1e-3, "m": 2, "seed": 3}


def _feed_counter(obj: Any, lo: int, hi: int) -> None:
    """Rounds lo+1..hi: every counter takes its step with its increment (the owner supplies the steps)."""
    cells = np.tile(np.arange(N_COUNTERS), hi - lo)
    steps = np.repeat(np.arange(lo + 1, hi + 1), N_COUNTERS)
    obj.push(cells, steps, _INCREMENTS[lo:hi].ravel())


def _counter_releases(obj: Any, t: int) -> tuple:
    steps = np.full(N_COUNTERS, t, dtype=np.int64)
    return obj.release_all(steps), obj.variance(steps)


_PUSHES = np.random.default_rng(7).permutation(np.repeat(np.arange(N_COUNTERS), HORIZON // N_COUNTERS))


def _feed_bm(obj: Any, lo: int, hi: int) -> None:
    obj.extend(_PUSHES[lo:hi], _INCREMENTS[lo:hi, 0])


def _bm_releases(obj: Any, t: int) -> tuple:
    return obj.query_all(), obj.variance(), obj.steps


# -- SVT monitors: each step is a run over a batch of linear queries --------------------------------------
_QUERIES = sparse.csr_matrix(np.random.default_rng(8).random((HORIZON, 5)) < 0.4, dtype=float)
_ATOMS = np.array([40.0, 3.0, 25.0, 1.0, 60.0])
MONITOR_KW = {"epsilon": 1.0, "delta": 1e-6, "threshold": 50.0, "k": 3, "seed": 9}


def _feed_monitor(obj: Any, lo: int, hi: int) -> tuple:
    run = obj.run(_QUERIES[lo:hi], _ATOMS, n_runs=2)
    return run.outcomes, run.values, run.noise["w"], run.noise["v"]


def _monitor_releases(obj: Any, t: int) -> tuple:
    return ()


CASES: list[Case] = [
    *(Case(cls, COUNTER_KW, _feed_counter, _counter_releases) for cls in dict.fromkeys(d.cls for d in
                                                                                       COUNTERS.values())),
    Case(GaussBM, {**COUNTER_KW, "horizon": HORIZON // N_COUNTERS}, _feed_bm, _bm_releases),
    Case(ThresholdMonitor, MONITOR_KW, _feed_monitor, _monitor_releases),
    Case(ThresholdMonitorEvolving, MONITOR_KW, _feed_monitor, _monitor_releases),
    *(Case(cls, SKETCH_KW, _feed_sketch, _sketch_releases)
      for cls in (CMS, CS, PunctualCMS, PunctualCS, LazyCMS, LazyCS)),
    Case(LazyHH, {"k": 2, "k_tilde": 8, "epsilon": 20.0, "delta": 1e-3, "beta": 5e-4, "horizon": HORIZON, "seed": 4},
         _feed_sketch, _tracker_releases, counters=("binary", "smooth")),  # its Gaussian tail: no Laplace counter
    Case(CMSHeap, {"k": 3, "horizon": HORIZON, "width": 16, "depth": 3, "period": 10, "seed": 1}, _feed_sketch,
         _tracker_releases),
    Case(PunctualHH, {"k": 3, "universe_size": 40, "epsilon": 2.0, "delta": 1e-3, "horizon": HORIZON, "width": 8,
                      "depth": 3, "period": 50, "max_universe": 100, "seed": 1}, _feed_small, _tracker_releases),
]
BY_NAME = {case.name: case for case in CASES}


def constructor_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The named constructor parameters of ``cls``, following ``**kwargs`` to the bases' constructors."""
    found: dict[str, inspect.Parameter] = {}
    for base in cls.__mro__:
        if "__init__" not in base.__dict__:
            continue
        params = inspect.signature(base.__dict__["__init__"]).parameters
        for name, spec in params.items():
            if name != "self" and spec.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
                found.setdefault(name, spec)
        if not any(spec.kind is inspect.Parameter.VAR_KEYWORD for spec in params.values()):
            break
    return found


def _defaulted(cls: type) -> list[str]:
    """The constructor parameters of ``cls`` that have a default (``constructor_parameters``)."""
    return [p for p, spec in constructor_parameters(cls).items() if spec.default is not inspect.Parameter.empty]


def option_grid(case: Case) -> list[dict[str, Any]]:
    """Every valid combination of the options the constructor of ``case.cls`` takes (see the module docstring)."""
    names = _defaulted(case.cls)
    loose = [p for p in names if p not in OPTIONS and p != "counter" and p not in case.base and p not in NOT_STATE]
    if loose:
        raise AssertionError(f"{case.name}({', '.join(loose)}=...): list the values of this option in OPTIONS or fix "
                             f"it in the case's base arguments")
    axes: list[list[dict[str, Any]]] = []
    if "counter" in names:
        noises = [{"counter": c, "node_noise": n} for c, n in COUNTERS if ("node_noise" in names or n == "stored")
                  and (case.counters is None or c in case.counters)]
        axes.append(noises)
    for name in names:
        if name in OPTIONS and not (name == "node_noise" and "counter" in names):
            values = tuple(getattr(case.cls, "NOISES", OPTIONS[name])) if name == "node_noise" else OPTIONS[name]
            if len(values) > 1:  # a tree counter with one node noise takes only its default
                axes.append([{name: value} for value in values])
    return [{k: v for d in combo for k, v in d.items()} for combo in itertools.product(*axes)]


def grid_ids(case: Case) -> list[tuple[Case, dict[str, Any]]]:
    """(case, options) for every combination."""
    return [(case, options) for options in option_grid(case)]

