"""One column of a CSV or Parquet file, with errors that name the file and the column (not raw library errors).

CSV is read with ``pyarrow.csv`` (multi-threaded C++ parsing, only the wanted column converted), every value as text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

BLOCK_BYTES = 1 << 22  # bytes of CSV parsed per streamed batch


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


def _read_options(header: bool, block_size: int = BLOCK_BYTES) -> pcsv.ReadOptions:
    return pcsv.ReadOptions(autogenerate_column_names=not header, block_size=block_size, use_threads=False)


def csv_names(path: Path, header: bool = True, column: int | str | None = None) -> list[str]:
    """The CSV file's column names (``f0``, ``f1``, ... without a header); an empty file is an error naming it."""
    try:
        skip = pcsv.ParseOptions(invalid_row_handler=lambda row: "skip")  # names only: rows are checked when read
        with pcsv.open_csv(path, read_options=_read_options(header, 1 << 16), parse_options=skip) as reader:
            return list(reader.schema.names)
    except pa.ArrowInvalid as exc:
        if "Empty CSV file" in str(exc):
            raise ValueError(f"{path} is empty: no line to find column {column!r} in") from None
        raise ValueError(f"{path} is not a readable CSV file ({exc})") from exc


def _name(path: Path, column: int | str, header: bool) -> str:
    names = csv_names(path, header, column)
    check_column(path, column, names, header)
    return names[column] if isinstance(column, int) else column


def _convert(name: str) -> pcsv.ConvertOptions:
    return pcsv.ConvertOptions(include_columns=[name], column_types={name: pa.string()}, strings_can_be_null=False,
                               quoted_strings_can_be_null=False)


def csv_column(path: Path, column: int | str, header: bool = True) -> pd.Series:
    """Column ``column`` of the CSV file as strings (empty fields as ``""``; blank lines skipped)."""
    name = _name(path, column, header)
    try:
        table = pcsv.read_csv(path, read_options=pcsv.ReadOptions(autogenerate_column_names=not header),
                              convert_options=_convert(name))
    except pa.ArrowInvalid as exc:
        raise ValueError(f"{path}: cannot read column {column!r} as CSV ({exc})") from exc
    return table.column(0).to_pandas()


def csv_batches(path: Path, column: int | str, header: bool = True,
                invalid_row: Callable[[pcsv.InvalidRow], str] | None = None,
                block_size: int = BLOCK_BYTES) -> Iterator[pa.StringArray]:
    """Column ``column`` of the CSV file as string arrays, one per parsed block, streamed (bounded memory).

    ``invalid_row`` (pyarrow's handler: return "skip" or "error") decides on a row with the wrong number of fields.
    """
    name = _name(path, column, header)
    try:
        with pcsv.open_csv(path, read_options=_read_options(header, block_size), convert_options=_convert(name),
                           parse_options=pcsv.ParseOptions(invalid_row_handler=invalid_row)) as reader:
            for batch in reader:
                yield batch.column(0)
    except pa.ArrowInvalid as exc:
        raise ValueError(f"{path}: cannot read column {column!r} as CSV ({exc})") from exc


def parquet_names(path: Path) -> list[str]:
    """The Parquet file's column names; a file that is not Parquet is an error naming it."""
    try:
        return list(pq.read_schema(path).names)
    except ValueError as exc:  # pyarrow.ArrowInvalid: empty, truncated or not Parquet
        raise ValueError(f"{path} is not a readable Parquet file ({exc})") from exc


def parquet_column(path: Path, column: int | str) -> pd.Series:
    """Column ``column`` (a 0-based index or a name) of the Parquet file, with its own dtype (nulls as NA)."""
    names = parquet_names(path)
    check_column(path, column, names, header=True)
    name = names[column] if isinstance(column, int) else column
    return pq.read_table(path, columns=[name]).column(0).to_pandas()
