"""Queries in vectorised form: linear (counting) queries over atoms, or precomputed answers.

A database is a vector ``counts`` over atoms (groups of records that every query treats alike; one
atom per record is the plain case). A linear query f_i: X -> [0, 1] is a row of an (m, A) matrix of
f_i(x) per atom, so f_i(S) = Q[i] @ counts; held as scipy CSR so sparse designs cost O(nnz).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse


@dataclass(frozen=True)
class LinearQueries:
    """m linear queries f_i(S) = sum_x f_i(x) over A atoms, f_i(x) in [0, 1] (rejected otherwise)."""

    matrix: sparse.csr_matrix

    def __post_init__(self) -> None:
        """Reject values f_i(x) that are not finite or lie outside [0, 1]."""
        data = self.matrix.data
        if data.size and (not np.all(np.isfinite(data)) or data.min() < 0.0 or data.max() > 1.0):
            bad = data[~(np.isfinite(data) & (data >= 0.0) & (data <= 1.0))][0]
            raise ValueError(f"linear query values f_i(x) must lie in [0, 1], got {bad!r}")

    @classmethod
    def from_matrix(cls, matrix: np.ndarray | sparse.spmatrix) -> LinearQueries:
        """Build from a dense or sparse (m, A) matrix of f_i(x)."""
        if not sparse.issparse(matrix):
            matrix = np.asarray(matrix, dtype=float)
            if matrix.ndim != 2:
                raise ValueError(
                    f"linear queries must be an (m, n_atoms) matrix of f_i(x), got an array of shape {matrix.shape}"
                )
        csr = sparse.csr_matrix(matrix, dtype=float)
        csr.sort_indices()
        return cls(csr)

    @property
    def m(self) -> int:
        """Number of queries."""
        return self.matrix.shape[0]

    @property
    def n_atoms(self) -> int:
        """Number of atoms (columns)."""
        return self.matrix.shape[1]

    def answers(self, counts: np.ndarray) -> np.ndarray:
        """f_i(S) for every query on the database ``counts``."""
        return self.matrix @ counts


def as_linear_queries(queries: object, who: str) -> LinearQueries:
    """``queries`` as LinearQueries, rejecting anything that is not a linear query matrix (names ``who``)."""
    if isinstance(queries, LinearQueries):
        return queries
    if sparse.issparse(queries) or (isinstance(queries, np.ndarray) and queries.ndim == 2):
        return LinearQueries.from_matrix(queries)
    shape = getattr(queries, "shape", None)
    raise ValueError(
        f"{who} requires linear queries: an (m, n_atoms) matrix of f_i(x) in [0, 1] or LinearQueries; got "
        f"{type(queries).__name__}{'' if shape is None else f' of shape {shape}'} (answers of arbitrary queries "
        "are not enough: counters need f_i(x) per record)"
    )


def check_counts(counts: np.ndarray, n_atoms: int) -> np.ndarray:
    """The database as float counts per atom: finite, >= 0, one per query column."""
    counts = np.asarray(counts, dtype=float)
    if counts.shape != (n_atoms,) or not np.all(np.isfinite(counts)) or (counts < 0).any():
        raise ValueError(
            f"counts must be {n_atoms} finite non-negative record counts per atom, got shape {counts.shape}"
        )
    return counts


def _short(value: object) -> str:
    """``repr`` of a value, cut to one short line (an array's shape instead of its contents)."""
    shape = getattr(value, "shape", None)
    return f"an array of shape {shape}" if shape is not None else repr(value)[:60]


def query_answers(queries: object, counts: np.ndarray | None) -> np.ndarray:
    """Answers f_i(S) of sensitivity-1 queries: linear queries on ``counts``, or a 1-D array of answers."""
    if isinstance(queries, LinearQueries) or sparse.issparse(queries) or np.ndim(cast(ArrayLike, queries)) == 2:
        linear = as_linear_queries(queries, "query_answers")
        if counts is None:
            raise ValueError("linear queries need the database counts per atom")
        return linear.answers(check_counts(counts, linear.n_atoms))
    if counts is not None:
        hint = f" (for {counts} runs pass n_runs={counts})" if isinstance(counts, int | np.integer) else ""
        raise ValueError(f"counts is only for linear queries; these queries are plain answers and take no database, "
                         f"got counts={_short(counts)}{hint}")
    answers = np.asarray(queries, dtype=float)
    if answers.ndim != 1 or not np.all(np.isfinite(answers)):
        raise ValueError(f"query answers must be a finite 1-D array, got shape {answers.shape}")
    return answers
