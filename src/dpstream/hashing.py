"""Seeded pairwise-independent hashing for sketches, in two families (``HASH_FAMILIES``).

- ``modp`` (default): Carter-Wegman h(x) = ((a x + b) mod p) mod w, p = 2^61 - 1.
- ``multiply_shift``: Dietzfelbinger's strongly universal vector multiply-add-shift (no prime, no division):
  h(x) = ((a0 x0 + a1 x1 + b) mod 2^64) >> 32 on the 32-bit halves of x, then bucket (h w) >> 32.

Keys are first made *canonical*: an integer in [0, p).

- Integers in [0, p) are their own canonical key, so they hash exactly as the formula says.
- Integers in [-2^63, 2^64) outside [0, p) are written as 8 little-endian bytes (two's complement;
  so -1 and 2^64 - 1 share a key), other integers as their shortest signed little-endian bytes
  (9 bytes or more), str as UTF-8, bytes as they are; the canonical key is
  ``xxhash.xxh64_intdigest(bytes) mod p`` (stable 64-bit xxHash, seed 0).

``a x + b mod p`` is computed in uint64 with the Mersenne reduction (32-bit limbs), ``mod width`` exactly with a
float reciprocal (no integer division), multiply-shift with wrapping uint64 products, so the same functions run
inside numba kernels (``affine_mod_p``, ``bucket``, ``sign``, ``multiply_shift``, ``hash_rows``) and over arrays
(``bucket_many``, ``canonical_keys``). The
parameters of each row are drawn from the sketch's seed (``draw_hash_params``); they are public
configuration, not privacy noise. The kernels tell the family from the parameter array's shape:
(depth, 4) is mod-p, (depth, 6) is multiply-shift.
"""

from __future__ import annotations

import numpy as np
import xxhash
from numba import njit

from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.validation import check_choice, check_positive_int

MERSENNE_P = (1 << 61) - 1
"""The prime p = 2^61 - 1 of the hash family."""

HASH_FAMILIES = ("modp", "multiply_shift")
"""Hash families of ``draw_hash_params``: Carter-Wegman mod 2^61 - 1 (default) or multiply-add-shift."""

PARAMS_PER_ROW = {"modp": 4, "multiply_shift": 6}
"""Columns of the parameter array per family: (a, b, ga, gb) or (a0, a1, b, ga0, ga1, gb)."""

SMALL_WIDTH = 1 << 20
"""Widths up to this take the cheaper exact reduction ``mod_small_width`` (wider ones ``mod_width``)."""

MAX_SHIFT_WIDTH = 1 << 32
"""Largest width of the multiply-shift family (the bucket is (h w) >> 32 of a 32-bit h, exact in uint64)."""

_SHIFT_COLUMNS = PARAMS_PER_ROW["multiply_shift"]

_P = np.uint64(MERSENNE_P)
_LOW32 = np.uint64(0xFFFFFFFF)
_LOW29 = np.uint64((1 << 29) - 1)
_ONE = np.uint64(1)
_S3 = np.uint64(3)
_S29 = np.uint64(29)
_S32 = np.uint64(32)
_S61 = np.uint64(61)

# xxHash64 primes (https://github.com/Cyan4973/xxHash, XXH64 specification).
_XXP1 = np.uint64(0x9E3779B185EBCA87)
_XXP2 = np.uint64(0xC2B2AE3D27D4EB4F)
_XXP3 = np.uint64(0x165667B19E3779F9)
_XXP4 = np.uint64(0x85EBCA77C2B2AE63)
_XXP5 = np.uint64(0x27D4EB2F165667C5)
_EIGHT = np.uint64(8)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S33 = np.uint64(33)
_S37 = np.uint64(37)

_INT64_MIN = -(1 << 63)
_UINT64_END = 1 << 64


@njit(cache=True, inline="always")
def _fold(s: np.uint64) -> np.uint64:
    """Reduce s mod p up to one extra p: (s & p) + (s >> 61) (2^61 = 1 mod p)."""
    return (s & _P) + (s >> _S61)


