"""dpstream.pages: a generated block rewritten between its markers, never a page left half-written."""

import pytest

from dpstream import pages


def test_a_write_failing_midway_leaves_the_page_as_it_was(tmp_path, monkeypatch):
    page = tmp_path / "p.md"
    page.write_text("a\n<!-- b -->\nold\n<!-- /b -->\nz\n")
    before = page.read_bytes()

    def full_disk(src, dst):  # the new text is whole in the temporary file only if the rename is reached
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("dpstream.files.os.replace", full_disk)
    with pytest.raises(OSError):
        pages.write_between(page, ("<!-- b -->", "<!-- /b -->"), "new")
    assert page.read_bytes() == before
    monkeypatch.undo()
    pages.write_between(page, ("<!-- b -->", "<!-- /b -->"), "new")
    assert page.read_text() == "a\n<!-- b -->\nnew\n<!-- /b -->\nz\n"
