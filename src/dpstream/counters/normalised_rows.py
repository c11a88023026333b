"""The normalised square root's row norms above ``ROW_TABLE_LIMIT``: their summary, computed once, read from a file.

The decoder L = A D^{-1} S^{-1} of the normalised square root (``factorisation.NormalisedRoot``; Henzinger, Kalinin,
Upadhyay, arXiv 2509.14334) is not Toeplitz, so the largest and the mean release variance over steps 1..T need every
row norm ||row s of L||^2. The row recursion (``root_rows._row_norms``) takes O(T^2) time; ``root_blocks`` computes
every row in O(T^2 log T / B + T B) by blocks of B ~ sqrt(T log T) steps, each starting from one FFT row: 32 CPU
seconds at 2^20 against the recursion's 284 (``root_blocks`` gives their agreement).

``make counters-nsqrt`` (``python -m dpstream.counters.normalised_rows``) computes every row norm for T = 2^MIN ..
2^MAX and writes one row a horizon to ``TABLE`` (``results/tables/nsqrt_row_norms.csv``): the largest unit variance
(Var(s) / sigma^2) and its first step, the mean over steps 1..T, the smallest and its first step, the value at T,
with the commit of the package sources (``provenance.git_commit``), the CPU seconds and a SHA-256 digest of the row.
``summary(T)`` reads a horizon's row and refuses it, with one line, unless:

- exactly one row names T, its ``log2_horizon`` is log2 T, its commit is recorded and its digest is the row's;
- its digest is the one ``PINNED`` (in this source file) holds for log2 T: the file is as trusted as the source, and an
  edited row, even one whose digest was recomputed, is refused. ``make counters-nsqrt`` prints the ``PINNED`` line of
  each horizon it computes; a regenerated row is read once that line is in the source;
- min <= value at T <= max, min <= mean <= max, both steps lie in 1..T;
- the rows at T, at the step of the maximum and at the step of the minimum, each recomputed by one FFT
  (``root_rows.normalised_row``, O(T log T)), equal the file's values to ``RTOL``: a file from another
  factorisation, an edited value, or a summary of the wrong rows is refused;
- the maximum is at least the FFT row norm at the ``MAX_PROBES`` fractions of T (around 0.54 T, where the maximum
  lies) and at its own step +- 1: a maximum that is a real row norm but not the largest is refused, independently of
  the pin (about 0.6 CPU seconds at 2^20 for the ten FFT rows, once a process).

The mean cannot be recomputed without the whole table: the pinned digest vouches for it.

The file is looked for at ``TABLE``, ``results/tables`` of a source checkout; an installed package has no such file
(and no ``make`` target), so above ``ROW_TABLE_LIMIT`` ``nsqrt``'s max and mean are refused there
(``factorisation.MissingRowNorms``, naming the path looked at).
"""

from __future__ import annotations

import argparse
import csv
import functools
import hashlib
import io
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dpstream.counters.root_blocks import row_norms_by_blocks
from dpstream.counters.root_rows import ROW_TABLE_LIMIT, normalised_row
from dpstream.files import write_text_atomically
from dpstream.provenance import git_commit

SOURCES = Path(__file__).resolve().parents[1]
"""The package's sources: their commit is the row's provenance."""
TABLE = SOURCES.parents[1] / "results" / "tables" / "nsqrt_row_norms.csv"
"""The committed summary file (``make counters-nsqrt``)."""
MAKE_TARGET = "make counters-nsqrt"
RTOL = 1e-9
"""Relative tolerance between a file's row norm and its FFT recomputation (measured: below 1e-14 at 2^16)."""
MAX_PROBES = (0.25, 0.5, 0.52, 0.54, 0.56, 0.58, 0.75)
"""Fractions of T whose row norm the file's maximum must reach (the maximum lies near 0.54 T from 2^10 to 2^20)."""
PINNED: dict[int, str] = {
    17: "bd7db35e630208e3cd32e9b7f46808871b4f89654ef13a1e79bc0f7545933c48",
    18: "ef95f88b31608ef1d83848d95a4ef57196ec434659b3b5a130b2e00d984a4c78",
    19: "05bffac017eadc8d45609467ef2a1006c7badba6e5faa2aed1209b9c4233bc10",
    20: "54e483eb6e9cec608cc41df00a56543f4181c84e4912dd928a64ae057e985267",
    22: "5bcf894457eb81d5d4521f0b579d31dc61dc73d64afc2e0c942235554ea95557",
    24: "cd4f37f7e4cd4e05ed4cd71c84746651cc822d5baff3c4287b5d9de988ac7539",
}
"""log2 T -> the digest of the committed row at T (``results/tables/nsqrt_row_norms.csv``); ``summary`` reads no other
row. ``make counters-nsqrt`` prints the line to add for each horizon it computes."""
FIELDS = ("horizon", "log2_horizon", "var_max", "var_argmax", "var_mean", "var_min", "var_argmin",
          "var_at_horizon", "cpu_seconds", "commit")


