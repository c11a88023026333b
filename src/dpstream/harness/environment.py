"""The software environment a results row and a report were computed in: package versions and the lock's hash.

These columns record where a number came from; they are not inputs of a trial, so they never enter its store key (a
rerun under another numpy still finds the finished trial) and reproducibility checks leave them out (``ENV_COLUMNS``).
"""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

import dpstream

LOCK_NAME = "requirements.lock"
PACKAGES = ("numpy", "numba", "scipy", "pandas")
ENV_COLUMNS = ("dpstream_version", *(f"{p}_version" for p in PACKAGES), "lock_sha256")
HASH_DIGITS = 12


def lock_path() -> Path:
    """The checkout's ``requirements.lock`` (beside ``src/``); absent when dpstream is installed from a wheel."""
    return Path(dpstream.__file__).resolve().parents[2] / LOCK_NAME


def lock_hash(path: Path | None = None) -> str:
    """The first ``HASH_DIGITS`` hex digits of the lock file's sha256, or ``"none"`` without a lock file."""
    path = lock_path() if path is None else path
    if not path.is_file():
        return "none"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:HASH_DIGITS]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


@functools.cache
def environment() -> dict[str, str]:
    """``ENV_COLUMNS`` with their values in this process: dpstream, numpy, numba, scipy, pandas versions, lock hash."""
    versions = {f"{p}_version": _version(p) for p in PACKAGES}
    return {"dpstream_version": dpstream.__version__, **versions, "lock_sha256": lock_hash()}
