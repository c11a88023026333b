"""Interleaved A/B timing inside a trial: the measurement timing verdicts are decided by.

A trial whose mechanism config carries ``timing`` (set by an experiment, e.g. ``fixed: {mechanism.timing:
{reference: {memory_kb: 8}}}``) times its own mechanism against a reference configuration in the same process:
``repeats`` (>= 5) interleaved rounds (``dpstream.harness.timing.interleaved_ratios``), each round feeding each arm's
first n_arm stream items to a fresh copy of it, built before the rounds. n_arm is the smallest of 4^j x 4096 (at most
the stream) at which one call of that arm takes at least ``seconds``: a call of a few milliseconds is moved
several-fold by one preemption on a loaded machine, and an arm 40x slower than the other (Punctual at 320 KB against 8
KB) is not fed 40x the time it needs. The row gets the median ratio of per-item times, reference / candidate (each
round's time ratio times n_candidate / n_reference: 1 when the counts agree), and its order-statistic interval
(``INTERLEAVED`` columns of ``dpstream.claims.core``); the wall-clock ``seconds`` of separate trials, which load on a
shared machine moves several-fold, decides nothing.

``reference`` overrides keys of the trial's own parameters (dotted keys, e.g. ``mechanism.k_tilde``); ``mechanism:
<name>`` swaps in another mechanism config by name, keeping the trial's own keys (e.g. the memory model). With
``mechanisms`` set, only those mechanisms' rows are timed (the others have no such columns).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from dpstream.harness.timing import interleaved_ratios

TIMING_KEY = "timing"
"""The mechanism key holding the timing spec (a trial-own key: never a constructor argument)."""
COLUMNS = ("interleaved_ratio", "interleaved_low", "interleaved_high")
DEFAULTS = {"repeats": 11, "seconds": 0.2, "mechanisms": None}
ALLOWED = ("reference", "repeats", "seconds", "mechanisms")
FIRST_ITEMS = 4096


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
    from dpstream.harness.config import CONF_DIR, _set, load_option

    out = copy.deepcopy(params)
    for key, value in reference.items():
        if key == "mechanism":
            own = {k: v for k, v in params["mechanism"].items() if k in set(keep)}
            out["mechanism"] = {**load_option(CONF_DIR, "mechanism", str(value)), **own}
        else:
            _set(out, key, value)
    out["mechanism"].pop(TIMING_KEY, None)
    return out


def interleaved_columns(params: dict[str, Any], build: Callable[[dict[str, Any]], Any], stream: Any,
                        keep: Iterable[str] = ()) -> dict[str, float]:
    """The ``COLUMNS`` of a trial row; none without a timing spec or for a mechanism the spec leaves out.

    ``build(params)`` returns a fresh mechanism configured by ``params`` (with an ``extend`` method); each arm feeds
    the first ``items`` items of ``stream`` to a new copy at each call, the copies built before the rounds. ``keep``:
    the trial's own mechanism keys a reference by mechanism name keeps (e.g. the memory model).
    """
    spec = spec_of(params)
    if spec is None or (spec["mechanisms"] is not None and params["mechanism"]["name"] not in spec["mechanisms"]):
        return {}
    reference = reference_params(params, spec["reference"], keep)
    items = [calibrated_items(stream, lambda p=p: build(p), spec["seconds"]) for p in (params, reference)]
    calls = spec["repeats"]

    def arm(p: dict[str, Any], chunk: np.ndarray) -> Callable[[], object]:
        return fresh_copies(lambda: build(p), lambda obj: obj.extend(chunk), calls)

    estimate = interleaved_ratios({"candidate": arm(params, items[0]), "reference": arm(reference, items[1])},
                                  "reference", repeats=spec["repeats"])["candidate"]
    per_item = items[0].size / items[1].size  # reference time / candidate time -> per-item times
    return {"interleaved_ratio": estimate.ratio * per_item, "interleaved_low": estimate.low * per_item,
            "interleaved_high": estimate.high * per_item}


def calibrated_items(stream: Any, build: Callable[[], Any], seconds: float,
                     clock: Callable[[], float] = time.perf_counter) -> np.ndarray:
    """The first ``FIRST_ITEMS`` x 4^j items of ``stream`` (int64) at which a new ``build()`` takes >= ``seconds``.

    The build is fed once first (compiling or loading its kernels), outside the timed calls.
    """
    items = min(FIRST_ITEMS, len(stream))
    build().extend(np.asarray(stream[:items], dtype=np.int64))  # a first call's compilation is no measure of its work
    while True:
        chunk = np.asarray(stream[:items], dtype=np.int64)
        obj = build()
        start = clock()
        obj.extend(chunk)
        if clock() - start >= seconds or items >= len(stream):
            return chunk
        items = min(4 * items, len(stream))


def fresh_copies(build: Callable[[], Any], feed: Callable[[Any], object], calls: int) -> Callable[[], object]:
    """A callable that feeds a new one of ``calls`` pre-built objects at each call (``calls`` at most)."""
    pool = [build() for _ in range(calls)]
    pool.reverse()

    def run() -> object:
        if not pool:
            raise RuntimeError("timing arm called more often than the copies built for it")
        return feed(pool.pop())
    return run
