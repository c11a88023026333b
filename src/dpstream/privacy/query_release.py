"""Privacy accounting and theory bounds of the query-release family (iterative-construction notes; Hsu, Roth, Ullman).

Every noise scale and every accounted epsilon of the family. Composition (``composed_epsilon``: basic or
Dwork-Rothblum-Vadhan, whichever is smaller), its inversion (``per_step_epsilon``) and Sparse's scale come from
``dpstream.privacy.accounting``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from dpstream.privacy.accounting import composed_epsilon, per_step_epsilon, sparse_advanced_certified, sparse_sigma
from dpstream.privacy.calibration import laplace_scale
from dpstream.validation import check_choice, check_delta, check_epsilon, check_positive_int


def laplace_answer_scale(n: int, epsilon: float, delta: float, k: int) -> float:
    """Laplace scale for k independent answers of 1/n-sensitive queries at total (epsilon, delta) (baseline)."""
    return laplace_scale(1.0 / check_positive_int(n, "n"), per_step_epsilon(epsilon, delta, k))


# ---- Iterative construction (the iterative-construction notes) ---------------------------------------------------

def ic_step_epsilon(epsilon: float, delta: float, rounds: int) -> float:
    """eps0 of IC: each of the ``rounds`` rounds runs two eps0-DP steps (distinguisher, Laplace answer)."""
    return per_step_epsilon(epsilon, delta, 2 * check_positive_int(rounds, "rounds"))


def mw_rounds(alpha: float, universe_size: int) -> int:
    """T(alpha) = 4 ln|X| / alpha^2 of the multiplicative-weights database update (the iterative-construction notes)."""
    return max(1, math.ceil(4 * math.log(universe_size) / alpha**2))


def pmw_alpha_bound(n: float, epsilon: float, delta: float, n_queries: float, universe_size: int,
                    beta: float = 0.05) -> float:
    """Smallest alpha meeting the IC accuracy theorem for PMW with the exponential-mechanism distinguisher.

    alpha >= max(8 ln(2T/beta)/(n eps0), 8 F(eps0)), F = 2 ln(|Q|/gamma)/(n eps0), gamma = beta/(2T),
    T = T(alpha/2) = 16 ln|X|/alpha^2 (not rounded), eps0 = eps/(4 sqrt(T ln(1/delta))) (the notes' constant).
    """
    def excess(alpha: float) -> float:
        rounds = 16 * math.log(universe_size) / alpha**2
        eps0 = epsilon / (4 * math.sqrt(rounds * math.log(1 / delta)))
        need = max(8 * math.log(2 * rounds / beta), 16 * math.log(2 * rounds * n_queries / beta)) / (n * eps0)
        return alpha - need

    return brentq(excess, 1e-9, 1e9)


def laplace_alpha_bound(n: float, epsilon: float, delta: float, n_queries: float, beta: float = 0.05) -> float:
    """Independent Laplace answers: sqrt(8 |Q| ln(1/delta)) ln(|Q|/beta) / (eps n) (the spec's table)."""
    return math.sqrt(8 * n_queries * math.log(1 / delta)) * math.log(n_queries / beta) / (epsilon * n)


# ---- Hsu-Roth-Ullman Algorithm 3 ------------------------------------------------------------------------------

ROUNDS_RULES = ("paper", "data_private")


def hru_parameters(n: int, epsilon: float, delta: float, n_actions: int, universe_size: int,
                   rounds: int | None = None, rounds_rule: str = "paper", s_factor: float = 24.0,
                   s: float | None = None, eta: float | None = None, cap_eta: bool = True) -> dict[str, float]:
    """T, eta, s, L of Algorithm 3.

    Paper: T = ceil(n L), L = max(ln|X|, ln N_Q), eta = eps/(2 sqrt(T ln(1/delta))), s = 12 T. Errata applied:
    s = 24 T by default (erratum 3: negations double the actions), eta capped at sqrt(L/T) (erratum 6).
    ``rounds_rule`` "data_private": T = max(1, floor(n / 6.4)) (erratum 2: keeps the accounted data epsilon near
    the nominal one). Explicit ``rounds``, ``s`` or ``eta`` override the rules (privacy is still accounted).
    """
    check_choice(rounds_rule, "rounds_rule", ROUNDS_RULES)
    big_l = max(math.log(universe_size), math.log(n_actions))
    if rounds is not None:
        t = check_positive_int(rounds, "rounds")
    else:
        t = math.ceil(n * big_l) if rounds_rule == "paper" else max(1, math.floor(n / 6.4))
    if eta is None:
        eta = epsilon / (2 * math.sqrt(t * math.log(1 / delta)))
        if cap_eta:
            eta = min(eta, math.sqrt(big_l / t))
    elif not eta > 0:
        raise ValueError(f"eta must be > 0, got {eta!r}")
    return {"rounds": t, "eta": float(eta), "s": s_factor * t if s is None else float(s), "L": big_l}


def hru_game_epsilon(n: int, eta: float, rounds: int, delta: float) -> float:
    """Data epsilon of the released x_1..x_T (Thm 3.3 proof): 2T steps, each eps0 = 2 eta T / n, at delta/3."""
    return composed_epsilon(2 * eta * rounds / n, 2 * rounds, delta / 3)


def hru_sparse_delta(epsilon: float, delta: float, s: float) -> float:
    """The delta of the theorem the clean-up Sparse is calibrated by: delta/3 (advanced composition), else 0 (pure).

    Pure where advanced composition does not certify (eps/3, delta/3) (``sparse_advanced_certified``, e.g. eps/3 = 45
    at delta/3 = 1e-6).
    """
    return delta / 3 if sparse_advanced_certified(epsilon / 3, s, delta / 3) else 0.0


def hru_sparse_sigma(n: int, epsilon: float, delta: float, s: float) -> float:
    """Threshold noise of the clean-up Sparse at (eps/3, delta/3), cutoff s, sensitivity 1/n (sparse-vector spec).

    Sparse at (eps/3, ``hru_sparse_delta``): where advanced composition does not certify (eps/3, delta/3) it falls
    back to pure composition, sigma = 2 s / (eps/3) / n.
    """
    return sparse_sigma(epsilon / 3, s, hru_sparse_delta(epsilon, delta, s)) / n


def hru_laplace_scale(n: int, epsilon: float, delta: float, s: float) -> float:
    """Laplace scale of the flagged answers: 3 sqrt(8 s ln(3/delta)) / (eps n) (uses s, not |Q_f|)."""
    return 3 * math.sqrt(8 * s * math.log(3 / delta)) / (epsilon * n)


def hru_data_epsilon(n: int, epsilon: float, delta: float, eta: float, rounds: int, s: float) -> float:
    """Accounted data epsilon of Algorithm 3: game (as accounted) + Sparse (eps/3) + Laplace on <= s answers."""
    eps_q = (1.0 / n) / hru_laplace_scale(n, epsilon, delta, s)
    eps_lap = composed_epsilon(eps_q, max(1, math.floor(s)), delta / 3)
    return hru_game_epsilon(n, eta, rounds, delta) + epsilon / 3 + eps_lap


def hru_analyst_epsilon(eta: float, rounds: int, s: float, delta: float, negations: bool = True) -> float:
    """One-query-to-many-analyst epsilon of D^ (Lemma 3.8 with Lemma 3.9).

    sigma = 2/s with negations (erratum 3), 1/s without: eps_A = eta (T sigma) sqrt(2 T ln(1/delta))
    + 30 eta^2 (T sigma) T, valid when eta <= 1/2 and T sigma <= 1/12. Otherwise the trivial bound eta T^2
    (each x_t is eta T-DP in the query sequence, T of them) is returned.
    """
    sigma = (2.0 if negations else 1.0) / s
    if eta <= 0.5 and rounds * sigma <= 1 / 12 + 1e-12:
        ts = rounds * sigma
        return eta * ts * math.sqrt(2 * rounds * math.log(1 / delta)) + 30 * eta**2 * ts * rounds
    return eta * rounds**2


def game_rho(eta: float, t: np.ndarray, big_l: float, beta: float = 0.05) -> np.ndarray:
    """rho(t) = eta + L/(eta t) + 4 ln(2/beta)/sqrt(t): the game average's accuracy after t rounds (Cor 2.14)."""
    return eta + big_l / (eta * t) + 4 * math.log(2 / beta) / np.sqrt(t)


def hru_alpha_bound(n: float, epsilon: float, delta: float, n_actions: float, universe_size: int,
                    beta: float = 0.05, s_factor: float = 12.0) -> dict[str, float]:
    """Accuracy of Algorithm 3 with the paper's T, eta, s = s_factor T (spec formulas; 12 reproduces the table).

    Also returns ``s``: Algorithm 3 is only defined where s < N_Q = ``n_actions`` (else Gamma_s is infeasible).
    """
    big_l = max(math.log(universe_size), math.log(n_actions))
    t = n * big_l
    eta = epsilon / (2 * math.sqrt(t * math.log(1 / delta)))
    s = s_factor * t
    a_hat = 4 * (eta + big_l / (eta * t) + 4 * math.log(6 / beta) / math.sqrt(t))
    noise = 3 * math.sqrt(8 * s * math.log(3 / delta)) / (epsilon * n)
    a_sv = noise * math.log(3 * n_actions / beta)
    a_lap = noise * math.log(3 * s / beta)
    return {"alpha_D": a_hat, "alpha_SV": a_sv, "alpha_Lap": a_lap, "alpha": max(a_hat + a_sv, a_lap), "s": s}


def hru_synopsis_bound(rounds: float, epsilon: float, delta: float, big_l: float, beta: float = 0.05,
                       cap_eta: bool = True) -> float:
    """alpha_D^ = 4 [eta + L/(eta T) + 4 ln(6/beta)/sqrt(T)] of Algorithm 3's synopsis at T rounds (eta as run)."""
    eta = epsilon / (2 * math.sqrt(rounds * math.log(1 / delta)))
    if cap_eta:
        eta = min(eta, math.sqrt(big_l / rounds))
    return 4 * (eta + big_l / (eta * rounds) + 4 * math.log(6 / beta) / math.sqrt(rounds))


def hru_crossover(d: int, epsilon: float, delta: float, uniform_error: float, beta: float = 0.05,
                  s_factor: float = 24.0, rounds_per_record: float = 1 / 6.4) -> dict[str, float]:
    """Where Algorithm 3 (all 3^d conjunctions, T = n / 6.4, s = 24 T) could beat the uniform line, from theory.

    Feasible iff s = s_factor T < N_Q = 2 3^d, so T <= T_max = ceil(N_Q / s_factor) - 1 and n <= T_max / r
    (r = ``rounds_per_record``). ``T_beat`` is the smallest T with alpha_D^(T) < ``uniform_error`` (inf if none
    up to 1e12); it is reachable iff T_beat <= T_max, at n = T_beat / r records.
    """
    n_actions = 2 * 3**d
    big_l = max(d * math.log(2), math.log(n_actions))
    t_max = math.ceil(n_actions / s_factor) - 1
    lo, hi = 1.0, 1e12
    if hru_synopsis_bound(hi, epsilon, delta, big_l, beta) >= uniform_error:
        t_beat = math.inf
    else:
        while hi - lo > 0.5:  # alpha_D^ decreases in T once eta is capped or T is large: bisection on T
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if hru_synopsis_bound(mid, epsilon, delta, big_l, beta) < uniform_error else (mid, hi)
        t_beat = math.ceil(hi)
    return {"d": d, "epsilon": epsilon, "n_actions": n_actions, "T_max": t_max, "n_max": t_max / rounds_per_record,
            "alpha_at_T_max": hru_synopsis_bound(max(t_max, 1), epsilon, delta, big_l, beta),
            "T_beat": t_beat, "n_beat": t_beat / rounds_per_record, "feasible": bool(t_beat <= t_max)}


# ---- Hsu-Roth-Ullman Algorithm 5 ------------------------------------------------------------------------------

ALG5_PAPER_CONSTANTS = {"s": 128.0, "n_hat": 32.0, "sigma": 20000.0, "tau": 80000.0}
"""Algorithm 5's printed constants: s = 128 n^{2/5} ..., n^ = 32 n^{4/5} ..., sigma = 20000 ..., tau = 80000 ..."""


def alg5_parameters(n: int, epsilon: float, delta: float, k: int, universe_size: int, beta: float = 0.05,
                    constants: dict[str, float] | None = None) -> dict[str, float]:
    """eta, s, n^, T, R, sigma, tau of Algorithm 5 (paper constants unless ``constants`` says otherwise).

    eta = n^{-2/5}; s = c_s n^{2/5} sqrt(ln|X| ln(4k/beta) ln(1/delta)) / eps; n^ = ceil(c_n n^{4/5} ln(4k/beta));
    T = ceil(n^{4/5} ln|X|); R = ceil(2 s T); sigma = c_sigma ln^{3/4}|X| ln^{1/4}(4k/beta) ln^{5/4}(4/delta) /
    (eps^{3/2} n^{2/5}); tau = c_tau ln^{3/4}|X| ln^{5/4}(4k/beta) ln^{5/4}(4/delta) / (eps^{3/2} n^{2/5}).
    """
    c = {**ALG5_PAPER_CONSTANTS, **(constants or {})}
    bad = {key: v for key, v in c.items() if key not in ALG5_PAPER_CONSTANTS or not v > 0}
    if bad:
        raise ValueError(f"Algorithm 5 constants must be positive and among {sorted(ALG5_PAPER_CONSTANTS)}, got {bad}")
    n, k = check_positive_int(n, "n"), check_positive_int(k, "k")
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    lx, lk, n25 = math.log(universe_size), math.log(4 * k / beta), n ** 0.4
    s = c["s"] * n25 * math.sqrt(lx * lk * math.log(1 / delta)) / epsilon
    rounds = math.ceil(n**0.8 * lx)
    common = lx**0.75 * math.log(4 / delta) ** 1.25 / (epsilon**1.5 * n25)
    return {"eta": n ** -0.4, "s": s, "n_hat": math.ceil(c["n_hat"] * n**0.8 * lk), "T": rounds,
            "R": math.ceil(2 * s * rounds), "sigma": c["sigma"] * lk**0.25 * common,
            "tau": c["tau"] * lk**1.25 * common}


def alg5_data_epsilon(n: int, delta: float, sigma: float, bad_rounds: int) -> float:
    """Data epsilon of Algorithm 5 by Theorem 5.6 ([GRU12], adapted, stated without proof in the paper).

    (eps, delta)-DP when sigma >= 1000 sqrt(R) ln(4/delta) / (eps n) and at most R bad rounds occur (the algorithm
    halts at R); the smallest such eps is returned.
    """
    return 1000 * math.sqrt(bad_rounds) * math.log(4 / delta) / (sigma * n)


def alg5_analyst_epsilon(epsilon: float, eta: float, s: float, n_hat: int, rounds: int, delta: float) -> float:
    """One-query-to-many-analyst epsilon of Algorithm 5 (Theorem 5.8).

    Claim 5.9: the epoch end i_0 moves by one bad query, s_0 = s + Lap(2/eps): eps/2. Claim 5.10: every one of the
    n^ T samples of the H_t is eps0 = 2 eta / s DP in the query sequence (D_t ~ exp(-(eta/s) sum of update
    queries)); composed over n^ T at delta (``composed_epsilon``).
    """
    return epsilon / 2 + composed_epsilon(2 * eta / s, n_hat * rounds, delta)


def alg5_accuracy(tau: float, sigma: float, k: int, beta: float = 0.05) -> float:
    """Claim 5.3: before halting, every answer is within tau + 6 sigma ln(3k/beta) w.p. >= 1 - beta/4."""
    return tau + 6 * sigma * math.log(3 * k / beta)


def alg5_any_bad_bound(tau: float, sigma: float, k: int) -> float:
    """Pr[some query is bad while H_0 is in use] <= k exp(-(tau - 1)/sigma) (|q(D) - q(H)| <= 1); 1 if tau <= 1.

    When this is tiny, Algorithm 5 answers every query from H_0 = D_0, the uniform distribution.
    """
    if tau <= 1:
        return 1.0
    return min(1.0, k * math.exp(-(tau - 1) / sigma))
