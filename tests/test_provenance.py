"""The commit a row records (``dpstream.provenance``), in the two scopes that use it.

- the pre-registration's gate (``claims.registration._commit``): the whole checkout, tracked files only, less
  ``RUN_OUTPUTS`` (a registered run rewrites its tables between experiments and stays clean);
- the counters' empirical check (``counters.empirical._commit``): the package's sources, untracked files included.
"""

import subprocess
from pathlib import Path

import pytest

from dpstream.claims import registration
from dpstream.counters import empirical
from dpstream.provenance import git_commit


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A committed checkout: a run output, the registration, a module at the top and one in the package."""
    files = {"results/tables/t.csv": "a\n1\n", "results/preregistration.yaml": "claims: []\n", "m.py": "x = 1\n",
             "src/dpstream/core.py": "y = 1\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "c")
    return tmp_path, _git(tmp_path, "rev-parse", "HEAD")


def test_registration_scope_tracked_changes_outside_the_run_outputs(checkout):
    """A run rewrites its tables: no dirty commit; an edited module or registration is; an untracked file is not."""
    root, head = checkout
    commit = registration._commit.__wrapped__  # the cached function itself: one call per checkout state
    assert commit(root) == head
    (root / "results" / "tables" / "t.csv").write_text("a\n2\n")
    (root / "results" / "figures").mkdir()
    (root / "results" / "figures" / "f.png").write_bytes(b"new")
    (root / "notes.txt").write_text("untracked\n")
    assert commit(root) == head
    (root / "results" / "preregistration.yaml").write_text("edited after the data\n")
    assert commit(root) == f"{head}-dirty"
    _git(root, "checkout", "--", "results/preregistration.yaml")
    (root / "m.py").write_text("x = 2\n")
    assert commit(root) == f"{head}-dirty"


def test_counters_scope_the_package_sources_untracked_files_included(checkout):
    root, head = checkout
    sources = root / "src" / "dpstream"
    assert empirical.SOURCES == Path(empirical.__file__).resolve().parents[1]  # the scope it records by default
    assert empirical._commit(sources) == head
    (root / "m.py").write_text("x = 2\n")  # outside the sources
    (root / "results" / "tables" / "t.csv").write_text("a\n2\n")
    assert empirical._commit(sources) == head
    (sources / "new.py").write_text("z = 1\n")  # an untracked module would have run
    assert empirical._commit(sources) == f"{head}-dirty"
    (sources / "new.py").unlink()
    (sources / "core.py").write_text("y = 2\n")
    assert empirical._commit(sources) == f"{head}-dirty"


def test_without_git_each_scope_says_so_its_own_way(tmp_path):
    assert git_commit(tmp_path) is None
    assert registration._commit.__wrapped__(tmp_path) == "unknown"
    assert empirical._commit(tmp_path) == ""
