"""The pre-registration (``results/preregistration.yaml``): every claim, its kind and rule, fixed before a trial.

One committed file lists, per claim: its ``id`` (``<experiment>#<index>``), its text in the claims table, its
``kind`` (declared: paper claim, own hypothesis, theory check, implementation check), the verbatim ``quote`` of a paper
claim with its ``seed`` file and ``sentence`` (the clauses of one sentence share it), the ``rule`` (family of
``dpstream.claims.sequential`` and its parameters), the smallest effect that matters and where that number comes from,
``alpha``, the trial ``budget`` and, for a claim the paper leaves open, ``underspecified`` with the reason.

Two hashes tie verdicts to it:

- ``rule_hash``: a rule's decision code and parameters: the source of the experiment's claims function and of every
  function and constant of ``dpstream.claims`` it reaches (docstrings and comments dropped; names resolved through the
  module globals), plus the registered rule parameters, alpha and budget. Rule texts a function formats are part of its
  code, so editing one re-flags the rule (conservative); the display text of the claim in the registration is not,
  nor are tables of mechanism labels (``dpstream.descriptor.Labels``, derived from the descriptors): a label is
  display text, and rows are selected by config name.
- ``registration_hash``: the registration file's bytes. Every trial row records it (``provenance``), with the commit and
  the time. A verdict counts only from rows run under the registered hash on the new master seeds (``FIRST_NEW_SEED``
  and up); rows of seeds 0-2 and rows run under another registration are history (``registered_rows``).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import re
import subprocess
import textwrap
import types
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from dpstream.descriptor import Labels
from dpstream.provenance import git_commit

ROOT = Path(__file__).resolve().parents[3]
RESULTS = "results"
REGISTRATION = ROOT / RESULTS / "preregistration.yaml"
RUN_OUTPUTS = ("results/tables", "results/figures", "results/verify", "results/report.md", "results/report.html")
"""What a registered run itself rewrites: changes there leave a commit clean. Everything else, the registration
included, makes it ``-dirty``."""
COMMIT = re.compile(r"[0-9a-f]{40}")
"""A recorded commit that may decide: a full hash, clean (not ``-dirty``, not ``unknown``)."""
FIRST_NEW_SEED = 3
"""Master seeds below this ran the rules found wanting (seeds 0-2): shown as history only."""
PAPER, OURS, THEORY, IMPLEMENTATION = "paper claim", "own hypothesis", "theory check", "implementation check"
KIND_WORDS = (PAPER, OURS, THEORY, IMPLEMENTATION)
PROVENANCE = ("commit", "run_time", "prereg_hash")
"""Columns every trial row records (``provenance``)."""
REQUIRED = ("id", "experiment", "claim", "kind", "rule", "smallest_effect", "alpha", "budget", "rule_hash")


@lru_cache(maxsize=4)
def _load(path: Path, stamp: float) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ValueError(f"{path}: a pre-registration is a mapping with a `claims:` list")
    for entry in data["claims"]:
        missing = [k for k in REQUIRED if k not in entry]
        if missing:
            raise ValueError(f"{path}: claim {entry.get('id', '?')!r} lacks {missing}")
        if entry["kind"] not in KIND_WORDS:
            raise ValueError(f"{path}: claim {entry['id']!r} has kind {entry['kind']!r}; allowed: {list(KIND_WORDS)}")
        if entry["kind"] == PAPER and not (entry.get("quote") and entry.get("seed") and entry.get("sentence")):
            raise ValueError(f"{path}: paper claim {entry['id']!r} needs `quote`, `seed` and `sentence`")
    return data


def load(path: Path = REGISTRATION) -> dict[str, Any]:
    """The parsed registration (checked: required fields, kind words, a paper claim's quote, seed and sentence)."""
    return _load(path, path.stat().st_mtime)


def registration_hash(path: Path = REGISTRATION) -> str:
    """SHA-256 of the registration file's bytes (first 16 hex digits)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def by_id(path: Path = REGISTRATION) -> dict[str, dict[str, Any]]:
    """The registered claims keyed by their ``id`` (``<experiment>#<index>``)."""
    return {str(c["id"]): c for c in load(path)["claims"]}


def claim_ids(experiment: str, claims: pd.DataFrame, path: Path = REGISTRATION) -> list[str]:
    """The registered ids of the rows of a claims table: its ``id`` column, else ``<experiment>#<row>`` if registered.

    A claims function's output is in a fixed order, so a claim is found by its position, never by its text (a text
    may name a mechanism or a measured grid). A position the registration does not list gets no id (``""``): a
    claims function that gives more rows than were registered (one per trial row of a pooled table, say) cannot
    hand its extra rows registered-looking ids.
    """
    if "id" in claims.columns:
        return [str(i) for i in claims["id"]]
    return position_ids(experiment, len(claims), path)


def position_ids(experiment: str, n: int, path: Path = REGISTRATION) -> list[str]:
    """The ids of the first ``n`` claims of an experiment's claims function: ``<experiment>#<i>`` where registered.

    A position the registration at ``path`` does not list gets ``""`` (an unregistered claim).
    """
    registered = by_id(path)
    return [f"{experiment}#{i}" if f"{experiment}#{i}" in registered else "" for i in range(n)]


def _code(obj: Any) -> str:
    """Source of a function without its docstring, comments and indentation (``ast.dump`` of its tree)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _closure(fn: types.FunctionType) -> dict[str, str]:
    """Every function and constant of ``dpstream.claims`` reached from ``fn``'s names: qualified name -> code.

    Tables of labels (``dpstream.descriptor.Labels``) are display text and left out.
    """
    seen: dict[str, str] = {}
    todo: list[types.FunctionType] = [fn]
    while todo:
        f = todo.pop()
        key = f"{f.__module__}.{f.__qualname__}"
        if key in seen:
            continue
        seen[key] = _code(f)
        names = {n.id for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(f)))) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(f))))
                  if isinstance(n, ast.Attribute)}
        for name in sorted(names):
            value = f.__globals__.get(name)
            module = getattr(value, "__module__", "") or ""
            if isinstance(value, Labels):
                continue  # display text, not decision code
            if isinstance(value, types.FunctionType) and module.startswith("dpstream.claims"):
                todo.append(value)
            elif isinstance(value, str | int | float | tuple | dict | frozenset) and not isinstance(value, bool) \
                    and name.isupper():
                seen.setdefault(f"{f.__module__}.{name}", repr(value))
    return seen


def claims_function(experiment: str) -> str:
    """The ``package.module:function`` of an experiment's ``claims:`` entry (``conf/experiment/<id>.yaml``)."""
    from dpstream.registry import CONF_DIR, load_option

    return str(load_option(CONF_DIR, "experiment", experiment).get("claims") or "")


@lru_cache(maxsize=128)
def _function_code(claims_function: str) -> dict[str, str]:
    from dpstream.registry import import_object

    fn = import_object(claims_function)
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"{claims_function!r} is not a function")
    return _closure(fn)


def rule_hash(claims_function: str, entry: dict[str, Any]) -> str:
    """The hash of one claim's decision code (``claims_function``'s closure) and its registered parameters."""
    code = _function_code(claims_function)
    params = {k: entry.get(k) for k in ("rule", "smallest_effect", "alpha", "budget")}
    params["smallest_effect"] = (entry.get("smallest_effect") or {}).get("value")  # its source is a display text
    blob = json.dumps({"code": code, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def _commit(root: Path = ROOT) -> str:
    """The checkout's commit, ``-dirty`` with a tracked change outside ``RUN_OUTPUTS``; ``unknown`` without git."""
    return git_commit(root, excluded=RUN_OUTPUTS) or "unknown"


STATISTICS = ("src/dpstream/claims/decide.py", "src/dpstream/claims/sequential.py")
"""The sequential decision code (``decide`` and the spending, boundaries and tests it calls): not part of a claim's
``rule_hash`` (a claims function does not call it), so it is held to the code registered with the file."""


@lru_cache(maxsize=4)
def statistics_registered(root: Path = ROOT) -> str:
    """Empty when ``STATISTICS`` are byte for byte as at the commit that last wrote the registration, else why not.

    A sequential verdict stands only then: changing the spending or the tests after the data would otherwise go
    unseen by every hash. Without git the question cannot be answered, and the answer is that reason.
    """
    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True, timeout=10).stdout

    try:
        commit = git("log", "-1", "--format=%H", "--", str(REGISTRATION.relative_to(ROOT))).decode().strip()
        if not commit:
            return "the registration is not committed"
        changed = [f for f in STATISTICS if git("show", f"{commit}:{f}") != (root / f).read_bytes()]
    except (OSError, subprocess.SubprocessError):
        return "the registration's commit cannot be read (no git)"
    return f"{', '.join(changed)} changed since the registration's commit {commit[:12]}" if changed else ""


def provenance(path: Path = REGISTRATION) -> dict[str, str]:
    """What a trial row records (``PROVENANCE``): commit, UTC time and registration hash.

    The commit ends in ``-dirty`` with uncommitted changes outside ``RUN_OUTPUTS`` (a registered run rewrites its
    tables between experiments; an edited registration is dirty); ``unknown`` without git; the hash is ``"none"``
    without a registration file.
    """
    return {"commit": _commit(), "run_time": datetime.now(UTC).isoformat(timespec="seconds"),
            "prereg_hash": registration_hash(path) if path.exists() else "none"}


def registered_rows(df: pd.DataFrame, path: Path = REGISTRATION) -> pd.DataFrame:
    """The rows that may decide a verdict: run under the registered hash, on a clean known commit, at seed >= 3."""
    if not set(PROVENANCE) <= set(df.columns) or "seed" not in df.columns:
        return df.iloc[0:0]
    keep = ((df["prereg_hash"] == registration_hash(path)) & (df["seed"] >= FIRST_NEW_SEED)
            & df["commit"].astype(str).str.fullmatch(COMMIT.pattern))
    return df[keep]


HISTORY = "history (not run under the registered pre-registration on seeds >= 3; decides nothing)"


def gate(claims: pd.DataFrame, rows: pd.DataFrame, experiment: str, path: Path = REGISTRATION,
         function: str | None = None) -> pd.DataFrame:
    """``claims`` of ``experiment`` with every verdict it may not give made ``inconclusive``, and why, in ``gate``.

    Claims are found by their registered id (``claim_ids``). A confirmed / not confirmed verdict stands only when (a)
    the claim is registered and states the registered text (whitespace aside), (b) its rule's code and
    parameters still hash to the registered ``rule_hash`` and (c) every row it was judged from was run under the
    registered hash at seed >= 3 (``registered_rows``). Otherwise the verdict becomes ``inconclusive`` and the ``gate``
    column keeps the verdict the rows gave, marked as history or as a changed rule. ``function`` is the experiment's
    claims function (default: its ``claims:`` entry in ``conf/experiment``).
    """
    registered = by_id(path)
    fn = function or claims_function(experiment)
    fresh = len(rows) > 0 and len(registered_rows(rows, path)) == len(rows)
    verdicts, notes = [], []
    for claim_id, text, verdict in zip(claim_ids(experiment, claims, path), claims["claim"], claims["verdict"],
                                       strict=True):
        entry = registered.get(claim_id)
        entry = entry if entry is not None and entry["experiment"] == experiment else None
        if entry is None:
            note = "not in the pre-registration"
        elif " ".join(str(text).split()) != " ".join(str(entry["claim"]).split()):
            note = f"states another claim than the registered {claim_id} ({entry['claim']!r})"
        elif rule_hash(fn, entry) != entry["rule_hash"]:
            note = "rule changed after registration: needs fresh trials"
        elif not fresh:
            note = HISTORY
        else:
            note = ""
        decided = verdict in ("confirmed", "not confirmed")
        verdicts.append("inconclusive" if note and decided else verdict)
        notes.append(f"{note}: the rows say {verdict!r}" if note and decided else note)
    return claims.assign(verdict=verdicts, gate=notes)