@njit(cache=True, inline="always")
def affine_mod_p(a: np.uint64, b: np.uint64, x: np.uint64) -> np.uint64:
    """(a x + b) mod p for a, b, x in [0, 2^61), exactly, in uint64 arithmetic (four 32 x 32-bit products).

    With a = a1 2^32 + a0 and x = x1 2^32 + x0 (a1, x1 < 2^29): a x = a1 x1 2^64 + m 2^32 + l0 with l = a0 x0,
    l0 = l mod 2^32 and m = a1 x0 + a0 x1 + (l >> 32) < 2^62 (the high half of l carried into m). Mod p,
    2^64 = 8 and m 2^32 = (m >> 29) + (m mod 2^29) 2^32, and (m mod 2^29) 2^32 + l0 is one 61-bit word
    (disjoint bits). The four terms sum below 2^61 + 2^33 + 2^61 + 2^61 < 2^63 (no wrap); one fold
    (s & p) + (s >> 61) <= p + 3 < 2p, and one conditional subtraction of p ends in [0, p).
    """
    a1 = a >> _S32
    a0 = a & _LOW32
    x1 = x >> _S32
    x0 = x & _LOW32
    low = a0 * x0
    mid = a1 * x0 + a0 * x1 + (low >> _S32)
    s = ((a1 * x1) << _S3) + (mid >> _S29) + (((mid & _LOW29) << _S32) | (low & _LOW32)) + b
    s = _fold(s)
    if s >= _P:
        s -= _P
    return s


@njit(cache=True, inline="always")
def mod_width(v: np.uint64, width: np.int64, inv: float) -> np.int64:
    """Exact v mod width for v < 2^61 and width < 2^52 (``inv`` = 1.0 / width), without an integer division.

    q = trunc(fl(v) * inv) is within 768 / width + 1 of v / width (three roundings of 2^-53), so
    r = v - q width has |r| <= width + 768; one more float quotient of the small r and a final +-width
    correction land exactly in [0, width). Division-free loops vectorise; tests compare with ``%``.
    ``mod_small_width`` is cheaper for widths up to ``SMALL_WIDTH``.
    """
    q = np.uint64(np.float64(v) * inv)
    r = np.int64(v - q * np.uint64(width))
    r -= np.int64(np.floor(np.float64(r) * inv)) * width
    if r < 0:
        r += width
    elif r >= width:
        r -= width
    return r


@njit(cache=True, inline="always")
def small_width_constants(width: np.int64) -> tuple[np.uint64, float]:
    """(2^32 mod width, the double just above 1 / width): the constants of ``mod_small_width``."""
    return np.uint64((1 << 32) % width), np.nextafter(1.0 / width, np.inf)


@njit(cache=True, inline="always")
def mod_small_width(v: np.uint64, width: np.int64, c32: np.uint64, inv_up: float) -> np.int64:
    """Exact v mod width for v < 2^61 and width <= ``SMALL_WIDTH`` = 2^20, with one float quotient, no correction.

    ``(c32, inv_up)`` = ``small_width_constants(width)``. t = (v >> 32) c32 + (v mod 2^32) = v mod width and
    t < 2^29 2^20 + 2^32 < 2^50, so t is exact as a double. inv_up is fl(1/w) plus one ulp:
    1/w < inv_up < (1/w)(1 + 2^-51). For t = k w + j (0 <= j < w), y = t inv_up lies in
    [k, k + 1 - 1/(2w)): rounding y to a double keeps it >= k (k is a double) and below k + 1 (the gap
    1/(2w) exceeds half a double's spacing near k + 1, (k + 1) 2^-53, as (k + 1) w <= t + w < 2^52), so
    trunc(fl(y)) = k exactly and t - k w is v mod width.
    """
    t = (v >> _S32) * c32 + (v & _LOW32)
    q = np.uint64(np.float64(t) * inv_up)
    return np.int64(t - q * np.uint64(width))


@njit(cache=True, inline="always")
def bucket(a: np.uint64, b: np.uint64, x: np.uint64, width: np.int64) -> np.int64:
    """h(x) = ((a x + b) mod p) mod width, a column index in [0, width)."""
    if width <= SMALL_WIDTH:
        c32, inv_up = small_width_constants(width)
        return mod_small_width(affine_mod_p(a, b, x), width, c32, inv_up)
    return mod_width(affine_mod_p(a, b, x), width, 1.0 / width)


