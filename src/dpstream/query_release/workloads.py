"""Query workloads over {0,1}^d: conjunctions with negations, k-way marginals, sparse halfspaces; analysts.

Every workload answers a whole normalised histogram at once (``answers``), gives one query as a vector over the
universe (``on_universe``) and all queries at one record (``at_record``). Query values lie in [0, 1].
Conjunctions use the ternary transform (spec "Trick"): digit 0 means x_i = 0, 1 means x_i = 1, 2 means "any".
"""

from __future__ import annotations

import math

import numpy as np

from dpstream._repr import ParamsRepr
from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.query_release._kernels import satisfied_conjunctions
from dpstream.query_release.data import check_dense
from dpstream.validation import check_positive_int


def ternary_transform(hist: np.ndarray, d: int) -> np.ndarray:
    """All 3^d conjunction answers of a histogram over {0,1}^d (C order over (3,)*d digits).

    Along each axis append slice0 + slice1: O(d 3^d) work instead of O(6^d) brute force.
    """
    out = np.asarray(hist, dtype=np.float64).reshape((2,) * d)
    for axis in range(d):
        zero = np.take(out, 0, axis=axis)
        one = np.take(out, 1, axis=axis)
        out = np.stack([zero, one, zero + one], axis=axis)
    return out.reshape(-1)


def ternary_adjoint(weights: np.ndarray, d: int) -> np.ndarray:
    """Adjoint of ``ternary_transform``: sum_c weights_c q_c(x) for every x in {0,1}^d (length 2^d).

    Along each axis (b0, b1, b2) -> (b0 + b2, b1 + b2), the transpose of (a0, a1) -> (a0, a1, a0 + a1).
    """
    out = np.asarray(weights, dtype=np.float64).reshape((3,) * d)
    for axis in range(d):
        both = np.take(out, 2, axis=axis)
        out = np.stack([np.take(out, 0, axis=axis) + both, np.take(out, 1, axis=axis) + both], axis=axis)
    return out.reshape(-1)


