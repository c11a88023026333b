"""Derived node noise: the ziggurat normal over a node's Philox words (``counters.philox``).

Checked four ways: the tables against the geometry they encode (equal layer areas), the compiled sampler against a
plain-Python ziggurat over the same words (every branch taken), against numpy's own ziggurat on numpy's words, and
its output against N(0, 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from test_discrete_stored import Z_SE, binary_map

from dpstream import serial
from dpstream.counters import BinaryTree
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.philox import (
    ZIGGURAT_AREA,
    ZIGGURAT_R,
    node_normal,
    philox_block,
    ziggurat,
    ziggurat_tables,
)

K, W, F = ziggurat_tables()
R, AREA = float(ZIGGURAT_R), float(ZIGGURAT_AREA)
KEY = np.array([0x0123456789ABCDEF, 0xFEDCBA9876543210], dtype=np.uint64)
NONE = np.zeros(0, dtype=np.uint64)


def edges() -> np.ndarray:
    """Layer edges x_1 < ... < x_255 = r from the w table (x_i = w_i 2^52)."""
    return W[1:] * 2.0**52


def test_the_layers_have_equal_areas_and_the_tables_agree():
    x = edges()
    assert x[-1] == pytest.approx(R, rel=1e-15)
    np.testing.assert_allclose(F[1:], np.exp(-x**2 / 2), rtol=1e-15)
    assert F[0] == 1.0
    # layer i >= 1: the rectangle [0, x_i] x [f(x_i), f(x_{i-1})], with x_0 = 0
    areas = x * (np.concatenate(([1.0], F[1:-1])) - F[1:])
    np.testing.assert_allclose(areas, AREA, rtol=1e-12)
    # layer 0: the strip [0, r] x [0, f(r)] and the tail beyond r: its width is w_0 2^52
    tail = math.sqrt(math.pi / 2) * math.erfc(R / math.sqrt(2))  # the integral of exp(-t^2 / 2) over (r, inf)
    assert R * F[-1] + tail == pytest.approx(AREA, rel=1e-12)
    assert W[0] * 2.0**52 == pytest.approx(AREA / F[-1], rel=1e-15)
    # k_i = 2^52 x_{i-1} / x_i (the fraction of layer i under layer i - 1's edge), k_0 = 2^52 r f(r) / area
    ratio = np.concatenate(([0.0], x[:-1])) / x
    assert np.all(np.abs(K[1:].astype(np.float64) - ratio * 2.0**52) <= 2.0)
    assert abs(float(K[0]) - R * F[-1] / AREA * 2.0**52) <= 2.0
    assert K[1] == 0  # the top layer has no part under a wider layer: every draw there takes the wedge test


def uniform(word: int) -> float:
    return (word >> 11) * 2.0**-53


def reference_ziggurat(words) -> tuple[float, str]:
    """Marsaglia-Tsang's ziggurat on an iterator of 64-bit words, in plain Python; also which branch decided."""
    for word in words:
        layer, magnitude, negative = word & 0xFF, (word >> 9) & (2**52 - 1), (word >> 8) & 1
        x = magnitude * float(W[layer])
        x = -x if negative else x
        if magnitude < int(K[layer]):
            return x, "layer"
        if layer == 0:
            while True:
                xx = -math.log1p(-uniform(next(words))) / R
                yy = -math.log1p(-uniform(next(words)))
                if 2 * yy > xx * xx:
                    return (-(R + xx) if negative else R + xx), "tail"
        if (float(F[layer - 1]) - float(F[layer])) * uniform(next(words)) + float(F[layer]) < math.exp(-x * x / 2):
            return x, "wedge"
    raise AssertionError("the word stream ended")


def node_words(key: np.ndarray, node: int, level: int, cell: int):
    """The node's word stream: Philox blocks (node, level, cell, 0), (node, level, cell, 1), ..., four words each."""
    block = 0
    while True:
        yield from (int(w) for w in philox_block(np.array([node, level, cell, block], dtype=np.uint64), key))
        block += 1


def reference_normal(key: np.ndarray, node: int, level: int, cell: int) -> float:
    """``node_normal`` in plain Python: ``reference_ziggurat`` over the node's Philox words under ``key``."""
    return reference_ziggurat(node_words(key, node, level, cell))[0]


