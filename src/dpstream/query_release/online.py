"""Online iterative construction (iterative-construction notes, "Online versions"): numeric sparse decides updates.

Queries arrive one at a time (here: the workload in a seeded random order). For each f, numeric sparse tests
|f(D) - f(S^t)| against the threshold 3 alpha / 4 with cutoff c = T(alpha/2): on BOTTOM the answer is f(S^t)
(post-processing of the public synopsis); on TOP a Laplace answer v is released and S is updated with (f, v).
After the c-th TOP every later query is answered from the final S.
"""

from __future__ import annotations

import numpy as np

from dpstream.noise import NoiseSource, SeedLike
from dpstream.privacy.accounting import best_sparse_sigma, sparse_prefers_pure
from dpstream.privacy.maps import SparseMap
from dpstream.privacy.statement import Certified, Privacy
from dpstream.query_release._kernels import first_above
from dpstream.query_release.iterative import DatabaseUpdate, Release, check_delta_or_zero, check_one_run, data_privacy
from dpstream.query_release.updates import MultiplicativeWeights
from dpstream.query_release.workloads import Workload
from dpstream.validation import check_epsilon, check_open_interval, check_positive_int


def online_sparse_delta(epsilon: float, delta: float, cutoff: int) -> float:
    """The delta of the theorem ``online_sigma`` is calibrated by: 0 (pure) or delta/2 (``sparse_prefers_pure``)."""
    return 0.0 if sparse_prefers_pure(epsilon / 2, cutoff, delta / 2) else delta / 2


def online_sigma(epsilon: float, delta: float, cutoff: int) -> float:
    """NumericSparse noise for sensitivity-1 queries at total (epsilon, delta).

    The smaller of the pure and the approximate Sparse scales at (eps/2, delta/2)
    (``dpstream.privacy.accounting.best_sparse_sigma``: the approximate one only where its composition certifies (eps/2,
    delta/2)).
    """
    return best_sparse_sigma(epsilon / 2, cutoff, delta / 2)


class OnlineIC(Certified):
    """IC driven by NumericSparse (local, adaptive: the synopsis changes after each TOP).

    Privacy: (epsilon, delta)-DP for replace-one neighbouring databases of size n. NumericSparse with cutoff c on
    1/n-sensitive queries: selection at (eps/2, delta/2) with sigma = ``online_sigma(eps, delta, c)`` / n
    (threshold noise Lap(sigma), query noise Lap(2 sigma)), answers Lap(sigma) at (eps/2, delta/2).
    The svt package's NumericSparse runs over a fixed answer vector; here the answers change after every TOP, so
    the scan is local (same calibration).
    """

    def __init__(self, *, update: DatabaseUpdate, epsilon: float, delta: float, n: int, alpha: float,
                 cutoff: int | None = None, seed: SeedLike = None) -> None:
        """Validate the parameters; the cutoff defaults to the DUA's T(alpha/2)."""
        self.update = update
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta_or_zero(delta)
        self.n = check_positive_int(n, "n")
        self.alpha = check_open_interval(alpha, "alpha", 0.0, 1.0 + 1e-12)
        self.cutoff = update.rounds(alpha / 2) if cutoff is None else check_positive_int(cutoff, "cutoff")
        self.sigma = online_sigma(self.epsilon, self.delta, self.cutoff) / self.n
        self.sparse_delta = online_sparse_delta(self.epsilon, self.delta, self.cutoff)
        self.noise = NoiseSource(seed)

    @property
    def privacy(self) -> Privacy:
        """(epsilon, delta) for replace-one-record neighbours (pure if delta = 0), from the scale sigma held.

        NumericSparse's two halves, the selection and the answers, each by Sparse's theorem at sigma
        (``SparseMap``, sensitivity 1/n; the theorem ``online_sparse_delta`` says), stated at delta.
        """
        half = SparseMap(self.sigma, self.cutoff, 1.0 / self.n).epsilon(self.sparse_delta)
        return data_privacy(2.0 * half, self.delta)

    def run(self, true_answers: np.ndarray, *, n_runs: int = 1) -> Release:
        """Answer every query in a seeded random arrival order; answers returned in workload order."""
        check_one_run(n_runs)
        true_answers = np.asarray(true_answers, dtype=np.float64)
        m = true_answers.size
        order = self.noise.rng.permutation(m)
        true_stream = true_answers[order]
        query_noise = self.noise.laplace(2 * self.sigma, m)
        threshold_noise = self.noise.laplace(self.sigma, self.cutoff)
        answer_noise = self.noise.laplace(self.sigma, self.cutoff)
        answers = np.empty(m)
        current = self.update.current()[order]
        pos, tops = 0, 0
        top_queries = []
        while pos < m:
            top = -1
            if tops < self.cutoff:
                gap = np.abs(true_stream - current)
                top = first_above(gap, query_noise, pos, 0.75 * self.alpha + threshold_noise[tops])
            stop = m if top < 0 else top
            answers[pos:stop] = current[pos:stop]
            if top < 0:
                break
            v = true_stream[top] + answer_noise[tops]
            answers[top] = v
            top_queries.append(int(order[top]))
            self.update.update(int(order[top]), v, current[top])
            current = self.update.current()[order]
            tops += 1
            pos = top + 1
        out = np.empty(m)
        out[order] = answers
        return Release(answers=out, eps_data=self.privacy.epsilon, delta_data=self.delta, rounds=tops,
                       info={"tops": tops, "cutoff": self.cutoff, "sparse_sigma": self.sigma},
                       trace={"top_queries": np.array(top_queries, dtype=np.int64), "order": order})


def online_pmw(*, workload: Workload, epsilon: float, delta: float, n: int, alpha: float, cutoff: int | None = None,
               seed: SeedLike = None) -> OnlineIC:
    """Online PMW: ``OnlineIC`` with the MW update (eta = alpha / 4).

    Privacy: (epsilon, delta)-DP for replace-one neighbouring databases of size n (NumericSparse accounting).
    """
    return OnlineIC(update=MultiplicativeWeights(workload, eta=alpha / 4), epsilon=epsilon, delta=delta, n=n,
                    alpha=alpha, cutoff=cutoff, seed=seed)
