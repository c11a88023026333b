"""The one call every stream source (``conf/data/*.yaml`` ``_target_``) answers, and what a file reader reports.

Every stream target is called as ``target(**params, seed=..., cache_dir=...)``: generators draw from the seed; a
real file (a trace, the user's items) is fixed and ignores it. A file reader returns a ``FileStream``: the items
and the rows it read and skipped, which the trials copy into their rows (``rows_read``, ``rows_skipped``).
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from hydra.utils import get_method

from dpstream.data.cache import FINGERPRINT_SUFFIX

CONFIG_ONLY = ("_target_", "name", "synthetic", "description", "kind")  # kind: the data declaration (harness.config)
"""Data config keys that describe the source and are not passed to it."""


@dataclass(frozen=True, eq=False)
class FileStream:
    """A stream read from ``source``: its items (in file order), the rows read and skipped (and why).

    ``labels`` maps an item back to the file's value when the values were hashed (``dpstream.data.items``);
    ``label_delta`` bounds the probability that a label is not the one value of its key. It is NOT added to the
    (epsilon, delta) the console and the privacy ledger state, which cover the released keys; output shown under
    those labels holds with delta + ``label_delta``.
    Keeping under half of the rows warns (``warnings.warn`` with the counts) when the stream is made.
    """

    items: np.ndarray
    source: str
    rows_read: int
    rows_skipped: int
    skipped: str = ""
    labels: dict[int, str] | None = None
    label_delta: float = 0.0

    def __post_init__(self) -> None:
        """Warn when under half of the file's rows made it into the stream."""
        if 2 * self.rows_skipped > self.rows_read:
            warnings.warn(f"{self.source}: kept {self.rows_read - self.rows_skipped} of {self.rows_read} rows "
                          f"(skipped {self.rows_skipped}: {self.skipped}); under half of the file is in the stream",
                          stacklevel=3)

    def row(self) -> dict[str, int]:
        """The columns a trial adds to its row."""
        return {"rows_read": self.rows_read, "rows_skipped": self.rows_skipped}


def load_stream(data: dict[str, Any], seed: np.random.SeedSequence,
                cache_dir: str | None) -> tuple[np.ndarray, dict[str, int]]:
    """Call the data config's ``_target_`` with its parameters, ``seed`` and ``cache_dir``.

    The stream and the row columns of a file source (``FileStream.row``; none for generated data). The harness's
    ``*_xxh3`` content hashes of file inputs are left out of the call; a key the source does not take is an error naming
    it.
    """
    kwargs = {k: v for k, v in data.items() if k not in CONFIG_ONLY and not k.endswith(FINGERPRINT_SUFFIX)}
    target = get_method(data["_target_"])
    allowed = [k for k in inspect.signature(target).parameters if k not in ("seed", "cache_dir")]
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:  # e.g. an experiment's fixed data.skew kept after data=items on the command line
        values = ", ".join(repr(kwargs[k]) for k in unknown)
        raise ValueError(f"data={data.get('name')!r} has no parameter(s) {', '.join(unknown)} (set to {values}); "
                         f"its parameters: {', '.join(allowed)}")
    out = target(**kwargs, seed=seed, cache_dir=cache_dir)
    return (out.items, out.row()) if isinstance(out, FileStream) else (out, {})
