"""Append-only results store: one JSON line per finished trial, keyed by a hash of its config and seed.

A trial is written the moment it finishes, as one whole line or not at all: the line goes out on an ``O_APPEND``
descriptor, a short write is continued until the line is complete, and a write that fails part-way (a full disk) is
cut back off the file before the error is raised, so the next append never glues onto half a row. ``sync`` makes the
rows durable (``fsync``; the runner calls it when a sweep ends); a killed process loses nothing it wrote, since its
writes are in the file already. A crash of the machine (or a kill in the middle of a write) can leave a partial LAST
line with no newline: the next open cuts it off and says so on stderr. Any other bad line is corruption and raises
``StoreError`` naming the file and the line.

Each row carries ``row_blake2b``, a BLAKE2b digest of its canonical JSON, checked when the store is read: a row
changed by accident (a damaged disk block, a stray edit in an editor) is refused with one line naming the file and the
line. It is not a defence against a deliberate edit, which can recompute the digest or delete it: rows without one
(stores written before the digest existed, such as the committed ``results/verify`` stores) are read as they are.

The store carries its format version in a file beside it (``trials.format`` for ``trials.jsonl``): the version of the
trial keys and row layout (``STORE_FORMAT``). A store of another version, or one without the file (written before
versions were recorded), is an error saying to move it away: its keys do not name the trials of this version.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from dpstream.descriptor import noise_version
from dpstream.errors import InputError


class StoreError(InputError, RuntimeError):
    """A results file that cannot be read as the store wrote it."""


NOT_IN_KEY = ("data_dir",)  # where caches live does not change a result
NOT_IN_MECHANISM_KEY = ("uses",)  # a declaration checked before the run (config.check_uses), not an input
ROW_SCHEMA = "row_schema"  # the hashed entry holding the digest of the trial's declared row columns
CHECKSUM = "row_blake2b"
"""The field holding a row's digest (``row_digest``): written with every row, checked on reading, not a column."""
STORE_FORMAT = 2
"""Format of the store's keys and rows. 1: keys without the row schema, SVT designs in ``mechanism`` (no format file);
2: keys hash the declared row columns, designs are data configs, ``dpstream.svt.shifting`` targets."""