@njit(cache=True, inline="always")
def sign(a: np.uint64, b: np.uint64, x: np.uint64) -> np.int64:
    """g(x) = +1 or -1 from the lowest bit of (a x + b) mod p (bias 1/p towards +1)."""
    return np.int64(1) - np.int64(2) * np.int64(affine_mod_p(a, b, x) & _ONE)


@njit(cache=True, inline="always")
def multiply_shift(a0: np.uint64, a1: np.uint64, b: np.uint64, x: np.uint64) -> np.uint64:
    """h(x) = ((a0 x0 + a1 x1 + b) mod 2^64) >> 32, x = x1 2^32 + x0: a 32-bit value.

    Vector multiply-add-shift of Dietzfelbinger (1996, "Universal hashing and k-wise independent random
    variables via integer arithmetic without primes"), as stated by Thorup (2015, "High speed hashing for
    integers and strings", arXiv:1504.06804, Sec. 3, strong universality of vector multiply-shift): for keys
    of d words of wbar bits, l output bits and w >= wbar + l - 1, with a_i, b uniform in [2^w],
    ((sum a_i x_i + b) mod 2^w) >> (w - l) is strongly universal: any two distinct keys get independent,
    uniform l-bit hashes. Here d = 2, wbar = l = 32, w = 64 >= 63; uint64 products wrap mod 2^64.
    """
    return (a0 * (x & _LOW32) + a1 * (x >> _S32) + b) >> _S32


@njit(cache=True, inline="always")
def _modp_columns(a: np.uint64, b: np.uint64, block: np.ndarray, width: int, row: np.ndarray) -> None:
    """row[k] = ((a x + b) mod p) mod width for x = block[k]: one loop per width range, so it vectorises."""
    if width <= SMALL_WIDTH:
        c32, inv_up = small_width_constants(width)  # type: ignore[arg-type]
        for k in range(block.shape[0]):
            row[k] = mod_small_width(affine_mod_p(a, b, block[k]), width, c32, inv_up)  # type: ignore[arg-type]
    else:
        inv = 1.0 / width
        for k in range(block.shape[0]):
            # compiled, a Python int argument is an int64: numpy's scalar types cannot say so to mypy
            row[k] = mod_width(affine_mod_p(a, b, block[k]), width, inv)  # type: ignore[arg-type]


@njit(cache=True, inline="always")
def _hash_rows_modp(
    params: np.ndarray, keys: np.ndarray, start: int, m: int, width: int, signed: bool, cols: np.ndarray,
    incs: np.ndarray,
) -> None:
    block = keys[start : start + m]
    for i in range(params.shape[0]):
        # one-dimensional views: with them the compiler vectorises the loops (2D indexing ran half as fast)
        row, inc = cols[i], incs[i]
        _modp_columns(params[i, 0], params[i, 1], block, width, row)
        if signed:
            ga, gb = params[i, 2], params[i, 3]
            for k in range(m):
                inc[k] = np.int64(1) - np.int64(2) * np.int64(affine_mod_p(ga, gb, block[k]) & _ONE)
        else:
            inc[:m] = 1


@njit(cache=True, inline="always")
def _shift_columns(a0: np.uint64, a1: np.uint64, b: np.uint64, block: np.ndarray, width: int,
                   row: np.ndarray) -> None:
    """row[k] = (H(x) width) >> 32 for x = block[k], H = ``multiply_shift`` of (a0, a1, b): one loop, vectorised."""
    w = np.uint64(width)
    for k in range(block.shape[0]):
        row[k] = np.int64((multiply_shift(a0, a1, b, block[k]) * w) >> _S32)


@njit(cache=True, inline="always")
def row_columns(params: np.ndarray, i: int, block: np.ndarray, width: int, row: np.ndarray) -> None:
    """row[k] = h_i(block[k]) for every key of ``block``: row i's columns alone, either family (``hash_rows``).

    Multiply-shift needs width <= 2^32 (``hash_rows`` checks it; here it is the caller's to check).
    """
    if params.shape[1] == _SHIFT_COLUMNS:
        _shift_columns(params[i, 0], params[i, 1], params[i, 2], block, width, row)
    else:
        _modp_columns(params[i, 0], params[i, 1], block, width, row)


