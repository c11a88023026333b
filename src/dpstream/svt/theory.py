"""Accuracy and privacy formulas of the sparse vector family, one function per statement.

(alpha, beta)-accuracy: with probability >= 1 - beta every TOP query has f_i >= t - alpha and every
BOTTOM query f_i <= t + alpha. Natural logs throughout. Sources: the SVT notes for AboveThreshold
and Sparse, Kaplan, Mansour, Stemmer for ThresholdMonitor and shifting heavy hitters; the
notes' Sparse accuracy print is garbled, we follow the spec's re-derivation (AboveThreshold bound at
eps' = eps/c or eps/sqrt(8 c ln(1/delta)) and beta/c, union bound over the c restarts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.optimize import brentq

from dpstream.privacy.svt import calibrate_evolving, calibrate_monitor, monitor_delta_cap, thm32_xi, thm38_epsilon_total
from dpstream.validation import check_delta, check_epsilon, check_open_interval, check_positive_int


def alpha_above_threshold(epsilon: float, m: int, beta: float) -> float:
    """AboveThreshold over m queries (notes, accuracy theorem): alpha = 8 (ln m + ln(2/beta)) / eps."""
    epsilon = check_epsilon(epsilon)
    beta = check_open_interval(beta, "beta", 0.0, 1.0)
    return 8.0 * (math.log(m) + math.log(2.0 / beta)) / epsilon


def alpha_sparse_pure(epsilon: float, c: float, m: int, beta: float) -> float:
    """Sparse, delta=0 (notes, re-derived) alpha = 8 c (ln m + ln(2c/beta)) / eps; needs <= c queries >= t-alpha."""
    epsilon = check_epsilon(epsilon)
    beta = check_open_interval(beta, "beta", 0.0, 1.0)
    return 8.0 * c * (math.log(m) + math.log(2.0 * c / beta)) / epsilon


def alpha_sparse_approx(epsilon: float, delta: float, c: float, m: int, beta: float) -> float:
    """Sparse, delta > 0 (notes, re-derived): alpha = 8 sqrt(8 c ln(1/delta)) (ln m + ln(2c/beta)) / eps."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    beta = check_open_interval(beta, "beta", 0.0, 1.0)
    return 8.0 * math.sqrt(8.0 * c * math.log(1.0 / delta)) * (math.log(m) + math.log(2.0 * c / beta)) / epsilon


def alpha_sparse(epsilon: float, delta: float, c: float, m: int, beta: float) -> float:
    """The better of the two Sparse bounds at the same (epsilon, delta) budget."""
    return min(alpha_sparse_pure(epsilon, c, m, beta), alpha_sparse_approx(epsilon, delta, c, m, beta))


def alpha_monitor(epsilon: float, delta: float, m: int, beta: float) -> float:
    """Thm 3.1 with explicit constants (spec): alpha_TM = ln(2m/beta) (10 Delta + ln(1/delta)/eps).

    Union bound over the 2m Laplace draws: |w_i| <= 10 Delta ln(2m/beta), |v_i| <= b ln(2m/beta).
    (eps, delta) are Alg. 3's noise parameters; see ``alpha_monitor_total`` for a guarantee.
    """
    beta = check_open_interval(beta, "beta", 0.0, 1.0)
    return math.log(2.0 * m / beta) * (10.0 * monitor_delta_cap(epsilon, delta) + math.log(1.0 / delta) / epsilon)


def alpha_monitor_total(epsilon_total: float, delta_total: float, k: int, m: int, beta: float) -> float:
    """alpha_TM of a ThresholdMonitor calibrated (``calibrate_monitor``) to (epsilon_total, delta_total) with cap k."""
    cal = calibrate_monitor(epsilon_total, delta_total, k)
    return alpha_monitor(cal.epsilon, cal.delta, m, beta)


def monitor_privacy_thm32(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """Thm 3.2: ThresholdMonitor(eps, delta, k) is (75 (k+1) eps / ln(1/delta) + 25 eps, 3 delta)-DP."""
    k = check_positive_int(k, "k")
    return thm32_xi(epsilon, delta, k), 3.0 * delta


def monitor_privacy_thm38(epsilon: float, delta: float, k: int, delta_hat: float) -> tuple[float, float]:
    """Thm 3.8 (via Thm B.1): (eps0, 3 l delta + delta^) with l = ceil(k / ln(1/delta)) epochs."""
    k = check_positive_int(k, "k")
    return thm38_epsilon_total(epsilon, delta, k, delta_hat)


def sparse_crossover_c(
    epsilon_total: float, delta_total: float, k: int, m: int, beta: float, c_max: float = 1e12
) -> float:
    """The c at which Sparse's best bound (pure or approximate) exceeds alpha_TM(k): solved on real c (brentq)."""
    target = alpha_monitor_total(epsilon_total, delta_total, k, m, beta)

    def gap(log_c: float) -> float:
        return math.log(alpha_sparse(epsilon_total, delta_total, math.exp(log_c), m, beta) / target)

    if gap(0.0) >= 0:
        return 1.0
    return math.exp(brentq(gap, 0.0, math.log(c_max), xtol=1e-10))


@dataclass(frozen=True)
class HeavyHitterBounds:
    """Thm 4.7 instantiated: TME threshold t = 2B, guarantee tau = 3B, B = ln(2 m |X| / beta) (10 Delta1 + Delta2)."""

    big_b: float
    threshold: float
    tau: float


def heavy_hitter_tau(
    epsilon: float, delta: float, k_star: int, m: int, domain_size: int, beta: float
) -> HeavyHitterBounds:
    """Thm 4.7: shifting heavy hitters through TME calibrated at cap k*, group privacy for replace-one users.

    (eps~, delta~) = calibrate_evolving(eps, delta, k*) = calibrate_monitor(eps/2, delta/(1+e^{eps/2}), k*)
    (group of 2);
    Delta1 = Delta(eps~, delta~); Delta2 = ln(1/delta~)/eps~; B = ln(2 m |X| / beta)(10 Delta1 + Delta2).
    """
    cal = calibrate_evolving(epsilon, delta, k_star)
    beta = check_open_interval(beta, "beta", 0.0, 1.0)
    big_b = math.log(2.0 * m * domain_size / beta) * (cal.w_scale + cal.v_scale)
    return HeavyHitterBounds(big_b, 2.0 * big_b, 3.0 * big_b)
