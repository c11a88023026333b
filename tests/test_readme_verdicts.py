"""The README's verdict tables are rendered from the committed claims tables and cannot go stale."""

from conftest import ROOT

from dpstream.harness.readme import BLOCK, main, sync


def test_readme_verdict_blocks_match_committed_claims():
    text, changed = sync(ROOT / "README.md", ROOT / "results" / "tables")
    assert BLOCK.search(text), "README has no verdict block"
    assert changed == [], f"stale README verdict blocks: {changed}"


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
