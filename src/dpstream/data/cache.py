"""On-disk cache of generated or converted arrays under ``data/``, keyed by their parameters."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from dpstream.files import write_atomically

FINGERPRINT_CHUNK = 1 << 23  # 8 MiB reads
FINGERPRINT_SUFFIX = "_xxh3"  # config key of a file input's content hash: ``data.path`` -> ``data.path_xxh3``
_fingerprints: dict[tuple[str, int, int, int, int, int], str] = {}


def seed_token(seed: np.random.SeedSequence) -> str:
    """A stable text form of a SeedSequence (entropy and spawn key), for cache keys."""
    return f"{seed.entropy}-{'.'.join(map(str, seed.spawn_key))}"


def file_fingerprint(path: str | Path) -> str:
    """xxh3-128 of a file's content (hex), read in chunks: what a stored result or cached conversion is keyed by.

    Memoised within the process per (path, device, inode, size, mtime_ns, ctime_ns), so a sweep hashes a large
    trace once; ``ctime`` is in the memo key because ``os.utime`` can restore mtime but not ctime, so a file
    rewritten in place is hashed again. A missing or unreadable file raises an error naming it.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"input file {str(p)!r} does not exist or is not a file")
    st = p.stat()
    memo = (str(p.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if memo not in _fingerprints:
        digest = xxhash.xxh3_128()
        try:
            with open(p, "rb") as fh:
                while chunk := fh.read(FINGERPRINT_CHUNK):
                    digest.update(chunk)
        except OSError as exc:
            raise PermissionError(f"input file {str(p)!r} cannot be read ({exc})") from exc
        _fingerprints[memo] = digest.hexdigest()
    return _fingerprints[memo]


def _cache_file(cache_dir: str | Path, kind: str, params: dict[str, Any], suffix: str) -> Path:
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return Path(cache_dir) / kind / f"{kind}-{digest}{suffix}"


def cached_array(cache_dir: str | Path | None, kind: str, params: dict[str, Any],
                 build: Callable[[], np.ndarray]) -> np.ndarray:
    """Return ``build()``, cached as ``<cache_dir>/<kind>/<kind>-<hash of params>.npy``.

    Writes go to a temporary file first and are renamed into place, so parallel workers
    never read a half-written array. ``cache_dir=None`` disables caching.
    """
    if cache_dir is None:
        return build()
    path = _cache_file(cache_dir, kind, params, ".npy")
    if path.exists():
        return np.load(path)
    array = build()
    write_atomically(path, lambda fh: np.save(fh, array))
    return array


def cached_arrays(cache_dir: str | Path | None, kind: str, params: dict[str, Any],
                  build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``cached_array`` for several named arrays, kept together in one ``.npz``.

    For example a stream and what reading it skipped, in ``<cache_dir>/<kind>/<kind>-<hash of params>.npz`` (no pickled
    objects).
    """
    if cache_dir is None:
        return build()
    path = _cache_file(cache_dir, kind, params, ".npz")
    if path.exists():
        with np.load(path, allow_pickle=False) as stored:
            return {name: stored[name] for name in stored.files}
    arrays = build()
    # numpy's stub cannot tell that no key of ``arrays`` is savez's own ``allow_pickle`` keyword
    write_atomically(path, lambda fh: np.savez(fh, **arrays))  # type: ignore[arg-type]
    return arrays


def cache_entries(data_dir: str | Path) -> list[tuple[str, int, int]]:
    """(folder, files, bytes) of every folder of generated or downloaded data under ``data_dir``, largest first.

    Files directly in ``data_dir`` count under ``"."``.
    """
    root = Path(data_dir)
    if not root.is_dir():
        return []
    sizes: dict[str, list[int]] = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(root)
            name = rel.parts[0] if len(rel.parts) > 1 else "."
            entry = sizes.setdefault(name, [0, 0])
            entry[0] += 1
            entry[1] += path.stat().st_size
    return sorted(((k, v[0], v[1]) for k, v in sizes.items()), key=lambda e: (-e[2], e[0]))


def clear_cache(data_dir: str | Path, folders: list[str] | None = None) -> tuple[int, int]:
    """Delete the files of ``folders`` (all when None) under ``data_dir``; return (files, bytes) removed.

    Only regular files are removed (symlinks are left alone), then the emptied folders.
    """
    root = Path(data_dir)
    known = {name for name, _, _ in cache_entries(root)}
    unknown = sorted(set(folders or ()) - known)
    if unknown:
        raise ValueError(f"no cached data named {', '.join(unknown)} in {root}; "
                         f"allowed: {', '.join(sorted(known)) or '(the cache is empty)'}")
    files = removed = 0
    for name in sorted(known if folders is None else set(folders)):
        target = root if name == "." else root / name
        paths = [p for p in target.iterdir() if p.is_file()] if name == "." else list(target.rglob("*"))
        for path in paths:
            if path.is_file() and not path.is_symlink():
                removed += path.stat().st_size
                files += 1
                path.unlink()
        if name != ".":
            for folder in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                if not any(folder.iterdir()):
                    folder.rmdir()
            if target.is_dir() and not any(target.iterdir()):
                target.rmdir()
    return files, removed
