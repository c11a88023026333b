"""Where a run writes: the committed reproduction's folders, or a run folder of its own.

The committed reproduction is ``<results_dir>/tables``, ``<results_dir>/figures`` and ``<results_dir>/report.*``
(``results/`` of the clone). Only a run with ``reproduction=true`` writes there: ``make figures`` and ``make verify``
set it, and it is refused on a data file of one's own. Every other run, sweep job or paper panel writes its tables,
figures and report to ``<results_dir>/runs/<label>-<data>-<digest>/`` (git-ignored), named after the experiment (or
``run-<mechanism>``), the data it read (the file's name, else the data option) and a digest of every trial config it
planned; the same command finds the same folder again. The results store, ``<results_dir>/store/``, is shared by
both: a trial computed once is reused by any run that plans it.

A name that becomes part of a path (an experiment ``id``, ``mechanism.name``) holds no path separator and no ``..``
(``check_path_name``), and nothing is written outside ``results_dir`` (``inside``).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from dpstream.errors import ConfigError

RUNS = "runs"
"""The folder under ``results_dir`` holding one folder per run that is not the committed reproduction."""
REPRODUCTION = "reproduction"
"""The config key (true/false) that sends a run's tables, figures and report to the committed reproduction."""


def check_path_name(value: Any, key: str) -> str:
    """``value`` if it can name a file: a non-empty string with no path separator, no NUL and no ``..``."""
    text = str(value)
    if not text or any(c in text for c in "/\\\0") or ".." in text:
        raise ConfigError(key, value, "names a file, so it may hold no path separator (/ or \\) and no '..'")
    return text


def inside(path: Path, root: Path) -> Path:
    """``path`` when it resolves to a place under ``root``; otherwise a ``ConfigError`` naming both."""
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise ConfigError("results_dir", root, f"{path} would be written outside it; refused")
    return path


def data_label(data: dict[str, Any]) -> str:
    """The data a run read, as a folder-name part: its file's name (``data.path``), else the data option's name."""
    raw = Path(str(data["path"])).stem if data.get("path") else str(data.get("name") or "data")
    return re.sub(r"[^A-Za-z0-9_-]+", "_", raw).strip("_")[:40] or "data"


def run_folder(results_dir: Path, label: str, data: dict[str, Any], config_keys: list[str]) -> Path:
    """``<results_dir>/runs/<label>-<data>-<digest>``, the folder of one run.

    ``digest`` hashes the planned trial configs (less the trial index), so other parameters, seeds or file contents get
    another folder and the same command the same one.
    """
    digest = hashlib.sha256("\n".join(sorted(set(config_keys))).encode()).hexdigest()[:8]
    name = f"{check_path_name(label, 'experiment.id')}-{data_label(data)}-{digest}"
    return inside(results_dir / RUNS / name, results_dir)


def check_reproduction(cfg: dict[str, Any], trials: list[dict[str, Any]]) -> None:
    """``reproduction=true`` runs the experiments on their own data: a data file of the user's is refused."""
    if not cfg.get(REPRODUCTION):
        return
    paths = sorted({str(p["data"]["path"]) for p in trials
                    if isinstance(p.get("data"), dict) and p["data"].get("path")})
    if paths:
        raise ConfigError(REPRODUCTION, "true", f"writes the committed reproduction, which is not made from data.path="
                                                f"{paths[0]}; leave it false (the run then goes to <results_dir>/"
                                                f"{RUNS}/)")


def panel_title(spec: dict[str, Any], trials: list[dict[str, Any]]) -> str:
    """The figure title of ``spec``'s run: on a data file, without the synthetic-data settings it dropped, naming it.

    ``experiment=fig3b data=items data.path=my_items.txt``: the panel's ``skew=1.3`` does not apply to the file (the
    harness dropped ``data.skew``), and the title says ``data: my_items.txt`` instead.
    """
    title = str(spec.get("title", spec.get("id", "")))
    data = trials[0].get("data") if trials else None
    if not isinstance(data, dict) or not data.get("path"):
        return title
    for key in (k.split(".", 1)[1] for k in (spec.get("fixed") or {}) if k.startswith("data.")):
        if key not in data:
            title = re.sub(rf"[,;]?\s*\b{re.escape(key)}\s*=\s*[^,;\s)]+", "", title)
    return f"{title}; data: {Path(str(data['path'])).name}"