@njit(cache=True, inline="always")
def _hash_rows_multiply_shift(
    params: np.ndarray, keys: np.ndarray, start: int, m: int, width: int, signed: bool, cols: np.ndarray,
    incs: np.ndarray,
) -> None:
    if width > MAX_SHIFT_WIDTH:
        raise ValueError("multiply_shift hashing needs width <= 2^32")
    block = keys[start : start + m]
    for i in range(params.shape[0]):
        row, inc = cols[i], incs[i]  # one-dimensional views, as in ``_hash_rows_modp``
        _shift_columns(params[i, 0], params[i, 1], params[i, 2], block, width, row)
        if signed:
            ga0, ga1, gb = params[i, 3], params[i, 4], params[i, 5]
            for k in range(m):
                inc[k] = np.int64(1) - np.int64(2) * np.int64(multiply_shift(ga0, ga1, gb, block[k]) >> _S31)
        else:
            inc[:m] = 1


@njit(cache=True, inline="always")
def hash_rows(
    params: np.ndarray,
    keys: np.ndarray,
    start: int,
    m: int,
    width: int,
    signed: bool,
    cols: np.ndarray,
    incs: np.ndarray,
) -> None:
    """For k < m: ``cols[i, k] = h_i(keys[start + k])`` and ``incs[i, k] = g_i(...)`` (``signed``) or 1.

    The family follows from ``params.shape[1]`` (``PARAMS_PER_ROW``). mod-p (4 columns): h = ((a x + b) mod p)
    mod w, g = +1 - 2 (lowest bit of (ga x + gb) mod p). Multiply-shift (6 columns): h = (H(x) w) >> 32 with the
    32-bit strongly universal H = ``multiply_shift`` of (a0, a1, b), g = +1 - 2 (top bit of an independent H of
    (ga0, ga1, gb)). One loop per row and per hash over a block of keys, so the compiler vectorises the arithmetic.
    """
    if params.shape[1] == _SHIFT_COLUMNS:
        _hash_rows_multiply_shift(params, keys, start, m, width, signed, cols, incs)
    else:
        _hash_rows_modp(params, keys, start, m, width, signed, cols, incs)


