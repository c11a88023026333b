"""data=items: a stream read from the user's own file, one item per row, in file order.

Formats (``format``; ``auto`` tells them by the extension ``.txt``, ``.csv``, ``.npy``, ``.parquet`` / ``.pq``):
``txt`` one item per line (surrounding whitespace and a byte-order mark stripped); ``csv`` the column ``column`` (a
header name or a 0-based index; ``header: false`` for a file without a header line); ``npy`` a 1-D array, or the
column ``column`` (an index) of a 2-D one (no pickled objects); ``parquet`` the column ``column`` (a name or an
index). A compressed file, or one of another format than its extension says, is an error naming what it is
(``dpstream.data.sniff``).
``column: null`` is allowed only for a file of one column: with several, the key column must be named.

Items. A column whose every value is an integer that fits in int64 (an integer dtype, floats that are all whole
numbers, or text of digits with an optional sign: "007" is 7) is kept as those integers. Any other column (words,
addresses, decimals, a mix) is hashed, every value as its text: item = ``dpstream.hashing.canonical_key(text)`` =
xxh64(UTF-8 bytes, seed 0) mod (2^61 - 1), the canonical key the sketches use for strings. So the same string is
the same item in every call, file and run, and items are non-negative int64 (as the heavy-hitter trackers need).
In a mixed column "7" is the hash of "7", not 7. Back to the strings: ``FileStream.labels`` maps each hashed item
to its text (built from the distinct values only, and cached with the stream); any string can also be hashed with
``canonical_key`` and looked up among reported items. Two distinct strings share an item with probability about
m^2 / 2^62 for m distinct strings (negligible below a billion).

Empty values (blank lines, empty CSV fields, NaN / null) are skipped and counted (``FileStream.rows_skipped``);
keeping under half of the rows warns. ``limit`` keeps the first ``limit`` items. The file is fixed: ``seed`` is
accepted (the shared call of every stream source, ``dpstream.data.stream``) and ignored. Converted once and cached
as ``<cache_dir>/items/*.npz``, keyed by the file's content (xxh3-128) and the reading options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpstream.data.cache import cached_arrays, file_fingerprint
from dpstream.data.columns import csv_column, csv_names, parquet_column, parquet_names
from dpstream.data.sniff import check_file_kind
from dpstream.data.stream import FileStream
from dpstream.hashing import canonical_keys
from dpstream.noise import SeedLike
from dpstream.validation import check_choice, check_positive_int

ITEM_FORMATS = ("auto", "txt", "csv", "npy", "parquet")
SUFFIX_FORMATS = {".txt": "txt", ".csv": "csv", ".npy": "npy", ".parquet": "parquet", ".pq": "parquet"}
SKIPPED = "empty or missing values"


def _format(path: Path, fmt: str) -> str:
    fmt = check_choice(fmt, "items format", ITEM_FORMATS)
    if fmt != "auto":
        return fmt
    if path.suffix.lower() not in SUFFIX_FORMATS:
        raise ValueError(f"cannot tell the format of {path} from its extension; set format to one of "
                         f"{', '.join(ITEM_FORMATS[1:])}")
    return SUFFIX_FORMATS[path.suffix.lower()]


def _values(path: Path, fmt: str, column: int | str | None, header: bool) -> pd.Series:
    """The raw values of the file's item column, one per row."""
    check_file_kind(path, fmt)
    if fmt == "csv":
        return csv_column(path, _key_column(path, column, csv_names(path, header, column)), header)
    if fmt == "parquet":
        return parquet_column(path, _key_column(path, column, parquet_names(path)))
    if fmt == "txt":
        if column not in (None, 0):
            raise ValueError(f"{path}: a .txt file has one item per line, so no column {column!r}; drop column")
        try:
            # utf-8-sig: a byte-order mark is not part of the first item
            return pd.Series(path.read_text(encoding="utf-8-sig").splitlines(), dtype=object)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} is not UTF-8 text ({exc})") from exc
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise ValueError(f"{path} is not a readable .npy array without pickled objects ({exc})") from exc
    if array.ndim == 2 and isinstance(column, int) and not isinstance(column, bool) and 0 <= column < array.shape[1]:
        return pd.Series(array[:, column])
    if array.ndim == 1 and column in (None, 0):
        return pd.Series(array)
    raise ValueError(f"{path}: an array of shape {array.shape} has no item column {column!r}; give a 1-D array, "
                     f"or a 2-D one with column = a 0-based index")


