"""Re-key rows stored before the Hydra-native configs (issue 12), so an existing results store stays usable.

Issue 12 changed trial keys in two ways: every key now hashes the trial's declared row columns
(``dpstream.trials.row_schema``), and the sparse vector configs changed shape (the atoms and shifting heavy-hitter
designs moved from ``mechanism`` to the data configs ``svt_atoms`` / ``svt_shifting_hh``, which replaced
``data=none``; ``schema:``, ``runner:`` and ``method:`` and keys only the old dispatch read were dropped).
``legacy_params`` maps a trial's params back to the config it had then (exactly: the keys and values hashed), so its
old key is ``trial_key(legacy_params(params))``. The runner calls ``migrate`` before computing anything: a trial
missing from the store whose legacy key is stored gets that row under its new key, with the old config columns
replaced by the new ones (the metric columns are the stored ones, untouched). Nothing is recomputed.
"""

from __future__ import annotations

import copy
from typing import Any

from dpstream.harness.config import flatten
from dpstream.harness.store import NOT_IN_KEY, ResultsStore, trial_key

LEGACY_MECHANISM: dict[str, dict[str, Any]] = {
    "svt_tm": {"runner": "monitor", "schema": 3, "cutoff_ratio": None, "composition": None},
    "svt_sparse": {"runner": "sparse", "schema": 3, "cap_ratio": None},
    "svt_sparse_short": {"runner": "sparse", "schema": 3, "cap_ratio": None},
    "svt_above_threshold": {"runner": "sparse", "schema": 3, "cap_ratio": None, "cutoff_ratio": None,
                            "composition": "pure"},
    "svt_hh_tme": {"method": "tme", "schema": 2},
    "svt_hh_histogram": {"method": "histogram", "schema": 2},
    "svt_hh_sparse_histogram": {"method": "sparse_histogram", "schema": 2},
    "svt_audit": {"schema": 3},
    "svt_audit_power": {"schema": 1},
}
"""The keys each mechanism config lost in issue 12, with the values they had."""
LEGACY_DESIGNS = ("svt_atoms", "svt_shifting_hh")
"""Data configs whose parameters were mechanism keys before issue 12 (the data was ``none`` then)."""
LEGACY_NONE = {"name": "none", "synthetic": False}
"""``conf/data/none.yaml`` as trials saw it (its ``kind`` is a declaration, never in params)."""
DESIGN_DESCRIPTORS = ("name", "_target_", "synthetic")


def legacy_params(params: dict[str, Any]) -> dict[str, Any]:
    """The params the trial had before issue 12 (``LEGACY_MECHANISM``, ``LEGACY_DESIGNS``)."""
    out = copy.deepcopy(params)
    mechanism, data = out["mechanism"], out.get("data") or {}
    if data.get("name") in LEGACY_DESIGNS:
        mechanism.update({k: v for k, v in data.items() if k not in DESIGN_DESCRIPTORS})
        out["data"] = dict(LEGACY_NONE)
    mechanism.update(LEGACY_MECHANISM.get(mechanism.get("name"), {}))
    return out


def _config_columns(params: dict[str, Any]) -> dict[str, Any]:
    return flatten({k: v for k, v in params.items() if k not in NOT_IN_KEY})


def migrate(jobs: list[tuple[str, str, dict[str, Any]]], store: ResultsStore) -> int:
    """Re-key stored rows: how many rows of ``jobs`` moved from their legacy key to their new key.

    Every (key, trial function, params) of ``jobs`` that is missing from ``store`` but stored under its legacy key
    is stored under its new key.
    """
    moved = 0
    for key, _fn, params in jobs:
        if key in store:
            continue
        old = legacy_params(params)
        row = store.get(trial_key(old))
        if row is None:
            continue
        stale = set(_config_columns(old))
        metrics = {k: v for k, v in row.items() if k not in stale and k != "key"}
        store.append({"key": key, **_config_columns(params), **metrics})
        moved += 1
    return moved
