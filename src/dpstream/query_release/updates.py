"""Database update algorithms (DUAs) of iterative construction (iterative-construction notes): MW, MWEM's MW, median.

A DUA holds a synthetic state S, reports f(S) for every query (``current``) and moves S after a noisy answer v to a
query j (``update``). ``rounds(alpha)`` is its T(alpha): no database update sequence at accuracy alpha is longer.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpstream._repr import ParamsRepr
from dpstream.privacy.query_release import mw_rounds
from dpstream.query_release.workloads import Workload
from dpstream.validation import check_positive_int


class MultiplicativeWeights(ParamsRepr):
    """MW update: D <- D e^{-eta f} if v < f(D^t) else D e^{+eta f}, renormalised; T(alpha) = 4 ln|X| / alpha^2."""

    def __init__(self, workload: Workload, eta: float) -> None:
        """Start from the uniform histogram over the 2^d universe."""
        if not eta > 0:
            raise ValueError(f"eta must be > 0, got {eta!r}")
        self.workload = workload
        self.eta = float(eta)
        self.universe_size = 2**workload.d
        self.hist = np.full(self.universe_size, 1.0 / self.universe_size)

    def rounds(self, alpha: float) -> int:
        """T(alpha) = 4 ln|X| / alpha^2 (``mw_rounds``)."""
        return mw_rounds(alpha, self.universe_size)

    def current(self) -> np.ndarray:
        """f(D^t) for every query of the workload."""
        return self.workload.answers(self.hist)

    def update(self, j: int, v: float, current_j: float) -> None:
        """One MW step against query ``j``: down-weight where f_j = 1 if v < f_j(D^t), else up-weight."""
        sign = -1.0 if v < current_j else 1.0
        self.hist = self.hist * np.exp(sign * self.eta * self.workload.on_universe(j))
        self.hist /= self.hist.sum()


class MWEMUpdate(MultiplicativeWeights):
    """MWEM's update (Hardt, Ligett, McSherry): D <- D exp(f (v - f(D)) / 2) replayed over all measurements so far.

    ``rounds`` is not a T(alpha) bound (MWEM runs a fixed number of rounds); ``replays`` passes per round.
    """

    def __init__(self, workload: Workload, replays: int = 5) -> None:
        """MW at eta = 1/2 with ``replays`` passes over the measurements per round."""
        super().__init__(workload, eta=0.5)
        self.replays = check_positive_int(replays, "replays")
        self.measured: list[tuple[np.ndarray, float]] = []

    def update(self, j: int, v: float, current_j: float) -> None:
        """Record the measurement (f_j, v) and replay every measurement so far ``replays`` times."""
        self.measured.append((self.workload.on_universe(j), v))
        for _ in range(self.replays):
            for q, value in self.measured:
                self.hist = self.hist * np.exp(q * (value - q @ self.hist) * self.eta)
                self.hist /= self.hist.sum()


def size_n_databases(universe_size: int, n: int) -> np.ndarray:
    """The trivial net: every multiset of n records over a universe of ``universe_size``, as normalised histograms.

    C(n + |X| - 1, |X| - 1) rows (stars and bars); multisets suffice because queries read the empirical distribution.
    """
    universe_size = check_positive_int(universe_size, "universe_size")
    n = check_positive_int(n, "n")
    count = math.comb(n + universe_size - 1, universe_size - 1)
    if count * universe_size * 8 > 2**30:
        raise ValueError(f"the trivial net has {count} databases (> 1 GiB); use |X| <= 8 and n <= 30 (toy scale)")
    bars = np.array(list(itertools.combinations(range(n + universe_size - 1), universe_size - 1)), dtype=np.int64)
    bars = bars.reshape(count, universe_size - 1)
    edges = np.hstack([np.full((count, 1), -1), bars, np.full((count, 1), n + universe_size - 1)])
    return (np.diff(edges, axis=1) - 1).astype(np.float64) / n


class MedianMechanism(ParamsRepr):
    """Median-mechanism update over a candidate set S (an alpha-net); f(S) = lower median of f over S.

    If v < f(S) remove {D': f(D') >= f(S)} else remove {D': f(D') <= f(S)} (non-strict, so ties still halve);
    every update at least halves S, so T(alpha) = log2 |net|. Works for any 1/n-sensitive (also non-linear) query:
    ``candidate_answers[c, j]`` = f_j(candidate c). An update that would empty S (all remaining candidates tie,
    nothing left to learn) is skipped and counted in ``skipped``.
    """

    def __init__(self, candidate_answers: np.ndarray) -> None:
        """Every candidate alive; ``candidate_answers[c, j]`` = f_j(candidate c)."""
        self.candidate_answers = np.asarray(candidate_answers, dtype=np.float64)
        self.alive = np.ones(self.candidate_answers.shape[0], dtype=bool)
        self.skipped = 0

    def rounds(self, alpha: float) -> int:
        """T(alpha) = log2 |net|: every update at least halves S."""
        return max(1, math.ceil(math.log2(self.candidate_answers.shape[0])))

    def size(self) -> int:
        """Number of candidates alive."""
        return int(self.alive.sum())

    def current(self) -> np.ndarray:
        """Lower median of f over the alive candidates, per query."""
        alive = self.candidate_answers[self.alive]
        return np.sort(alive, axis=0)[(alive.shape[0] - 1) // 2]

    def update(self, j: int, v: float, current_j: float) -> None:
        """Remove the candidates on the wrong side of the median of query ``j`` (skipped if none would remain)."""
        column = self.candidate_answers[:, j]
        remove = column >= current_j if v < current_j else column <= current_j
        keep = self.alive & ~remove
        if keep.any():
            self.alive = keep
        else:
            self.skipped += 1
