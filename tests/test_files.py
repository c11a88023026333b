"""dpstream.files: a file written whole or not at all."""

import os
import stat

import pytest

from dpstream.files import write_atomically, write_text_atomically


def test_a_write_failing_midway_leaves_the_file_as_it_was_and_no_temporary_file(tmp_path):
    target = tmp_path / "t.csv"
    target.write_bytes(b"a,b\n1,2\n")

    def half(handle):
        handle.write(b"a,b\n3")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomically(target, half)
    assert target.read_bytes() == b"a,b\n1,2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
    write_text_atomically(target, "a,b\n3,4\n")
    assert target.read_text() == "a,b\n3,4\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_a_new_file_and_its_folder_get_the_permissions_of_any_new_file(tmp_path):
    umask = os.umask(0o022)
    try:
        target = tmp_path / "new" / "t.txt"
        write_text_atomically(target, "x")
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o644


def test_the_file_is_renamed_into_place_not_written_in_it(tmp_path, monkeypatch):
    target = tmp_path / "t.txt"
    target.write_text("old")
    seen = []

    def replace(src, dst):
        seen.append((os.path.dirname(src), os.path.basename(dst), target.read_text()))
        raise OSError("rename refused")

    monkeypatch.setattr("dpstream.files.os.replace", replace)
    with pytest.raises(OSError, match="rename refused"):
        write_text_atomically(target, "new")
    assert seen == [(str(tmp_path), "t.txt", "old")]  # a file beside the target; the target untouched until then
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]
