"""The documentation cannot drift from the code.

Every ```python block of README.md and docs/ runs; README's `dpstream` commands compose (and the default job runs);
its links resolve; the numbers it quotes are the defaults of the config; `mkdocs build --strict` passes and every
public name of the package is in the built site's objects.inv; every public mechanism is in the privacy table.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import CONF_DIR, ROOT

README = ROOT / "README.md"
DOC_FILES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
PYTHON_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
# modules that are the command line or the harness's internals, not the library (documented in docs/harness.md)
NOT_LIBRARY = {"cli", "watch", "__main__", "harness", "plots", "trials"}


def _python_blocks() -> list:
    params = []
    for path in DOC_FILES:
        for i, m in enumerate(PYTHON_BLOCK.finditer(path.read_text())):
            params.append(pytest.param(textwrap.dedent(m.group(2)), id=f"{path.relative_to(ROOT)}#{i}"))
    return params


@pytest.mark.parametrize("code", _python_blocks())
def test_python_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes files writes them here
    exec(compile(code, "<docs>", "exec"), {"__name__": "__docs__"})


def test_readme_fits_a_first_read():
    assert len(README.read_text().splitlines()) <= 300


def test_readme_links_resolve():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "README links to nothing"
    assert [t for t in local if not (ROOT / t).exists()] == []


def test_every_test_file_the_docs_cite_exists():
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    cited = {(page.relative_to(ROOT), path) for page in pages
             for path in re.findall(r"\btests/[\w/]+\.py\b", page.read_text())}
    assert cited, "no page cites a test file"
    assert sorted((str(page), path) for page, path in cited if not (ROOT / path).exists()) == []


def test_readme_quotes_no_verdict_counts():
    # The counts live in results/report.md alone; a number quoted here would go stale at the next run.
    for path in (README, ROOT / "docs" / "index.md", ROOT / "docs" / "verdicts.md"):
        assert not re.search(r"\b\d+ (confirmed|not confirmed|inconclusive)\b", path.read_text()), path


def test_readme_numbers_are_the_config_defaults():
    # README: "LazyCMS, 5 seeded trials on a Zipf stream of 2^20 items", "at the default epsilon 0.3"
    text = README.read_text()
    assert "5 seeded trials on a Zipf stream of 2^20 items" in text and "default epsilon 0.3" in text
    config = yaml.safe_load((CONF_DIR / "config.yaml").read_text())
    zipf = yaml.safe_load((CONF_DIR / "data" / "zipf.yaml").read_text())
    defaults = {k: v for d in config["defaults"] if isinstance(d, dict) for k, v in d.items()}
    assert (config["trials"], config["epsilon"], defaults["mechanism"], defaults["data"]) == (5, 0.3, "lazycms", "zipf")
    assert zipf["length"] == 2**20


def _readme_commands() -> list[list[str]]:
    commands = []
    for block in SHELL_BLOCK.findall(README.read_text()):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["dpstream"]:
                commands.append(words[1:])
    return commands


def _dpstream(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpstream", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HYDRA_FULL_ERROR": "1"})


@pytest.mark.slow
def test_readme_commands_compose(tmp_path):
    """Each README command, with the files it names, composes to a job (`--cfg job`: checked, not run)."""
    (tmp_path / "my_words.csv").write_text("word,n\nthe,1\nof,2\nthe,3\n")
    (tmp_path / "my_items.txt").write_text("a\nb\na\n")
    (tmp_path / "trace.pcap").write_bytes(b"\xd4\xc3\xb2\xa1")
    commands = _readme_commands()
    assert len(commands) >= 6
    for args in commands:
        if "--help" in args:
            out = _dpstream(args, tmp_path)
            assert out.returncode == 0 and "mechanism" in out.stdout, out.stderr
            continue
        out = _dpstream(["--cfg", "job", *args], tmp_path)  # a sweep too: its grid is listed
        assert out.returncode == 0, f"dpstream {' '.join(args)}: {out.stderr[-2000:]}"


@pytest.mark.slow
def test_readme_first_command_runs(tmp_path):
    out = _dpstream(["mechanism=lazycms", "profile=smoke"], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "5 trials" in out.stdout


# ---- the documentation site ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def public_names() -> list[str]:
    """Every public name: each subpackage's ``__all__``; for a top-level module without one, what it defines.

    The command line and the harness internals (``NOT_LIBRARY``) are left out: they are documented as prose.
    """
    import dpstream

    names = []
    for info in sorted(__import__("pkgutil").iter_modules(dpstream.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in NOT_LIBRARY:
            continue
        module = importlib.import_module(f"dpstream.{info.name}")
        exported = getattr(module, "__all__", None)
        if exported is None:
            exported = [n for n, obj in vars(module).items() if not n.startswith("_")
                        and (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == module.__name__]
        names += [f"dpstream.{info.name}.{n}" for n in exported]
    return names


def missing_from(inventory: set[str], names: list[str]) -> list[str]:
    """The names the inventory does not document."""
    return [n for n in names if n not in inventory]


def test_every_public_name_is_in_the_site_inventory(site):
    import sphobjinv

    inventory = {obj.name for obj in sphobjinv.Inventory(str(site / "objects.inv")).objects}
    names = public_names()
    assert "dpstream.sketches.LazyCMS" in names and "dpstream.privacy.Privacy" in names and len(names) > 100
    assert missing_from(inventory, names) == []
    assert missing_from(inventory - {"dpstream.sketches.LazyCMS"}, names) == ["dpstream.sketches.LazyCMS"]


def test_the_site_has_every_page_of_the_nav(site):
    for page in ("index.html", "privacy/index.html", "errata/index.html", "glossary/index.html",
                 "reproduction/sketches/index.html", "api/sketches/index.html", "speed/index.html"):
        assert (site / page).exists(), page
    assert (site / "figures" / "fig3a.png").exists()  # the committed figures are served with the site


def test_every_image_of_the_site_is_served_with_it(site):
    """A relative ``<img src>`` resolves to a file of the site (a first-page thumbnail included)."""
    images = 0
    for page in site.rglob("*.html"):
        for src in re.findall(r"<img\s[^>]*?src=['\"]([^'\"]+)['\"]", page.read_text()):
            if "://" in src or src.startswith(("data:", "/")):
                continue
            images += 1
            assert (page.parent / src).resolve().is_file(), f"{page.relative_to(site)}: {src}"
    assert images >= 20  # the first pages of the reproduction show a thumbnail per row


def test_the_api_reference_shows_constructors_and_inherited_methods(site):
    sketches = (site / "api" / "sketches" / "index.html").read_text()
    signature = sketches[sketches.index('id="dpstream.sketches.LazyCMS"'):][:4000]
    assert all(f"{name}:" in re.sub(r"<[^>]+>", "", signature) for name in ("width", "depth", "epsilon", "horizon"))
    for method in ("update", "extend", "query", "query_many", "query_interval", "query_interval_many", "from_memory",
                   "to_bytes", "from_bytes", "merge"):
        assert f'id="dpstream.sketches.LazyCMS.{method}"' in sketches, method
    assert 'id="dpstream.sketches.LazyCMS.refreshes"' not in sketches  # the trackers' internal compiled path
    trackers = (site / "api" / "heavy_hitters" / "index.html").read_text()
    for method in ("update", "extend", "estimate", "query", "query_many", "to_bytes"):
        assert f'id="dpstream.heavy_hitters.LazyHH.{method}"' in trackers, method


def test_every_public_mechanism_is_in_the_privacy_table():
    table = (ROOT / "docs" / "privacy.md").read_text()
    documented = set(re.findall(r"`(\w+)`", table))
    mechanisms = []
    for package in ("sketches", "heavy_hitters", "svt", "query_release"):
        module = importlib.import_module(f"dpstream.{package}")
        mechanisms += [n for n in module.__all__ if inspect.isclass(getattr(module, n))
                       and hasattr(getattr(module, n), "privacy")]
    assert {"LazyCMS", "LazyHH", "ThresholdMonitor", "PrivateEquilibriumRelease"} <= set(mechanisms)
    assert sorted(set(mechanisms) - documented) == []
