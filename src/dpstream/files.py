"""Files written whole or not at all: a temporary file beside the target, renamed into place."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` through ``write(handle)`` (a binary handle) into a temporary file, then rename it into place.

    The temporary file sits in ``path``'s folder (so the rename is atomic) under a name of its own for every call,
    so parallel writers never meet in one file and a reader never sees a half-written one. A run killed, a disk that
    fills, or a ``write`` that raises mid-way leaves ``path`` as it was; the temporary file is removed when the
    failure is an exception. The file gets the permissions of any new file (the process's umask).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with tmp.open("xb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def write_text_atomically(path: Path, text: str) -> None:
    """``write_atomically`` of ``text``, UTF-8 encoded."""
    write_atomically(path, lambda handle: handle.write(text.encode()))
