"""MkDocs hook: the committed figures (``results/figures/*.png``) are served under ``figures/`` of the site.

The reproduction pages show them as ``../figures/<id>.png`` without keeping a second copy under ``docs/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

FIGURES = Path(__file__).parent / "results" / "figures"


def on_files(files: Files, config: Any) -> Files:
    """Add every committed figure to the site's files."""
    for png in sorted(FIGURES.glob("*.png")):
        files.append(File(f"figures/{png.name}", str(FIGURES.parent), config["site_dir"], config["use_directory_urls"]))
    return files
