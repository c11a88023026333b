"""Analyst-private multiplicative weights for a fixed query stream (Hsu, Roth, Ullman, Algorithm 5).

The queries q_1..q_k arrive one at a time in a fixed (non-adaptive) order; here the workload in a seeded random
order. Epoch t uses the hypothesis H_t (H_0 = D_0 = uniform; later n^ independent samples of D_t). Query i is
*good* when |q_i(D) - q_i(H_t) + z_i| <= tau, z_i ~ Lap(sigma): answer q_i(H_t). Otherwise it is *bad*: answer
q_i(D) + z_i and add u = sgn(q_i(H_t) - q_i(D) - z_i) q_i to the pool U_t. When |U_t| > s_t = s + Lap(2/eps),
one batched MW step D_{t+1}(x) ~ D_t(x) exp(-eta u_bar(x)), u_bar = (1/s) sum_{u in U_t} u, and H_{t+1} is
resampled. Halts after T epochs or R bad rounds (later queries stay unanswered: NaN).

Erratum: the printed Update uses u_bar = (1/(3s)) sum u and exp(-(alpha'/2) u_bar) with an undefined alpha';
the proofs (Lemma 5.5 and Claim 5.10, D_t ~ exp(-(eta/s) sum_{u in U_<t} u)) use (1/s) and eta: used here.

Privacy (``privacy.query_release.alg5_*``):
- data: replace-one-record databases of public size n. (eps_data, delta)-DP by Theorem 5.6 ([GRU12], adapted;
  stated without proof): at most R bad rounds and sigma >= 1000 sqrt(R) ln(4/delta) / (eps n). With the paper's
  constants this holds at every (n, k, |X|, eps) (sigma / bound = 1.25 (ln(4/delta)/ln(1/delta))^{1/4}).
- analysts: one-query-to-many-analyst (Def 2.3, one query of the stream changes), (eps_analyst, delta) with
  eps_analyst = eps/2 (Claim 5.9, the noisy epoch length) + the n^ T-fold composition of 2 eta / s (Claim 5.10).
Only the paper's constants are certified; ``AnalystPrivateMWScaledUNCERTIFIED`` is not.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from dpstream.noise import NoiseSource, SeedLike
from dpstream.privacy.query_release import (
    ALG5_PAPER_CONSTANTS,
    alg5_accuracy,
    alg5_analyst_epsilon,
    alg5_any_bad_bound,
    alg5_data_epsilon,
    alg5_parameters,
)
from dpstream.privacy.statement import AnalystRelation, Certified, Privacy
from dpstream.query_release.data import check_dense
from dpstream.query_release.iterative import Release, check_one_run, data_privacy
from dpstream.query_release.workloads import Workload
from dpstream.validation import check_delta, check_epsilon, check_open_interval, check_positive_int


class AnalystPrivateMW(Certified):
    """Algorithm 5 with the paper's constants (s 128, n^ 32, sigma 20000, tau 80000): certified.

    Parameters as printed (``privacy.query_release.alg5_parameters``): eta = n^{-2/5}, T = n^{4/5} ln|X|,
    R = 2 s T; k is the stream length (the workload size). Privacy: (eps_data, delta)-DP for replace-one
    neighbouring databases of size n (Thm 5.6) and (eps_analyst, delta) one-query-to-many-analyst privacy
    (Thm 5.8), see the module docstring.
    """

    def __init__(self, *, workload: Workload, epsilon: float, delta: float, n: int, beta: float = 0.05,
                 seed: SeedLike = None, constants: dict[str, float] | None = None) -> None:
        """Validate the parameters and set Algorithm 5's constants (the paper's unless ``constants``)."""
        self.workload = workload
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.n = check_positive_int(n, "n")
        self.beta = check_open_interval(beta, "beta", 0.0, 1.0)
        self.universe_size = 2 ** check_dense(workload.d)
        self.constants = {**ALG5_PAPER_CONSTANTS, **(constants or {})}
        self.paper_constants = self.constants == ALG5_PAPER_CONSTANTS
        p = alg5_parameters(self.n, self.epsilon, self.delta, workload.n_queries, self.universe_size, self.beta,
                            self.constants)
        self.eta, self.s, self.sigma, self.tau = p["eta"], p["s"], p["sigma"], p["tau"]
        self.n_hat, self.max_epochs, self.max_bad = int(p["n_hat"]), int(p["T"]), int(p["R"])
        self.noise = NoiseSource(seed)

    def accounted(self) -> Privacy:
        """(eps_data, delta) and eps_analyst by the paper's formulas at this run's constants.

        eps_data for replace-one-record databases (Thm 5.6), eps_analyst for one query to many analysts (Thm 5.8);
        certified only at the paper's constants.
        """
        return data_privacy(alg5_data_epsilon(self.n, self.delta, self.sigma, self.max_bad), self.delta,
                            alg5_analyst_epsilon(self.epsilon, self.eta, self.s, self.n_hat, self.max_epochs,
                                                 self.delta),
                            AnalystRelation.ONE_QUERY_TO_MANY)

    @property
    def privacy(self) -> Privacy | None:
        """``accounted()`` with the paper's constants; None with scaled ones (NOT privacy-certified)."""
        return self.accounted() if self.certified else None

    def _epoch_length(self) -> int:
        """Bad rounds that end an epoch: the first count exceeding s_t = s + Lap(2/eps)."""
        s_t = self.s + self.noise.laplace(2 / self.epsilon, 1)[0]
        return 1 if s_t < 0 else math.floor(s_t) + 1

    def _resample(self, log_d: np.ndarray) -> np.ndarray:
        """H_{t+1}: histogram of n^ independent samples of D_{t+1} ~ exp(log_d)."""
        d_next = np.exp(log_d - log_d.max())
        return self.noise.rng.multinomial(self.n_hat, d_next / d_next.sum()) / self.n_hat

    def run(self, true_answers: np.ndarray, *, n_runs: int = 1) -> Release:
        """Answer the stream (the workload in a seeded random order); answers returned in workload order."""
        check_one_run(n_runs)
        true_answers = np.asarray(true_answers, dtype=np.float64)
        k = true_answers.size
        order = self.noise.rng.permutation(k)
        true_stream = true_answers[order]
        z = self.noise.laplace(self.sigma, k)
        answers = np.full(k, np.nan)
        log_d = np.zeros(self.universe_size)
        hyp = np.full(self.universe_size, 1.0 / self.universe_size)  # H_0 = D_0
        pos = epochs = bad_rounds = 0
        while pos < k and epochs < self.max_epochs and bad_rounds < self.max_bad:
            current = self.workload.answers(hyp)[order[pos:]]
            gap = true_stream[pos:] - current + z[pos:]
            bad = np.flatnonzero(np.abs(gap) > self.tau)
            need = self._epoch_length()
            m = min(need, self.max_bad - bad_rounds)
            stop = k - pos if bad.size < m else bad[m - 1] + 1  # queries pos .. pos + stop - 1 use H_t
            used = bad[bad < stop]
            block = current[:stop].copy()
            block[used] = true_stream[pos + used] + z[pos + used]
            answers[order[pos:pos + stop]] = block
            bad_rounds += used.size
            if used.size == need:  # |U_t| > s_t: one batched MW step, resample H
                weights = np.zeros(k)
                weights[order[pos + used]] = np.sign(-gap[used]) / self.s  # sgn(q(H) - q(D) - z) q / s
                log_d -= self.eta * self.workload.weighted_sum(weights)
                hyp = self._resample(log_d)
                epochs += 1
            pos += stop
        answered = np.isfinite(answers)
        p_bad = alg5_any_bad_bound(self.tau, self.sigma, k)
        accounted = self.accounted()
        return Release(
            answers=answers, eps_data=accounted.epsilon, delta_data=accounted.delta, rounds=epochs,
            eps_analyst=accounted.eps_analyst,
            info={"eta": self.eta, "s": self.s, "n_hat": self.n_hat, "T": self.max_epochs, "R": self.max_bad,
                  "sigma": self.sigma, "tau": self.tau, "epochs": epochs, "bad_rounds": bad_rounds,
                  "answered_fraction": float(answered.mean()), "halted": bool(not answered.all()),
                  "alpha_bound": alg5_accuracy(self.tau, self.sigma, k, self.beta), "p_any_bad_bound": p_bad,
                  "constants": "paper" if self.certified else "scaled_UNCERTIFIED",
                  **({} if self.certified else {"certified": False})},
            trace={"order": order, "z": z},
        )


