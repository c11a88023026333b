"""Column players of the private equilibrium games (Hsu, Roth, Ullman): queries (Alg 3) or analysts (Alg 4).

A column player keeps what its multiplicative weights need from the rows x_1..x_{t-1} seen so far, writes its
log-weights for round t shifted so the largest is 0 (``log_weights``; Gamma_s does not depend on the shift), tells
the data player the gain of a chosen action over the universe (``data_gain``: the data player's log-weights move by
(eta/2) x gain) and observes each new row (``observe``).
"""

from __future__ import annotations

import numpy as np

from dpstream.query_release._kernels import query_log_weights
from dpstream.query_release.workloads import Workload


class QueryPlayer:
    """Alg 3: actions q and not-q for every query; maximiser's loss 1 - G (erratum 1), G = (1 + q(D) - q(x)) / 2.

    log-weight(q) = (eta/2) sum_{j<t} (q(D) - q(x_j)), log-weight(not-q) = its negative; gain(q)(x) = q(x),
    gain(not-q)(x) = 1 - q(x) (the data player's loss is G).
    """

    def __init__(self, workload: Workload, true_answers: np.ndarray) -> None:
        """Start with no rows seen (t = 0)."""
        if not np.all(np.isfinite(true_answers)):
            raise ValueError("true_answers must be finite")
        self.workload = workload
        self.true = true_answers
        self.k = workload.n_queries
        self.n_actions = 2 * self.k
        self.cum = np.zeros(self.k)  # sum_{j<t} q(x_j)
        self.t = 0

    def log_weights(self, half_eta: float, out: np.ndarray) -> None:
        """Write the max-shifted log-weights of the 2k actions into ``out`` at step size ``half_eta`` = eta/2."""
        if out.shape != (self.n_actions,):  # the compiled kernel writes out[k + i] unchecked
            raise ValueError(f"out must have shape ({self.n_actions},) (actions q and not-q), got {out.shape}")
        query_log_weights(self.true, self.cum, self.t, half_eta, out)

    def data_gain(self, action: int) -> np.ndarray:
        """The data player's gain of every universe element against ``action``."""
        values = self.workload.on_universe(action % self.k)
        return values if action < self.k else 1.0 - values

    def observe(self, x: int) -> None:
        """Add the data player's row ``x`` to the running sums."""
        self.workload.add_at_record(x, self.cum)
        self.t += 1

    def running_max_error(self) -> float:
        """Max error of the empirical distribution of the rows seen so far."""
        return float(np.abs(self.true - self.cum / self.t).max())


class AnalystPlayer:
    """Alg 4's analyst player: the actions are analysts.

    G(x, id) = max_{q in Q_id u not-Q_id} (1 + q(D) - q(x)) / 2 = (1 + max_{q in Q_id} |q(D) - q(x)|) / 2.

    log-weight(id) = (eta/2) sum_{j<t} max_{q in Q_id} |q(D) - q(x_j)|; gain(id)(x) = -max_{q in Q_id} |q(D) - q(x)|.
    """

    def __init__(self, workload: Workload, analysts: np.ndarray, true_answers: np.ndarray) -> None:
        """Group the queries by analyst; every analyst id 0..m-1 must own a query."""
        self.workload = workload
        self.true = true_answers
        self.order = np.argsort(analysts, kind="stable")
        counts = np.bincount(analysts)
        if np.any(counts == 0):
            raise ValueError("every analyst id 0..m-1 must own at least one query")
        self.starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.n_actions = counts.size
        self.members = np.split(self.order, np.cumsum(counts)[:-1])
        self.cum = np.zeros(self.n_actions)
        self._gain: dict[int, np.ndarray] = {}

    def log_weights(self, half_eta: float, out: np.ndarray) -> None:
        """Write the max-shifted log-weights of the m analysts into ``out`` at step size ``half_eta`` = eta/2."""
        np.multiply(self.cum, half_eta, out=out)
        out -= out.max()

    def data_gain(self, action: int) -> np.ndarray:
        """The data player's gain of every universe element against analyst ``action`` (cached)."""
        if action not in self._gain:
            idx = self.members[action]
            values = np.stack([self.workload.on_universe(int(j)) for j in idx])
            self._gain[action] = -np.abs(self.true[idx, None] - values).max(axis=0)
        return self._gain[action]

    def per_analyst_max(self, deviation: np.ndarray) -> np.ndarray:
        """Max over each analyst's queries of a per-query vector."""
        return np.maximum.reduceat(deviation[self.order], self.starts)

    def observe(self, x: int) -> None:
        """Add each analyst's largest error on the data player's row ``x`` to the running sums."""
        self.cum += self.per_analyst_max(np.abs(self.true - self.workload.at_record(x)))
