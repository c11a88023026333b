"""MkDocs hook: the committed figures (``results/figures/*.png``) are served under ``figures/`` of the site.

The reproduction pages show them as ``../figures/<id>.png`` without keeping a second copy under ``docs/``. A raw
``<img>`` tag (a first-page thumbnail, ``dpstream.harness.readme``) points at the committed file as the repository
sees it (``../../results/figures/<id>.png`` from ``docs/<section>/``); MkDocs leaves raw HTML alone, so the tag's
``src`` is rewritten to the figure's address on the site, relative to the page's URL.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

FIGURES = Path(__file__).parent / "results" / "figures"
IMG_SRC = re.compile(r"(<img\s[^>]*?src=)(['\"])(?P<path>[^'\"]+)\2")


def on_files(files: Files, config: Any) -> Files:
    """Add every committed figure to the site's files."""
    for png in sorted(FIGURES.glob("*.png")):
        files.append(File(f"figures/{png.name}", str(FIGURES.parent), config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    """Each raw ``<img>`` of a committed figure, by its path in the repository, pointed at the figure on the site."""
    if page.file.abs_src_path is None:
        return markdown
    folder = Path(page.file.abs_src_path).parent

    def site_src(m: re.Match[str]) -> str:
        path = m["path"]
        if "://" in path or path.startswith("/"):
            return m[0]
        target = Path(os.path.normpath(folder / path))
        if target.parent != FIGURES or not target.exists():
            return m[0]
        return f"{m[1]}{m[2]}{'../' * page.url.count('/')}figures/{target.name}{m[2]}"

    return IMG_SRC.sub(site_src, markdown)
