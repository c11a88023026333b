"""One column of a CSV or Parquet file, with errors that name the file and the column (not raw pandas errors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import overload

import pandas as pd
import pyarrow.parquet as pq


def check_column(path: Path, column: int | str, names: list, header: bool) -> None:
    """``column`` (a 0-based index, or a header name) must be one of the file's ``names``."""
    if isinstance(column, bool) or not isinstance(column, int | str):
        raise ValueError(f"{path}: column must be a 0-based index or a header name, got {column!r}")
    if isinstance(column, str) and not header:
        raise ValueError(f"{path}: column {column!r} is a name, but the file has no header (header: false); "
                         f"give a 0-based index")
    if isinstance(column, int) and not 0 <= column < len(names):
        raise ValueError(f"{path}: no column {column} (0-based): the file has {len(names)} column(s): {names}")
    if isinstance(column, str) and column not in names:
        raise ValueError(f"{path}: no column {column!r}; its columns: {names}")


@overload
def csv_column(path: Path, column: int | str, header: bool = True, chunksize: None = None) -> pd.Series: ...
@overload
def csv_column(path: Path, column: int | str, header: bool = True, *, chunksize: int) -> Iterator[pd.DataFrame]: ...


def csv_column(path: Path, column: int | str, header: bool = True, chunksize: int | None = None
               ) -> pd.Series | Iterator[pd.DataFrame]:
    """Column ``column`` of the CSV file as strings (empty fields as ``""``; blank lines skipped).

    One Series, or an iterator of one-column frames of ``chunksize`` rows.
    """
    try:
        names = list(pd.read_csv(path, header=0 if header else None, nrows=0 if header else 1, dtype=str).columns)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty: no line to find column {column!r} in") from None
    check_column(path, column, names, header)
    if chunksize:
        return pd.read_csv(path, header=0 if header else None, usecols=[column], dtype=str, keep_default_na=False,
                           chunksize=chunksize, skip_blank_lines=True)
    return pd.read_csv(path, header=0 if header else None, usecols=[column], dtype=str, keep_default_na=False,
                       skip_blank_lines=True).iloc[:, 0]


def parquet_column(path: Path, column: int | str) -> pd.Series:
    """Column ``column`` (a 0-based index or a name) of the Parquet file, with its own dtype (nulls as NA)."""
    try:
        names = pq.read_schema(path).names
    except ValueError as exc:  # pyarrow.ArrowInvalid: empty, truncated or not Parquet
        raise ValueError(f"{path} is not a readable Parquet file ({exc})") from exc
    check_column(path, column, names, header=True)
    name = names[column] if isinstance(column, int) else column
    return pq.read_table(path, columns=[name]).column(0).to_pandas()