@njit(cache=True)
def bucket_many(params: np.ndarray, keys: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns h_i(x) and signs g_i(x) of every row i for canonical ``keys``: two (depth, n) int64 arrays.

    ``params`` is the uint64 array of ``draw_hash_params``, either family (``hash_rows``).
    """
    cols = np.empty((params.shape[0], keys.shape[0]), dtype=np.int64)
    signs = np.empty((params.shape[0], keys.shape[0]), dtype=np.int64)
    hash_rows(params, keys, 0, keys.shape[0], width, True, cols, signs)
    return cols, signs


def draw_hash_params(depth: int, seed: SeedLike, family: str = "modp") -> np.ndarray:
    """Per-row hash parameters of one ``family`` (``HASH_FAMILIES``), a uint64 array the kernels read.

    ``modp``: (depth, 4), (a, b) of the bucket hash and (a, b) of the sign hash; a uniform on [1, p), b on
    [0, p): the classical Carter-Wegman family, pairwise independent into [0, p) (so within O(w/p) of
    pairwise independent after ``mod width``: a pair collides with probability <= 1/w + O(1/p)).

    ``multiply_shift``: (depth, 6), (a0, a1, b) of the bucket hash and of the sign hash, all uniform 64-bit.
    The 32-bit hash H is strongly universal (``multiply_shift``); the range reduction (H w) >> 32 sends
    floor(2^32/w) or ceil(2^32/w) values of H to each bucket, so a pair x != y collides with probability
    sum_j (n_j / 2^32)^2 <= ceil(2^32/w) / 2^32 <= (1/w)(1 + w/2^32), and each bucket has probability within
    1/2^32 of 1/w. The sign (top bit of an independent H) is exactly unbiased and pairwise independent.
    """
    family = check_choice(family, "hash family", HASH_FAMILIES)
    depth = check_positive_int(depth, "depth")
    rng = np.random.default_rng(as_seed_sequence(seed))
    if family == "multiply_shift":
        return rng.integers(0, 1 << 64, size=(depth, PARAMS_PER_ROW[family]), dtype=np.uint64)
    params = np.empty((depth, 4), dtype=np.uint64)
    params[:, 0::2] = rng.integers(1, MERSENNE_P, size=(depth, 2), dtype=np.uint64)
    params[:, 1::2] = rng.integers(0, MERSENNE_P, size=(depth, 2), dtype=np.uint64)
    return params


@njit(cache=True)
def _xxh64_word(v: np.uint64) -> np.uint64:
    """XXH64 (seed 0) of the 8 little-endian bytes of ``v``: the spec's 8-byte path, then the avalanche."""
    k1 = v * _XXP2
    k1 = ((k1 << _S31) | (k1 >> _S33)) * _XXP1
    h = (_XXP5 + _EIGHT) ^ k1
    h = ((h << _S27) | (h >> _S37)) * _XXP1 + _XXP4
    h ^= h >> _S33
    h *= _XXP2
    h ^= h >> _S29
    h *= _XXP3
    h ^= h >> _S32
    return h


@njit(cache=True)
def canonical_words(words: np.ndarray) -> np.ndarray:
    """Canonical keys of uint64 words (an int64 array's two's complement view): the word if < p, else xxh64 mod p.

    One pass copies and tests every word (it vectorises); only when some word is >= p does a second pass hash those.
    """
    out = np.empty(words.shape[0], dtype=np.uint64)
    outside = False
    for k in range(words.shape[0]):
        out[k] = words[k]
        outside |= words[k] >= _P
    if outside:
        for k in range(words.shape[0]):
            if out[k] >= _P:
                out[k] = _xxh64_word(out[k]) % _P
    return out


@njit(cache=True)
def _all_below_p(words: np.ndarray) -> bool:
    """Whether every word is below p; blocks of 4096 words vectorise, and the first block with one stops the read."""
    for start in range(0, words.shape[0], 4096):
        block = words[start:start + 4096]
        below = True
        for k in range(block.shape[0]):
            below &= block[k] < _P
        if not below:
            return False
    return True


def _canonical_or_view(words: np.ndarray) -> np.ndarray:
    """Canonical keys of uint64 words: ``words`` themselves when every word is below p, else a new array.

    A stream's usual case is the first: one read, and no copy of 8 bytes an item.
    """
    return words if _all_below_p(words) else canonical_words(words)


def canonical_int64(items: np.ndarray) -> np.ndarray:
    """Canonical keys of an int64 array, as int64: the array itself when every item is in [0, p) (no copy).

    Else ``canonical_words`` of its two's complement words, so an item outside [0, p) and its alias (the integer
    equal to its canonical key) become the same key, as the sketches count them.
    """
    words = items.view(np.uint64)
    return items if _all_below_p(words) else canonical_words(words).view(np.int64)


def _key_bytes(key: int | str | bytes) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, bytes | bytearray):
        return bytes(key)
    key = int(key)
    if _INT64_MIN <= key < _UINT64_END:
        return (key % _UINT64_END).to_bytes(8, "little")
    return key.to_bytes(key.bit_length() // 8 + 1, "little", signed=True)


def canonical_key(key: int | str | bytes) -> int:
    """The canonical key of one item: itself if an integer in [0, p), else xxh64(bytes) mod p."""
    if isinstance(key, bool | np.bool_) or not isinstance(key, int | np.integer | str | bytes | bytearray):
        raise TypeError(f"keys must be integers, str or bytes, got {type(key).__name__}: {key!r}")
    if isinstance(key, int | np.integer) and 0 <= key < MERSENNE_P:
        return int(key)
    return xxhash.xxh64_intdigest(_key_bytes(key)) % MERSENNE_P


def canonical_keys(items: np.ndarray | list) -> np.ndarray:
    """Canonical keys (uint64, in [0, p)) of a 1-D array of items, equal to ``canonical_key`` per item.

    Integer arrays are converted in one compiled pass; when every item already is its own key, the result is the
    items' memory viewed as uint64 (no copy: callers read it and never write it). str / bytes / object arrays need one
    xxhash call per item (Python level: the only per-item Python work, so prefer integer keys for long streams).
    """
    arr = np.asarray(items)
    if arr.ndim > 1:
        raise ValueError(f"items must be a 1-D array (a stream, in order), got shape {arr.shape}; "
                         "flatten it yourself if its order is the stream's")
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64)
    if arr.dtype.kind == "u":
        return _canonical_or_view(np.ascontiguousarray(arr, dtype=np.uint64))
    if arr.dtype.kind == "i":  # as uint64, a negative int64 is >= 2^63 > p: one test `word < p` covers both ends
        return _canonical_or_view(np.ascontiguousarray(arr, dtype=np.int64).view(np.uint64))
    if arr.dtype.kind in "USO":
        return np.fromiter((canonical_key(k) for k in arr.tolist()), dtype=np.uint64, count=arr.shape[0])
    raise TypeError(f"keys must be integers, str or bytes, got an array of dtype {arr.dtype}")


