"""Privacy accounting and theory bounds of the query-release family (seed 002 notes, seed 003 Hsu-Roth-Ullman).

One place for every noise scale and every accounted epsilon. Composition is the Dwork-Rothblum-Vadhan bound:
k-fold composition of eps0-DP steps is (min{k eps0, eps0 sqrt(2 k ln(1/delta')) + k eps0 (e^eps0 - 1)}, delta')-DP.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from dpstream.calibration import laplace_scale
from dpstream.svt.calibration import sparse_advanced_certified
from dpstream.validation import check_choice, check_delta, check_epsilon, check_positive_int


def composed_epsilon(eps0: float, k: int, delta_prime: float) -> float:
    """Total epsilon of k adaptively composed eps0-DP steps (basic or DRV advanced, whichever is smaller).

    ``delta_prime`` = 0 means pure DP (basic composition only).
    """
    eps0 = check_epsilon(eps0, "eps0")
    k = check_positive_int(k, "k")
    if delta_prime == 0 or eps0 > 1.0:  # for eps0 > 1 the DRV term k eps0 (e^eps0 - 1) exceeds k eps0
        return k * eps0
    delta_prime = check_delta(delta_prime, "delta_prime")
    advanced = eps0 * math.sqrt(2 * k * math.log(1 / delta_prime)) + k * eps0 * math.expm1(eps0)
    return min(k * eps0, advanced)


def per_step_epsilon(epsilon: float, delta: float, k: int) -> float:
    """Largest eps0 whose k-fold composition (``composed_epsilon``) is <= epsilon (delta = 0: epsilon / k)."""
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k")
    if delta == 0 or k == 1 or composed_epsilon(epsilon / k, k, delta) >= epsilon:  # basic composition is tight
        return epsilon / k
    return brentq(lambda e: composed_epsilon(e, k, delta) - epsilon, epsilon / k, epsilon, xtol=1e-14, rtol=1e-12)


def laplace_answer_scale(n: int, epsilon: float, delta: float, k: int) -> float:
    """Laplace scale for k independent answers of 1/n-sensitive queries at total (epsilon, delta) (baseline)."""
    return laplace_scale(1.0 / check_positive_int(n, "n"), per_step_epsilon(epsilon, delta, k))


# ---- Iterative construction (seed 002) -------------------------------------------------------------------------

def ic_step_epsilon(epsilon: float, delta: float, rounds: int) -> float:
    """eps0 of IC: each of the ``rounds`` rounds runs two eps0-DP steps (distinguisher, Laplace answer)."""
    return per_step_epsilon(epsilon, delta, 2 * check_positive_int(rounds, "rounds"))


def mw_rounds(alpha: float, universe_size: int) -> int:
    """T(alpha) = 4 ln|X| / alpha^2 of the multiplicative-weights database update (seed 002)."""
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


def hru_sparse_sigma(n: int, epsilon: float, delta: float, s: float) -> float:
    """Threshold noise of the clean-up Sparse at (eps/3, delta/3), cutoff s, sensitivity 1/n (sparse-vector spec).

    Where advanced composition does not certify (eps/3, delta/3) (``sparse_advanced_certified``, e.g. eps/3 = 45 at
    delta/3 = 1e-6) it falls back to pure composition, Sparse at (eps/3, 0): sigma = 2 s / (eps/3) / n.
    """
    if not sparse_advanced_certified(epsilon / 3, s, delta / 3):
        return 2 * s / (epsilon / 3) / n
    return math.sqrt(32 * s * math.log(3 / delta)) / (epsilon / 3) / n


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
