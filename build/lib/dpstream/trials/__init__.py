"""Trial functions: ``run_trial(params, seed) -> dict`` for each mechanism family (see docs/harness.md)."""

from __future__ import annotations

from typing import Any

# Privacy a trial may state in its row -> the top-level budget it must stay within.
STATED_PRIVACY = {"eps_data": "epsilon", "eps_analyst": "epsilon", "delta_data": "delta"}


def within_budget(params: dict[str, Any], row: dict[str, Any]) -> bool:
    """True when every privacy ``row`` states (eps_data, eps_analyst, delta_data) is within the run's budget
    (top-level epsilon, delta; Hsu-Roth-Ullman Thm 3.3 promises data and analyst privacy at the same (eps, delta)).
    A row is ``certified`` only if this holds (checked by the trial and again by the runner)."""
    tol = 1 + 1e-9  # rounding of the accounted values only
    return all(row[k] <= params[budget] * tol for k, budget in STATED_PRIVACY.items() if row.get(k) is not None)
