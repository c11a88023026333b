"""The commit a result was computed at: git ``HEAD``, ``-dirty`` when the code in scope differs from it.

A row records it so that a number can be traced to the code that produced it; ``-dirty`` says that code was not
that commit's. Callers choose the scope: the pre-registration's gate (``dpstream.claims.registration``) looks at the
whole checkout less the outputs a registered run rewrites, the counters' empirical check
(``dpstream.counters.empirical``) at the package's sources, untracked files included.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path


def git_commit(root: Path, excluded: Sequence[str] = (), untracked: bool = False) -> str | None:
    """``HEAD`` of the checkout holding ``root``, ``-dirty`` when files under ``root`` differ from it; None without git.

    ``excluded``: paths (relative to ``root``) whose changes leave it clean; ``untracked``: a new, untracked file under
    ``root`` makes it dirty too (otherwise only changes to tracked files do).
    """
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                              timeout=10).stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", f"--untracked-files={'normal' if untracked else 'no'}", "--", ".",
                    *(f":!{p}" for p in excluded))
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "")
