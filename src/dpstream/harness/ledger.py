"""The privacy ledger of one's own data: what every trial run on a user's file spent, and the running total.

Each trial computed on a file input (a data config that is not ``synthetic`` and names a file, e.g. ``data=items
data.path=...``) is a release of that file, seeded or not, in a sweep or a rerun: it appends one JSON line to
``<results_dir>/privacy_ledger.jsonl`` (append-only, whole lines: ``store.write_whole``), keyed by the file's
content hash (``data.path_xxh3``). A row read back from the results store releases nothing new and spends nothing;
synthetic data spends nothing.

A trial spends the (epsilon, delta) its mechanism states (``privacy.statement.stated``: the ``privacy`` it computes
from the noise it holds), not the run's configured pair: LazyHH's delta~ = 2 delta (3/2 + e^eps + delta), a pure
(Laplace) sketch's delta = 0. A trial whose row is not certified (``privacy.labels``) or whose mechanism states
nothing is not private: its ``epsilon`` is null and every total after it says so. ``totals`` composes the spends of
one file by basic composition (sums) and by advanced composition (Dwork, Rothblum and Vadhan, "Boosting and
differential privacy", Thm III.3, ``privacy.accounting.composed_epsilon``) over each repeated (epsilon, delta), at
slack delta^ = that delta, the groups then added up (basic).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpstream.data.cache import FINGERPRINT_SUFFIX
from dpstream.harness.store import write_whole
from dpstream.privacy.accounting import composed_epsilon

LEDGER_NAME = "privacy_ledger.jsonl"


class LedgerError(ValueError):
    """A ledger line that ``spend`` did not write (one line of error, exit 2, from the command line)."""


def own_file(params: dict[str, Any]) -> tuple[str, str] | None:
    """(path, content hash) of the user's file a trial reads, or None for synthetic data."""
    data = params.get("data") or {}
    if data.get("synthetic", True) is not False:
        return None
    for key, value in data.items():
        digest = data.get(f"{key}{FINGERPRINT_SUFFIX}")
        if value is not None and digest:
            return str(value), str(digest)
    return None


def ledger_path(results_dir: str | Path) -> Path:
    """Where the ledger of a results folder lives."""
    return Path(results_dir) / LEDGER_NAME


def spend(results_dir: str | Path, params: dict[str, Any], row: dict[str, Any],
          statement: tuple[float, float] | None) -> bool:
    """Append what trial ``params`` (its stored ``row``) spent on the user's file; False for synthetic data.

    ``statement``: the (epsilon, delta) its mechanism stated (``privacy.statement.stated``), booked as spent when
    the row is certified; with none, the release is booked as not private.
    """
    source = own_file(params)
    if source is None:
        return False
    spent = statement if bool(row.get("certified", False)) else None
    entry = {"file_xxh3": source[1], "path": source[0], "key": row.get("key"), "trial": params.get("trial"),
             "seed": params.get("seed"), "mechanism": (params.get("mechanism") or {}).get("name"),
             "epsilon": None if spent is None else float(spent[0]),
             "delta": None if spent is None else float(spent[1])}
    path = ledger_path(results_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry, allow_nan=False) + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        write_whole(fd, line, path)  # a partial line an interrupted spend left is cut off first, said on stderr
    finally:
        os.close(fd)
    return True


@dataclass(frozen=True)
class Total:
    """The spends on one file: their number, basic and advanced composition; epsilons None once one was not private."""

    releases: int
    not_private: int
    basic: tuple[float, float] | None
    advanced: tuple[float, float] | None

    def line(self, path: str) -> str:
        """The console line for the file at ``path``."""
        head = f"privacy spent on {path} so far: {self.releases} release(s)"
        if self.basic is None or self.advanced is None:
            return (f"{head}, {self.not_private} of them NOT private (a non-private or uncertified mechanism, or "
                    "one that states no guarantee): no (epsilon, delta) bounds what the file has given away")
        (eb, db), (ea, da) = self.basic, self.advanced
        return (f"{head}; basic composition (epsilon, delta) = ({eb:.4g}, {db:.3g}); advanced composition "
                f"(Dwork-Rothblum-Vadhan per repeated setting) = ({ea:.4g}, {da:.3g})")


def _entry(line: str, path: Path, number: int) -> dict[str, Any]:
    """One ledger line as written by ``spend``; anything else is a ``LedgerError`` naming the file and the line."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError as err:
        entry = err
    if not isinstance(entry, dict):
        raise LedgerError(f"privacy ledger {path} line {number}: not a ledger entry ({entry}); the running total "
                         "cannot be computed: restore the line from a backup or move the file away (its spends are "
                         "then no longer counted)")
    return entry


def totals(results_dir: str | Path, file_xxh3: str) -> Total:
    """The running total of the ledger's spends on the file with content hash ``file_xxh3``."""
    path = ledger_path(results_dir)
    lines = path.read_text().splitlines() if path.exists() else []
    entries = [e for e in (_entry(x, path, n) for n, x in enumerate(lines, 1) if x.strip())
               if e.get("file_xxh3") == file_xxh3]
    broken = sum(e.get("epsilon") is None for e in entries)
    if broken or not entries:
        return Total(len(entries), broken, None if broken else (0.0, 0.0), None if broken else (0.0, 0.0))
    groups = Counter((float(e["epsilon"]), float(e["delta"])) for e in entries)
    basic = (math.fsum(eps * k for (eps, _), k in groups.items()), math.fsum(d * k for (_, d), k in groups.items()))
    epsilons, deltas = [], []
    for (eps, d), k in groups.items():
        composed = composed_epsilon(eps, k, d)  # the smaller of basic and advanced
        epsilons.append(composed)
        deltas.append(k * d + (d if composed < k * eps else 0.0))  # the slack delta^ only where advanced was used
    return Total(len(entries), 0, basic, (math.fsum(epsilons), math.fsum(deltas)))
