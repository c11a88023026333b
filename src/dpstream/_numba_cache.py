"""numba's on-disk cache of the package, cleared when any of its sources changed.

numba checks a cached kernel against its own source file only (size and time stamp): a kernel that inlines or calls
a compiled function of another module keeps that function's old code after the other module changes (a documented
limitation of numba's cache). Here ``counters.philox.node_normal`` is inlined into the release kernels of
``counters._derived`` and ``sketches._lazy_hh``: a changed node normal would be released by the old code. So the
package's cache files are tied to one digest of all its sources, written beside them (``STAMP``); at import, another
digest clears them first (``clear_stale``). The cache files are where numba writes them: ``__pycache__`` beside the
sources, or under ``NUMBA_CACHE_DIR`` when it is set. Not covered: a process of older sources that is still running
in the same checkout and compiles a new specialisation after the change.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
STAMP = "dpstream_sources.digest"
"""The digest file's name in the package's top ``__pycache__``; under ``NUMBA_CACHE_DIR``, shared by other checkouts,
it also names a hash of the package's path."""


def source_digest(root: Path = PACKAGE) -> str:
    """Digest of every ``*.py`` under ``root``: relative paths and contents."""
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cache_dirs(root: Path = PACKAGE, cache_dir: str | None = None) -> list[Path]:
    """Where numba writes the cache files of the sources under ``root``.

    Each package's ``__pycache__``, or its subdirectory of ``cache_dir`` (numba's own naming,
    ``_CacheLocator.get_suitable_cache_subpath``).
    """
    packages = sorted({path.parent for path in root.rglob("*.py")})
    if not cache_dir:
        return [package / "__pycache__" for package in packages]
    from numba.core.caching import _CacheLocator

    return [Path(cache_dir) / _CacheLocator.get_suitable_cache_subpath(str(package / "__init__.py"))
            for package in packages]


def clear_stale(root: Path = PACKAGE, cache_dir: str | None = None) -> int:
    """Remove the numba cache files of ``root``'s sources unless the digest file names those sources; how many.

    Writes the current digest afterwards. A directory that cannot be written is left as it is (a read-only install
    gets new time stamps, so fresh caches, from its installer).
    """
    dirs = cache_dirs(root, cache_dir)
    where = hashlib.sha1(str(root).encode()).hexdigest()[:16]
    stamp = Path(cache_dir) / f"{where}.{STAMP}" if cache_dir else root / "__pycache__" / STAMP
    digest = source_digest(root)
    try:
        if stamp.read_text() == digest:
            return 0
    except OSError:
        pass
    removed = 0
    for directory in dirs:
        for path in [*directory.glob("*.nbi"), *directory.glob("*.nbc")]:
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        partial = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        partial.write_text(digest)
        os.replace(partial, stamp)
    except OSError:
        pass
    return removed