def _key_column(path: Path, column: int | str | None, names: list[str]) -> int | str:
    """``column``; when not given, the only column of a one-column file (several columns need it named)."""
    if column is not None:
        return column
    if len(names) == 1:
        return 0
    raise ValueError(f"{path}: which column holds the items? Set column (data.column) to a header name or a 0-based "
                     f"index; its columns: {names}")


def _whole_int64(values: pd.Series) -> np.ndarray | None:
    """The values as int64 if every one is a whole number that fits in int64, else None."""
    if pd.api.types.is_bool_dtype(values):
        return None
    if not pd.api.types.is_numeric_dtype(values):
        if not values.str.fullmatch(r"[+-]?\d+").all():
            return None
        values = pd.to_numeric(values)  # int64, or uint64 / float beyond int64
    array = values.to_numpy()
    if array.dtype.kind == "f":
        if not (np.isfinite(array).all() and (array == np.round(array)).all()):
            return None
        info = np.iinfo(np.int64)
        if array.size and (array.min() < info.min or array.max() >= 2.0 ** 63):
            return None
    elif array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
        return None
    elif array.dtype.kind not in "iuf":
        return None
    return array.astype(np.int64)


def parse_items(values: pd.Series) -> tuple[np.ndarray, dict[int, str] | None, int]:
    """(items as int64, the text of each hashed item or None when the integers were kept, rows skipped as empty)."""
    kept = values[values.notna()]
    if not (pd.api.types.is_numeric_dtype(kept) or pd.api.types.is_bool_dtype(kept)):
        kept = kept.astype(str).str.strip()
        kept = kept[kept != ""]
    skipped = int(values.size - kept.size)
    whole = _whole_int64(kept)
    if whole is not None:
        return whole, None, skipped
    codes, distinct = pd.factorize(kept.astype(str))
    keys = canonical_keys(np.asarray(distinct, dtype=object)).astype(np.int64)  # < 2^61: fits int64
    return keys[codes], dict(zip(keys.tolist(), distinct.tolist(), strict=True)), skipped


def items_stream(path: str, format: str = "auto", column: int | str | None = None, header: bool = True,
                 limit: int | None = None, seed: SeedLike = None,
                 cache_dir: str | Path | None = None) -> FileStream:
    """The items of the user's file (module docstring) as a ``FileStream`` of int64 items; ``seed`` is ignored."""
    if path is None or str(path) in ("", "None", "???"):
        raise ValueError("no items file given: set data.path to a .txt, .csv, .npy or .parquet file")
    p = Path(path).expanduser()
    fingerprint = file_fingerprint(p)  # names a missing or unreadable file
    check_file_kind(p, format)  # a compressed file is named before the extension is read
    fmt = _format(p, format)
    where = f"{p}" + (f", column {column!r}" if column is not None else "")

    def build() -> dict[str, np.ndarray]:
        values = _values(p, fmt, column, header)
        if values.size == 0:
            raise ValueError(f"{where}: the file is empty (no rows, so no items)")
        items, labels, skipped = parse_items(values)
        if items.size == 0:
            raise ValueError(f"{where}: no items ({values.size} rows, all {SKIPPED})")
        labels = labels or {}
        return {"items": items, "rows_read": np.array(values.size, dtype=np.int64),  # 0-d, as read back from .npz
                "rows_skipped": np.array(skipped, dtype=np.int64), "hashed": np.array(bool(labels)),
                "label_items": np.fromiter(labels, np.int64, len(labels)),
                "label_text": np.array(list(labels.values()), dtype=np.str_)}

    key: dict[str, Any] = {"xxh3_128": fingerprint, "format": fmt, "column": column, "header": header}
    if fmt == "txt":
        key["byte_order_mark"] = "stripped"  # not a conversion of before, which kept it in the first item
    read = cached_arrays(cache_dir, "items", key, build)
    items = read["items"]
    if limit is not None:
        items = items[:check_positive_int(limit, "limit")]
    labels = dict(zip(read["label_items"].tolist(), read["label_text"].tolist(), strict=True)) if read["hashed"] \
        else None
    return FileStream(items, where, int(read["rows_read"]), int(read["rows_skipped"]), SKIPPED, labels)
