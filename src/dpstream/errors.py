"""Bad input, and how it is told: one line naming the value, the file or the limit, and what is allowed.

``ConfigError`` names the key the user typed, its value and what is allowed. ``InputError`` marks an error about a
file the user gave or the package wrote (a corrupt results store) that is not a ``ValueError``. ``bad_input`` tells
such errors (and an unwritable or full disk, a size beyond memory or int64) from defects, which keep their traceback;
``one_line`` says them in one line. The command line prints that line and exits with status 2 (``dpstream.cli``).
"""

from __future__ import annotations

import argparse
import errno
import signal
from typing import Any


class ConfigError(ValueError):
    """``key=value`` is not allowed; ``allowed`` says what is (printed by the CLI as ``error: key=value: allowed``)."""

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        """Name the bad ``key``, its ``value`` and what is ``allowed``."""
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key}={value}: {allowed}")


class InputError(Exception):
    """A file that cannot be used as it is (its message names the file and, where there is one, the line)."""


BAD_INPUT: tuple[type[BaseException], ...] = (ValueError, OSError, MemoryError, OverflowError, InputError)
"""What bad input raises: a wrong value (``ValueError``), a file or folder that cannot be read or written
(``OSError``: missing, a folder where a file belongs, read-only, the disk full), a size beyond memory
(``MemoryError``) or beyond 64-bit arithmetic (``OverflowError``), a corrupt file (``InputError``)."""

OS_HINTS = {
    errno.ENOSPC: "the disk is full: free some space and run the same command again (finished trials are kept)",
    errno.EDQUOT: "the disk quota is used up: free some space and run the same command again",
    errno.EROFS: "a read-only file system: choose another folder",
    errno.EACCES: "not allowed (permissions): choose another folder",
    errno.EPERM: "not allowed: choose another folder",
    errno.EISDIR: "a folder where a file belongs",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.ENOENT: "no such file or folder",
}


def bad_input(exc: BaseException) -> BaseException | None:
    """The bad-input error behind ``exc``: ``exc`` itself or an exception it was raised from, else None (a defect).

    Follows ``__cause__`` only (``raise ... from``), so a defect raised while handling bad input stays a defect.
    """
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, BAD_INPUT):
            return link
        seen.add(id(link))
        link = link.__cause__
    return None


def one_line(exc: BaseException) -> str:
    """The message of a bad-input error (``bad_input``) on one line, without the ``error:`` prefix."""
    if isinstance(exc, OSError) and exc.filename is not None:
        hint = OS_HINTS.get(exc.errno or 0, exc.strerror or "")
        return f"{exc.filename}: {exc.strerror} ({hint})" if hint != exc.strerror else f"{exc.filename}: {hint}"
    text = " ".join(str(exc).split())
    if isinstance(exc, MemoryError):
        return f"out of memory{': ' + text if text else ''}; choose smaller sizes (trials, data.length, width, ...)"
    if isinstance(exc, OverflowError):
        return f"a number too large for 64-bit arithmetic ({text}); choose smaller sizes"
    return text or type(exc).__name__


def command_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    """A long-running command's arguments, or the exit status argparse chose instead.

    ``--help`` gives 0 and a refused option 2 (its one line already printed). Once parsed, SIGTERM stops the command
    as Ctrl-C does (``KeyboardInterrupt``).
    """
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    return args
