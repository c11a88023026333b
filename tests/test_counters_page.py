"""docs/guide/counters.md ("Choosing a counter") quotes the committed leaderboard, ``results/tables/counters.csv``.

Every row of the page's T = 2^20 table is the table's row at T = 2^20, rendered as the page renders it (variance and
speed ratios to 3 significant digits, bytes exactly, the ARE to 2), every counter of the table is on the page, and the
deployable goal's ratios in the text are the table's. The empirical check's committed table
(``counters_empirical.csv``) covers the horizons the page names, every counter, and passes where it checked; the
variance check at 2^14 and 2^16 (``counters_variance.csv``) is the page's generated block (which names the cells the
run did not finish), on 100000 counters a cell, every row with its configuration, and no cell a mismatch.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from dpstream.counters import COUNTERS, empirical
from dpstream.plots.counters import BOARD_BLOCK, board_markdown

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "counters.md"
TABLE = ROOT / "results" / "tables" / "counters.csv"
EMPIRICAL = ROOT / "results" / "tables" / "counters_empirical.csv"
VARIANCE = ROOT / "results" / "tables" / "counters_variance.csv"
HORIZON = 2**20


def _board() -> pd.DataFrame:
    df = pd.read_csv(TABLE)
    return df[df["data.length"] == HORIZON].set_index(["mechanism.counter", "mechanism.node_noise"])


def _page_rows() -> dict[tuple[str, str], list[str]]:
    """The page's leaderboard rows by (counter, node noise): the table whose header starts with ``| counter |``."""
    lines = PAGE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| counter | node noise | mean var"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0], cells[1]] = cells[2:]
    return rows


def _fmt(value: float, digits: int, missing: str) -> str:
    return missing if math.isnan(value) else f"{value:.{digits}g}"


def test_the_page_table_is_its_generated_block():
    text = PAGE.read_text()
    block = text[text.index(BOARD_BLOCK[0]) + len(BOARD_BLOCK[0]):text.index(BOARD_BLOCK[1])]
    assert block.strip() == board_markdown(pd.read_csv(TABLE)), \
        "the page's leaderboard block is not the table: python -m dpstream.plots.counters (make counters)"


def test_the_page_table_is_the_committed_table_at_2_20():
    board, rows = _board(), _page_rows()
    bound = rows.pop(("factorisation lower bound", ""))
    assert bound[0] == _fmt(float(board["lower_bound_mean_ratio"].iloc[0]), 3, "")
    assert set(rows) == set(board.index), "the page and the table list different counters"
    for key, cells in rows.items():
        row = board.loc[key]
        want = [_fmt(row.var_mean_ratio, 3, ""), _fmt(row.var_max_ratio, 3, ""), str(int(row.bytes_per_counter)),
                _fmt(row.update_ratio, 3, "not timed"), _fmt(row.release_ratio, 3, "not timed"),
                _fmt(row.are_top15, 2, "does not fit")]
        assert cells == want, f"{key}: the page says {cells}, the table {want}"


@pytest.mark.parametrize(("counter", "noise", "against"), [
    ("smooth", "discrete_secure", "binary"), ("honaker", "discrete_secure_stored", "binary"),
    ("laplace", "discrete_secure_stored", "binary")])
def test_the_deployable_ratios_in_the_text_are_the_tables(counter, noise, against):
    board = _board()
    ratio = board.loc[(counter, noise), "var_mean_ratio"] / board.loc[(against, "discrete_secure"), "var_mean_ratio"]
    text = re.sub(r"\s+", " ", PAGE.read_text())
    assert f"{ratio:.3f}x the deployable tree" in text, f"{counter} {noise}: {ratio:.3f}x is not on the page"


def test_the_empirical_table_is_what_the_page_says():
    df = pd.read_csv(EMPIRICAL)
    text = re.sub(r"\s+", " ", PAGE.read_text())
    assert "holds every counter and node noise at T = 2^10, 2^12, 2^14 and 2^16" in text
    assert sorted(df["data.length"].unique()) == [2**10, 2**12, 2**14, 2**16]
    assert set(zip(df["mechanism.counter"], df["mechanism.node_noise"], strict=True)) == set(_board().index)
    checked = df[df["empirical_counters"] > 0]
    assert (checked["empirical_counters"] == 100_000).all() and checked["empirical_ok"].astype(bool).all()
    assert f"every checked cell passes ({len(checked)} of {len(df)})" in text
    skipped = df[df["empirical_counters"] == 0]
    o_t = {(c, "stored", t) for c in ("sqrt", "unbounded") for t in (2**12, 2**14, 2**16)}  # O(T) work a push
    large = {("binary", "stored"), ("binary", "discrete_secure_stored"), ("honaker", "stored"),
             ("honaker", "discrete_secure_stored"), ("banded64", "stored")}  # beyond the column's limits at 2^16
    assert set(zip(skipped["mechanism.counter"], skipped["mechanism.node_noise"], skipped["data.length"],
                   strict=True)) == o_t | {(c, n, 2**16) for c, n in large}


def test_the_variance_check_is_the_pages_block():
    df = pd.read_csv(VARIANCE, keep_default_na=False, na_values=[""])
    text = PAGE.read_text()
    block = text[text.index(empirical.BLOCK[0]) + len(empirical.BLOCK[0]):text.index(empirical.BLOCK[1])]
    assert block.strip() == empirical.render(df), "the page's block is not the table: make counters-variance"
    assert "Above 2^16 the formula stands" in re.sub(r"\s+", " ", text)
    assert set(df["horizon"]) == {2**14, 2**16}
    assert (df["counters"] == 100_000).all() and (df["seed"] == 34).all()
    for column in ("horizon", "steps", "counters", "seed", "noise_version", "commit", "alpha", "cells"):
        assert df[column].notna().all(), column
    assert set(zip(df["counter"], df["node_noise"], strict=True)) <= set(COUNTERS)
    for (_, _, horizon), cell in df.groupby(["counter", "node_noise", "horizon"]):  # a cell has all its steps
        assert sorted(cell["step"]) == sorted(map(int, cell["steps"].iloc[0].split())), horizon
    not_run = df[df["verdict"] == "not run"]
    assert set(zip(not_run["counter"], not_run["node_noise"], strict=True)) <= {("sqrt", "stored"),
                                                                              ("unbounded", "stored")}
    assert not (df["verdict"] == "mismatch").any(), df[df["verdict"] == "mismatch"][["counter", "node_noise", "step"]]
