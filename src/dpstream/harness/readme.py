"""Keep the README's verdict tables and first pages equal to the committed claims tables.

A README block between ``<!-- verdicts: fig3a fig3b -->`` and ``<!-- /verdicts -->`` is rendered from
``results/tables/<id>.claims.csv`` of the listed experiments: one row per claim with its rule, what was
measured and the verdict. ``python -m dpstream.harness.readme`` rewrites the blocks; ``--check`` exits 1
when a block differs from the tables (the test suite runs the check, so a README verdict cannot go stale).

A block between ``<!-- first-page: fig3a fig3b -->`` and ``<!-- /first-page -->`` is a page's first page: one row per
figure panel of Holland's paper and sentence (``first_page.first_page``), or, for documents without figure panels, one
row per listed experiment (``first_page.experiment_rows``): the claim, our setting, the verdict, its robustness, the
main deviation and a thumbnail. A number between ``<!-- q: NAME -->`` and ``<!-- /q -->`` is computed from the
tables (``dpstream.harness.quoted``). A block between ``<!-- registered-status -->`` (or
``<!-- registered-status: svt_c svt_kstar -->``) and ``<!-- /registered-status -->`` is the registered run's state per
experiment (of those listed), from ``looks.csv``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from dpstream.claims.registration import claim_ids
from dpstream.harness import registered
from dpstream.harness.first_page import PANELS, experiment_rows, first_page
from dpstream.harness.quoted import value as quoted_value
from dpstream.harness.registered import labels, looks_of, table_rows
from dpstream.harness.report import claim_cells
from dpstream.harness.rule_notes import constructed, shown, table_of

BLOCK = re.compile(r"(<!-- verdicts: (?P<ids>[^>]*?) -->\n)(?P<body>.*?)(<!-- /verdicts -->)", re.S)
FIRST_PAGE = re.compile(r"(<!-- first-page: (?P<ids>[^>]*?) -->\n)(?P<body>.*?)(<!-- /first-page -->)", re.S)
STATUS = re.compile(r"(<!-- registered-status(?::(?P<ids>[^>]*?))? -->\n)(?P<body>.*?)(<!-- /registered-status -->)",
                    re.S)
QUOTE = re.compile(r"(<!-- q: (?P<ids>[^>]*?) -->)(?P<body>.*?)(<!-- /q -->)", re.S)
PAGES = ("docs/reproduction/sketches.md", "docs/reproduction/svt.md", "docs/reproduction/query_release.md",
         "docs/guide/beyond.md", "docs/limitations.md", "docs/guide/sketches.md", "docs/verdicts.md")
"""The pages whose blocks are rendered from the tables (``make readme``), relative to the repository root."""
FIGURES = "../../results/figures"
"""The figures folder seen from a page of ``docs/<section>/`` (the thumbnails of a first-page block), as the repository
shows it; the documentation site serves the figures itself and points these ``<img>`` tags there (``docs_hooks.py``)."""


def render_first_page(ids: list[str], tables: Path) -> str:
    """A first-page block: Holland's panels (``first_page.PANELS``), a row per sentence; else a row per experiment."""
    if all(i in PANELS for i in ids):
        rows = first_page(tables, FIGURES)
        keep = [r for r in rows[2:] if r.split(" | ")[0].removeprefix("| ") in ids]
        return "\n".join([*rows[:2], *keep]) + "\n"
    return "\n".join(experiment_rows(tables, ids, FIGURES)) + "\n"