class AnalystPrivateMWScaledUNCERTIFIED(AnalystPrivateMW):
    """Algorithm 5 with SCALED constants: NOT privacy-certified (Thm 5.6 and 5.8 need the paper's constants).

    Same algorithm; ``c_s``, ``c_n_hat``, ``c_sigma``, ``c_tau`` replace 128, 32, 20000, 80000 so that something
    moves at laptop n. eps_data and eps_analyst are still computed by the paper's formulas (``accounted``, so they
    show how far from the nominal eps the run is), every output says ``certified: False`` and ``privacy`` is None.
    """

    _repr_attrs: ClassVar[dict[str, str]] = {"c_s": "constants.s", "c_n_hat": "constants.n_hat",
                                             "c_sigma": "constants.sigma", "c_tau": "constants.tau"}

    def __init__(self, *, workload: Workload, epsilon: float, delta: float, n: int, c_s: float, c_n_hat: float,
                 c_sigma: float, c_tau: float, beta: float = 0.05, seed: SeedLike = None) -> None:
        """Algorithm 5 with the constants c_s, c_n_hat, c_sigma, c_tau in place of the paper's."""
        super().__init__(workload=workload, epsilon=epsilon, delta=delta, n=n, beta=beta, seed=seed,
                         constants={"s": c_s, "n_hat": c_n_hat, "sigma": c_sigma, "tau": c_tau})
        self.paper_constants = False  # never certified, even at the paper's numbers
