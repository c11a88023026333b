"""numba's on-disk cache of the package, cleared when any of its sources changed.

numba checks a cached kernel against its own source file only (a hash of its content): a kernel that inlines or
calls a compiled function of another module keeps that function's old code after the other module changes, even
across a reinstall (a documented limitation of numba's cache). Here ``counters.philox.node_normal`` is inlined into
the release kernels of ``counters._derived`` and ``heavy_hitters``' loops: a changed node normal would be released by
the old code. So the package's cache files are tied to one digest of all its sources, written beside them
(``STAMP``); at import, another digest clears them first (``clear_stale``). Covered: where numba writes them,
``__pycache__`` beside the sources, numba's per-user directory (its fallback when ``__pycache__`` cannot be written)
or ``NUMBA_CACHE_DIR`` when it is set. Not covered: a cache directory set in ``.numba_config.yaml``, zip installs,
kernels outside the package that call it (``benchmarks/`` compiles its own uncached), and a process of older sources
that is still running in the same checkout and compiles a new specialisation after the change.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGE = Path(os.path.dirname(os.path.abspath(__file__)))
"""The package's directory, unresolved: numba names its cache directories from ``os.path.abspath`` of a source file."""
STAMP = "dpstream_sources.digest"
"""The digest file's name in the package's top ``__pycache__``; elsewhere (shared by other checkouts) it also names a
hash of the package's path."""


def source_digest(root: Path = PACKAGE) -> str:
    """Digest of every ``*.py`` under ``root``: relative paths and contents."""
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def numba_subpath(directory: Path) -> str:
    """Numba's name for the cache directory of the sources in ``directory`` (``get_suitable_cache_subpath``)."""
    return f"{directory.name}_{hashlib.sha1(str(directory).encode()).hexdigest()}"


def user_wide_dir() -> Path:
    """Numba's per-user cache directory (``AppDirs("numba").user_cache_dir`` on Linux)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"


def cache_dirs(root: Path = PACKAGE, cache_dir: str | None = None) -> list[Path]:
    """Where numba may write the cache files of the sources under ``root``.

    Under ``cache_dir`` when given; else each package's ``__pycache__`` and its directory in numba's per-user cache.
    """
    packages = sorted({path.parent for path in root.rglob("*.py")})
    if cache_dir:
        return [Path(cache_dir) / numba_subpath(package) for package in packages]
    return [package / "__pycache__" for package in packages] + [user_wide_dir() / numba_subpath(p) for p in packages]


def stamps(root: Path, cache_dir: str | None) -> list[Path]:
    """Where the digest is written: the first writable of these (the package's ``__pycache__`` first)."""
    shared = f"{hashlib.sha1(str(root).encode()).hexdigest()[:16]}.{STAMP}"
    if cache_dir:
        return [Path(cache_dir) / shared]
    return [root / "__pycache__" / STAMP, user_wide_dir() / shared]


def clear_stale(root: Path = PACKAGE, cache_dir: str | None = None) -> int:
    """Remove the numba cache files of ``root``'s sources unless a digest file names those sources; how many.

    Writes the current digest afterwards. Files that cannot be removed are left as they are.
    """
    digest = source_digest(root)
    places = stamps(root, cache_dir)
    for stamp in places:
        try:
            if stamp.read_text() == digest:
                return 0
        except OSError:
            continue
    removed = 0
    for directory in cache_dirs(root, cache_dir):
        for path in [*directory.glob("*.nbi"), *directory.glob("*.nbc")]:
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass
    for stamp in places:
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            partial = stamp.with_name(f"{stamp.name}.{os.getpid()}")
            partial.write_text(digest)
            os.replace(partial, stamp)
            break
        except OSError:
            continue
    return removed
