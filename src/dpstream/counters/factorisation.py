"""Every counter as a factorisation A = B C of the prefix-sum matrix, one object per factorisation.

A counter over T steps releases A x + B z = B (C x + z): the Gaussian (or Laplace) mechanism on C x, post-processed
by B (Denisov, McMahan, Rush, Smith, Thakurta, "Improved differential privacy for SGD via optimal private linear
operators on adaptive streams", NeurIPS 2022; jax_privacy's ``StreamingMatrix`` and its ``row_norms_squared``). So the
factorisation alone gives the two numbers a counter is calibrated and judged by:

- ``row_norms_squared(steps)``: ||row s of B||^2, the variance of the release at step s per unit noise variance
  (0 at step 0): a counter's ``variance`` is this times the variance of one noise draw;
- ``column_norms()``: ||C e_t|| for every step t (the L2 norm, or the L1 norm for the Laplace tree); one changed step of
  each of m counters moves C x by sqrt(m) (m for L1) times the largest, the ``sensitivity(m)`` the noise is
  calibrated for.

``row_norms_squared`` and ``sensitivity`` are the closed forms (this module holds them; the counter modules import
them from here). A counter's ``variance`` is its ``factorisation()``'s row norms times its ``draw_variance``.
``matrices()`` builds B and C explicitly (small horizons only) so a test can check the closed forms against them.
Tree factorisations index the rows of C by the tree's nodes that close by T (each with its own noise), so C is
wider than T.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
from scipy.signal import fftconvolve, lfilter

from dpstream.counters import blt_params as blt
from dpstream.counters._bm_kernels import popcount
from dpstream.counters._kary_kernels import kary_levels
from dpstream.counters._smooth_kernels import binomials, release_leaves
from dpstream.counters.honaker_tree import honaker_level_variances, honaker_variance
from dpstream.counters.root_rows import (
    CACHED_HORIZONS,
    ROW_TABLE_LIMIT,
    _row_norms,
    normalised_row,
    root_column_norms,
    root_inverse_coefficients,
    sqrt_coefficients,
)
from dpstream.privacy.calibration import gauss_bm_levels
from dpstream.validation import check_positive_int

MATRIX_LIMIT = 4096
"""The largest horizon ``matrices`` builds B and C for (they are dense, T by the number of noises)."""


# -- the closed forms of the factorisations (their counters import them from here) ------------------------------
MAX_HEIGHT = 62
"""Tree heights up to 62 keep every leaf index below 2^62 (an int64)."""


@functools.cache
def smooth_shape(horizon: int) -> tuple[int, int]:
    """(h, k): the tree height and set bits minimising k (h - k) with C(h, k) >= horizon + 1 (ties: smaller h)."""
    best: tuple[int, int, int] | None = None
    for h in range(1, MAX_HEIGHT + 1):
        for k in range(1, h):
            if math.comb(h, k) >= horizon + 1 and (best is None or k * (h - k) < best[0]):
                best = (k * (h - k), h, k)
        if best is not None and (h // 2) ** 2 > best[0] + h:  # every larger h costs more (k (h - k) >= h - 1)
            break
    if best is None:
        raise ValueError(f"horizon={horizon} needs a smooth tree taller than {MAX_HEIGHT} levels")
    return best[1], best[2]


def used_nodes(horizon: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every node a release at steps 1..horizon uses: (level, index, first step using it), in first-use order."""
    h, k = smooth_shape(horizon)
    leaves = release_leaves(np.arange(horizon + 1, dtype=np.int64), np.int64(h), np.int64(k), binomials(h))
    first: dict[tuple[int, int], int] = {}
    for s in range(1, horizon + 1):
        t = int(leaves[s])
        for level in range(h):
            if (t >> level) & 1:
                first.setdefault((level, (t >> level) - 1), s)
    rows = np.array([(lv, ix, s) for (lv, ix), s in first.items()], dtype=np.int64).reshape(-1, 3)
    return rows[:, 0], rows[:, 1], rows[:, 2]


def kary_digit_sum(steps: np.ndarray | int, arity: int) -> np.ndarray:
    """Sum of the base-k digits of each step: the number of nodes its release sums."""
    s = np.asarray(steps, dtype=np.int64).copy()
    total = np.zeros(s.shape, dtype=np.int64)
    while np.any(s):
        total += s % arity
        s //= arity
    return total


