"""The releases of ``dpstream watch``, read line by line from a file that grows or from a pipe, and checked.

A line is one release (docs/guide/watch.md, "What a release looks like"). ``parse`` keeps the line as it is once it
has the fields the page draws: ``step`` (increasing from line to line), ``time``, ``epoch``, ``epoch_step``,
``items`` (each a ``label`` and an ``estimate``, an ``epoch_estimate`` and an ``epoch_interval`` where present),
``privacy`` (with ``epsilon`` and ``delta``) and ``deployable`` (``true`` or a string that starts with
``not deployable``). Anything else is bad input, named by its line.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import IO, Any

NUMBER = (int, float)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, NUMBER) and not isinstance(value, bool) and math.isfinite(value)


def _check_item(item: Any) -> str | None:
    """What is wrong with one entry of ``items``, else None."""
    if not isinstance(item, dict) or not isinstance(item.get("label"), str) or not _is_number(item.get("estimate")):
        return "an item without a string label and a number estimate"
    if "epoch_estimate" in item and not _is_number(item["epoch_estimate"]):
        return "an item whose epoch_estimate is not a number"
    interval = item.get("epoch_interval")
    if interval is not None and not (isinstance(interval, list) and len(interval) == 2
                                     and all(_is_number(v) for v in interval) and interval[0] <= interval[1]):
        return f"an item whose epoch_interval is {json.dumps(interval)}, not [low, high]"
    return None


def _problem(release: Any, last_step: int | None) -> str | None:
    """What keeps ``release`` (a parsed line) from being a release of ``dpstream watch``, else None."""
    if not isinstance(release, dict):
        return f"a JSON {type(release).__name__}, not an object"
    for key in ("step", "epoch", "epoch_step"):
        if not _is_int(release.get(key)):
            return f"{key} {json.dumps(release.get(key))} is not a count"
    if last_step is not None and release["step"] <= last_step:
        return f"step {release['step']} does not follow step {last_step} (one watcher's releases, in order)"
    if not isinstance(release.get("time"), str):
        return "no time"
    if not isinstance(release.get("items"), list):
        return "no items list"
    return next((wrong for item in release["items"] if (wrong := _check_item(item)) is not None), None) or \
        _check_statement(release)


def _check_statement(release: dict[str, Any]) -> str | None:
    """What is wrong with a release's ``privacy`` or ``deployable``, else None."""
    privacy = release.get("privacy")
    if not isinstance(privacy, dict) or not _is_number(privacy.get("epsilon")) or not _is_number(privacy.get("delta")):
        return "no privacy statement with epsilon and delta"
    deployable = release.get("deployable")
    if deployable is not True and not (isinstance(deployable, str) and deployable.startswith("not deployable")):
        return f"deployable {json.dumps(deployable)} is neither true nor 'not deployable: ...'"
    return None


def parse(line: bytes, where: str, last_step: int | None = None) -> dict[str, Any]:
    """The release on ``line`` (``where`` names it in the error), after the release ``last_step`` (None: the first).

    Raises ValueError, one line: where, what is wrong, what is allowed.
    """
    try:
        release = json.loads(line)
    except ValueError as exc:  # also bytes that are not UTF-8
        raise ValueError(f"{where}: not JSON ({exc}); allowed: the JSON lines of dpstream watch") from None
    wrong = _problem(release, last_step)
    if wrong is not None:
        raise ValueError(f"{where}: {wrong}; allowed: the JSON lines of dpstream watch (docs/guide/watch.md)")
    return release


def lines(stream: IO[bytes], follow: bool, poll: float, stop: threading.Event) -> Iterator[bytes]:
    """The complete lines of ``stream`` (without their newline) as they are written.

    ``follow``: at the end of the file wait ``poll`` seconds and read on (a file that grows; a file that shrinks is
    an error, its earlier lines would no longer be what was read), until ``stop`` is set. Otherwise the end of the
    stream (a pipe closed) ends the lines; its last line needs no newline.
    """
    pending = b""
    while not stop.is_set():
        data = stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16)
        if not data:
            if not follow:
                break
            if os.fstat(stream.fileno()).st_size < stream.tell():
                raise ValueError(f"{stream.name}: shrank while followed; allowed: a file that only grows (the "
                                 "output of dpstream watch)")
            time.sleep(poll)
            continue
        *complete, pending = (pending + data).split(b"\n")
        yield from complete
    if pending and not follow:
        yield pending


class Releases:
    """The releases read so far, the last ``keep`` of them, for the server's threads.

    Each release has an index, its line's position among the releases (0 for the first); ``since(n)`` answers the
    releases from index n on that are still kept.
    """

    def __init__(self, keep: int) -> None:
        """Keep at most ``keep`` releases (the oldest go first)."""
        self._lock = threading.Lock()
        self._kept: deque[dict[str, Any]] = deque(maxlen=keep)
        self.total = 0
        self.ended = False
        self.error: str | None = None

    def add(self, release: dict[str, Any]) -> None:
        """Append one parsed release."""
        with self._lock:
            self._kept.append(release)
            self.total += 1

    @property
    def last_step(self) -> int | None:
        """The step of the last release (None before the first)."""
        with self._lock:
            return self._kept[-1]["step"] if self._kept else None

    def since(self, start: int) -> dict[str, Any]:
        """``first``: the index of the first release answered; ``next``: the index after the last; ``releases``."""
        with self._lock:
            offset = self.total - len(self._kept)  # the index of the oldest release kept
            first = max(start, offset)
            return {"first": first, "next": self.total, "ended": self.ended,
                    "releases": list(self._kept)[first - offset:]}

    def read(self, stream: IO[bytes], name: str, follow: bool, poll: float, stop: threading.Event) -> None:
        """Parse every line of ``stream`` into the releases (blank lines skipped); ``ended`` when the stream ends."""
        for number, line in enumerate(lines(stream, follow, poll, stop), start=1):
            if line.strip():
                self.add(parse(line, f"{name} line {number}", self.last_step))
        with self._lock:
            self.ended = not stop.is_set()
