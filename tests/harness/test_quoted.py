"""Numbers and first pages the docs quote are rendered from the committed tables: a stale one fails."""

import re
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from dpstream.harness.quoted import NOT_TIMED, QUOTED
from dpstream.harness.readme import FIRST_PAGE, QUOTE, sync

TABLES = ROOT / "results" / "tables"
MARKED = sorted(p for p in (ROOT / "docs").rglob("*.md") if QUOTE.search(p.read_text()) or
                FIRST_PAGE.search(p.read_text()))


def test_the_reproduction_pages_open_with_a_first_page_and_quote_numbers():
    names = {str(p.relative_to(ROOT)) for p in MARKED}
    assert {"docs/reproduction/sketches.md", "docs/reproduction/svt.md", "docs/reproduction/query_release.md",
            "docs/limitations.md"} <= names
    makefile = (ROOT / "Makefile").read_text()
    pages = re.search(r"^VERDICT_PAGES := (.*)$", makefile, re.M).group(1).split()
    assert names <= set(pages), "make readme must render every page with a first page or a quoted number"


@pytest.mark.parametrize("page", MARKED, ids=lambda p: p.stem)
def test_every_quoted_number_and_first_page_agrees_with_its_table(page):
    _, changed = sync(page, TABLES)
    assert changed == [], f"stale in {page}: {changed}: run make readme"


def test_a_doc_number_that_disagrees_with_its_table_is_detected(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    for name in ("fig3f.csv", "fig3f.claims.csv"):
        shutil.copy(TABLES / name, tables / name)
    page = tmp_path / "page.md"
    page.write_text("LazyCMS falls <!-- q: fig3f.ratio.lazycms -->6.18x<!-- /q --> over the eps grid.\n")
    text, changed = sync(page, tables)
    assert changed == ["q: fig3f.ratio.lazycms"] and "6.18x" not in text
    df = pd.read_csv(TABLES / "fig3f.csv")
    rows = df[df["mechanism.name"] == "lazycms"].pivot_table(index="trial", columns="epsilon", values="are_top15")
    assert f"{(rows[0.05] / rows[2.0]).mean():.3g}x" in text
    page.write_text(text)
    assert sync(page, tables)[1] == []
    halved = df.assign(are_top15=np.where((df["mechanism.name"] == "lazycms") & (df["epsilon"] == 2.0),
                                          df["are_top15"] / 2, df["are_top15"]))
    halved.to_csv(tables / "fig3f.csv", index=False)
    assert sync(page, tables)[1] == ["q: fig3f.ratio.lazycms"]
    page.write_text("<!-- q: no.such.number --><!-- /q -->\n")
    with pytest.raises(KeyError, match="no.such.number"):
        sync(page, tables)


def test_speed_ups_are_quoted_from_interleaved_timing_never_trial_wall_clock(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    shutil.copy(TABLES / "fig3a.csv", tables / "fig3a.csv")  # wall-clock trials: not a source of speed-ups
    assert QUOTED["fig3a.speedup.cms"](tables) == NOT_TIMED
    ratio = [1 / 10, 1 / 12, 1 / 11, 1 / 30, 1 / 32]  # reference (Lazy) time / candidate (Punctual) time
    timed = pd.DataFrame({"mechanism.name": "punctualcms", "memory_kb": [8, 8, 8, 24, 24], "trial": [0, 1, 2, 0, 1],
                          "interleaved_ratio": ratio, "interleaved_low": [r * 0.9 for r in ratio],
                          "interleaved_high": [r * 1.1 for r in ratio], "seconds": 99.0})
    timed.to_csv(tables / "fig3a_speedup.csv", index=False)
    quoted = QUOTED["fig3a.speedup.cms"](tables)
    assert quoted.startswith("8 KB: 11x (trials 10-12;") and "24 KB: 31x (trials 30-32;" in quoted


def test_a_first_page_block_has_one_row_per_panel_or_experiment_and_goes_stale(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- first-page: fig3b fig3f -->\n<!-- /first-page -->\n<!-- first-page: svt_c qr_alg5 -->\n"
                    "<!-- /first-page -->\n")
    text, changed = sync(page, TABLES)
    assert len(changed) == 2
    holland = text.split("<!-- /first-page -->")[0]
    assert {r.split(" | ")[0] for r in holland.splitlines() if r.startswith("| fig")} == {"| fig3b", "| fig3f"}
    others = [r for r in text.splitlines() if r.startswith(("| svt_c", "| qr_alg5"))]
    assert len(others) == 2 and all("trials" in r and "results/figures/" in r and "**" in r for r in others)
    page.write_text(text)
    assert sync(page, TABLES)[1] == []


def test_a_quoted_verdict_is_the_table_s_and_history_says_what_its_rows_said(tmp_path):
    from dpstream.harness.quoted import value

    tables = tmp_path / "tables"
    tables.mkdir()
    claims = pd.read_csv(TABLES / "fig3b.claims.csv", keep_default_na=False)
    claims.loc[0, ["verdict", "gate"]] = ["inconclusive", "history (seeds 0-2): the rows say 'not confirmed'"]
    claims.loc[1, ["verdict", "gate"]] = ["confirmed", ""]
    claims.to_csv(tables / "fig3b.claims.csv", index=False)
    assert value("verdict:fig3b#0", tables) == "`inconclusive`" and value("rows:fig3b#0", tables) == "`not confirmed`"
    assert value("verdict:fig3b#1", tables) == value("rows:fig3b#1", tables) == "`confirmed`"


def test_a_quoted_mean_is_taken_over_the_rows_it_names():
    from dpstream.harness.quoted import value

    df = pd.read_csv(TABLES / "fig4_k256.csv")
    rows = df[(df["mechanism.name"] == "lazyhh") & (df["mechanism.k_tilde"] == 1024)]
    assert value("mean:fig4_k256:recall:mechanism.name=lazyhh,mechanism.k_tilde=1024", TABLES) == \
        f"{rows['recall'].mean():.3g}"
    with pytest.raises(ValueError, match="no row"):
        value("mean:fig4_k256:recall:mechanism.name=lazyhh,mechanism.k_tilde=3", TABLES)
