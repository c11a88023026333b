"""The verdict tables of the reproduction pages are rendered from the committed claims tables: never stale."""

import pytest
from conftest import ROOT

from dpstream.harness.readme import BLOCK, main, sync

PAGES = ["docs/reproduction/sketches.md", "docs/reproduction/svt.md", "docs/reproduction/query_release.md",
         "docs/guide/beyond.md"]


@pytest.mark.parametrize("page", PAGES)
def test_verdict_blocks_match_committed_claims(page):
    text, changed = sync(ROOT / page, ROOT / "results" / "tables")
    assert BLOCK.search(text), f"{page} has no verdict block"
    assert changed == [], f"stale verdict blocks in {page}: {changed}"


def test_every_page_with_a_verdict_block_is_checked():
    pages = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if BLOCK.search(p.read_text())}
    assert pages == set(PAGES)


def test_a_stale_block_is_detected_and_rewritten(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "x.claims.csv").write_text("claim,rule,measured,verdict\nA falls,rank test p<0.05,rho -0.9,confirmed\n")
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- verdicts: x -->\n| old | table |\n<!-- /verdicts -->\nend\n")
    assert main(["--readme", str(readme), "--tables", str(tables), "--check"]) == 1
    assert main(["--readme", str(readme), "--tables", str(tables)]) == 0
    assert "| x | A falls | rank test p<0.05 | rho -0.9 | **confirmed** |" in readme.read_text()
    assert main(["--readme", str(readme), "--tables", str(tables), "--check"]) == 0
