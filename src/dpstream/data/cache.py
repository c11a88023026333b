"""On-disk cache of generated or converted arrays under ``data/``, keyed by their parameters."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def seed_token(seed: np.random.SeedSequence) -> str:
    """A stable text form of a SeedSequence (entropy and spawn key), for cache keys."""
    return f"{seed.entropy}-{'.'.join(map(str, seed.spawn_key))}"


def cached_array(cache_dir: str | Path | None, kind: str, params: dict[str, Any],
                 build: Callable[[], np.ndarray]) -> np.ndarray:
    """Return ``build()``, cached as ``<cache_dir>/<kind>/<kind>-<hash of params>.npy``.

    Writes go to a temporary file first and are renamed into place, so parallel workers
    never read a half-written array. ``cache_dir=None`` disables caching.
    """
    if cache_dir is None:
        return build()
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]
    folder = Path(cache_dir) / kind
    path = folder / f"{kind}-{digest}.npy"
    if path.exists():
        return np.load(path)
    array = build()
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npy.tmp")
    with os.fdopen(fd, "wb") as fh:
        np.save(fh, array)
    os.replace(tmp, path)
    return array
