"""benchmarks/speed_page.py renders one section per results file and skips files not in the documented shape."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

PAGE_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "speed_page.py"


def load_module():
    spec = importlib.util.spec_from_file_location("speed_page", PAGE_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_has_a_row_per_result_with_its_verdict_and_skips_a_malformed_file(tmp_path, capsys):
    page = load_module()
    row = {"name": "fast", "reference": "slow", "ratio": 1.5, "low": 1.2, "high": 1.8, "coverage": 0.98,
           "repeats": 7, "candidate_seconds": 1.0, "reference_seconds": 1.5, "target": ">= 1.1", "met": True}
    (tmp_path / "a.json").write_text(json.dumps({"title": "Alpha", "command": "python benchmarks/a.py",
                                                 "machine": "m", "rows": [row, {**row, "name": "other", "met": None}]}))
    (tmp_path / "b.json").write_text(json.dumps({"title": "Broken", "rows": [{"name": "x"}]}))
    text = page.render(tmp_path)
    assert "## Alpha" in text and "Broken" not in text
    assert "| fast | slow | 1.5x | [1.2, 1.8] (98%) | 7 | >= 1.1 | met |" in text
    assert "| other | slow | 1.5x | [1.2, 1.8] (98%) | 7 | >= 1.1 | inconclusive |" in text
    assert "skipped b.json" in capsys.readouterr().err


def test_a_row_with_a_verdict_in_words_shows_it_and_its_note(tmp_path):
    page = load_module()
    row = {"name": "new", "reference": "old", "ratio": 0.9, "low": 0.8, "high": 0.95, "target": "not worse",
           "met": False, "verdict": "worse", "note": ""}
    (tmp_path / "a.json").write_text(json.dumps({"title": "Pair", "rows": [row, {**row, "name": "x",
                                                                                  "note": "outputs differ"}]}))
    text = page.render(tmp_path)
    assert "| not worse | worse |" in text and "| not worse | worse (outputs differ) |" in text


def test_the_committed_speed_page_is_the_render_of_the_committed_results():
    """docs/speed.md cannot go stale: a results file changed without re-rendering the page fails here."""
    page = load_module()
    assert page.PAGE.read_text() == page.render(page.RESULTS), "run python benchmarks/speed_page.py"
