"""Compiled Philox4x64-10 (Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2, 3") and its Gaussian noise.

Philox is a keyed counter-based generator: ``philox4x64(counter, key)`` is a bijection of the 256-bit
counter for each 128-bit key, designed to be indistinguishable from a random function. It is the
generator behind numpy's ``Philox`` bit generator (``numpy.random.Philox(key=k, counter=c)`` outputs
``philox4x64(c + 1, k)`` first: it increments before it generates; a test checks the two agree).

``node_normal(key0, key1, c0, c1, c2)`` is one N(0, 1) value per counter (c0, c1, c2, 0) by the Box-Muller
transform of the block's first two words (53-bit uniforms; u1 in (0, 1], so the logarithm is finite).
"""

from __future__ import annotations

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


@njit(cache=True, inline="always")
def node_uniforms(k0: np.uint64, k1: np.uint64, c0: np.uint64, c1: np.uint64, c2: np.uint64) -> tuple[float, float]:
    """The two 53-bit uniforms (u1 in (0, 1], u2 in [0, 1)) of ``node_normal``, from the block's first two words."""
    o0, o1, _, _ = philox4x64(c0, c1, c2, np.uint64(0), k0, k1)
    return (np.float64(o0 >> _S11) + 1.0) * _TWO_M53, np.float64(o1 >> _S11) * _TWO_M53


@njit(cache=True, inline="always")
def box_muller(u1: float, u2: float) -> float:
    """sqrt(-2 ln u1) cos(2 pi u2): N(0, 1) for independent uniforms u1 in (0, 1], u2 in [0, 1)."""
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True, inline="always")
def node_normal(k0: np.uint64, k1: np.uint64, c0: np.uint64, c1: np.uint64, c2: np.uint64) -> float:
    """One N(0, 1) value determined by the key and the counter (c0, c1, c2, 0): Box-Muller on two 53-bit uniforms."""
    u1, u2 = node_uniforms(k0, k1, c0, c1, c2)
    return box_muller(u1, u2)


@njit(cache=True)
def philox_block(counter: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The four output words for one counter (4 uint64) and key (2 uint64): for tests against numpy."""
    o = philox4x64(counter[0], counter[1], counter[2], counter[3], key[0], key[1])
    return np.array([o[0], o[1], o[2], o[3]], dtype=np.uint64)
