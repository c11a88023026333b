"""dpstream.pages: a generated block rewritten between its markers, never a page left half-written."""

from pathlib import Path

import pytest

from dpstream import pages


def test_a_write_failing_midway_leaves_the_page_as_it_was(tmp_path, monkeypatch):
    page = tmp_path / "p.md"
    page.write_text("a\n<!-- b -->\nold\n<!-- /b -->\nz\n")
    before = page.read_bytes()
    real = Path.write_text
    def half(self, data, *a, **k):
        real(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(Path, "write_text", half)
    with pytest.raises(OSError):
        pages.write_between(page, ("<!-- b -->", "<!-- /b -->"), "new")
    assert page.read_bytes() == before
    monkeypatch.undo()
    pages.write_between(page, ("<!-- b -->", "<!-- /b -->"), "new")
    assert page.read_text() == "a\n<!-- b -->\nnew\n<!-- /b -->\nz\n"
