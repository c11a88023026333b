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
addresses, decimals, a mix) is hashed, every value as its text. The item of a value is its KEYED canonical key,
``dpstream.hashing.keyed_key(value, key)``: an integer in [0, 2^61 - 1) is itself (so integer files give the same
stream as before); any other value (text, or an integer outside [0, 2^61 - 1)) is a Carter-Wegman polynomial hash mod
2^61 - 1 of its bytes whose secret ``key`` is drawn from ``seed`` (the trial's data seed: whoever knows the seed
knows the mechanism's noise too; ``seed=None`` draws it from the operating system). So one seed gives the same items
in every call and file, and items are non-negative int64 (as the heavy-hitter trackers need). In a mixed column "7"
is the hash of "7", not 7. Back to the values: ``FileStream.labels`` maps each hashed item to its text (built from
the distinct values, per seed); a key that two distinct values share has no label.

Privacy of the labels. A mechanism's output is over items (keys); its neighbours differ in one key. A label is the
one value of the file (or of its neighbour) with that key, the same in both unless the changed value's key equals
another distinct value's key. Without the secret key nobody can aim such a collision (an unkeyed hash would let one
planted line rename a heavy hitter): for values of at most L limbs (``hashing.item_limbs``: 1 + ceil(bytes / 7)) it
happens with probability at most m (L - 1) / (2^61 - 2) for m distinct values (``hashing.collision_bound``), which
adds to the mechanism's delta for labelled output. ``FileStream.label_delta`` holds it for the file's m and longest
value: 8.7e-13 for a million distinct values of up to 14 bytes, under 1e-9 of any delta >= 1e-3.

Empty values (blank lines, empty CSV fields, NaN / null) are skipped and counted (``FileStream.rows_skipped``);
keeping under half of the rows warns. ``limit`` keeps the first ``limit`` items. The file is fixed: ``seed`` only
draws the key of the item hash. The codes and distinct values are converted once and cached as
``<cache_dir>/items/*.npz``, keyed by the file's content (xxh3-128) and the reading options.
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
from dpstream.hashing import MERSENNE_P, collision_bound, draw_item_key, item_limbs, keyed_keys
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


def parse_items(values: pd.Series) -> tuple[np.ndarray, np.ndarray | None, int]:
    """(integers, None) when every kept value is a whole int64, else (codes, distinct text); and rows skipped.

    ``codes`` index ``distinct`` in stream order (``pd.factorize``); ``keyed_items`` turns either into items.
    """
    kept = values[values.notna()]
    if not (pd.api.types.is_numeric_dtype(kept) or pd.api.types.is_bool_dtype(kept)):
        kept = kept.astype(str).str.strip()
        kept = kept[kept != ""]
    skipped = int(values.size - kept.size)
    whole = _whole_int64(kept)
    if whole is not None:
        return whole, None, skipped
    codes, distinct = pd.factorize(kept.astype(str))
    return codes.astype(np.int64), np.asarray(distinct, dtype=np.str_), skipped


def keyed_items(codes: np.ndarray, distinct: np.ndarray | None,
                seed: SeedLike) -> tuple[np.ndarray, dict[int, str] | None, float]:
    """(items, labels or None, label_delta) of ``parse_items``' output under the secret key drawn from ``seed``.

    Integers in [0, p) stay as they are (no labels); any other integer and every text value become their keyed
    canonical key, labelled by their text unless two distinct values share it (module docstring).
    """
    if distinct is None:
        words = codes.view(np.uint64)
        if not (words >= MERSENNE_P).any():
            return codes, None, 0.0
        codes, uniques = pd.factorize(codes)
        text = np.array([str(v) for v in uniques.tolist()], dtype=np.str_)
        raw: np.ndarray = np.asarray(uniques, dtype=np.int64)
        hashed = raw.view(np.uint64) >= MERSENNE_P
        longest = 8
    else:
        raw = text = np.asarray(distinct, dtype=object)
        hashed = np.ones(raw.size, dtype=bool)
        longest = max((len(v.encode("utf-8")) for v in text.tolist()), default=0)
    keys = keyed_keys(raw, draw_item_key(seed)).astype(np.int64)  # < 2^61: fits int64
    shared, counts = np.unique(keys, return_counts=True)
    ok = hashed & ~np.isin(keys, shared[counts > 1])
    labels = dict(zip(keys[ok].tolist(), np.asarray(text)[ok].tolist(), strict=True))
    return keys[codes], labels, collision_bound(raw.size, item_limbs(longest))


def items_stream(path: str, format: str = "auto", column: int | str | None = None, header: bool = True,
                 limit: int | None = None, seed: SeedLike = None,
                 cache_dir: str | Path | None = None) -> FileStream:
    """The items of the user's file (module docstring) as a ``FileStream`` of int64 items, keyed by ``seed``."""
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
        codes, distinct, skipped = parse_items(values)
        if codes.size == 0:
            raise ValueError(f"{where}: no items ({values.size} rows, all {SKIPPED})")
        return {"codes": codes, "rows_read": np.array(values.size, dtype=np.int64),  # 0-d, as read back from .npz
                "rows_skipped": np.array(skipped, dtype=np.int64), "hashed": np.array(distinct is not None),
                "distinct": distinct if distinct is not None else np.empty(0, dtype=np.str_)}

    key: dict[str, Any] = {"xxh3_128": fingerprint, "format": fmt, "column": column, "header": header,
                           "items": "codes and distinct values, keyed per seed"}
    if fmt == "txt":
        key["byte_order_mark"] = "stripped"  # not a conversion of before, which kept it in the first item
    read = cached_arrays(cache_dir, "items", key, build)
    codes = read["codes"]
    if limit is not None:
        codes = codes[:check_positive_int(limit, "limit")]
    items, labels, label_delta = keyed_items(codes, read["distinct"] if read["hashed"] else None, seed)
    return FileStream(items, where, int(read["rows_read"]), int(read["rows_skipped"]), SKIPPED, labels, label_delta)