def render(ids: list[str], tables: Path) -> str:
    """The Markdown table of every claim of the experiments ``ids``, in that order, each with where it comes from.

    ``from`` is ``registered.labels``: a registered look and its pooled trials only for rows the registered run
    decided, else history (seeds 0-2), which decides nothing.
    """
    lines = ["| panel | claim | rule (fixed before the run) | measured | verdict | from |", "|---|---|---|---|---|---|"]
    looks = looks_of(tables)
    for exp_id in ids:
        path = tables / f"{exp_id}.claims.csv"
        if not path.exists():
            raise FileNotFoundError(f"README names experiment {exp_id!r} but {path} does not exist")
        claims = pd.read_csv(path, keep_default_na=False)
        sources = shown(claim_ids(exp_id, claims), labels(claims, table_rows(tables, exp_id), looks, exp_id), looks,
                        constructed(claims, table_of(tables, exp_id), exp_id, tables.parent))
        for r, source in zip(claims.itertuples(), sources, strict=True):
            cells = claim_cells(r).replace("[", "\\[").replace("]", "\\]")  # brackets are text, not links
            lines.append(f"| {exp_id} | {cells} {source} |")
    return "\n".join(lines) + "\n"


def render_status(tables: Path, ids: list[str] | None = None) -> str:
    """The registered run per experiment (``registered.status``, of ``ids`` only if given) from ``looks.csv``.

    With whether the claims tables show it (``adopted``: yes, refused or no).

    ``looks.csv`` is the one beside ``tables`` (``<results>/verify/paper``).
    """
    looks = registered.read_looks(registered.looks_path(tables.parent))
    state = registered.status(looks, claims=registered.all_claims(tables, looks=looks))
    if ids:
        unknown = sorted(set(ids) - set(state["experiment"]))
        if unknown:
            raise KeyError(f"a status block names experiments without registered claims: {unknown}")
        state = state[state["experiment"].isin(ids)]
    lines = ["| experiment | state | registered claims | final | last look | pooled trials | adopted |",
             "|---|---|---|---|---|---|---|",
             *[f"| {r['experiment']} | {r['state']} | {r['claims']} | {r['final']} | {r['look'] or ''} | "
               f"{r['pooled trials'] or ''} | {r['adopted']} |" for r in state.to_dict("records")]]
    counts = state["state"].value_counts()
    return "\n".join([*lines, "", ", ".join(f"{int(counts.get(s, 0))} {s}" for s in registered.STATES)
                      + f" of {len(state)} experiments with registered claims."]) + "\n"


def sync(readme: Path, tables: Path) -> tuple[str, list[str]]:
    """The README text with every verdict block re-rendered, and the ids of the blocks that changed."""
    text = readme.read_text()
    changed: list[str] = []

    def replace(m: re.Match[str]) -> str:
        ids = m.group("ids").split()
        body = render(ids, tables)
        if body != m.group("body"):
            changed.append(" ".join(ids))
        return m.group(1) + body + m.group(4)

    def replace_first(m: re.Match[str]) -> str:
        body = render_first_page(m.group("ids").split(), tables)
        if body != m.group("body"):
            changed.append("first-page: " + m.group("ids"))
        return m.group(1) + body + m.group(4)

    def replace_quote(m: re.Match[str]) -> str:
        name = m.group("ids").strip()
        body = quoted_value(name, tables)
        if body != m.group("body"):
            changed.append("q: " + name)
        return m.group(1) + body + m.group(4)

    def replace_status(m: re.Match[str]) -> str:
        body = render_status(tables, (m.group("ids") or "").split() or None)
        if body != m.group("body"):
            changed.append("registered-status")
        return m.group(1) + body + m.group(4)

    text = STATUS.sub(replace_status, FIRST_PAGE.sub(replace_first, BLOCK.sub(replace, text)))
    return QUOTE.sub(replace_quote, text), changed


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with --check, verify) the verdict blocks of README.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    parser.add_argument("--tables", type=Path, default=Path("results/tables"))
    parser.add_argument("--check", action="store_true", help="exit 1 if a block differs from the tables")
    args = parser.parse_args(argv)
    text, changed = sync(args.readme, args.tables)
    if args.check:
        for ids in changed:
            print(f"README verdict block [{ids}] differs from results/tables: run python -m dpstream.harness.readme")
        return 1 if changed else 0
    args.readme.write_text(text)
    print(f"rewrote {len(changed)} verdict block(s)" if changed else "README verdict blocks up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
