"""Compiled Philox4x64-10 (Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2, 3") and its Gaussian noise.

Philox is a keyed counter-based generator: ``philox4x64(counter, key)`` is a bijection of the 256-bit
counter for each 128-bit key, designed to be indistinguishable from a random function. It is the
generator behind numpy's ``Philox`` bit generator (``numpy.random.Philox(key=k, counter=c)`` outputs
``philox4x64(c + 1, k)`` first: it increments before it generates; a test checks the two agree).

``node_normal(key0, key1, c0, c1, c2)`` is one N(0, 1) value per node (c0, c1, c2) by the ziggurat method (Marsaglia,
Tsang, "The ziggurat method for generating random variables", 2000; numpy's layout, ``ziggurat_tables``) over the node's
words: block (c0, c1, c2, 0) first, then (c0, c1, c2, 1), ... in the rare draws that need more than one word.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import njit
from numba.core import types
from numba.extending import intrinsic

_M0 = np.uint64(0xD2E7470EE14C6C93)
_M1 = np.uint64(0xCA5A826395121157)
_W0 = np.uint64(0x9E3779B97F4A7C15)
_W1 = np.uint64(0xBB67AE8584CAA73B)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2^-53
ROUNDS = 10


def _mulhilo_ir(typingctx: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """(low, high) 64-bit words of the 128-bit product a b of two uint64: one 64x64 -> 128-bit multiply in LLVM IR."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        wide, word = ir.IntType(128), ir.IntType(64)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.lshr(product, ir.Constant(wide, 64))
        words = (builder.trunc(product, word), builder.trunc(high, word))
        return context.make_tuple(builder, signature.return_type, words)

    return sig, codegen


_mulhilo = cast(Callable[[np.uint64, np.uint64], tuple[np.uint64, np.uint64]], intrinsic(_mulhilo_ir))