def conjunction_digits(index: np.ndarray | int, d: int) -> np.ndarray:
    """Ternary digits (most significant first) of conjunction index/indices: shape (..., d)."""
    index = np.asarray(index, dtype=np.int64)
    powers = 3 ** np.arange(d - 1, -1, -1, dtype=np.int64)
    return (index[..., None] // powers) % 3


class Workload(ParamsRepr):
    """A set of linear queries q: {0,1}^d -> [0, 1]; subclasses implement the three evaluations."""

    d: int
    n_queries: int

    def answers(self, hist: np.ndarray) -> np.ndarray:
        """q(h) for every query q, h a normalised histogram of length 2^d."""
        raise NotImplementedError

    def on_universe(self, j: int) -> np.ndarray:
        """Query j as a vector of length 2^d."""
        raise NotImplementedError

    def at_record(self, x: int) -> np.ndarray:
        """q(x) for every query q at record code x."""
        raise NotImplementedError

    def add_at_record(self, x: int, out: np.ndarray) -> None:
        """Add q(x) to ``out`` for every query q at record code x."""
        out += self.at_record(x)

    def restrict(self, idx: np.ndarray) -> Workload:
        """The sub-workload of queries ``idx`` (in that order)."""
        raise NotImplementedError

    def weighted_sum(self, weights: np.ndarray) -> np.ndarray:
        """sum_j weights_j q_j(x) for every x (length 2^d): the adjoint of ``answers``."""
        raise NotImplementedError


class Conjunctions(Workload):
    """All 3^d conjunctions with negations (or the subset ``index`` of them), answered via the ternary transform."""

    def __init__(self, d: int, index: np.ndarray | None = None) -> None:
        """All 3^d conjunctions over d binary attributes, or the subset ``index``."""
        self.d = check_dense(d, base=3, copies=2)
        self.index = None if index is None else np.asarray(index, dtype=np.int64)
        self.n_queries = 3**self.d if self.index is None else int(self.index.size)
        self._position: np.ndarray | None = None
        self._repeats = False

    def _select(self, full: np.ndarray) -> np.ndarray:
        return full if self.index is None else full[self.index]

    def _position_map(self, index: np.ndarray) -> np.ndarray | None:
        """Position in the subset ``index`` of each of the 3^d conjunctions (-1: absent); None when a query repeats."""
        if self._position is None and not self._repeats:
            self._repeats = np.unique(index).size < index.size
            if not self._repeats:
                self._position = np.full(3**self.d, -1, dtype=np.int64)
                self._position[index] = np.arange(index.size)
        return self._position

    def answers(self, hist: np.ndarray) -> np.ndarray:
        """Answers on the normalised histogram ``hist`` (2^d,), by the ternary transform."""
        return self._select(ternary_transform(hist, self.d))

    def at_record(self, x: int) -> np.ndarray:
        """q(x) for every query, for one record ``x``: 1 on the 2^d conjunctions it satisfies, 0 elsewhere."""
        full = np.zeros(3**self.d)
        full[satisfied_conjunctions(int(x), self.d)] = 1.0
        return self._select(full)

    def add_at_record(self, x: int, out: np.ndarray) -> None:
        """Add q(x) to ``out`` for every query: one at the 2^d conjunctions that ``x`` satisfies."""
        idx = satisfied_conjunctions(int(x), self.d)
        if self.index is None:
            out[idx] += 1.0
            return
        position = self._position_map(self.index)
        if position is None:  # a repeated query has two positions
            out += self.at_record(x)
            return
        idx = position[idx]
        out[idx[idx >= 0]] += 1.0

    def weighted_sum(self, weights: np.ndarray) -> np.ndarray:
        """sum_j weights_j q_j over the universe (the adjoint of ``answers``)."""
        if self.index is None:
            return ternary_adjoint(weights, self.d)
        full = np.zeros(3**self.d)
        np.add.at(full, self.index, weights)
        return ternary_adjoint(full, self.d)

    def restrict(self, idx: np.ndarray) -> Conjunctions:
        """The workload of queries ``idx`` only."""
        idx = np.asarray(idx, dtype=np.int64)
        return Conjunctions(self.d, idx if self.index is None else self.index[idx])

    def on_universe(self, j: int) -> np.ndarray:
        """q_j(x) for every universe element x."""
        code = int(j) if self.index is None else int(self.index[j])
        out = np.ones(1)
        for digit in conjunction_digits(code, self.d):
            out = np.multiply.outer(out, np.array([float(digit != 1), float(digit != 0)])).reshape(-1)
        return out


class KWayMarginals(Conjunctions):
    """All k-way marginal cells: conjunctions fixing exactly k of the d attributes (C(d, k) 2^k queries)."""

    def __init__(self, d: int, k: int) -> None:
        """The conjunctions over exactly ``k`` of the d attributes."""
        d = check_dense(d, base=3, copies=2)
        self.k = check_positive_int(k, "k")
        if self.k > d:
            raise ValueError(f"k must be <= d = {d}, got {k}")
        digits = conjunction_digits(np.arange(3**d), d)
        super().__init__(d, np.flatnonzero((digits != 2).sum(axis=1) == self.k))


class MatrixWorkload(Workload):
    """Explicit queries: ``values[j, x] = q_j(x)`` in [0, 1], shape (n_queries, 2^d)."""

    def __init__(self, values: np.ndarray) -> None:
        """Check ``values`` is a non-empty (n_queries, 2^d) matrix with entries in [0, 1]."""
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[0] < 1:
            raise ValueError(f"values must be a non-empty (n_queries, 2^d) matrix, got shape {values.shape}")
        d = int(round(math.log2(values.shape[1]))) if values.shape[1] > 0 else -1
        if d < 1 or 2**d != values.shape[1]:
            raise ValueError(f"values must have 2^d columns, got {values.shape[1]}")
        if not np.all((values >= 0.0) & (values <= 1.0)):
            bad = values[(values < 0.0) | (values > 1.0) | np.isnan(values)][:3]
            raise ValueError(f"query values must lie in [0, 1], got e.g. {bad.tolist()}")
        self.d = check_dense(d, copies=values.shape[0])
        self.values = values
        self.n_queries = values.shape[0]

    def answers(self, hist: np.ndarray) -> np.ndarray:
        """Answers on the normalised histogram ``hist`` (2^d,)."""
        return self.values @ hist

    def on_universe(self, j: int) -> np.ndarray:
        """q_j(x) for every universe element x."""
        return self.values[j]

    def at_record(self, x: int) -> np.ndarray:
        """q(x) for every query, for one record ``x``."""
        return self.values[:, x]

    def weighted_sum(self, weights: np.ndarray) -> np.ndarray:
        """sum_j weights_j q_j over the universe (the adjoint of ``answers``)."""
        return np.asarray(weights, dtype=np.float64) @ self.values

    def restrict(self, idx: np.ndarray) -> MatrixWorkload:
        """The workload of queries ``idx`` only."""
        return MatrixWorkload(self.values[np.asarray(idx, dtype=np.int64)])


def sparse_halfspaces(d: int, n_queries: int, sparsity: int = 3, seed: SeedLike = None) -> MatrixWorkload:
    """Random sparse halfspaces q(x) = 1[w . x >= b]: ``sparsity`` nonzero N(0, 1) weights, b ~ N(0, 1) |w| / 2."""
    d = check_dense(d)
    n_queries = check_positive_int(n_queries, "n_queries")
    sparsity = check_positive_int(sparsity, "sparsity")
    if sparsity > d:
        raise ValueError(f"sparsity must be <= d = {d}, got {sparsity}")
    rng = np.random.default_rng(as_seed_sequence(seed))
    w = np.zeros((n_queries, d))
    support = np.argsort(rng.random((n_queries, d)), axis=1)[:, :sparsity]
    np.put_along_axis(w, support, rng.normal(size=(n_queries, sparsity)), axis=1)
    b = rng.normal(size=n_queries) * np.linalg.norm(w, axis=1) / 2
    bits = (np.arange(2**d)[:, None] >> np.arange(d - 1, -1, -1)) & 1
    return MatrixWorkload((w @ bits.T >= b[:, None]).astype(np.float64))


def conjunction_subset(d: int, n_queries: int, seed: SeedLike = None) -> Conjunctions:
    """``n_queries`` distinct conjunctions (of the 3^d) chosen uniformly at random, in increasing index order."""
    d = check_dense(d, base=3, copies=2)
    n_queries = check_positive_int(n_queries, "n_queries")
    if n_queries > 3**d:
        raise ValueError(f"n_queries must be <= 3^{d} = {3**d} conjunctions, got {n_queries}")
    rng = np.random.default_rng(as_seed_sequence(seed))
    return Conjunctions(d, np.sort(rng.choice(3**d, size=n_queries, replace=False)))


def make_workload(kind: str, d: int, k: int = 3, n_queries: int = 1000, sparsity: int = 3,
                  seed: SeedLike = None) -> Workload:
    """Build a workload by name.

    ``conjunctions`` | ``conjunction_subset`` (``n_queries`` distinct conjunctions drawn uniformly at random, spec E4) |
    ``marginals`` (k-way) | ``halfspaces`` (random sparse).
    """
    builders = {
        "conjunctions": lambda: Conjunctions(d),
        "conjunction_subset": lambda: conjunction_subset(d, n_queries, seed),
        "marginals": lambda: KWayMarginals(d, k),
        "halfspaces": lambda: sparse_halfspaces(d, n_queries, sparsity, seed),
    }
    if kind not in builders:
        raise ValueError(f"unknown workload {kind!r}; allowed: {', '.join(sorted(builders))}")
    return builders[kind]()


def assign_analysts(n_queries: int, m: int, seed: SeedLike = None) -> np.ndarray:
    """A partition of the workload among m analysts: analyst id of every query (uniform random, each nonempty)."""
    n_queries = check_positive_int(n_queries, "n_queries")
    m = check_positive_int(m, "m")
    if m > n_queries:
        raise ValueError(f"m (analysts) must be <= n_queries = {n_queries}, got {m}")
    rng = np.random.default_rng(as_seed_sequence(seed))
    owner = np.concatenate([np.arange(m), rng.integers(0, m, n_queries - m)])
    return rng.permutation(owner)
