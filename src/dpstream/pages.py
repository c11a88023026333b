"""Generated blocks of the documentation pages: the text between two marker comments, rewritten from a table."""

from __future__ import annotations

from pathlib import Path


def write_between(page: Path, markers: tuple[str, str], body: str) -> None:
    """Replace the text between the ``markers`` of ``page`` (both kept) by ``body`` on lines of its own."""
    text = page.read_text()
    start, end = text.index(markers[0]) + len(markers[0]), text.index(markers[1])
    page.write_text(text[:start] + "\n" + body + "\n" + text[end:])
