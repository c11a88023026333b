"""Private equilibrium query release (Hsu, Roth, Ullman, Algorithm 3), errata of the spec applied.

Neighbouring relations and guarantees (reported per run, never assumed):
- data: replace-one-record databases of public size n; (eps_data, delta)-DP, the composition of its parts'
  statements (``privacy``; the formula is ``hru_data_epsilon``): game, 2T steps of 2 eta T / n, DRV composition at
  delta/3; Sparse at (eps/3, delta/3); Laplace on <= s answers at delta/3. With the paper's T = n L it is far above
  the nominal eps (erratum 2).
- analysts: one-query-to-many-analyst (Def 2.3): one query of one analyst changes; eps_analyst of the shared
  synopsis D^ from Lemma 3.8 with sigma = 2/s (erratum 3, ``hru_analyst_epsilon``), at delta. The clean-up uses
  textbook Sparse, whose TOP/BOTTOM bits of different queries are coupled (erratum 4), so its analyst privacy is
  NOT certified: runs say ``analyst_cleanup_certified: False``.
"""

from __future__ import annotations

import math

import numpy as np

from dpstream.noise import NoiseSource, SeedLike, as_seed_sequence, children
from dpstream.privacy.composition import compose, compose_advanced
from dpstream.privacy.maps import LaplaceMap, SparseMap
from dpstream.privacy.query_release import (
    hru_analyst_epsilon,
    hru_laplace_scale,
    hru_parameters,
    hru_sparse_delta,
    hru_sparse_sigma,
)
from dpstream.privacy.statement import AnalystRelation, Certified, Privacy
from dpstream.query_release._kernels import sample_below, sample_index, sparse_scan
from dpstream.query_release.data import check_dense
from dpstream.query_release.gamma import gamma_projection_sum
from dpstream.query_release.iterative import Release, check_one_run, data_privacy, pmw
from dpstream.query_release.players import AnalystPlayer, QueryPlayer
from dpstream.query_release.workloads import Workload
from dpstream.validation import check_delta, check_epsilon, check_open_interval, check_positive_int