def hybrid_variance(steps: np.ndarray | int) -> np.ndarray:
    """Per unit sigma^2: 2 (j + (j + 1) popcount(u)) at step s >= 1 (j = floor(log2 s), u = s - 2^j + 1), 0 at s = 0."""
    s = np.asarray(steps, dtype=np.int64)
    j = np.maximum(np.frexp(np.maximum(s, 1).astype(np.float64))[1].astype(np.int64) - 1, 0)  # exact below 2^53
    u = s - (np.int64(1) << j) + 1
    bits = np.bitwise_count(u.astype(np.uint64)).astype(np.float64)
    return np.where(s > 0, 2.0 * (j + (j + 1) * bits), 0.0)


FULL = 2**62
"""``bands`` of the plain square root: every diagonal of C (min(b, T) = T)."""


@functools.cache
def decoder_coefficients(bands: int, horizon: int) -> np.ndarray:
    """First column d of L = A C^{-1} over ``horizon`` steps for the ``bands``-band square root (read-only).

    d = the coefficients of 1 / ((1 - x) c_b(x)), c_b the square root's first b coefficients; d = c when b >= T.
    """
    c = sqrt_coefficients(min(bands, horizon))
    if bands >= horizon:
        return c
    impulse = np.zeros(horizon)
    impulse[0] = 1.0
    d = np.cumsum(lfilter([1.0], c, impulse))
    d.flags.writeable = False
    return d


@functools.cache
def unit_variances(bands: int, horizon: int) -> np.ndarray:
    """Var(s) / sigma^2 = ||row s of L||^2 = sum_{t < s} d_t^2 for s = 1..horizon (read-only)."""
    out = np.cumsum(decoder_coefficients(bands, horizon) ** 2)
    out.flags.writeable = False
    return out


def column_norm(bands: int, horizon: int) -> float:
    """The largest column norm of C over ``horizon`` steps (its first column): sqrt(sum_{t < min(b, T)} c_t^2)."""
    return math.sqrt(float(np.sum(sqrt_coefficients(min(bands, horizon)) ** 2)))


def _at_steps(table: np.ndarray, steps: np.ndarray | int, horizon: int) -> np.ndarray:
    """table[s - 1] at each step s (steps past the horizon read row T), 0 at s = 0: a row-norm table read at steps."""
    s = np.asarray(steps, dtype=np.int64)
    out = np.zeros(s.shape)
    on = s > 0
    out[on] = table[np.minimum(s[on], horizon) - 1]
    return out


# -- the log-perturbed square root with no horizon (``counters.unbounded``) --------------------------------------
ALPHA = 0.25
"""The log perturbation's exponent alpha > 0 (``counters.unbounded``)."""