def test_node_normal_is_the_ziggurat_of_the_node_words_on_every_branch():
    taken = {"layer": 0, "wedge": 0, "tail": 0}
    compiled = [node_normal(KEY[0], KEY[1], np.uint64(node), np.uint64(3), np.uint64(11)) for node in range(60000)]
    for node in range(60000):
        value, branch = reference_ziggurat(node_words(KEY, node, 3, 11))
        taken[branch] += 1
        assert compiled[node] == pytest.approx(value, rel=1e-15, abs=0)
        assert ziggurat(KEY[0], KEY[1], np.uint64(node), np.uint64(3), np.uint64(11), NONE) == compiled[node]
    # at 60,000 draws each rare branch occurs (wedge ~1%, tail ~0.03%: ~600 and ~17 expected)
    assert taken["wedge"] > 100 and taken["tail"] > 2, taken


def test_the_ziggurat_on_numpys_words_is_numpys_standard_normal():
    # numpy's tables are rounded from another computation (last digits differ), so values agree to 1e-12, and
    # numpy signs a tail value by another bit of the word: compare magnitudes there
    tails = 0
    for seed in range(20000):
        words = np.random.PCG64(seed).random_raw(16)
        ours = ziggurat(np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0), words)
        theirs = np.random.Generator(np.random.PCG64(seed)).standard_normal()
        if abs(theirs) > R:
            tails += 1
            assert abs(ours) == pytest.approx(abs(theirs), rel=1e-12)
        else:
            assert ours == pytest.approx(theirs, rel=1e-12)
    assert tails > 0


def test_node_normals_are_standard_normal():
    n = 1 << 20
    values = np.array([node_normal(KEY[0], KEY[1], np.uint64(node), np.uint64(0), np.uint64(5)) for node in range(n)])
    # Kolmogorov-Smirnov at 1e-6: a false alarm once in a million seeds
    assert stats.kstest(values, "norm").pvalue > 1e-6
    # the tail beyond r, drawn by its own branch: its count is binomial, checked at 5 standard deviations
    p = 2 * stats.norm.sf(R)
    assert abs(np.sum(np.abs(values) > R) - n * p) < 5 * math.sqrt(n * p * (1 - p))
    # and beyond 4.5 (a point inside the tail): the tail's shape, not only its mass
    p = 2 * stats.norm.sf(4.5)
    assert abs(np.sum(np.abs(values) > 4.5) - n * p) < 5 * math.sqrt(n * p) + 1


@pytest.mark.parametrize("written", [None, "box-muller"])
def test_a_state_whose_nodes_another_transform_derived_is_refused(written):
    bm = GaussBM(n=3, horizon=64, epsilon=1.0, delta=1e-3, seed=2, node_noise="derived")
    bm.update_all(np.array([1, 0, 2]))
    header, arrays = serial.unpack(bm.to_bytes())
    assert header["state"]["node_normal"] == "ziggurat"
    state = {k: v for k, v in header["state"].items() if k != "node_normal"}
    if written is not None:
        state["node_normal"] = written
    older = serial.pack("GaussBM", header["args"], state, arrays)
    named = "node_normal='box-muller'" if written else "names no node transform"
    with pytest.raises(serial.SerialError, match=f"{named}.*nodes already released"):
        GaussBM.from_bytes(older)
    assert GaussBM.from_bytes(bm.to_bytes()).query(2) == bm.query(2)


def test_derived_tree_releases_have_the_formula_covariance_across_release_times():
    # noise alone (zero counts) of 40,000 derived-tree counters at steps 1..15 (every pattern of the 4 levels' bits):
    # covariance sigma^2 W W^T, W the 0/1 map from the nodes to the releases; a node reused across releases, or two
    # nodes sharing words, shows as a wrong off-diagonal entry
    horizon, n = 15, 40_000
    counter = BinaryTree(n=n, horizon=horizon, epsilon=1.0, delta=1e-3, seed=11, node_noise="derived")
    x = np.stack([counter.release_all(np.full(n, s, dtype=np.int64)) for s in range(1, horizon + 1)])
    w = binary_map(horizon)
    expected = counter.sigma**2 * w @ w.T
    measured = x @ x.T / n  # zero mean known: second moments
    se = np.sqrt((np.outer(np.diag(expected), np.diag(expected)) + expected**2) / n)  # Var(X_i X_j), Gaussian
    worst = np.max(np.abs(measured - expected) / se)
    assert worst < Z_SE, f"a covariance entry is {worst:.1f} standard errors from the formula"