def trial_key(params: dict[str, Any], row_schema: str | None = None) -> str:
    """Stable hash of a trial's full config and of the row columns its trial function declares.

    The config includes seed and trial index, and the content hash of every file input, ``<key>_xxh3`` (see
    ``config.fingerprint_inputs``); ``row_schema`` (``dpstream.trials.row_schema``): a trial that returns other
    columns gets new keys. A mechanism is also keyed by the code versions of its noise, which its descriptor gives
    (``dpstream.descriptor.noise_version``: derived node noise's normal transform, the exact discrete sampler's
    version): such noise values are a function of the code, and rows of another version are not reused.
    """
    keyed = {k: v for k, v in params.items() if k not in NOT_IN_KEY}
    if row_schema is not None:
        keyed[ROW_SCHEMA] = row_schema
    if isinstance(keyed.get("mechanism"), dict):
        keyed["mechanism"] = {k: v for k, v in keyed["mechanism"].items() if k not in NOT_IN_MECHANISM_KEY}
        keyed.update(noise_version(keyed["mechanism"]))
    text = json.dumps(keyed, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _json_safe(value: Any) -> Any:
    """Numpy scalars -> Python scalars (NaN and +-inf are kept: Python's json round-trips them)."""
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def row_digest(row: dict[str, Any]) -> str:
    """BLAKE2b (16 bytes, hex) of ``row``'s canonical JSON (sorted keys, no spaces), the digest field left out."""
    text = json.dumps({k: v for k, v in row.items() if k != CHECKSUM}, sort_keys=True, separators=(",", ":"),
                      default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def whole_lines_end(fd: int) -> int:
    """The size of ``fd``'s file up to its last newline: what is after it is a partial line."""
    pos = os.fstat(fd).st_size
    while pos > 0:
        start = max(0, pos - 65536)
        found = os.pread(fd, pos - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        pos = start
    return 0


def cut_partial_line(fd: int, path: Path) -> None:
    """Truncate a partial last line off ``fd`` (the caller holds the file's exclusive lock), saying so on stderr."""
    size, end = os.fstat(fd).st_size, whole_lines_end(fd)
    if end < size:
        os.ftruncate(fd, end)
        print(f"note: {path}: cut off a partial last line ({size - end} bytes of an interrupted "
              "write); every whole row before it is kept", file=sys.stderr, flush=True)


def write_whole(fd: int, data: bytes, path: Path) -> None:
    """Write all of ``data`` at the end of ``fd`` (``O_RDWR | O_APPEND``), or nothing: a failure truncates it again.

    An exclusive lock on the file keeps lines whole when several processes append (runs sharing a store); a partial line
    a crashed writer left at the end is cut off first, so the new line never glues onto it.
    """
    fcntl.flock(fd, fcntl.LOCK_EX)
    cut_partial_line(fd, path)
    start = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        while view:
            written = os.write(fd, view)
            if written <= 0:
                raise OSError(f"wrote {written} bytes")
            view = view[written:]
    except OSError:
        os.ftruncate(fd, start)
        raise


class ResultsStore:
    """Rows of finished trials in ``path`` (JSON lines), readable while being appended to."""

    def __init__(self, path: str | Path) -> None:
        """Open (or create) the store at ``path`` and load the rows already in it."""
        self.path = Path(path)
        if self.path.is_dir():
            raise StoreError(f"results store {self.path} is a folder, not a file: move it away and rerun")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._rows: dict[str, dict[str, Any]] = {}
        self.written_now: set[str] = set()  # keys appended through this object (a forced rerun does each once)
        self._check_format()
        self._load()

    @property
    def format_path(self) -> Path:
        """The file holding the store's format version, beside the store."""
        return self.path.with_suffix(".format")

    def _check_format(self) -> None:
        """Record ``STORE_FORMAT`` for a new store; refuse a store of another (or no recorded) format."""
        has_rows = self.path.exists() and self.path.stat().st_size > 0
        if not self.format_path.exists():
            if has_rows:
                raise StoreError(
                    f"results store {self.path} has no format version (written by an older dpstream); this version "
                    f"reads format {STORE_FORMAT}: move the store away (or delete it) and rerun to recompute its trials"
                )
            self.format_path.write_text(f"{STORE_FORMAT}\n")
            return
        found = self.format_path.read_text().strip()
        if found != str(STORE_FORMAT):
            raise StoreError(
                f"results store {self.path} is format {found!r}; this version of dpstream reads format "
                f"{STORE_FORMAT}: move the store away (or delete it) and rerun to recompute its trials"
            )

    def _load(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            fcntl.flock(fh, fcntl.LOCK_SH)  # never in the middle of another process's append
            data = fh.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a partial last line left by a crash: cut it off, and say so
            with open(self.path, "r+b") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                cut_partial_line(fh.fileno(), self.path)
            data = data[:end]
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key = row["key"]
            except (ValueError, KeyError, TypeError) as exc:  # ValueError: bad JSON or bytes that are not UTF-8
                raise StoreError(
                    f"results file {self.path} is corrupt at line {number}: {line[:120]!r} ({exc}); "
                    "move the file away or delete that line to continue"
                ) from exc
            digest = row.pop(CHECKSUM, None)
            if digest is not None and digest != row_digest(row):
                raise StoreError(
                    f"results file {self.path} line {number}: the row does not match its checksum (changed after it "
                    "was written); move the file away or delete that line to recompute the trial"
                )
            self._rows[key] = row

    def __contains__(self, key: str) -> bool:
        """Whether a row with trial key ``key`` is stored."""
        return key in self._rows

    def __len__(self) -> int:
        """Number of stored rows."""
        return len(self._rows)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored row of trial key ``key``, or None."""
        return self._rows.get(key)

    def append(self, row: dict[str, Any], replace: bool = False) -> None:
        """Write one finished row as one whole line with its checksum (``write_whole``); ``sync`` makes it durable.

        A row whose key is already stored is ignored, unless ``replace`` (a forced rerun): then the new line is appended
        and wins on every later load. A failed write (a full disk) leaves the file as it was and raises ``StoreError``.
        """
        key = row["key"]
        if key in self._rows and not replace:
            return
        safe = json.loads(json.dumps({k: _json_safe(v) for k, v in row.items() if k != CHECKSUM}, default=str))
        line = json.dumps({**safe, CHECKSUM: row_digest(safe)}) + "\n"
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            write_whole(fd, line.encode(), self.path)
        except OSError as exc:
            raise StoreError(f"results store {self.path}: trial {key} could not be written ({exc.strerror or exc}); "
                             f"the {len(self._rows)} rows stored before it are intact") from exc
        finally:
            os.close(fd)
        self._rows[key] = row
        self.written_now.add(key)

    def sync(self) -> None:
        """Flush the rows written so far to the disk (``fsync``): called when a sweep ends."""
        if not self.path.exists():
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
