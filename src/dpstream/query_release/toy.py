"""Toy-scale query families for the median mechanism (spec E10): linear subset queries plus non-linear max queries.

Queries act on normalised histograms h over a universe of |X| <= 8 elements. Linear: q_S(h) = sum_{x in S} h(x) for
every nonempty S. Non-linear but 1/n-sensitive: max(h(a), h(b)) for every pair a < b (one record moves each h(x) by
at most 1/n, so the max moves by at most 1/n).
"""

from __future__ import annotations

import itertools

import numpy as np

from dpstream.validation import check_positive_int


class ToyQueries:
    """All nonempty subset queries (linear) and all pairwise max queries (non-linear) over |X| elements."""

    def __init__(self, universe_size: int) -> None:
        """Every non-empty subset (linear) and every pair (non-linear) query over ``universe_size`` elements."""
        self.universe_size = check_positive_int(universe_size, "universe_size", minimum=2)
        codes = np.arange(1, 2**self.universe_size)
        self.subsets = ((codes[:, None] >> np.arange(self.universe_size)) & 1).astype(np.float64)
        self.pairs = np.array(list(itertools.combinations(range(self.universe_size), 2)))
        self.n_linear = self.subsets.shape[0]
        self.n_queries = self.n_linear + self.pairs.shape[0]

    def evaluate(self, hists: np.ndarray) -> np.ndarray:
        """Answers of every query on each histogram: shape (..., n_queries); linear ones first."""
        hists = np.asarray(hists, dtype=np.float64)
        linear = hists @ self.subsets.T
        nonlinear = np.maximum(hists[..., self.pairs[:, 0]], hists[..., self.pairs[:, 1]])
        return np.concatenate([linear, nonlinear], axis=-1)
