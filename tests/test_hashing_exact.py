"""Claims about the exact integer arithmetic of dpstream.hashing's mod-p family.

``affine_mod_p`` equals (a x + b) mod p of Python integers, and ``mod_small_width`` / ``mod_width`` / ``bucket``
equal Python's ``%``, on random and edge inputs over their whole stated domains (a, b, x, v < 2^61; widths up to
``SMALL_WIDTH`` and beyond it). The sketch kernel's row updates equal ``np.add.at`` of the same columns for every
depth (three rows per pass plus the rest).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpstream.hashing import (
    MERSENNE_P,
    SMALL_WIDTH,
    affine_mod_p,
    bucket,
    bucket_many,
    draw_hash_params,
    mod_small_width,
    mod_width,
    small_width_constants,
)
from dpstream.sketches._kernels import exact_extend

P = MERSENNE_P
TOP = 1 << 61  # a, b, x and v range over [0, 2^61)
EDGES = [0, 1, 2, 7, 8, (1 << 29) - 1, 1 << 29, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, (1 << 61) - (1 << 32),
         P - 2, P - 1, P]
WIDTH_EDGES = [1, 2, 3, 55, 2000, 6666, (1 << 20) - 1, SMALL_WIDTH, SMALL_WIDTH + 1, (1 << 32) - 1, (1 << 32) + 1,
               (1 << 51) + 1]

words = st.one_of(st.sampled_from(EDGES), st.integers(0, TOP - 1))
small_widths = st.one_of(st.sampled_from([w for w in WIDTH_EDGES if w <= SMALL_WIDTH]), st.integers(1, SMALL_WIDTH))
any_widths = st.one_of(st.sampled_from(WIDTH_EDGES), st.integers(1, (1 << 52) - 1))


@settings(max_examples=3000, deadline=None)
@given(a=words, b=words, x=words)
def test_affine_mod_p_is_python_integer_arithmetic(a, b, x):
    assert int(affine_mod_p(np.uint64(a), np.uint64(b), np.uint64(x))) == (a * x + b) % P


@settings(max_examples=3000, deadline=None)
@given(v=words, width=small_widths)
def test_mod_small_width_is_python_modulo(v, width):
    c32, inv_up = small_width_constants(width)
    assert int(mod_small_width(np.uint64(v), width, c32, inv_up)) == v % width


@settings(max_examples=2000, deadline=None)
@given(v=words, width=any_widths)
def test_mod_width_is_python_modulo(v, width):
    assert int(mod_width(np.uint64(v), width, 1.0 / width)) == v % width


@settings(max_examples=2000, deadline=None)
@given(a=words, b=words, x=words, width=any_widths)
def test_bucket_is_the_formula_on_both_sides_of_small_width(a, b, x, width):
    assert int(bucket(np.uint64(a), np.uint64(b), np.uint64(x), width)) == ((a * x + b) % P) % width


@pytest.mark.parametrize("width", [1, 2, 3, 1000, 2000, 65_521, 999_983, (1 << 20) - 1, SMALL_WIDTH])
def test_mod_small_width_at_the_largest_intermediate_and_at_multiples_of_the_width(width):
    # the reduction first maps v to t = (v >> 32)(2^32 mod w) + (v mod 2^32) < 2^50 and takes one float quotient of
    # t: its only risk is t just below or at a multiple of w, where the quotient rounds. Take the largest high word
    # (2^29 - 1, the largest t) and the low words that put t at j w - 1, j w and j w + 1 for the top multiples j.
    c32, inv_up = small_width_constants(width)
    high = (1 << 29) - 1
    base = high * int(c32)
    top = base + (1 << 32) - 1
    targets = {t for j in range(top // width - 3, top // width + 1) for t in (j * width - 1, j * width, j * width + 1)}
    values = [(high << 32) + t - base for t in sorted(targets) if 0 <= t - base < 1 << 32]
    values += [j * width + r for j in ((TOP - 1) // width, (TOP - 1) // width - 1) for r in (0, width - 1)]
    values = [v for v in values if 0 <= v < TOP]
    assert values
    for v in values:
        assert int(mod_small_width(np.uint64(v), width, c32, inv_up)) == v % width, v


@pytest.mark.parametrize("width", [1, 7, 2000, 1_000_003, SMALL_WIDTH, SMALL_WIDTH + 1, (1 << 31) - 1])
def test_bucket_many_equals_python_integers_on_a_million_random_keys(width):
    rng = np.random.default_rng(width)
    params = draw_hash_params(2, width)
    keys = rng.integers(0, P, 1_000_000, dtype=np.uint64)
    keys[:len(EDGES) - 1] = EDGES[:-1]  # every edge below p (p itself is not a canonical key)
    cols, signs = bucket_many(params, keys, width)
    sample = rng.choice(keys.size, 20_000, replace=False)
    sample[:len(EDGES) - 1] = np.arange(len(EDGES) - 1)
    for i in range(2):
        a, b, ga, gb = (int(v) for v in params[i])
        assert [int(c) for c in cols[i, sample]] == [((a * int(keys[k]) + b) % P) % width for k in sample]
        assert [int(s) for s in signs[i, sample]] == [1 - 2 * (((ga * int(keys[k]) + gb) % P) & 1) for k in sample]


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("signed", [False, True])
def test_exact_extend_adds_each_rows_increment_at_its_column_for_every_depth(depth, signed):
    keys = np.random.default_rng(depth).zipf(1.3, 5000).astype(np.uint64) % np.uint64(P)
    params = draw_hash_params(depth, 5)
    counts = np.zeros((depth, 97), dtype=np.int64)
    exact_extend(keys, params, signed, counts)
    cols, signs = bucket_many(params, keys, 97)
    expected = np.zeros_like(counts)
    for i in range(depth):
        np.add.at(expected[i], cols[i], signs[i] if signed else 1)
    assert np.array_equal(counts, expected)
