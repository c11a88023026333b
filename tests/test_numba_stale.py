"""A cached kernel that inlines a function of another module follows that module's changes (``dpstream._numba_cache``).

numba checks a cache against the kernel's own file only; ``clear_stale`` clears the package's caches when any source
changed. The test builds a two-module package, fills its cache, changes the inlined function's module only, and runs
the kernel in fresh processes with and without ``clear_stale``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpstream import _numba_cache

SRC = Path(__file__).resolve().parents[1] / "src"
LEAF = "from numba import njit\n\n\n@njit(cache=True, inline='always')\ndef leaf(x):\n    return x + {value}\n"
KERNEL = ("from numba import njit\n\nfrom stalepkg.leaf import leaf\n\n\n"
          "@njit(cache=True)\ndef kernel(x):\n    return leaf(x)\n")
RUN = """
import sys
from pathlib import Path
sys.path[:0] = [{root!r}, {src!r}]
from dpstream._numba_cache import clear_stale
if {clear}:
    clear_stale(Path({package!r}), {cache_dir!r})
from stalepkg.kernel import kernel
print(kernel(1))
"""


def run(root: Path, clear: bool, cache_dir: str | None, xdg: Path) -> int:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(xdg)  # numba's per-user cache, and clear_stale's view of it
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = cache_dir
    code = RUN.format(root=str(root), src=str(SRC), clear=clear, package=str(root / "stalepkg"), cache_dir=cache_dir)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


@pytest.mark.parametrize("where", ["in_tree", "cache_dir", "user_wide", "symlinked_cache_dir"])
def test_a_changed_inlined_function_reaches_the_cached_kernel_only_with_clear_stale(tmp_path, where):
    cache_dir = None if where in ("in_tree", "user_wide") else str(tmp_path / "numba_cache")
    real = tmp_path / "real"
    package = real / "stalepkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "kernel.py").write_text(KERNEL)
    (package / "leaf.py").write_text(LEAF.format(value=10))
    if where == "user_wide":  # a __pycache__ that cannot be a directory: numba falls back to its per-user cache
        (package / "__pycache__").write_text("")
    root = real
    if where == "symlinked_cache_dir":  # imported through a link: numba names its cache from the unresolved path
        root = tmp_path / "link"
        root.symlink_to(real)
    xdg = tmp_path / "xdg"
    assert run(root, True, cache_dir, xdg) == 11
    (package / "leaf.py").write_text(LEAF.format(value=20) + "# longer\n")  # leaf.py changes, kernel.py does not
    assert run(root, False, cache_dir, xdg) == 11, "numba's own check keeps the stale kernel (the defect)"
    assert run(root, True, cache_dir, xdg) == 21
    assert run(root, True, cache_dir, xdg) == 21  # the current digest: nothing cleared, the fresh cache serves
    if where == "user_wide":
        assert list((xdg / "numba").rglob("*.nbi")), "the kernel was cached in numba's per-user directory"


def test_numba_names_the_cache_directories_as_clear_stale_does(tmp_path):
    from numba.core.caching import _CacheLocator

    source = tmp_path / "pkg" / "mod.py"
    assert _CacheLocator.get_suitable_cache_subpath(str(source)) == _numba_cache.numba_subpath(source.parent)


def test_the_digest_follows_any_source_and_clearing_spares_other_files(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    before = _numba_cache.source_digest(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert _numba_cache.source_digest(tmp_path) != before
    pycache = tmp_path / "__pycache__"
    pycache.mkdir()
    for name in ("a.f-1.py311.nbi", "a.f-1.py311.1.nbc", "a.cpython-311.pyc"):
        (pycache / name).write_text("")
    assert _numba_cache.clear_stale(tmp_path) == 2
    assert sorted(p.name for p in pycache.iterdir()) == ["a.cpython-311.pyc", _numba_cache.STAMP]
    (pycache / "a.f-1.py311.nbi").write_text("")
    assert _numba_cache.clear_stale(tmp_path) == 0  # same sources: kept
