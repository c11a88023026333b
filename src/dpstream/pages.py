"""Generated blocks of the documentation pages: the text between two marker comments, rewritten from a table."""

from __future__ import annotations

from pathlib import Path

from dpstream.files import write_text_atomically


def write_between(page: Path, markers: tuple[str, str], body: str) -> None:
    """Replace the text between the ``markers`` of ``page`` (both kept) by ``body`` on lines of its own.

    Written whole or not at all (``files.write_text_atomically``): a run killed, or a disk that fills, mid-write
    leaves the page as it was.
    """
    text = page.read_text()
    start, end = text.index(markers[0]) + len(markers[0]), text.index(markers[1])
    write_text_atomically(page, text[:start] + "\n" + body + "\n" + text[end:])