def play_game(player: QueryPlayer | AnalystPlayer, universe_size: int, rounds: int, eta: float, s: float,
              noise: NoiseSource, record_every: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Simultaneous play, history < t: x_t ~ D_t(x) ~ exp(log_d), column action ~ Gamma_s(column weights) / s.

    Returns x_1..x_T and (QueryPlayer only, every ``record_every`` rounds) the max error of D^_{<=t}.
    """
    half_eta = eta / 2
    log_d = np.zeros(universe_size)
    log_w = np.empty(player.n_actions)
    projected = np.empty(player.n_actions)
    records = np.empty(rounds, dtype=np.int64)
    uniforms = noise.rng.random((rounds, 2))
    curve_t, curve_err = [], []
    tracker = player if record_every and isinstance(player, QueryPlayer) else None
    if record_every and tracker is None:
        raise ValueError("record_every needs a QueryPlayer: the max error curve is the query player's")
    for t in range(rounds):
        player.log_weights(half_eta, log_w)
        _, total = gamma_projection_sum(log_w, s, projected, max_shifted=True)
        action = sample_below(projected, uniforms[t, 0] * total)
        records[t] = x = sample_index(np.exp(log_d - log_d.max()), uniforms[t, 1])
        log_d += half_eta * player.data_gain(action)
        player.observe(x)
        if tracker is not None and ((t + 1) % record_every == 0 or t + 1 == rounds):
            curve_t.append(t + 1)
            curve_err.append(tracker.running_max_error())
    return records, {"round": np.array(curve_t), "max_error": np.array(curve_err)}


def cleanup_privacy(sparse_sigma: float, s: float, n: int, sparse_delta: float, delta: float) -> Privacy:
    """The clean-up Sparse's statement, from its threshold scale ``sparse_sigma`` (``SparseMap``, sensitivity 1/n).

    Epsilon by the theorem its scale is calibrated by (``hru_sparse_delta``: advanced composition at delta/3, or pure
    at 0), stated at delta/3 (a pure guarantee holds at every delta).
    """
    epsilon = SparseMap(sparse_sigma, s, 1.0 / n).epsilon(sparse_delta)
    return data_privacy(epsilon, delta / 3)


def game_privacy(n: int, eta: float, rounds: int, delta: float) -> Privacy:
    """The released x_1..x_T (Thm 3.3 proof): 2T steps, each (2 eta T / n)-DP, composed at slack delta/3.

    Replace-one-record databases of size n; advanced composition (``compose_advanced``, as ``hru_game_epsilon``).
    """
    return compose_advanced(data_privacy(2 * eta * rounds / n, 0.0), 2 * rounds, delta / 3)


class _ReleaseInputs(Certified):
    """The inputs Algorithms 3 and 4 share, stored by ``_check_release_inputs``."""

    workload: Workload
    analysts: np.ndarray
    epsilon: float
    delta: float
    n: int
    beta: float


def _check_release_inputs(release: _ReleaseInputs, workload: Workload, analysts: np.ndarray, epsilon: float,
                          delta: float, n: int, beta: float) -> None:
    """Validate and store the inputs Algorithms 3 and 4 share: one analyst id per query, (eps, delta), n, beta."""
    release.workload = workload
    release.analysts = np.asarray(analysts, dtype=np.int64)
    if release.analysts.shape != (workload.n_queries,):
        raise ValueError(f"analysts must give one analyst id per query ({workload.n_queries}), "
                         f"got shape {release.analysts.shape}")
    release.epsilon = check_epsilon(epsilon)
    release.delta = check_delta(delta)
    release.n = check_positive_int(n, "n")
    release.beta = check_open_interval(beta, "beta", 0.0, 1.0)


class PrivateEquilibriumRelease(_ReleaseInputs):
    """Algorithm 3: data player (MW over X) vs query player (dense MW over Q u not-Q, Gamma_s), then clean-up.

    Payoff G_D(x, q) = (1 + q(D) - q(x)) / 2. Round t (simultaneous, history < t): x_t ~ D_t(x) ~
    exp((eta/2) sum_{j<t} q_j(x)); query weights w_t(q) ~ exp((eta/2) sum_{j<t} (q(D) - q(x_j))) (erratum 1: loss
    1 - G for the maximiser), q_t ~ Gamma_s w_t / s. Output D^ = empirical distribution of x_1..x_T; Sparse on
    |q(D) - q(D^)| with threshold alpha_D^, cutoff s; Laplace answers for the flagged queries, routed to their owners.
    Defaults: T = ceil(n L), eta = min(eps/(2 sqrt(T ln(1/delta))), sqrt(L/T)), s = 24 T (errata 3, 6);
    ``rounds_rule="data_private"``: T = n / 6.4 (erratum 2); ``s=1`` is the uncapped game (plain MW query player).
    Sparse runs over the base queries only: |q(D) - q(D^)| is the same for q and not-q.
    Privacy: (eps_data, delta)-DP for replace-one neighbouring databases and (eps_analyst, delta)
    one-query-to-many-analyst privacy of D^, both accounted per run (see the module docstring).
    """

    def __init__(self, *, workload: Workload, analysts: np.ndarray, epsilon: float, delta: float, n: int,
                 rounds: int | None = None, rounds_rule: str = "paper", s_factor: float = 24.0,
                 s: float | None = None, eta: float | None = None, cap_eta: bool = True, beta: float = 0.05,
                 record_every: int = 0, seed: SeedLike = None) -> None:
        """Validate the parameters and derive the rounds, eta and s of Alg. 3 (``hru_parameters``)."""
        _check_release_inputs(self, workload, analysts, epsilon, delta, n, beta)
        check_dense(workload.d)
        self.n_actions = 2 * workload.n_queries
        self.universe_size = 2**workload.d
        if not s_factor > 0:
            raise ValueError(f"s_factor must be > 0, got {s_factor!r}")
        params = hru_parameters(self.n, self.epsilon, self.delta, self.n_actions, self.universe_size,
                                rounds, rounds_rule, s_factor, s, eta, cap_eta)
        self.rounds, self.eta, self.s, self.big_l = int(params["rounds"]), params["eta"], params["s"], params["L"]
        if self.s >= self.n_actions:
            raise ValueError(f"s = {self.s:g} must be < N_Q = {self.n_actions} (actions incl. negations): "
                             "Gamma_s would be infeasible; use fewer rounds or a smaller s_factor")
        self.sparse_sigma = hru_sparse_sigma(self.n, self.epsilon, self.delta, self.s)
        self.sparse_delta = hru_sparse_delta(self.epsilon, self.delta, self.s)
        self.laplace_scale = hru_laplace_scale(self.n, self.epsilon, self.delta, self.s)
        self.alpha_hat = 4 * (self.eta + self.big_l / (self.eta * self.rounds)
                              + 4 * math.log(6 / self.beta) / math.sqrt(self.rounds))
        self.record_every = int(record_every)
        self.noise = NoiseSource(seed)

    @property
    def privacy(self) -> Privacy:
        """(eps_data, delta) and eps_analyst, both accounted from the configuration.

        eps_data for replace-one-record databases: the composition (``compose``) of its parts' statements, the game
        (``game_privacy``), the clean-up Sparse (``cleanup_privacy``) and the Laplace answers to
        at most s flagged queries composed at delta/3 (``compose_advanced``); equal to ``hru_data_epsilon``.
        eps_analyst for one query to many analysts (Lemma 3.8, ``hru_analyst_epsilon``) is not a composition.
        """
        answer = data_privacy(LaplaceMap(1.0 / self.n, self.laplace_scale).epsilon(0.0), 0.0)  # sensitivity 1/n
        data = compose(game_privacy(self.n, self.eta, self.rounds, self.delta),
                       cleanup_privacy(self.sparse_sigma, self.s, self.n, self.sparse_delta, self.delta),
                       compose_advanced(answer, max(1, math.floor(self.s)), self.delta / 3))
        return data_privacy(data.epsilon, data.delta, hru_analyst_epsilon(self.eta, self.rounds, self.s, self.delta),
                            AnalystRelation.ONE_QUERY_TO_MANY)

    def play(self, true_answers: np.ndarray, record_every: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The T rounds; returns the sampled records x_1..x_T and, if asked, max error of D^_{<=t} every few rounds."""
        player = QueryPlayer(self.workload, np.asarray(true_answers, dtype=np.float64))
        return play_game(player, self.universe_size, self.rounds, self.eta, self.s, self.noise, record_every)

    def run(self, true_answers: np.ndarray, *, n_runs: int = 1) -> Release:
        """Algorithm 3 end to end on the true answers q(D) of the base queries (curve: every ``record_every``)."""
        check_one_run(n_runs)
        true_answers = np.asarray(true_answers, dtype=np.float64)
        records, curve = self.play(true_answers, self.record_every)
        synopsis = self.workload.answers(np.bincount(records, minlength=self.universe_size) / self.rounds)
        gap = np.abs(true_answers - synopsis)
        cutoff = max(1, math.floor(self.s))
        flagged = sparse_scan(gap, self.noise.laplace(2 * self.sparse_sigma, gap.size),
                              self.noise.laplace(self.sparse_sigma, min(cutoff, gap.size)), self.alpha_hat, cutoff)
        answers = synopsis.copy()
        laplace_noise = self.noise.laplace(self.laplace_scale, flagged.size)
        answers[flagged] = true_answers[flagged] + laplace_noise
        per_analyst = np.bincount(self.analysts[flagged], minlength=int(self.analysts.max()) + 1)
        privacy = self.privacy
        return Release(
            answers=answers, eps_data=privacy.epsilon, delta_data=privacy.delta, rounds=self.rounds,
            eps_analyst=privacy.eps_analyst,
            info={"eta": self.eta, "s": self.s, "alpha_hat": self.alpha_hat, "n_flagged": int(flagged.size),
                  "max_flagged_per_analyst": int(per_analyst.max()), "analyst_cleanup_certified": False,
                  "synopsis_max_error": float(gap.max())},
            trace={"flagged": flagged, "laplace_noise": laplace_noise, "synopsis": synopsis,
                   "curve_round": curve["round"], "curve_max_error": curve["max_error"]},
        )


class AnalystEquilibriumRelease(_ReleaseInputs):
    r"""Algorithm 4 (one-analyst-to-many-analyst privacy): the column player picks analysts, errata applied.

    G(x, id) = max_{q in Q_id u not-Q_id} (1 + q(D) - q(x)) / 2. T = ceil(n^{2/3} max(ln|X|, ln m)) (erratum: the
    paper prints m), eta = min(eps/(2 sqrt(T ln(1/delta))), sqrt(L/T)) (the paper prints it inverted), s = 12 T
    (must be < m; ``s`` overrides). Clean-up: Sparse over analysts on max_{q in Q_id} |q(D) - q(D^)| (threshold
    alpha_D^ of Alg 3, cutoff s, at (eps/3, delta/3)); each flagged analyst gets its own PMW run at eps' =
    eps/(10 sqrt(s ln(3s/delta))), delta' = delta/(3s) (output: the flagged set I_f; the paper prints [m] \ I_f).
    The game's value is not 1/2 (per-x max), so no accuracy bound is claimed: errors are measured.

    Privacy: data, replace-one neighbouring databases of size n: (eps_data, 4 delta / 3) with eps_data accounted
    (game as Alg 3, Sparse eps/3, s PMW runs composed at delta/3). Analysts (Def 2.2, one analyst's whole set
    changes): eps_analyst of D^ from Lemma 3.8 with sigma = 1/s, at delta; clean-up coupling as in Alg 3 (not
    certified).
    """

    def __init__(self, *, workload: Workload, analysts: np.ndarray, epsilon: float, delta: float, n: int,
                 rounds: int | None = None, s: float | None = None, eta: float | None = None,
                 mw_alpha: float = 0.2, mw_rounds: int = 30, beta: float = 0.05, seed: SeedLike = None) -> None:
        """Validate the parameters; rounds (default n^(2/3) L), eta and s over analysts, the PMW budget per flag."""
        _check_release_inputs(self, workload, analysts, epsilon, delta, n, beta)
        self.m = int(self.analysts.max()) + 1
        self.universe_size = 2 ** check_dense(workload.d, copies=max(1, workload.n_queries // self.m))
        self.big_l = max(math.log(self.universe_size), math.log(self.m))
        default_t = math.ceil(self.n ** (2 / 3) * self.big_l)
        params = hru_parameters(self.n, self.epsilon, self.delta, self.m, self.universe_size,
                                rounds if rounds is not None else default_t, s_factor=12.0, s=s, eta=eta)
        self.rounds, self.eta, self.s = int(params["rounds"]), params["eta"], params["s"]
        if self.s >= self.m:
            raise ValueError(f"s = {self.s:g} must be < m = {self.m} analysts (Gamma_s over analysts)")
        self.mw_alpha, self.mw_rounds = mw_alpha, check_positive_int(mw_rounds, "mw_rounds")
        self.sparse_sigma = hru_sparse_sigma(self.n, self.epsilon, self.delta, self.s)
        self.sparse_delta = hru_sparse_delta(self.epsilon, self.delta, self.s)
        self.mw_epsilon = self.epsilon / (10 * math.sqrt(self.s * math.log(3 * self.s / self.delta)))
        self.mw_delta = self.delta / (3 * self.s)
        self.alpha_hat = 4 * (self.eta + self.big_l / (self.eta * self.rounds)
                              + 4 * math.log(6 / self.beta) / math.sqrt(self.rounds))
        self.seed = as_seed_sequence(seed)  # the flagged analysts' PMW runs are its children
        self.noise = NoiseSource(self.seed)

    @property
    def privacy(self) -> Privacy:
        """(eps_data, 4 delta / 3) and eps_analyst of D^, accounted from the configuration.

        eps_data for replace-one-record databases: the composition (``compose``) of its parts' statements, the game
        (``game_privacy``), the clean-up Sparse (``cleanup_privacy``) and at most s PMW runs, each (eps', delta'),
        composed at slack delta/3 (``compose_advanced``): delta = delta/3 + delta/3 + floor(s) delta' + delta/3, i.e.
        4 delta / 3 at integer s. eps_analyst for one analyst to many (Lemma 3.8, sigma = 1/s) is not a composition.
        """
        runs = compose_advanced(data_privacy(self.mw_epsilon, self.mw_delta), max(1, math.floor(self.s)),
                                self.delta / 3)
        data = compose(game_privacy(self.n, self.eta, self.rounds, self.delta),
                       cleanup_privacy(self.sparse_sigma, self.s, self.n, self.sparse_delta, self.delta), runs)
        return data_privacy(data.epsilon, data.delta,
                            hru_analyst_epsilon(self.eta, self.rounds, self.s, self.delta, negations=False),
                            AnalystRelation.ONE_ANALYST_TO_MANY)

    def run(self, true_answers: np.ndarray, *, n_runs: int = 1) -> Release:
        """Algorithm 4 end to end; answers are D^'s except for flagged analysts' queries (their PMW answers)."""
        check_one_run(n_runs)
        true_answers = np.asarray(true_answers, dtype=np.float64)
        player = AnalystPlayer(self.workload, self.analysts, true_answers)
        records, _ = play_game(player, self.universe_size, self.rounds, self.eta, self.s, self.noise)
        synopsis = self.workload.answers(np.bincount(records, minlength=self.universe_size) / self.rounds)
        per_analyst = player.per_analyst_max(np.abs(true_answers - synopsis))
        cutoff = max(1, math.floor(self.s))
        flagged = sparse_scan(per_analyst, self.noise.laplace(2 * self.sparse_sigma, self.m),
                              self.noise.laplace(self.sparse_sigma, min(cutoff, self.m)), self.alpha_hat, cutoff)
        answers = synopsis.copy()
        for analyst, child in zip(flagged, children(self.seed, flagged.size), strict=True):
            idx = player.members[int(analyst)]
            mw = pmw(workload=self.workload.restrict(idx), epsilon=self.mw_epsilon, delta=self.mw_delta, n=self.n,
                     alpha=self.mw_alpha, rounds=self.mw_rounds, seed=child)
            answers[idx] = mw.run(true_answers[idx]).answers
        privacy = self.privacy
        return Release(
            answers=answers, eps_data=privacy.epsilon, delta_data=privacy.delta, rounds=self.rounds,
            eps_analyst=privacy.eps_analyst,
            info={"eta": self.eta, "s": self.s, "m": self.m, "alpha_hat": self.alpha_hat,
                  "n_flagged_analysts": int(flagged.size), "analyst_cleanup_certified": False,
                  "synopsis_max_error": float(np.abs(true_answers - synopsis).max())},
            trace={"flagged": flagged, "synopsis": synopsis},
        )