ITEM_KEY_LIMB_BYTES = 7
"""Bytes per limb of the keyed item hash (``keyed_keys``): a limb is below 2^56 < p."""

_LIMB_MASK = np.uint64((1 << 56) - 1)
_S56 = np.uint64(56)
_NINE = np.uint64(9)


def draw_item_key(seed: SeedLike) -> np.ndarray:
    """The secret (r, b) of the keyed item hash (``keyed_keys``): r uniform on [1, p), b on [0, p), a uint64 array.

    Secret like the noise: drawn from the run's own seed (whoever knows the seed knows the noise too), or with
    ``seed=None`` from the operating system.
    """
    rng = np.random.default_rng(as_seed_sequence(seed))
    return np.array([rng.integers(1, MERSENNE_P, dtype=np.uint64), rng.integers(0, MERSENNE_P, dtype=np.uint64)],
                    dtype=np.uint64)


@njit(cache=True, inline="always")
def _keyed_word(w: np.uint64, r: np.uint64, b: np.uint64) -> np.uint64:
    """``keyed_key`` of the 8 little-endian bytes of ``w``: limbs (9, w mod 2^56, w >> 56), Horner in r, plus b."""
    acc = affine_mod_p(r, _NINE, np.uint64(0))
    acc = affine_mod_p(r, w & _LIMB_MASK, acc)
    acc = affine_mod_p(r, w >> _S56, acc)
    return affine_mod_p(r, b, acc)


