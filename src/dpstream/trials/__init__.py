"""Trial functions: ``run_trial(params, seed) -> dict`` for each mechanism family (see docs/harness.md).

Every trial function declares the columns of the rows it returns (``row_columns``); the results store keys each row
on a digest of that declaration (``row_schema``), so changing what a trial returns recomputes its stored rows, and the
runner rejects a row with a column the declaration does not name (``undeclared``).
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

# Privacy a trial may state in its row -> the top-level budget it must stay within.
STATED_PRIVACY = {"eps_data": "epsilon", "eps_analyst": "epsilon", "delta_data": "delta"}

F = TypeVar("F", bound=Callable[..., Any])


def within_budget(params: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether every privacy ``row`` states (eps_data, eps_analyst, delta_data) is within the run's budget.

    The budget is the top-level epsilon, delta (Hsu-Roth-Ullman Thm 3.3 promises data and analyst privacy at the
    same (eps, delta)). A row is ``certified`` only if this holds (checked by the trial and again by the runner).
    """
    tol = 1 + 1e-9  # rounding of the accounted values only
    return all(row[k] <= params[budget] * tol for k, budget in STATED_PRIVACY.items() if row.get(k) is not None)


def row_columns(*columns: str) -> Callable[[F], F]:
    """Declare the columns a trial function's rows may have (shell-style patterns allowed: ``recall_g*``).

    The declaration replaces the hand-bumped ``schema:`` keys of the mechanism configs: its digest enters every store
    key of the trial (``row_schema``), so adding, renaming or removing a declared column recomputes the stored rows.
    """
    def mark(fn: F) -> F:
        fn.row_columns = tuple(columns)  # type: ignore[attr-defined]
        return fn
    return mark


def row_schema(fn: Callable[..., Any]) -> str | None:
    """Short digest of ``fn``'s declared row columns (order-free); None for a function that declares none."""
    columns = getattr(fn, "row_columns", None)
    if columns is None:
        return None
    return hashlib.sha256("\n".join(sorted(set(columns))).encode()).hexdigest()[:8]


def undeclared(fn: Callable[..., Any], row: dict[str, Any]) -> list[str]:
    """The columns of ``row`` that ``fn``'s declaration does not name (none when it declares nothing)."""
    columns = getattr(fn, "row_columns", None)
    if columns is None:
        return []
    return [k for k in row if not any(fnmatch.fnmatchcase(k, pattern) for pattern in columns)]
