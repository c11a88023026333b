"""A worker process dies with the process that started it.

A run's workers are processes of their own: joblib's loky workers computing trials. Were the main process
killed outright (``kill -9``, the out-of-memory killer), they would be adopted by init and go on computing and
appending rows nobody asked for. ``die_with(parent)``, called in the worker, makes the kernel SIGKILL it the moment its
parent exits (Linux ``prctl(PR_SET_PDEATHSIG)``); where that call does not exist a thread checks the parent's pid
every ``POLL_S`` seconds instead. A worker's own workers arm it too, so a whole tree goes.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
POLL_S = 0.2
ORPHAN_EXIT = 128 + signal.SIGKILL  # the status a worker leaves with when the poll finds its parent gone

_armed: set[int] = set()  # pids (this process, after a fork) whose lifeline is set


def die_with(parent: int) -> None:
    """End this process when process ``parent`` (the one that started it) exits; nothing in ``parent`` itself."""
    pid = os.getpid()
    if pid == parent or pid in _armed:
        return
    _armed.add(pid)
    if not _parent_death_signal():
        threading.Thread(target=_watch, args=(parent,), daemon=True, name="dpstream-lifeline").start()
    if os.getppid() != parent:  # the parent was gone before the signal was set
        os._exit(ORPHAN_EXIT)


def _parent_death_signal() -> bool:
    """Ask Linux for SIGKILL when the parent exits; False where prctl is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os._exit(ORPHAN_EXIT)