@njit(cache=True)
def keyed_words(words: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Keyed canonical keys of uint64 words (an int64 array's two's complement view): the word if < p, else keyed.

    A word >= p is hashed as its 8 little-endian bytes (``keyed_key``), so an int64 and its bytes agree.
    """
    out = np.empty(words.shape[0], dtype=np.uint64)
    r, b = key[0], key[1]
    for k in range(words.shape[0]):
        w = words[k]
        out[k] = w if w < _P else _keyed_word(w, r, b)
    return out


@njit(cache=True)
def keyed_segments(buf: np.ndarray, ends: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``keyed_key`` of each byte string ``buf[ends[i - 1]:ends[i]]`` (``ends[-1]`` is 0): a uint64 array.

    Limbs: m_0 = n + 1 (n the byte count), then the bytes in 7-byte little-endian limbs; h = b + sum_i m_i r^(L - i)
    by Horner's rule, i = 0 .. L - 1.
    """
    out = np.empty(ends.shape[0], dtype=np.uint64)
    r, b = key[0], key[1]
    start = 0
    for i in range(ends.shape[0]):
        end = ends[i]
        acc = affine_mod_p(r, np.uint64(end - start + 1), np.uint64(0))
        for limb in range(start, end, ITEM_KEY_LIMB_BYTES):
            m = np.uint64(0)
            for j in range(min(end, limb + ITEM_KEY_LIMB_BYTES) - 1, limb - 1, -1):
                m = (m << _EIGHT) | np.uint64(buf[j])
            acc = affine_mod_p(r, m, acc)
        out[i] = affine_mod_p(r, b, acc)
        start = end
    return out


def _limbs(data: bytes) -> list[int]:
    step = ITEM_KEY_LIMB_BYTES
    return [len(data) + 1] + [int.from_bytes(data[i:i + step], "little") for i in range(0, len(data), step)]


def keyed_key(item: int | str | bytes, key: np.ndarray) -> int:
    """The keyed canonical key of one item under the secret ``key`` = (r, b) of ``draw_item_key``.

    An integer in [0, p) is itself (so integer streams hash exactly as before). Any other item is written as
    ``canonical_key`` writes it (8 little-endian bytes for an integer in [-2^63, 2^64), str as UTF-8, bytes as they
    are), cut into L limbs m_0 = n + 1 (n bytes), then 7-byte little-endian limbs, and hashed with the Carter-Wegman
    polynomial h = (b + sum_i m_i r^(L - i)) mod p, p = 2^61 - 1. The limbs determine the bytes (m_0 gives the
    length and is never 0), so for two items of distinct bytes and at most L limbs, h(x) - h(y) = r Q(r) with Q a
    nonzero polynomial of degree < L: Pr[h(x) = h(y)] <= (L - 1) / (p - 1) over r uniform on [1, p) (at most L - 1
    roots). For a fixed in-range integer w, Pr[h(x) = w] = 1/p over b. Nobody without the key can aim a collision.
    Items of different types with the same bytes (the str "abcdefgh", its UTF-8 bytes, the integer of those 8
    bytes) are one key under every secret, as under ``canonical_key``: the bound is for the items of one stream, which
    are all of one type (a file's text values, or its integers).
    """
    if isinstance(item, bool | np.bool_) or not isinstance(item, int | np.integer | str | bytes | bytearray):
        raise TypeError(f"keys must be integers, str or bytes, got {type(item).__name__}: {item!r}")
    if isinstance(item, int | np.integer) and 0 <= item < MERSENNE_P:
        return int(item)
    r, b = int(key[0]), int(key[1])
    acc = 0
    for m in _limbs(_key_bytes(item)):
        acc = (acc * r + m) % MERSENNE_P
    return (acc * r + b) % MERSENNE_P


def collision_bound(n_items: int, max_limbs: int) -> float:
    """Probability bound that one item's keyed key equals that of any of ``n_items`` others: n (L - 1) / (p - 1).

    The union bound of ``keyed_key``'s pair bound (an in-range integer w: 1/p <= (L - 1)/(p - 1) for L >= 2).
    """
    return n_items * max(max_limbs - 1, 1) / (MERSENNE_P - 1)


def item_limbs(n_bytes: int) -> int:
    """Limbs L of an item of ``n_bytes`` bytes in the keyed hash: 1 + ceil(n / 7)."""
    return 1 + -(-n_bytes // ITEM_KEY_LIMB_BYTES)


def keyed_keys(items: np.ndarray | list, key: np.ndarray) -> np.ndarray:
    """Keyed canonical keys (uint64, in [0, p)) of a 1-D array of items, equal to ``keyed_key`` per item.

    Integer arrays take one compiled pass; str / bytes / object arrays are encoded once per item (Python level),
    then hashed in one compiled pass over the concatenated bytes.
    """
    arr = np.asarray(items)
    if arr.ndim != 1:
        raise ValueError(f"items must be a 1-D array, got shape {arr.shape}")
    if arr.dtype.kind == "u":
        return keyed_words(arr.astype(np.uint64, copy=False), key)
    if arr.dtype.kind == "i":
        return keyed_words(arr.astype(np.int64, copy=False).view(np.uint64), key)
    if arr.dtype.kind not in "USO":
        raise TypeError(f"keys must be integers, str or bytes, got an array of dtype {arr.dtype}")
    values = arr.tolist()
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | str | bytes | bytearray):
            raise TypeError(f"keys must be integers, str or bytes, got {type(v).__name__}: {v!r}")
    own = np.array([isinstance(v, int) and 0 <= v < MERSENNE_P for v in values], dtype=bool)
    encoded = [b"" if keep else _key_bytes(v) for v, keep in zip(values, own, strict=True)]
    ends = np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)))
    buf = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    out = keyed_segments(buf, ends, key)
    if own.any():
        out[own] = np.array([v for v, keep in zip(values, own, strict=True) if keep], dtype=np.uint64)
    return out
