"""``svt_noise="discrete_secure"``: the sparse vector family on integer queries with exact discrete Laplace noise.

Noise: the discrete Laplace of rational scale t/s >= the calibrated scale (Canonne, Kamath, Steinke, "The Discrete
Gaussian for Differential Privacy", Alg. 2), drawn with integer arithmetic only from a ChaCha20 keystream
(``dpstream.secure.laplace``), one stream per draw. Every decision compares integers.

Privacy (AboveThreshold, Sparse, NumericSparse; the SVT notes, Dwork and Roth Sec. 3.6): the proof of the continuous
SVT couples the noise of neighbouring runs by shifts (threshold noise by Delta, the TOP query's noise by 2 Delta) and
bounds the likelihood ratio of the shifted noise by exp(shift / scale). With integer answers of sensitivity Delta = 1
the shifts are integers and the discrete Laplace pmf obeys the same ratio bound at scales >= the continuous ones, so
the same (epsilon, delta) holds, for the same neighbouring relation, plus the truncation term of
``dpstream.secure.laplace`` (<= exp(-2^20) per draw). The guarantee is COMPUTATIONAL: it holds against observers who
cannot tell ChaCha20 from a random function.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from dpstream.secure.laplace import VALUE_BOUND
from dpstream.svt.queries import LinearQueries, as_linear_queries, check_counts

_EXACT_FLOAT = 1 << 53


def integer_value(value: object, name: str) -> int:
    """``value`` as an int when it is an integer of magnitude <= 2^60 (an integral float too), else a one-line error."""
    ok = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if isinstance(value, float | np.floating) and math.isfinite(value) and float(value).is_integer():
        ok = abs(float(value)) <= _EXACT_FLOAT
    if not ok or abs(int(cast(int, value))) > VALUE_BOUND:
        raise ValueError(f"svt_noise='discrete_secure' needs an integer {name} of magnitude <= 2^60, got {value!r}")
    return int(cast(int, value))


def _integer_array(values: np.ndarray, what: str) -> np.ndarray:
    """``values`` as int64 after checking they are integers of magnitude <= 2^60 (floats: exactly integral)."""
    if values.dtype.kind in "iu":
        bad = values[np.abs(values.astype(np.float64)) > VALUE_BOUND]
    else:
        finite = np.isfinite(values)
        bad = values[~finite | (values != np.round(values)) | (np.abs(np.where(finite, values, 0)) > _EXACT_FLOAT)]
    if bad.size:
        raise ValueError(f"svt_noise='discrete_secure' needs integer {what} of magnitude <= 2^60 (floats: integral, "
                         f"<= 2^53), got {bad.flat[0].item()!r}")
    return values.astype(np.int64)


def integer_counts(counts: np.ndarray, n_atoms: int) -> np.ndarray:
    """The database as int64 records per atom (``check_counts``, then integral), at most 2^60 records in all.

    The total bounds every answer of a {0, 1} query; it is summed in float64 (relative error < 2^-30 for fewer than
    2^23 atoms) and checked with that margin, so the int64 sums cannot overflow.
    """
    db = _integer_array(check_counts(counts, n_atoms), "counts per atom")
    total = float(db.sum(dtype=np.float64))
    if total > VALUE_BOUND * (1 - 2.0**-30):
        raise ValueError(f"svt_noise='discrete_secure' takes at most 2^60 records in all, got about {total:.3g}")
    return db


def integer_linear(queries: object, who: str) -> LinearQueries:
    """Linear queries whose values f_i(x) are 0 or 1 (so every answer on every database is an integer)."""
    linear = as_linear_queries(queries, who)
    data = linear.matrix.data
    bad = data[(data != 0.0) & (data != 1.0)]
    if bad.size:
        raise ValueError(f"svt_noise='discrete_secure' needs linear query values f_i(x) in {{0, 1}} (integer "
                         f"answers), got {bad[0].item()!r}")
    return linear


def integer_answers(queries: object, counts: np.ndarray | None) -> np.ndarray:
    """Integer answers (int64) of sensitivity-1 queries.

    Linear queries with f_i(x) in {0, 1} on integer counts, or a 1-D array of integer answers (the caller vouches
    that the query is integer-valued on every database).
    """
    if isinstance(queries, LinearQueries) or sparse.issparse(queries) or np.ndim(cast(ArrayLike, queries)) == 2:
        linear = integer_linear(queries, "query_answers")
        if counts is None:
            raise ValueError("linear queries need the database counts per atom")
        db = integer_counts(counts, linear.n_atoms)
        total = np.asarray(linear.matrix.astype(np.int64) @ db, dtype=np.int64)
        return _integer_array(total, "answers")
    if counts is not None:
        raise ValueError("counts is only for linear queries; these queries are plain answers and take no database")
    answers = np.asarray(queries)
    if answers.ndim != 1:
        raise ValueError(f"query answers must be a 1-D array, got shape {answers.shape}")
    if answers.dtype.kind not in "iuf":
        raise ValueError(f"svt_noise='discrete_secure' needs integer answers, got dtype {answers.dtype}")
    return _integer_array(answers, "answers")
