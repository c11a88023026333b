"""Workloads and data of dpstream.query_release: ternary transform, marginals, halfspaces, analysts, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpstream.query_release import (
    Conjunctions,
    KWayMarginals,
    MatrixWorkload,
    assign_analysts,
    fair_affairs,
    histogram,
    product_mixture,
    sparse_halfspaces,
    ternary_transform,
)
from dpstream.query_release.data import check_dense


def brute_force_conjunctions(hist: np.ndarray, d: int) -> np.ndarray:
    """q(h) for every ternary conjunction by enumerating records (digit 2 = any)."""
    bits = np.array(list(itertools.product([0, 1], repeat=d)))
    out = []
    for digits in itertools.product([0, 1, 2], repeat=d):
        digits = np.array(digits)
        match = np.all((digits == 2) | (bits == digits), axis=1)
        out.append(hist[match].sum())
    return np.array(out)


@pytest.mark.parametrize("d", [1, 3, 5])
def test_ternary_transform_matches_brute_force(d: int) -> None:
    hist = np.random.default_rng(d).random(2**d)
    np.testing.assert_allclose(ternary_transform(hist, d), brute_force_conjunctions(hist, d), atol=1e-12)


def test_conjunction_point_values_and_universe_vectors_agree_with_transform() -> None:
    d = 4
    work = Conjunctions(d)
    hist = np.random.default_rng(1).random(2**d)
    full = np.stack([work.at_record(x) for x in range(2**d)], axis=1)  # (3^d, 2^d)
    np.testing.assert_allclose(full @ hist, work.answers(hist), atol=1e-12)
    for j in (0, 17, 3**d - 1):
        np.testing.assert_array_equal(work.on_universe(j), full[j])


@pytest.mark.parametrize("d", [1, 4])
def test_conjunction_point_values_match_brute_force(d: int) -> None:
    for x in range(2**d):
        point = np.zeros(2**d)
        point[x] = 1.0
        np.testing.assert_array_equal(Conjunctions(d).at_record(x), brute_force_conjunctions(point, d))


@pytest.mark.parametrize("index", [None, "marginals", "subset", "repeats"])
def test_adding_a_record_equals_adding_its_point_values(index: str | None) -> None:
    d = 5
    full = Conjunctions(d)
    work = {None: full, "marginals": KWayMarginals(d, 2), "subset": full.restrict(np.array([200, 3, 77, 150])),
            "repeats": full.restrict(np.array([4, 242, 4, 0, 121]))}[index]
    got = np.zeros(work.n_queries)
    want = np.zeros(work.n_queries)
    for x in (0, 7, 31, 7, 18):
        work.add_at_record(x, got)
        want += work.at_record(x)
    np.testing.assert_array_equal(got, want)  # sums of 0/1 values: exact
    assert want.max() >= 2  # record 7 twice: some query counted twice


def test_kway_marginals_count_and_values() -> None:
    d, k = 5, 2
    work = KWayMarginals(d, k)
    assert work.n_queries == 10 * 4  # C(5, 2) 2^2
    hist = histogram(product_mixture(300, d, seed=0), d)
    # every k-way marginal table sums to 1
    assert work.answers(hist).sum() == pytest.approx(10.0)


def test_halfspaces_are_zero_one_queries() -> None:
    work = sparse_halfspaces(6, 50, sparsity=2, seed=0)
    assert work.values.shape == (50, 64)
    assert set(np.unique(work.values)) <= {0.0, 1.0}


def test_rejects_queries_outside_unit_interval() -> None:
    values = np.zeros((2, 8))
    values[1, 3] = 1.5
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        MatrixWorkload(values)
    values[1, 3] = -0.1
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        MatrixWorkload(values)


def test_rejects_d_too_large_for_dense_histogram_naming_memory() -> None:
    with pytest.raises(ValueError, match=r"d = 40 is too large.*GiB"):
        check_dense(40)
    with pytest.raises(ValueError, match=r"3\^20 array: it would need .* GiB"):
        Conjunctions(20)


def test_analysts_partition_the_workload() -> None:
    owner = assign_analysts(100, 7, seed=3)
    assert owner.shape == (100,)
    assert set(owner) == set(range(7))
    with pytest.raises(ValueError, match="m \\(analysts\\) must be <= n_queries"):
        assign_analysts(3, 5)


def test_product_mixture_is_seeded_and_in_range() -> None:
    a, b = product_mixture(500, 6, seed=11), product_mixture(500, 6, seed=11)
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 64
    assert histogram(a, 6).sum() == pytest.approx(1.0)


def test_fair_affairs_real_data_binarised() -> None:
    records = fair_affairs(1000, d=12, seed=0)
    hist = histogram(records, 12)
    marg = ternary_transform(hist, 12).reshape((3,) * 12)
    first = marg[(1,) + (2,) * 11]  # share with any affair
    assert 0.2 < first < 0.5  # 2053 of 6366 rows report affairs > 0 (32%)
    with pytest.raises(ValueError, match="n must be <= 6366"):
        fair_affairs(7000)
