"""Claims about dpstream.hashing.

Exact Mersenne and multiply-shift arithmetic, stable canonical keys, pairwise independence of both families.
"""

import hashlib

import numpy as np
import pytest
import xxhash
from scipy import stats

from dpstream.hashing import (
    HASH_FAMILIES,
    MERSENNE_P,
    affine_mod_p,
    bucket,
    bucket_many,
    canonical_int64,
    canonical_key,
    canonical_keys,
    draw_hash_params,
    hash_rows,
    multiply_shift,
)
from dpstream.sketches._kernels import exact_extend

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


def test_a_mixed_array_keeps_words_below_p_and_hashes_the_others():
    rng = np.random.default_rng(4)
    signed = rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64)
    signed[:6] = [P - 1, P, -1, 0, P + 1, P - 2]
    signed[rng.random(5000) < 0.5] &= P >> 1  # about half the words in [0, p)
    expected = [canonical_key(int(k)) for k in signed]
    assert canonical_keys(signed).tolist() == expected
    assert canonical_keys(signed.view(np.uint64)).tolist() == [canonical_key(int(k)) for k in signed.view(np.uint64)]


@pytest.mark.parametrize("where", [0, 4095, 4096, 8191, 9999])
def test_one_word_outside_p_in_any_block_is_hashed_and_in_range_keys_are_read_in_place(where):
    keys = np.arange(10_000, dtype=np.int64)  # 4096-word blocks: 2 full and a partial one
    assert np.shares_memory(canonical_keys(keys), keys)  # every word its own key: no copy
    assert canonical_int64(keys) is keys
    keys[where] = -5
    expected = [canonical_key(int(k)) for k in keys]
    out = canonical_keys(keys)
    assert out.tolist() == expected
    assert not np.shares_memory(out, keys)
    assert canonical_int64(keys).tolist() == expected


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


