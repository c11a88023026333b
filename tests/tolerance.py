"""Recorded numbers against recomputed ones: exact where exactness is portable, a relative tolerance where not.

Integers, counts, hashes, strings (verdict words, store keys, labels), booleans and None compare exactly. Floats compare
with the relative tolerance ``REL_TOL``: the same code on another CPU or another build of numpy/libm may round
differently in the last place (a float sum's order changes with the SIMD width numpy's loops use, libm's exp/log
differ by an ulp between implementations, numba/LLVM may fuse a multiply-add), so a recorded float is reproducible
only to a few ulps, never bit for bit. 1e-9 is ~10^7 ulps at double precision: far wider than rounding drift through
these short computations (tens of operations per value), far narrower than any change of method or seed (which
moves a value at its first digits). NaN equals NaN (a row holds NaN where a metric is undefined).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

REL_TOL = 1e-9  # rounding drift between machines (summation order, SIMD width, libm), see the module docstring


def same(recorded: Any, now: Any, rel_tol: float = REL_TOL) -> bool:
    """Whether ``now`` reproduces ``recorded``: floats within ``rel_tol`` (NaN == NaN), everything else exactly.

    Lists and tuples compare element by element with the same rule; a bool is never a number here.
    """
    if isinstance(recorded, (list, tuple)) and isinstance(now, (list, tuple)):
        return len(recorded) == len(now) and all(same(a, b, rel_tol) for a, b in zip(recorded, now, strict=True))
    if isinstance(recorded, float) and isinstance(now, float):
        if math.isnan(recorded) or math.isnan(now):
            return math.isnan(recorded) and math.isnan(now)
        return math.isclose(recorded, now, rel_tol=rel_tol, abs_tol=0.0)
    return type(recorded) is type(now) and recorded == now


def differences(recorded: Mapping[str, Any], now: Mapping[str, Any], ignore: Iterable[str] = (),
                rel_tol: float = REL_TOL) -> dict[str, tuple[Any, Any]]:
    """Column by column, the (recorded, now) pairs that differ under ``same``; a column missing on one side differs.

    Columns in ``ignore`` (e.g. the environment columns, which record where a row was computed) are left out.
    """
    skip = set(ignore)
    columns = sorted((set(recorded) | set(now)) - skip, key=str)
    missing = object()
    out = {}
    for c in columns:
        a, b = recorded.get(c, missing), now.get(c, missing)
        if a is missing or b is missing or not same(a, b, rel_tol):
            out[c] = (None if a is missing else a, None if b is missing else b)
    return out
