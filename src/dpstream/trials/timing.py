"""Interleaved A/B timing inside a trial: the measurement timing verdicts are decided by.

A trial whose mechanism config carries ``timing`` (set by an experiment, e.g. ``fixed: {mechanism.timing:
{reference: {memory_kb: 8}}}``) times its own mechanism against a reference configuration in the same process:
``repeats`` (>= 5) interleaved rounds (``dpstream.timing.interleaved_ratios``), each round feeding the first
``items`` stream items to fresh copies of each arm, built before the rounds (``calibrated_work``). ``items`` is the
smallest of 4^j x 4096 (at most the stream) at which one copy of the slower arm takes at least ``seconds``, and the
faster arm feeds the same items to as many copies as make its call take ``seconds`` too: a call of a few milliseconds
is moved several-fold by one preemption on a loaded machine, and an arm 40x slower than the other (Punctual at 320 KB
against 8 KB) is not fed 40x the time it needs. The row gets the median ratio of the time per copy, reference /
candidate, and its order-statistic interval (``INTERLEAVED`` columns of ``dpstream.claims.core``); the wall-clock
``seconds`` of separate trials, which load on a shared machine moves several-fold, decides nothing.

``reference`` overrides keys of the trial's own parameters (dotted keys, e.g. ``mechanism.k_tilde``); ``mechanism:
<name>`` swaps in another mechanism config by name, keeping the trial's own keys (e.g. the memory model). With
``mechanisms`` set, only those mechanisms' rows are timed (the others have no such columns).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from dpstream.timing import interleaved_ratios

TIMING_KEY = "timing"
"""The mechanism key holding the timing spec (a trial-own key: never a constructor argument)."""
COLUMNS = ("interleaved_ratio", "interleaved_low", "interleaved_high")
DEFAULTS = {"repeats": 11, "seconds": 0.2, "mechanisms": None}
ALLOWED = ("reference", "repeats", "seconds", "mechanisms")
FIRST_ITEMS = 4096
MAX_COPIES = 64


def spec_of(params: dict[str, Any]) -> dict[str, Any] | None:
    """The timing spec of a trial's parameters with its defaults, or None; a bad spec is a one-line error."""
    raw = params["mechanism"].get(TIMING_KEY)
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("reference"), dict) or set(raw) - set(ALLOWED):
        raise ValueError(f"mechanism.timing must be a mapping with a 'reference' mapping and keys among {ALLOWED}, "
                         f"got {raw!r}")
    spec = {**DEFAULTS, **raw}
    if not (isinstance(spec["repeats"], int) and spec["repeats"] >= 5):
        raise ValueError(f"mechanism.timing.repeats must be an integer >= 5 (the interleaved protocol), got "
                         f"{spec['repeats']!r}")
    if not (isinstance(spec["seconds"], int | float) and spec["seconds"] > 0):
        raise ValueError(f"mechanism.timing.seconds must be a positive number, got {spec['seconds']!r}")
    return spec


def reference_params(params: dict[str, Any], reference: dict[str, Any], keep: Iterable[str] = ()) -> dict[str, Any]:
    """The trial's parameters with the reference's overrides applied (and no timing spec of its own)."""
    from dpstream.registry import CONF_DIR, load_option, set_key

    out = copy.deepcopy(params)
    for key, value in reference.items():
        if key == "mechanism":
            own = {k: v for k, v in params["mechanism"].items() if k in set(keep)}
            out["mechanism"] = {**load_option(CONF_DIR, "mechanism", str(value)), **own}
        else:
            set_key(out, key, value)
    out["mechanism"].pop(TIMING_KEY, None)
    return out


def interleaved_columns(params: dict[str, Any], build: Callable[[dict[str, Any]], Any], stream: Any,
                        keep: Iterable[str] = ()) -> dict[str, float]:
    """The ``COLUMNS`` of a trial row; none without a timing spec or for a mechanism the spec leaves out.

    ``build(params)`` returns a fresh mechanism configured by ``params`` (with an ``extend`` method); at each call an
    arm feeds the first ``items`` items of ``stream`` to ``copies`` new objects, built before the rounds
    (``calibrated_work``); the ratio is per object, so per item. ``keep``: the trial's own mechanism keys a reference
    by mechanism name keeps (e.g. the memory model).
    """
    spec = spec_of(params)
    if spec is None or (spec["mechanisms"] is not None and params["mechanism"]["name"] not in spec["mechanisms"]):
        return {}
    reference = reference_params(params, spec["reference"], keep)
    builds = [lambda: build(params), lambda: build(reference)]
    chunk, copies = calibrated_work(stream, builds, spec["seconds"])
    calls = spec["repeats"]

    def arm(make: Callable[[], Any], count: int) -> Callable[[], object]:
        return fresh_copies(make, lambda objs: [obj.extend(chunk) for obj in objs], calls, count)

    estimate = interleaved_ratios({"candidate": arm(builds[0], copies[0]), "reference": arm(builds[1], copies[1])},
                                  "reference", repeats=spec["repeats"])["candidate"]
    per_object = copies[0] / copies[1]  # (reference time / its copies) / (candidate time / its copies)
    return {"interleaved_ratio": estimate.ratio * per_object, "interleaved_low": estimate.low * per_object,
            "interleaved_high": estimate.high * per_object}


def calibrated_work(stream: Any, builds: list[Callable[[], Any]], seconds: float,
                    clock: Callable[[], float] = time.perf_counter) -> tuple[np.ndarray, list[int]]:
    """The items every arm is fed and how many new objects each arm feeds per call, so that a call takes >= ``seconds``.

    The items are the first ``FIRST_ITEMS`` x 4^j of ``stream`` (int64) at which the slowest arm takes ``seconds`` (or
    the whole stream); a faster arm feeds the same items to more objects (at most ``MAX_COPIES``) rather than more
    items to one: the per-item cost of a sketch changes along the stream (its trees deepen, its first calls pay fixed
    costs), so both arms do the same work per object. Each build is fed once first (compiling or loading its
    kernels), outside the timed calls.
    """
    items = min(FIRST_ITEMS, len(stream))
    for build in builds:  # compile or load the kernels first: a first call's compilation is no measure of its work
        build().extend(np.asarray(stream[:items], dtype=np.int64))
    while True:
        chunk = np.asarray(stream[:items], dtype=np.int64)
        times = []
        for build in builds:
            obj = build()
            start = clock()
            obj.extend(chunk)
            times.append(clock() - start)
        if max(times) >= seconds or items >= len(stream):
            return chunk, [min(MAX_COPIES, max(1, math.ceil(seconds / max(t, 1e-9)))) for t in times]
        items = min(4 * items, len(stream))


def fresh_copies(build: Callable[[], Any], feed: Callable[[list[Any]], object], calls: int,
                 count: int = 1) -> Callable[[], object]:
    """A callable that feeds ``count`` new pre-built objects at each call (``calls`` calls at most)."""
    pool = [[build() for _ in range(count)] for _ in range(calls)]
    pool.reverse()

    def run() -> object:
        if not pool:
            raise RuntimeError("timing arm called more often than the copies built for it")
        return feed(pool.pop())
    return run
