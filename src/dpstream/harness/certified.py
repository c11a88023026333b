"""One meaning of ``certified`` in the API, the tables and the report: private, at the claimed (epsilon, delta).

A sketch's ``certified`` is True only for a private mechanism run with its full calibrated noise (``SketchCore``); a
non-private baseline (CMS, CS, the CMS heap) is never certified. Rows say the same, with a ``privacy`` column naming
which case a row is: ``NOT_PRIVATE`` for a baseline, ``CERTIFIED`` or ``UNCERTIFIED`` for a mechanism that claims
privacy. Warnings about uncertified rows ("scaled constants or debug mode") concern only the latter.

``python -m dpstream.harness.certified results/tables`` rewrites the ``certified`` and ``privacy`` columns of
committed tables by this rule, leaving every other cell as written (no trial is recomputed).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

NOT_PRIVATE = "none (not private)"
CERTIFIED = "(epsilon, delta)-DP, certified"
UNCERTIFIED = "NOT privacy-certified"


def privacy_columns(row: Mapping[str, Any], mechanism_private: bool, trial_reports_certified: bool) -> dict[str, Any]:
    """``certified`` and ``privacy`` of a row.

    A mechanism configured ``private: false`` whose trial does not report ``certified`` itself is a non-private
    baseline: never certified. Otherwise the row's own ``certified`` stands.
    """
    if not mechanism_private and not trial_reports_certified:
        return {"certified": False, "privacy": NOT_PRIVATE}
    certified = bool(row.get("certified", True))
    return {"certified": certified, "privacy": CERTIFIED if certified else UNCERTIFIED}


def with_privacy(row: Mapping[str, Any], mechanism_private: bool, trial_reports_certified: bool) -> dict[str, Any]:
    """``row`` with ``certified`` set by ``privacy_columns`` and ``privacy`` right after it."""
    columns = privacy_columns(row, mechanism_private, trial_reports_certified)
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

    Every cell is read and written as text, so no other cell changes. Tables without ``mechanism.private`` or
    ``certified`` are left alone. The trial's own report of ``certified`` is read from its declared row columns.
    """
    from dpstream.harness.config import import_object

    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if "mechanism.private" not in df.columns or "certified" not in df.columns:
        return False
    reports = {fn: "certified" in (getattr(import_object(fn), "row_columns", None) or ())
               for fn in df["mechanism.trial"].unique()}
    columns = [privacy_columns({"certified": c == "True"}, p == "True", reports[fn])
               for c, p, fn in zip(df["certified"], df["mechanism.private"], df["mechanism.trial"], strict=True)]
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
