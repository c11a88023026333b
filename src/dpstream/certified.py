"""One meaning of ``certified`` in the API, the tables and the report: private, at the claimed (epsilon, delta).

A row's labels come from the mechanism object that produced it (``dpstream.privacy.labels``: ``private``,
``certified``, ``deployable``), never from a config flag or a default: a non-private baseline (CMS, CS, the CMS heap)
is never certified, whatever ``mechanism.private`` says. Tables add a ``privacy`` column naming which case a row is:
``NOT_PRIVATE`` for a baseline (or a row without labels), ``CERTIFIED`` or ``UNCERTIFIED`` for a mechanism that claims
privacy. Warnings about uncertified rows ("scaled constants or debug mode") concern only the latter.

``python -m dpstream.certified results/tables`` rewrites the ``certified`` and ``privacy`` columns of
tables whose rows carry their mechanism's labels by this rule, leaving every other cell as written (no trial is
recomputed, nothing a cell names is imported).
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

NOT_PRIVATE = "none (not private)"
CERTIFIED = "(epsilon, delta)-DP, certified"
UNCERTIFIED = "NOT privacy-certified"
EVALUATION_HEADING = "NOT private (evaluation): computed from the raw data to evaluate the release"
RELEASED = ("private", "certified", "privacy", "deployable", "n_reported", "output_time", "output_period", "length",
            "n_release_times", "sketch_width", "sketch_depth", "memory_bytes", "gamma", "delta_tilde", "tau_final",
            "eps_*", "delta_data", "delta_analyst", "kappa", "k", "cutoff", "composition", "tm_option", "noise_*",
            "laplace_scale", "sparse_sigma", "rounds", "tops", "m", "c")
"""Row columns a mechanism released (under its label) or that its public configuration fixes (T is public under
replace-one neighbouring streams). Every other column was computed from the raw data to evaluate the release (errors,
recall, true counts, rows read, timing): NOT private, shown apart under ``EVALUATION_HEADING``."""


def released(columns: Iterable[str]) -> list[str]:
    """The columns of ``columns`` that ``RELEASED`` names, in order."""
    return [c for c in columns if any(fnmatch.fnmatchcase(c, pattern) for pattern in RELEASED)]


def privacy_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    """``certified`` and ``privacy`` of a row, from the labels its mechanism gave it (``privacy.labels``).

    A row is certified only when its mechanism said both ``private`` and ``certified``; a row without the labels
    (a theory curve, a trial that reports none) is not private, whatever its config says.
    """
    private = _true(row.get("private"))
    certified = private and _true(row.get("certified"))
    return {"certified": certified, "privacy": CERTIFIED if certified else UNCERTIFIED if private else NOT_PRIVATE}


def _true(value: Any) -> bool:
    """A label as a row holds it: a bool, or its text in a CSV cell."""
    return value is True or bool(value is not None and str(value) == "True")


def with_privacy(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with ``certified`` set by ``privacy_columns`` and ``privacy`` right after it."""
    columns = privacy_columns(row)
    out: dict[str, Any] = {}
    for name, value in row.items():
        if name != "privacy":
            out[name] = columns["certified"] if name == "certified" else value
        if name == "certified":
            out["privacy"] = columns["privacy"]
    return out if "privacy" in out else {**out, **columns}


def uncertified(df: pd.DataFrame) -> bool:
    """Whether ``df`` holds a row that claims privacy but is not certified (a non-private baseline does not count)."""
    if "certified" not in df.columns:
        return False
    claims = df["privacy"] != NOT_PRIVATE if "privacy" in df.columns else pd.Series(True, index=df.index)
    return bool((claims & ~df["certified"].astype(bool)).any())


def not_private(df: pd.DataFrame) -> bool:
    """Whether ``df`` holds rows of a non-private baseline."""
    return "privacy" in df.columns and bool((df["privacy"] == NOT_PRIVATE).any())


def rewrite_table(path: Path) -> bool:
    """Set ``certified`` / ``privacy`` of a results table by ``privacy_columns``; True if the file changed.

    Every cell is read and written as text, so no other cell changes, and nothing a cell names is imported or run.
    Only a table whose rows carry their mechanism's labels (``private``, ``certified``) is relabelled; an older
    table without them is left alone (its labels came from configs: regenerate it).
    """
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if not {"private", "certified"} <= set(df.columns):
        return False
    columns = [privacy_columns({"private": p, "certified": c}) for p, c in zip(df["private"], df["certified"],
                                                                             strict=True)]
    new = df.copy()
    new["certified"] = [str(c["certified"]) for c in columns]
    if "privacy" not in new.columns:
        new.insert(list(new.columns).index("certified") + 1, "privacy", "")
    new["privacy"] = [c["privacy"] for c in columns]
    if new.equals(df):
        return False
    new.to_csv(path, index=False)
    return True


def main(argv: list[str] | None = None) -> int:
    """Rewrite the ``certified`` / ``privacy`` columns of every ``*.csv`` (not ``*.claims.csv``) in a tables folder."""
    folder = Path((argv if argv is not None else sys.argv[1:] or ["results/tables"])[0])
    for path in sorted(folder.glob("*.csv")):
        if not path.name.endswith(".claims.csv") and rewrite_table(path):
            print(f"rewrote certified / privacy of {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