def perturbed_squares(steps: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """r_t^2 = F(t) - F(t + 1), F(t) = ln(t + e)^{-2 alpha}, at each t of ``steps``, without cancellation.

    F(t) - F(t + 1) = -F(t) expm1(-2 alpha ln(ln(t + 1 + e) / ln(t + e))), the ratio's log by log1p.
    """
    t = np.asarray(steps, dtype=np.float64)
    log_t = np.log(t + math.e)
    step = np.log1p(np.log1p(1.0 / (t + math.e)) / log_t)
    return -(log_t ** (-2.0 * alpha)) * np.expm1(-2.0 * alpha * step)


R0_SQUARED = float(perturbed_squares(np.zeros(1))[0])
"""r_0^2 = 1 - ln(1 + e)^{-2 alpha}: the squared sensitivity a unit of m is 1 / r_0^2."""


@functools.lru_cache(maxsize=CACHED_HORIZONS)
def unbounded_encoder(length: int) -> np.ndarray:
    """C's first column r_t / r_0, t < ``length`` (read-only). The values do not depend on ``length``."""
    r = np.sqrt(perturbed_squares(np.arange(max(1, length))))
    c = r / r[0]
    c.flags.writeable = False
    return c


def series_inverse(c: np.ndarray, length: int) -> np.ndarray:
    """The first ``length`` coefficients of 1 / c(x) (c_0 != 0), by Newton's iteration q <- q (2 - c q) with FFTs."""
    q = np.array([1.0 / c[0]])
    size = 1
    while size < length:
        size = min(2 * size, length)
        e = -fftconvolve(c[:size], q)[:size]
        e[0] += 2.0
        q = fftconvolve(q, e)[:size]
    return q


@functools.lru_cache(maxsize=CACHED_HORIZONS)
def unbounded_decoder(horizon: int) -> np.ndarray:
    """d: the first ``horizon`` coefficients of 1 / ((1 - x) C(x)), L's first column (read-only)."""
    d = np.cumsum(series_inverse(unbounded_encoder(horizon), horizon))
    d.flags.writeable = False
    return d


@functools.lru_cache(maxsize=CACHED_HORIZONS)
def unbounded_unit_variances(horizon: int) -> np.ndarray:
    """Var(s) / sigma^2 = sum_{t < s} d_t^2 for s = 1..horizon (read-only)."""
    out = np.cumsum(unbounded_decoder(horizon) ** 2)
    out.flags.writeable = False
    return out


# -- the normalised square root (``counters.normalised``) ---------------------------------------------------------
ROW_STEPS_LIMIT = 64
"""The most distinct steps one ``NormalisedRoot.row_norms_squared`` call answers above ``ROW_TABLE_LIMIT``."""


class MissingRowNorms(ValueError):
    """No committed summary (``counters.normalised_rows``) of the normalised square root's rows at this horizon."""


@functools.lru_cache(maxsize=CACHED_HORIZONS)
def normalised_unit_variances(horizon: int) -> np.ndarray:
    """Var(s) / sigma^2 = ||row s of L||^2 for s = 1..horizon (O(n^2), ``_row_norms``; read-only)."""
    out = _row_norms(np.ascontiguousarray(root_inverse_coefficients(horizon)),
                     np.ascontiguousarray(root_column_norms(horizon)))
    out.flags.writeable = False
    return out


class Factorisation(ABC):
    """A = B C over ``horizon`` steps (see the module docstring)."""

    name: ClassVar[str]
    norm: ClassVar[int] = 2
    """The norm of C's columns the noise is calibrated for: 2 (Gaussian noise) or 1 (Laplace)."""

    def __init__(self, horizon: int) -> None:
        """The factorisation over steps 1..``horizon``."""
        self.horizon = check_positive_int(horizon, "horizon")

    def __repr__(self) -> str:
        """The class and its parameters."""
        return f"{type(self).__name__}(horizon={self.horizon})"

    @abstractmethod
    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """||row s of B||^2 at each step s in [0, horizon] (0 at s = 0): the release variance per unit noise."""

    @abstractmethod
    def sensitivity(self, m: int = 1) -> float:
        """The largest change of C x when each of m counters changes by 1 at one step, in the ``norm``."""

    @abstractmethod
    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """B (T, N) and C (N, T), explicitly (T up to ``MATRIX_LIMIT``), with B C = A."""

    def column_norms(self) -> np.ndarray:
        """||C e_t|| in the ``norm`` for t = 1..T (from ``matrices``)."""
        _, c = self.matrices()
        return np.linalg.norm(c, ord=self.norm, axis=0)

    def variance(self, steps: np.ndarray | int, noise_variance: float) -> np.ndarray:
        """The release variance at each step for noise draws of variance ``noise_variance``."""
        return self.row_norms_squared(steps) * noise_variance

    def row_norms_summary(self) -> tuple[float, float]:
        """(max, mean) of ||row s of B||^2 over s = 1..T: a counter's largest and mean variance per unit noise."""
        rows = self.row_norms_squared(np.arange(1, self.horizon + 1))
        return float(rows.max()), float(rows.mean())

    def _check_size(self) -> int:
        if self.horizon > MATRIX_LIMIT:
            raise ValueError(f"{self!r}.matrices(): horizon above MATRIX_LIMIT = {MATRIX_LIMIT}")
        return self.horizon


def _tree_matrices(horizon: int, arity: int, levels: int) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """B, C and the (level, index) of each row of C for the k-ary tree of ``levels`` levels: nodes closing by T."""
    nodes = [(lv, i) for lv in range(levels) for i in range(horizon // arity**lv)]
    row = {node: r for r, node in enumerate(nodes)}
    c = np.zeros((len(nodes), horizon))
    for r, (lv, i) in enumerate(nodes):
        c[r, i * arity**lv:(i + 1) * arity**lv] = 1.0
    b = np.zeros((horizon, len(nodes)))
    for s in range(1, horizon + 1):
        for lv in range(levels):  # digit d of level lv: the d nodes after the higher levels' prefix
            first = (s // arity ** (lv + 1)) * arity
            for i in range(first, first + (s // arity**lv) % arity):
                b[s - 1, row[lv, i]] = 1.0
    return b, c, nodes


class Dyadic(Factorisation):
    """The binary mechanism (Dwork, Naor, Pitassi, Rothblum 2010; Chan, Shi, Song 2011; Holland, Alg. 1).

    C: the dyadic nodes closing by T, h = ceil(log2(T + 1)) levels; B: the nodes at the set bits of s. Row norm^2
    popcount(s); every step lies in at most h nodes, step 1 in h: sensitivity sqrt(h m).
    """

    name = "binary"

    @property
    def levels(self) -> int:
        """The tree's h = ceil(log2(T + 1))."""
        return gauss_bm_levels(self.horizon)

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """popcount(s): one node per set bit of s."""
        return popcount(steps).astype(np.float64)

    def sensitivity(self, m: int = 1) -> float:
        """sqrt(h m)."""
        return math.sqrt(self.levels * m)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """B and C of the dyadic tree."""
        b, c, _ = _tree_matrices(self._check_size(), 2, self.levels)
        return b, c


class HonakerEstimate(Dyadic):
    """Honaker's online estimates on the binary tree ("Efficient use of differentially private binary trees", 2015).

    C: every dyadic node (each with its own noise); B: the nodes' inverse-variance weighted estimates, summed at the
    set bits of s. Row norm^2 sum_{l in bits(s)} v_l (``honaker_variance``); sensitivity as the tree's.
    """

    name = "honaker"

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """The sum of v_l over the set bits l of s."""
        return honaker_variance(steps, self.levels)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """B from the estimate recursion e = w_l y + (1 - w_l)(e_left + e_right), w_l = v_l."""
        horizon = self._check_size()
        _, c, nodes = _tree_matrices(horizon, 2, self.levels)
        row = {node: r for r, node in enumerate(nodes)}
        weights = honaker_level_variances(self.levels)
        estimate: dict[tuple[int, int], np.ndarray] = {}
        for lv, i in nodes:  # level by level, children first
            e = np.zeros(len(nodes))
            e[row[lv, i]] = weights[lv]
            if lv:
                e += (1.0 - weights[lv]) * (estimate[lv - 1, 2 * i] + estimate[lv - 1, 2 * i + 1])
            estimate[lv, i] = e
        b = np.zeros((horizon, len(nodes)))
        for s in range(1, horizon + 1):
            for lv in range(self.levels):
                if (s >> lv) & 1:
                    b[s - 1] += estimate[lv, (s >> lv) - 1]
        return b, c


class KaryTree(Factorisation):
    """The k-ary tree with Laplace noise (Chan, Shi, Song 2011; the paper's k = 19 for small delta).

    C: the base-k nodes closing by T, L = ceil(log_k(T + 1)) levels; B: the nodes of s's base-k digits. Row norm^2 the
    digit sum of s; L1 sensitivity L m (every step in at most L nodes, step 1 in L).
    """

    name = "laplace"
    norm = 1

    def __init__(self, horizon: int, arity: int) -> None:
        """The tree of arity k = ``arity``."""
        super().__init__(horizon)
        self.arity = check_positive_int(arity, "arity")

    def __repr__(self) -> str:
        """The class and its parameters."""
        return f"KaryTree(horizon={self.horizon}, arity={self.arity})"

    @property
    def levels(self) -> int:
        """L = ceil(log_k(T + 1))."""
        return kary_levels(self.horizon, self.arity)

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """The base-k digit sum of s."""
        return kary_digit_sum(steps, self.arity).astype(np.float64)

    def sensitivity(self, m: int = 1) -> float:
        """L m (L1)."""
        return float(self.levels * m)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """B and C of the k-ary tree."""
        b, c, _ = _tree_matrices(self._check_size(), self.arity, self.levels)
        return b, c


class Smooth(Factorisation):
    """The smooth binary mechanism: releases at leaves with exactly k set bits of an h-level tree (``counters.smooth``).

    C: the nodes some release uses; B: the k nodes at the set bits of step s's leaf. Row norm^2 k at every s >= 1;
    an item's leaf has h - k clear bits: sensitivity sqrt((h - k) m).
    """

    name = "smooth"

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """The set bits k at s >= 1, 0 at s = 0."""
        return np.where(np.asarray(steps) > 0, float(smooth_shape(self.horizon)[1]), 0.0)

    def sensitivity(self, m: int = 1) -> float:
        """sqrt((h - k) m)."""
        h, k = smooth_shape(self.horizon)
        return math.sqrt((h - k) * m)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """Item s sits at leaf t_{s-1}; the release at s sums the nodes ending the prefix of leaves below t_s."""
        horizon = self._check_size()
        h, k = smooth_shape(horizon)
        leaves = release_leaves(np.arange(horizon + 1, dtype=np.int64), np.int64(h), np.int64(k), binomials(h))
        level, index, _ = used_nodes(horizon)
        row = {(int(lv), int(i)): r for r, (lv, i) in enumerate(zip(level, index, strict=True))}
        c = np.zeros((len(row), horizon))
        for (lv, i), r in row.items():
            c[r] = (leaves[:horizon] >> lv) == i
        b = np.zeros((horizon, len(row)))
        for s in range(1, horizon + 1):
            t = int(leaves[s])
            for lv in range(h):
                if (t >> lv) & 1:
                    b[s - 1, row[lv, (t >> lv) - 1]] = 1.0
        return b, c


class Hybrid(Factorisation):
    """The hybrid mechanism (Chan, Shi, Song 2011, Sec. 4): block sums over doubling blocks, a binary tree inside each.

    With unit noise on every node, C scales block sums by 1/sqrt(2) and block j's tree nodes by 1/sqrt(2 (j + 1)), and
    B scales them back: row norm^2 2 (j + (j + 1) popcount(u)) (``hybrid_variance``); every column of C has norm at
    most 1 (1/2 + (j + 1) / (2 (j + 1))): sensitivity sqrt(m), whatever the horizon.
    """

    name = "hybrid"

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """2 (j + (j + 1) popcount(u)), j = floor(log2 s), u = s - 2^j + 1."""
        return hybrid_variance(steps)

    def sensitivity(self, m: int = 1) -> float:
        """sqrt(m)."""
        return math.sqrt(m)

    def _rows(self) -> dict[tuple[int, int, int], int]:
        """Row of C of each node (block j, level, index), level -1 for block j's sum: the nodes closing by T."""
        rows: dict[tuple[int, int, int], int] = {}
        for j in range(self.horizon.bit_length()):
            if 2 << j <= self.horizon:  # a release after the block uses its sum
                rows[j, -1, 0] = len(rows)
            last = min((2 << j) - 1, self.horizon) - (1 << j) + 1  # the block's positions u up to T
            for lv in range(j + 1):
                for i in range(last >> lv):
                    rows[j, lv, i] = len(rows)
        return rows

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows of C: per block, its sum once some release uses it, then its tree's nodes closing by T."""
        horizon = self._check_size()
        rows = self._rows()
        c = np.zeros((len(rows), horizon))
        b = np.zeros((horizon, len(rows)))
        for (j, lv, i), r in rows.items():
            if lv < 0:
                c[r, (1 << j) - 1:(2 << j) - 1] = 1.0 / math.sqrt(2.0)
            else:
                start = (1 << j) - 1 + (i << lv)  # column of position u = i 2^l + 1
                c[r, start:start + (1 << lv)] = 1.0 / math.sqrt(2.0 * (j + 1))
        for s in range(1, horizon + 1):
            j = s.bit_length() - 1
            for i in range(j):
                b[s - 1, rows[i, -1, 0]] = math.sqrt(2.0)
            u = s - (1 << j) + 1
            for lv in range(j + 1):
                if (u >> lv) & 1:
                    b[s - 1, rows[j, lv, (u >> lv) - 1]] = math.sqrt(2.0 * (j + 1))
        return b, c


def _toeplitz(first_column: np.ndarray) -> np.ndarray:
    """The lower-triangular Toeplitz matrix with this first column."""
    n = first_column.shape[0]
    i, j = np.indices((n, n))
    return np.where(i >= j, first_column[np.clip(i - j, 0, n - 1)], 0.0)


class Toeplitz(Factorisation):
    """The square-root factorisation and its banded version (``counters.toeplitz``): C Toeplitz, B = A C^{-1}.

    C's first column: c_t = binom(2t, t) / 4^t for t < b (``bands``, ``FULL``: every diagonal). Row norm^2
    ``unit_variances``; the first column is the longest: sensitivity sqrt(m) ||C e_1||.
    """

    name = "sqrt"

    def __init__(self, horizon: int, bands: int = FULL) -> None:
        """The square root kept to its first ``bands`` diagonals."""
        super().__init__(horizon)
        self.bands = check_positive_int(bands, "bands")

    def __repr__(self) -> str:
        """The class and its parameters."""
        return f"Toeplitz(horizon={self.horizon}, bands={self.bands})"

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """sum_{t < s} d_t^2, d the first column of A C^{-1}."""
        return _at_steps(unit_variances(self.bands, self.horizon), steps, self.horizon)

    def sensitivity(self, m: int = 1) -> float:
        """sqrt(m) ||C e_1||."""
        return math.sqrt(m) * column_norm(self.bands, self.horizon)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """C from the coefficients, B = A C^{-1}."""
        horizon = self._check_size()
        first = np.zeros(horizon)
        coefs = sqrt_coefficients(min(self.bands, horizon))
        first[:coefs.shape[0]] = coefs
        c = _toeplitz(first)
        return np.linalg.solve(c.T, np.tril(np.ones((horizon, horizon))).T).T, c


class BLT(Factorisation):
    """Buffered linear Toeplitz (McMahan, Dvijotham et al., arXiv 2408.08868): C Toeplitz from (theta, omega).

    ``params``: the ``blt_params.BLTParams`` the counter runs (``optimal_blt(max(2, T), buffers)`` by default). Row
    norm^2 ``blt_params.noise_variance``; sensitivity sqrt(m) ``blt_params.column_norm``.
    """

    name = "blt"

    def __init__(self, horizon: int, params: blt.BLTParams | None = None, buffers: int = 4) -> None:
        """The BLT of ``params``, or the optimised one with ``buffers`` buffers."""
        super().__init__(horizon)
        self.params = blt.optimal_blt(max(2, self.horizon), buffers) if params is None else params

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """||row s of A C^{-1}||^2."""
        s = np.asarray(steps, dtype=np.int64)
        out = np.zeros(s.shape)
        on = s > 0
        out[on] = blt.noise_variance(self.params, s[on])
        return out

    def sensitivity(self, m: int = 1) -> float:
        """sqrt(m) ||C e_1|| over the parameters' horizon."""
        return math.sqrt(m) * blt.column_norm(self.params)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """C from ``toeplitz_coefs``, B = A C^{-1} from ``inverse_toeplitz_coefs``."""
        horizon = self._check_size()
        c = _toeplitz(blt.toeplitz_coefs(self.params, horizon))
        b = np.tril(np.ones((horizon, horizon))) @ _toeplitz(blt.inverse_toeplitz_coefs(self.params, horizon))
        return b, c


class Unbounded(Factorisation):
    """The log-perturbed square root with no horizon (``counters.unbounded``, after Jacobsen and Fawaz): C Toeplitz.

    C's first column r_t / r_0 (``unbounded_encoder``); B = A C^{-1} Toeplitz with first column d
    (``unbounded_decoder``). Row norm^2 sum_{t < s} d_t^2; sensitivity sqrt(m) / r_0, the first column's norm over an
    unbounded stream: a bound above ||C e_1|| over T steps that every horizon shares (its squares telescope).
    """

    name = "unbounded"

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """sum_{t < s} d_t^2 (``unbounded_unit_variances``)."""
        return _at_steps(unbounded_unit_variances(self.horizon), steps, self.horizon)

    def sensitivity(self, m: int = 1) -> float:
        """sqrt(m / r_0^2), whatever the horizon."""
        return math.sqrt(m / R0_SQUARED)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """C and B from their first columns."""
        horizon = self._check_size()
        return _toeplitz(np.array(unbounded_decoder(horizon))), _toeplitz(np.array(unbounded_encoder(horizon)))


class NormalisedRoot(Factorisation):
    """The normalised square root (``counters.normalised``; Henzinger, Kalinin, Upadhyay): C = S D, B = A C^{-1}.

    S = A^{1/2}, D = diag(1 / nu_u) (``root_column_norms``): every column of C has norm 1, sensitivity sqrt(m). B is
    not Toeplitz: row norm^2 ||row s of A D^{-1} S^{-1}||^2, from the table of every row up to ``ROW_TABLE_LIMIT``
    (``normalised_unit_variances``), above it one FFT per step asked (``normalised_row``), refusing more than
    ``ROW_STEPS_LIMIT`` distinct steps. The max and mean over every step (``row_norms_summary``, what ``LazyHH``'s
    threshold and the leaderboard ask) above ``ROW_TABLE_LIMIT`` come from the verified row of
    ``results/tables/nsqrt_row_norms.csv`` (``counters.normalised_rows``), refused at a horizon it does not hold.
    """

    name = "nsqrt"

    def row_norms_squared(self, steps: np.ndarray | int) -> np.ndarray:
        """||row s of B||^2."""
        if self.horizon <= ROW_TABLE_LIMIT:
            return _at_steps(normalised_unit_variances(self.horizon), steps, self.horizon)
        s = np.minimum(np.asarray(steps, dtype=np.int64), self.horizon)
        seen = np.zeros(self.horizon + 1, dtype=bool)  # distinct steps in O(T), not by sorting
        seen[s[s > 0]] = True
        asked = np.flatnonzero(seen)
        if asked.size > ROW_STEPS_LIMIT:
            raise ValueError(f"{self!r}: the row norms of {asked.size} distinct steps need the O(T^2) table of every "
                             f"row; allowed: horizon <= ROW_TABLE_LIMIT = {ROW_TABLE_LIMIT}, or at most "
                             f"ROW_STEPS_LIMIT = {ROW_STEPS_LIMIT} distinct steps a call, or their max and mean "
                             f"(row_norms_summary)")
        out = np.zeros(s.shape)
        for step in asked:
            out[s == step] = float(np.sum(normalised_row(self.horizon, int(step)) ** 2))
        return out

    def row_norms_summary(self) -> tuple[float, float]:
        """(max, mean) over every step: the table's up to ``ROW_TABLE_LIMIT``, above it the committed summary's."""
        if self.horizon <= ROW_TABLE_LIMIT:
            return super().row_norms_summary()
        # imported when asked: importing the package must leave `python -m dpstream.counters.normalised_rows` to runpy
        from dpstream.counters import normalised_rows

        got = normalised_rows.summary(self.horizon)
        if got is None:
            table = normalised_rows.TABLE
            why = (f"{table.name} holds no row for horizon {self.horizon}" if table.is_file() else
                   f"their committed summary {table} is not found: it is a file of dpstream's source checkout "
                   "(results/tables), which an installed package does not have")
            raise MissingRowNorms(
                f"{self!r}: the max and mean row norm over every step above ROW_TABLE_LIMIT = {ROW_TABLE_LIMIT} need "
                f"the O(T^2) row recursion, and {why}; allowed: horizon <= {ROW_TABLE_LIMIT}, or in a source "
                f"checkout a horizon the file holds ({normalised_rows.MAKE_TARGET} NSQRT_LOG2_MAX=k writes 2^17 .. "
                f"2^k there and prints the lines to pin them)")
        return got.var_max, got.var_mean

    def sensitivity(self, m: int = 1) -> float:
        """sqrt(m): unit columns."""
        return math.sqrt(m)

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """C = S D from the square root's coefficients and column norms, B = A C^{-1}."""
        horizon = self._check_size()
        c = _toeplitz(np.array(sqrt_coefficients(horizon))) / root_column_norms(horizon)
        return np.linalg.solve(c.T, np.tril(np.ones((horizon, horizon))).T).T, c


FACTORISATIONS: dict[str, type[Factorisation]] = {
    f.name: f for f in (Dyadic, HonakerEstimate, KaryTree, Smooth, Hybrid, Toeplitz, BLT, Unbounded, NormalisedRoot)}
"""Every factorisation by the counter name it serves (``banded*`` counters are ``Toeplitz`` with their bands)."""


def factorisation_of(counter: object) -> Factorisation:
    """The factorisation a counter instance of the package runs, with its horizon and parameters."""
    horizon = counter.horizon  # type: ignore[attr-defined]
    name = counter.name  # type: ignore[attr-defined]
    if name in (Unbounded.name, NormalisedRoot.name):  # pushed as Toeplitz counters, but C is not the square root
        return FACTORISATIONS[name](horizon)
    if hasattr(counter, "bands"):
        return Toeplitz(horizon, counter.bands)
    if name == "blt":
        return BLT(horizon, counter.params)  # type: ignore[attr-defined]
    if name == "laplace":
        return KaryTree(horizon, counter.arity)  # type: ignore[attr-defined]
    return FACTORISATIONS[name](horizon)