@njit(cache=True, inline="always")
def philox4x64(
    c0: np.uint64, c1: np.uint64, c2: np.uint64, c3: np.uint64, k0: np.uint64, k1: np.uint64
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    """Philox4x64-10 of counter (c0, c1, c2, c3) under key (k0, k1) (Random123's ``philox4x64_R(10, ...)``)."""
    for r in range(ROUNDS):
        if r:
            k0 += _W0
            k1 += _W1
        lo0, hi0 = _mulhilo(_M0, c0)
        lo1, hi1 = _mulhilo(_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


NODE_NORMAL = "ziggurat"
"""The transform of ``node_normal`` (words to a normal). Results stores key derived-noise trials by it and serialised
derived counters carry it: give it a new name whenever node values change (the transform, its tables or its words)."""
ZIGGURAT_R = "3.6541528853610087963519472518"
"""The right edge r of the normal ziggurat's 256 layers (numpy's constant), as decimal digits."""
ZIGGURAT_AREA = "0.0049286732339746519"
"""The area of each layer, as decimal digits."""


def ziggurat_tables(layers: int = 256) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, w, f) of the normal ziggurat: ``layers`` layers of area ``ZIGGURAT_AREA`` up to ``ZIGGURAT_R``.

    Layer edges x_0 = 0 < x_1 < ... < x_{n-1} = r, from x_{n-1} = r down by f(x_{i-1}) = f(x_i) + area / x_i with
    f(x) = exp(-x^2 / 2), in 40-digit decimal arithmetic (a float recursion loses ~13 digits at the narrow top layers).
    For a 52-bit word b of layer i >= 1 the draw is x = b w_i (w_i = x_i 2^-52), accepted at once when b < k_i =
    round(2^52 x_{i-1} / x_i) (x lies under layer i - 1's edge, inside the density); layer 0 is the base strip of width
    area / f(r) with the tail beyond r. f_i = f(x_i) serves the wedge test. The layout and the constants are numpy's
    ``random_standard_normal``'s; its own tables are rounded from another computation and differ in the last digits.
    """
    with decimal.localcontext() as context:
        context.prec = 40
        edge, strip = decimal.Decimal(ZIGGURAT_R), decimal.Decimal(ZIGGURAT_AREA)
        edges = [edge]
        for _ in range(layers - 2):
            edges.append((-2 * ((-edges[-1] ** 2 / 2).exp() + strip / edges[-1]).ln()).sqrt())
        edges.append(decimal.Decimal(0))
        edges.reverse()
        scale = decimal.Decimal(2) ** 52
        k = [round(edge * (-edge ** 2 / 2).exp() / strip * scale)]
        k += [round(edges[i - 1] / edges[i] * scale) for i in range(1, layers)]
        w = [float(strip / (-edge ** 2 / 2).exp() / scale)] + [float(x / scale) for x in edges[1:]]
        f = [float((-x ** 2 / 2).exp()) for x in edges]
    return np.array(k, dtype=np.uint64), np.array(w), np.array(f)


_K, _W, _F = ziggurat_tables()
_R = float(ZIGGURAT_R)
_INV_R = 1.0 / _R
_MASK52 = np.uint64((1 << 52) - 1)
_BYTE = np.uint64(0xFF)
_NO_WORDS = np.zeros(0, dtype=np.uint64)


@njit(cache=True, inline="always")
def _layer(word: np.uint64) -> tuple[int, np.uint64, float]:
    """A word's layer (low 8 bits), its 52-bit magnitude (bits 9..60) and the signed candidate (sign: bit 8)."""
    layer = int(word & _BYTE)
    magnitude = (word >> np.uint64(9)) & _MASK52
    x = np.float64(magnitude) * _W[layer]
    return layer, magnitude, -x if (word >> np.uint64(8)) & _ONE else x


@njit(cache=True, inline="always")
def _uniform(word: np.uint64) -> float:
    """The 53-bit uniform in [0, 1) of a word's high bits."""
    return np.float64(word >> _S11) * _TWO_M53


@njit(cache=True, inline="always")
def node_word(k0: np.uint64, k1: np.uint64, c0: np.uint64, c1: np.uint64, c2: np.uint64, n: int,
              words: np.ndarray) -> np.uint64:
    """Word n of the node's stream: word n % 4 of the Philox block (c0, c1, c2, n // 4); ``words[n]`` if given."""
    if words.shape[0]:
        return words[n]
    return philox4x64(c0, c1, c2, np.uint64(n >> 2), k0, k1)[n & 3]


@njit(cache=True)
def ziggurat(k0: np.uint64, k1: np.uint64, c0: np.uint64, c1: np.uint64, c2: np.uint64, words: np.ndarray) -> float:
    """N(0, 1) by the ziggurat over the node's word stream (``node_word``): numpy's ``random_standard_normal``.

    A word gives a layer and a candidate (``_layer``); the rare rejections draw the wedge's uniform or the tail
    (Marsaglia's exponential method beyond r) from the following words, each a 53-bit uniform in [0, 1). A tail
    value takes the sign bit of the word that chose the base layer (numpy takes bit 17 of that word).
    """
    n = 0
    while True:
        word = node_word(k0, k1, c0, c1, c2, n, words)
        n += 1
        layer, magnitude, x = _layer(word)
        if magnitude < _K[layer]:
            return x
        if layer == 0:
            while True:
                xx = -_INV_R * math.log1p(-_uniform(node_word(k0, k1, c0, c1, c2, n, words)))
                yy = -math.log1p(-_uniform(node_word(k0, k1, c0, c1, c2, n + 1, words)))
                n += 2
                if yy + yy > xx * xx:
                    return -(_R + xx) if (word >> np.uint64(8)) & _ONE else _R + xx
        u = _uniform(node_word(k0, k1, c0, c1, c2, n, words))
        n += 1
        if (_F[layer - 1] - _F[layer]) * u + _F[layer] < math.exp(-0.5 * x * x):
            return x


@njit(cache=True, inline="always")
def node_normal(k0: np.uint64, k1: np.uint64, c0: np.uint64, c1: np.uint64, c2: np.uint64) -> float:
    """One N(0, 1) value determined by the key and the node (c0, c1, c2): the ziggurat over the node's Philox words.

    Inlined: the first word decides 99% of draws (one Philox block); the rest go through ``ziggurat`` from word 0.
    """
    layer, magnitude, x = _layer(philox4x64(c0, c1, c2, np.uint64(0), k0, k1)[0])
    if magnitude < _K[layer]:
        return x
    return ziggurat(k0, k1, c0, c1, c2, _NO_WORDS)


@njit(cache=True)
def philox_block(counter: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The four output words for one counter (4 uint64) and key (2 uint64): for tests against numpy."""
    o = philox4x64(counter[0], counter[1], counter[2], counter[3], key[0], key[1])
    return np.array([o[0], o[1], o[2], o[3]], dtype=np.uint64)