@pytest.mark.parametrize("family", HASH_FAMILIES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_buckets_are_uniform_chi_square(seed, family):
    # 100 000 keys (consecutive integers and random strings) into 64 buckets; chi-square with 63 degrees of
    # freedom must stay below its p = 1e-6 upper quantile.
    params = draw_hash_params(1, seed, family)
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


# ---- the multiply-shift family -------------------------------------------------------------------------------

M64 = (1 << 64) - 1


def _shift_reference(a0: int, a1: int, b: int, x: int) -> int:
    """Thorup's vector multiply-shift in Python integers: ((a0 x0 + a1 x1 + b) mod 2^64) >> 32."""
    return ((a0 * (x & 0xFFFFFFFF) + a1 * (x >> 32) + b) & M64) >> 32


def test_mod_p_outputs_are_unchanged_by_the_second_family():
    # sha256 of draw_hash_params(3, 42) and its buckets / signs of 10 000 keys at width 2000, computed on the
    # commit before the multiply-shift family was added: the default family must stay bit-identical.
    params = draw_hash_params(3, 42)
    keys = canonical_keys(np.random.default_rng(7).integers(-(2**63), 2**63 - 1, 10_000, dtype=np.int64))
    cols, signs = bucket_many(params, keys, 2000)
    digest = hashlib.sha256(params.tobytes() + cols.tobytes() + signs.tobytes()).hexdigest()
    assert digest == "787dbfe5bb79bc1d1ed065761e191f551fc8b99c842cd5bbc896baf954818971"
    assert np.array_equal(params, draw_hash_params(3, 42, family="modp"))


def test_multiply_shift_matches_python_integer_reference():
    rng = np.random.default_rng(5)
    params = draw_hash_params(6, 9, family="multiply_shift")
    params[0] = M64  # all-ones parameters: every product and sum wraps
    params[1] = [0, 0, 0, M64, 0, 1]
    keys = rng.integers(0, 2**64, 2000, dtype=np.uint64, endpoint=False)
    keys[:6] = [0, 1, 2**32 - 1, 2**32, P - 1, M64]
    for width in (1, 7, 2000, 2**31 + 3, 2**32):
        cols, signs = bucket_many(params, keys, width)
        for i in range(params.shape[0]):
            a0, a1, b, ga0, ga1, gb = (int(v) for v in params[i])
            assert cols[i].tolist() == [(_shift_reference(a0, a1, b, int(x)) * width) >> 32 for x in keys]
            assert signs[i].tolist() == [1 - 2 * (_shift_reference(ga0, ga1, gb, int(x)) >> 31) for x in keys]
    a0, a1, b = (np.uint64(v) for v in params[2, :3])
    assert int(multiply_shift(a0, a1, b, keys[7])) == _shift_reference(int(a0), int(a1), int(b), int(keys[7]))


# pairs that differ in the low word only, the high word only, both, or by a carry across the halves
SHIFT_PAIRS = [(1, 2), (0, 2**32), (2**32 - 1, 2**32), (17, 17 + 2**33), (P - 2, P - 1), (5, 5 + 64 * 2**32 + 64)]


@pytest.mark.parametrize(("x", "y"), SHIFT_PAIRS)
@pytest.mark.parametrize("width", [10, 64, 1000])
def test_multiply_shift_pair_collides_with_probability_one_over_width(x, y, width):
    # Over n independent draws of (a0, a1, b) the pair collides with probability q = sum_j (n_j / 2^32)^2 in
    # [1/w, 1/w + 2^-32] (strong universality, then (H w) >> 32 puts floor or ceil(2^32/w) values of H in each
    # bucket), so the count is Binomial(n, q); accept inside its two-sided 1e-6 quantiles (q = 1/w: the 2^-32
    # excess moves the mean by n 2^-32 < 1e-4). Signs of x and y agree with probability exactly 1/2.
    n = 100_000
    params = draw_hash_params(n, 200 + width + x % 97, family="multiply_shift")
    cols, signs = bucket_many(params, np.array([x, y], dtype=np.uint64), width)
    low, high = stats.binom.interval(1 - 1e-6, n, 1 / width)
    assert low <= int((cols[:, 0] == cols[:, 1]).sum()) <= high
    low, high = stats.binom.interval(1 - 1e-6, n, 0.5)
    assert low <= int((signs[:, 0] == signs[:, 1]).sum()) <= high


def test_multiply_shift_signs_and_buckets_of_one_key_are_uniform_over_seeds():
    # Strong universality: for a fixed key, H is uniform over draws, so the sign is +1 with probability exactly 1/2
    # (Binomial(n, 1/2), 1e-6 quantiles) and the bucket is uniform on 64 (chi-square, 63 df, p = 1e-6 quantile).
    n = 100_000
    params = draw_hash_params(n, 77, family="multiply_shift")
    cols, signs = bucket_many(params, np.array([123_456_789_012], dtype=np.uint64), 64)
    low, high = stats.binom.interval(1 - 1e-6, n, 0.5)
    assert low <= int((signs[:, 0] == 1).sum()) <= high
    counts = np.bincount(cols[:, 0], minlength=64)
    assert ((counts - n / 64) ** 2 / (n / 64)).sum() < stats.chi2.isf(1e-6, 63)


@pytest.mark.parametrize("family", HASH_FAMILIES)
@pytest.mark.parametrize("signed", [True, False])
def test_hash_rows_on_a_block_equals_bucket_many(family, signed):
    params = draw_hash_params(3, 4, family)
    keys = canonical_keys(np.random.default_rng(4).integers(0, 2**62, 600))
    cols_all, signs_all = bucket_many(params, keys, 333)
    cols = np.full((3, 256), -7, dtype=np.int64)
    incs = np.full((3, 256), -7, dtype=np.int64)
    hash_rows(params, keys, 300, 200, 333, signed, cols, incs)
    assert np.array_equal(cols[:, :200], cols_all[:, 300:500])
    assert np.array_equal(incs[:, :200], signs_all[:, 300:500] if signed else np.ones((3, 200), dtype=np.int64))
    assert (cols[:, 200:] == -7).all() and (incs[:, 200:] == -7).all()


@pytest.mark.parametrize("signed", [True, False])
def test_sketch_kernel_takes_multiply_shift_params_unchanged(signed):
    # The sketch kernels call hash_rows with whatever params they hold: with (depth, 6) params the non-private
    # count is the bincount of the multiply-shift buckets (times the signs for CS).
    params = draw_hash_params(3, 8, family="multiply_shift")
    keys = canonical_keys(np.random.default_rng(8).zipf(1.3, 5000))
    counts = np.zeros((3, 50), dtype=np.int64)
    exact_extend(keys, params, signed, counts)
    cols, signs = bucket_many(params, keys, 50)
    for i in range(3):
        weights = signs[i] if signed else np.ones(keys.size)
        assert np.array_equal(counts[i], np.bincount(cols[i], weights=weights, minlength=50).astype(np.int64))


def test_hash_params_of_each_family_have_their_shape_and_seed():
    ms = draw_hash_params(5, 11, family="multiply_shift")
    assert ms.dtype == np.uint64 and ms.shape == (5, 6)
    assert np.array_equal(ms, draw_hash_params(5, 11, family="multiply_shift"))
    assert not np.array_equal(ms, draw_hash_params(5, 12, family="multiply_shift"))
    assert (ms >= 2**61).any()  # full 64-bit range, not the mod-p range


def test_rejects_unknown_hash_family_and_bad_depth():
    with pytest.raises(ValueError, match="unknown hash family 'tabulation'; allowed: modp, multiply_shift"):
        draw_hash_params(3, 0, family="tabulation")
    with pytest.raises(ValueError, match="depth must be an integer >= 1, got 0"):
        draw_hash_params(0, 0)


def test_multiply_shift_rejects_width_above_2_to_the_32():
    with pytest.raises(ValueError, match="width <= 2"):
        bucket_many(draw_hash_params(1, 0, family="multiply_shift"), np.arange(3, dtype=np.uint64), 2**32 + 1)