class RowNormSummary(NamedTuple):
    """Unit variances Var(s) / sigma^2 = ||row s of L||^2 over steps s = 1..horizon, summarised."""

    horizon: int
    var_max: float
    var_argmax: int
    var_mean: float
    var_min: float
    var_argmin: int
    var_at_horizon: float
    cpu_seconds: float
    commit: str


def summarise(table: np.ndarray, cpu_seconds: float = 0.0, commit: str = "") -> RowNormSummary:
    """The summary of a whole table of unit variances, steps 1..len(table) (first steps of the max and min)."""
    if table.ndim != 1 or table.size == 0:
        raise ValueError(f"a table of unit variances is one non-empty row per step, got shape {table.shape}")
    return RowNormSummary(int(table.size), float(table.max()), int(np.argmax(table)) + 1, float(np.mean(table)),
                          float(table.min()), int(np.argmin(table)) + 1, float(table[-1]), cpu_seconds, commit)


def sources_commit() -> str:
    """The commit of the package sources, ``-dirty`` when they differ from it (untracked files included)."""
    return git_commit(SOURCES, untracked=True) or ""


def compute(horizon: int, commit: str, progress: Callable[[int, int], None] | None = None) -> RowNormSummary:
    """Every row norm at ``horizon`` by blocks (``root_blocks``), summarised with its CPU seconds and ``commit``."""
    row_norms_by_blocks(2)  # compiled (or loaded) outside the timed region
    start = time.process_time()
    table = row_norms_by_blocks(horizon, progress=progress)
    return summarise(table, time.process_time() - start, commit)


def _record(row: RowNormSummary) -> dict[str, str]:
    """The row as the file's text fields (floats by ``repr``: they read back bit for bit)."""
    values = {**row._asdict(), "log2_horizon": math.log2(row.horizon)}
    return {f: repr(values[f]) if isinstance(values[f], float) else str(values[f]) for f in FIELDS}


def digest(fields: dict[str, str]) -> str:
    """SHA-256 of the row's text fields in ``FIELDS`` order."""
    return hashlib.sha256("\x1f".join(fields[f] for f in FIELDS).encode()).hexdigest()


