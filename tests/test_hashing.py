"""Claims about dpstream.hashing: exact Mersenne arithmetic, stable canonical keys, pairwise independence."""

import numpy as np
import pytest
import xxhash
from scipy import stats

from dpstream.hashing import (
    MERSENNE_P,
    affine_mod_p,
    bucket,
    bucket_many,
    canonical_key,
    canonical_keys,
    draw_hash_params,
)

P = MERSENNE_P
Z_1E6 = stats.norm.isf(0.5e-6)  # two-sided normal quantile at p = 1e-6 (about 4.89)


def _xxh_key(data: bytes) -> int:
    return xxhash.xxh64_intdigest(data) % P


def test_affine_mod_p_matches_big_integer_arithmetic():
    rng = np.random.default_rng(1)
    a = rng.integers(1, P, 3000, dtype=np.uint64)
    b = rng.integers(0, P, 3000, dtype=np.uint64)
    x = rng.integers(0, P, 3000, dtype=np.uint64)
    a[:4] = [P - 1, P - 1, 1, 2**32]
    b[:4] = [P - 1, 0, P - 1, 2**61 - 2]
    x[:4] = [P - 1, P - 1, 0, 2**32 - 1]
    for ak, bk, xk in zip(a, b, x, strict=True):
        assert int(affine_mod_p(ak, bk, xk)) == (int(ak) * int(xk) + int(bk)) % P


def test_bucket_many_equals_formula_for_every_row():
    params = draw_hash_params(4, 3)
    keys = np.random.default_rng(2).integers(0, P, 500, dtype=np.uint64)
    cols, signs = bucket_many(params, keys, 37)
    for i in range(4):
        a, b, ga, gb = (int(v) for v in params[i])
        assert cols[i].tolist() == [((a * int(x) + b) % P) % 37 for x in keys]
        assert signs[i].tolist() == [1 - 2 * (((ga * int(x) + gb) % P) & 1) for x in keys]


@pytest.mark.parametrize("width", [1, 2, 3, 55, 2000, 65_536, 1_000_003, 2**31 - 1, 2**40 + 5])
def test_division_free_mod_width_is_exact(width):
    # with a = 1, b = 0 the bucket is x mod width itself: compare the float-reciprocal reduction with %
    keys = np.random.default_rng(width).integers(0, P, 200_000, dtype=np.uint64)
    keys[:4] = [0, 1, P - 1, (P - 1) // width * width]
    cols, _ = bucket_many(np.array([[1, 0, 1, 0]], dtype=np.uint64), keys, width)
    assert np.array_equal(cols[0], (keys % np.uint64(width)).astype(np.int64))
    assert int(bucket(np.uint64(1), np.uint64(0), np.uint64(P - 1), width)) == (P - 1) % width


def test_integer_keys_below_p_are_their_own_canonical_key():
    keys = np.array([0, 1, 12345, P - 1], dtype=np.int64)
    assert canonical_keys(keys).tolist() == keys.tolist()
    assert canonical_keys(keys.astype(np.uint64)).tolist() == keys.tolist()
    assert [canonical_key(int(k)) for k in keys] == keys.tolist()
    assert canonical_key(np.int32(7)) == 7


def test_out_of_range_integers_go_through_xxh64_of_8_byte_twos_complement():
    rng = np.random.default_rng(3)
    signed = np.concatenate([[-1, -(2**63), P, 2**63 - 1], rng.integers(-(2**63), 0, 200)]).astype(np.int64)
    expected = [_xxh_key(int(k).to_bytes(8, "little", signed=True)) for k in signed]
    assert canonical_keys(signed).tolist() == expected
    assert [canonical_key(int(k)) for k in signed] == expected
    unsigned = rng.integers(P, 2**64, 200, dtype=np.uint64, endpoint=False)
    expected_u = [_xxh_key(int(k).to_bytes(8, "little")) for k in unsigned]
    assert canonical_keys(unsigned).tolist() == expected_u
    assert [canonical_key(int(k)) for k in unsigned] == expected_u


def test_integers_beyond_64_bits_use_their_signed_bytes():
    for k in (2**64, 2**70 + 5, -(2**63) - 1, -(2**100)):
        expected = _xxh_key(k.to_bytes(k.bit_length() // 8 + 1, "little", signed=True))
        assert canonical_key(k) == expected
        assert canonical_keys(np.array([k], dtype=object)).tolist() == [expected]


def test_str_and_bytes_keys_hash_their_utf8_bytes_stably():
    words = ["", "a", "heavy hitter", "日本"]
    expected = [_xxh_key(w.encode("utf-8")) for w in words]
    assert [canonical_key(w) for w in words] == expected
    assert canonical_keys(np.array(words)).tolist() == expected
    assert canonical_keys(words).tolist() == expected
    assert canonical_key(b"\x00\x01") == _xxh_key(b"\x00\x01")
    assert all(0 <= k < P for k in expected)


@pytest.mark.parametrize("bad", [1.5, None, True, (1, 2)])
def test_rejects_keys_that_are_not_int_str_or_bytes(bad):
    with pytest.raises(TypeError, match="keys must be integers, str or bytes"):
        canonical_key(bad)


def test_rejects_float_key_arrays():
    with pytest.raises(TypeError, match="float64"):
        canonical_keys(np.array([1.0, 2.0]))


def test_hash_params_are_seeded_and_in_range():
    a = draw_hash_params(5, 11)
    assert np.array_equal(a, draw_hash_params(5, 11))
    assert not np.array_equal(a, draw_hash_params(5, 12))
    assert a.dtype == np.uint64 and a.shape == (5, 4)
    assert (a[:, 0::2] >= 1).all() and (a < P).all()


@pytest.mark.parametrize(("x", "y"), [(1, 2), (0, 2**40), (P - 2, P - 1), (17, 17 + 64)])
@pytest.mark.parametrize("width", [10, 64])
def test_pair_collides_with_probability_one_over_width(x, y, width):
    # Over 20 000 independent (a, b), a fixed pair x != y collides with probability 1/w - O(1/p) (Carter-Wegman):
    # the count is Binomial(20 000, 1/w); accept within the two-sided normal quantile at p = 1e-6.
    n = 20_000
    params = draw_hash_params(n, 100 + width)
    cols, signs = bucket_many(params, np.array([x, y], dtype=np.uint64), width)
    collisions = int((cols[:, 0] == cols[:, 1]).sum())
    q = 1 / width
    assert abs(collisions - n * q) <= Z_1E6 * np.sqrt(n * q * (1 - q))
    # the sign hashes of x and y agree with probability 1/2 (pairwise independent signs)
    agree = int((signs[:, 0] == signs[:, 1]).sum())
    assert abs(agree - n / 2) <= Z_1E6 * np.sqrt(n / 4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_buckets_are_uniform_chi_square(seed):
    # 100 000 keys (consecutive integers and random strings) into 64 buckets; chi-square with 63 degrees of
    # freedom must stay below its p = 1e-6 upper quantile.
    params = draw_hash_params(1, seed)
    rng = np.random.default_rng(seed)
    keys = np.concatenate(
        [np.arange(50_000, dtype=np.uint64), canonical_keys(rng.integers(0, 2**62, 50_000).astype(str))]
    )
    cols, signs = bucket_many(params, keys, 64)
    counts = np.bincount(cols[0], minlength=64)
    chi2 = ((counts - keys.size / 64) ** 2 / (keys.size / 64)).sum()
    assert chi2 < stats.chi2.isf(1e-6, 63)
    plus = int((signs[0] == 1).sum())
    assert abs(plus - keys.size / 2) <= Z_1E6 * np.sqrt(keys.size / 4)