def write(rows: list[RowNormSummary], path: Path = TABLE) -> None:
    """Write ``rows`` to ``path``, keeping its rows of other horizons; sorted by horizon.

    Written whole or not at all (``files.write_atomically``): a run killed or a disk full while writing leaves the
    file as it was.
    """
    kept = {int(r["horizon"]): r for r in _read(path)} if path.exists() else {}
    for row in rows:
        record = _record(row)
        kept[row.horizon] = {**record, "digest": digest(record)}
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=[*FIELDS, "digest"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(kept[h] for h in sorted(kept))
    write_text_atomically(path, text.getvalue())


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def row_digest(horizon: int, path: Path | None = None) -> str:
    """The digest of ``path``'s (``TABLE``) row at ``horizon`` as it reads (of its fields, not its digest column).

    "none" without the file or the row; several rows' digests joined by "+". Nothing is checked (``summary`` does).
    """
    path = TABLE if path is None else path
    if not path.is_file():
        return "none"
    try:
        rows = [r for r in _read(path) if r.get("horizon") == str(horizon)]
    except (OSError, csv.Error, UnicodeDecodeError):
        return "unreadable"
    return "+".join(digest({f: str(r.get(f) or "") for f in FIELDS}) for r in rows) or "none"


def _refuse(path: Path, horizon: int, why: str, fix: str = f"regenerate it with {MAKE_TARGET}") -> ValueError:
    return ValueError(f"{path}: the nsqrt row-norm summary at horizon {horizon} is refused ({why}); {fix}")


def pinned_line(row: RowNormSummary) -> str:
    """The ``PINNED`` entry of ``row`` (what ``make counters-nsqrt`` prints for each horizon it computes)."""
    return f'    {row.horizon.bit_length() - 1}: "{digest(_record(row))}",'


def summary(horizon: int, path: Path | None = None) -> RowNormSummary | None:
    """The verified summary at ``horizon`` from ``path`` (``TABLE``); None when the file or its row is missing.

    Raises ValueError (one line naming the file and what to do) for a row that fails a check (module docstring),
    among them a row whose digest is not ``PINNED``'s for log2 ``horizon``.
    """
    path = TABLE if path is None else path
    if not path.is_file():
        return None
    stat = path.stat()
    power = horizon > 0 and horizon & (horizon - 1) == 0
    pin = PINNED.get(horizon.bit_length() - 1) if power else None
    return _verified(str(path), stat.st_mtime_ns, stat.st_size, horizon, pin)


@functools.lru_cache(maxsize=16)
def _verified(name: str, mtime_ns: int, size: int, horizon: int, pin: str | None) -> RowNormSummary | None:
    """``summary`` for one version of the file (its name, time and size key the cache) and one pinned digest."""
    path = Path(name)
    try:
        rows = [r for r in _read(path) if r.get("horizon") == str(horizon)]
    except (OSError, csv.Error, UnicodeDecodeError) as err:
        raise _refuse(path, horizon, f"unreadable: {err}") from None
    if not rows:
        return None
    if len(rows) > 1:
        raise _refuse(path, horizon, f"{len(rows)} rows name it")
    got = _parse(path, horizon, rows[0])
    _check(path, got)  # before the pin: an edited value is named by the check it fails
    _check_pin(path, horizon, rows[0]["digest"], pin)
    return got


def _check_pin(path: Path, horizon: int, found: str, pin: str | None) -> None:
    """Refuse a row whose digest is not the one ``PINNED`` holds for its horizon (or that no pin names)."""
    log2 = horizon.bit_length() - 1
    restore = f"restore the committed file (git checkout -- results/tables/{TABLE.name})"
    if pin is None:
        raise _refuse(path, horizon, f"no digest is pinned for it in {__name__}.PINNED, so the source vouches for no "
                                     f"row at this horizon", f"{restore}, or check the row and add the line "
                                     f"'{log2}: \"{found}\",' ({MAKE_TARGET} prints it) to PINNED")
    if found != pin:
        raise _refuse(path, horizon, f"its digest {found[:16]}... is not PINNED[{log2}] = {pin[:16]}...: the row was "
                                     "edited or regenerated", f"{restore}, or, for a row you regenerated and "
                                     f"checked, replace PINNED[{log2}] by the line {MAKE_TARGET} printed")


def _parse(path: Path, horizon: int, row: dict[str, str]) -> RowNormSummary:
    """A row's fields, refused when one is missing, the digest is not the row's or T is not the horizon asked."""
    if any(row.get(f) in (None, "") for f in (*FIELDS, "digest")):
        raise _refuse(path, horizon, f"missing fields; needed: {', '.join((*FIELDS, 'digest'))}")
    if row["digest"] != digest(row):
        raise _refuse(path, horizon, "its digest is not the row's: the row was edited")
    try:
        got = RowNormSummary(int(row["horizon"]), float(row["var_max"]), int(row["var_argmax"]),
                             float(row["var_mean"]), float(row["var_min"]), int(row["var_argmin"]),
                             float(row["var_at_horizon"]), float(row["cpu_seconds"]), row["commit"])
        log2 = float(row["log2_horizon"])
    except ValueError as err:
        raise _refuse(path, horizon, f"not a number: {err}") from None
    if got.horizon != horizon or log2 != math.log2(horizon):
        raise _refuse(path, horizon, f"horizon {got.horizon}, log2_horizon {log2}: not {horizon} and its log2")
    return got


def _check(path: Path, got: RowNormSummary) -> None:
    """Refuse a summary whose values are inconsistent or are not the FFT rows at T, the max's and the min's step."""
    horizon = got.horizon
    if not (1 <= got.var_argmax <= horizon and 1 <= got.var_argmin <= horizon
            and 0 < got.var_min <= got.var_mean <= got.var_max and got.var_min <= got.var_at_horizon <= got.var_max):
        raise _refuse(path, horizon, "inconsistent: needed 0 < min <= mean, value at T <= max and steps in 1..T")
    def norm2(step: int) -> float:
        """||row step of L||^2 by one FFT (``normalised_row`` unwrapped: these rows are not kept in its cache)."""
        return float(np.sum(normalised_row.__wrapped__(horizon, step) ** 2))

    for step, value, what in ((horizon, got.var_at_horizon, "value at T"), (got.var_argmax, got.var_max, "max"),
                              (got.var_argmin, got.var_min, "min")):
        exact = norm2(step)
        if not math.isclose(value, exact, rel_tol=RTOL, abs_tol=0.0):
            raise _refuse(path, horizon, f"its {what} {value!r} is not row {step}'s norm^2 {exact!r} (rtol {RTOL})")
    probes = {max(1, min(horizon, round(f * horizon))) for f in MAX_PROBES}
    probes |= {s for s in (got.var_argmax - 1, got.var_argmax + 1) if 1 <= s <= horizon}
    for step in sorted(probes):
        exact = norm2(step)
        if exact > got.var_max * (1 + RTOL):
            raise _refuse(path, horizon, f"its max {got.var_max!r} is below row {step}'s norm^2 {exact!r}: not the "
                                         "largest")


def _progress(log2: int) -> Callable[[int, int], None]:
    """Print the steps done at each tenth of T (a run at 2^24 takes about three quarters of an hour)."""
    shown = [0]

    def show(done: int, horizon: int) -> None:
        tenth = 10 * done // horizon
        if tenth > shown[0]:
            shown[0] = tenth
            print(f"T = 2^{log2}: {done} of {horizon} steps ({100 * done // horizon}%)", flush=True)

    return show


def main(argv: list[str] | None = None) -> None:
    """``python -m dpstream.counters.normalised_rows``: compute T = 2^min .. 2^max, write each to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    low = int(math.log2(ROW_TABLE_LIMIT)) + 1
    parser.add_argument("--log2-min", type=int, default=low, help=f"smallest log2 T (default {low})")
    parser.add_argument("--log2-max", type=int, default=20, help="largest log2 T (default 20)")
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    if not 1 <= args.log2_min <= args.log2_max <= 30:
        parser.error(f"--log2-min {args.log2_min}, --log2-max {args.log2_max}; allowed: 1 <= min <= max <= 30")
    commit = sources_commit()  # the code this process loaded, whatever changes while it runs
    pins: list[str] = []
    for log2 in range(args.log2_min, args.log2_max + 1):
        row = compute(2**log2, commit, _progress(log2))
        write([row], args.out)  # one horizon at a time: a run cut short keeps what finished
        print(f"T = 2^{log2}: max {row.var_max:.6g} at step {row.var_argmax}, mean {row.var_mean:.6g}, "
              f"at T {row.var_at_horizon:.6g}; {row.cpu_seconds:.1f} CPU s, commit {row.commit}", flush=True)
        pins.append(pinned_line(row))
    print(f"{args.out} is read only at horizons whose digest PINNED holds; once the rows are checked, put these lines "
          "into PINNED (src/dpstream/counters/normalised_rows.py):", *pins, sep="\n")


if __name__ == "__main__":
    main()
