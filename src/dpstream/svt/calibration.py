"""Noise calibration of ThresholdMonitor (the sparse vector family's per-family formulas; Sparse's are in accounting).

Sparse / AboveThreshold follow the SVT notes; ThresholdMonitor follows Kaplan, Mansour, Stemmer, Algorithm 3,
Theorem 3.2 (Option A) and Theorem 3.8 with the composition theorem
B.1 (Option B). Every scale is built on ``dpstream.privacy.calibration.laplace_scale``; composition, Sparse's scale and
the noise multiplier kappa are in ``dpstream.privacy.accounting``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.optimize import brentq

from dpstream.privacy.accounting import advanced_composition, check_kappa
from dpstream.privacy.calibration import laplace_scale
from dpstream.validation import check_delta, check_epsilon, check_positive_int


def monitor_delta_cap(epsilon: float, delta: float) -> float:
    """Delta = b ln(b), b = ln(1/delta)/eps (Kaplan, Mansour, Stemmer, Alg. 3, step 2): cap of v and scale/10 of w."""
    b = math.log(1.0 / delta) / epsilon
    return b * math.log(b)


@dataclass(frozen=True)
class MonitorCalibration:
    """Noise parameters of one ThresholdMonitor run and the guarantee they buy.

    ``epsilon``, ``delta`` are Alg. 3's NOISE parameters; ``epsilon_total``, ``delta_total`` the
    guarantee; ``option`` is "A" (Thm 3.2) or "B" (Thm 3.8), whichever gives the larger ``epsilon``.
    ``kappa`` < 1 multiplies every noise value (w, v and the cap on v) by kappa: NOT privacy-certified.
    """

    epsilon_total: float
    delta_total: float
    k: int
    epsilon: float
    delta: float
    option: str
    epsilon_a: float
    epsilon_b: float
    kappa: float = 1.0

    @property
    def log_inv_delta(self) -> float:
        """L = ln(1/delta)."""
        return math.log(1.0 / self.delta)

    @property
    def v_scale(self) -> float:
        """Scale of v_i: b = L / eps (times kappa)."""
        return self.kappa * laplace_scale(self.log_inv_delta, self.epsilon)

    @property
    def cap(self) -> float:
        """Delta = b ln b (times kappa): the one-sided (upper) cap on v_i."""
        return self.kappa * monitor_delta_cap(self.epsilon, self.delta)

    @property
    def w_scale(self) -> float:
        """Scale of the main noise w_i: 10 Delta."""
        return 10.0 * self.cap


def thm32_xi(epsilon: float, delta: float, k: float) -> float:
    """Thm 3.2: ThresholdMonitor(eps, delta, k) is (xi, 3 delta)-DP with xi = 75 (k+1) eps / ln(1/delta) + 25 eps."""
    return 75.0 * (k + 1.0) * epsilon / math.log(1.0 / delta) + 25.0 * epsilon


def option_b_epochs(delta_total: float, k: int) -> int:
    """Number of epochs l of Option B: the smallest l with l >= k / ln(1/delta), delta = delta_total / (6 l).

    Thm 3.8's proof splits the run into l = k / ln(1/delta) epochs; delta depends on l through the
    budget split (half of delta_total to l epochs of 3 delta each, half to delta^), hence the search.
    """

    def enough(epochs: int) -> bool:  # monotone in l: l grows, k / ln(6 l / delta_total) shrinks
        return epochs >= math.ceil(k / math.log(6.0 * epochs / delta_total))

    low, high = 1, k
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid + 1, high)
    return low


def thm38_epsilon_total(epsilon: float, delta: float, k: int, delta_hat: float) -> tuple[float, float]:
    """Thm 3.8 made explicit: (eps0, delta0) of ThresholdMonitor(eps, delta, k) by epochs + Thm B.1.

    Each of l = ceil(k / ln(1/delta)) epochs is an Alg. 7 run with effective cap ln(1/delta), hence
    (xi_e, 3 delta)-DP with xi_e = Thm 3.2's xi at k = ln(1/delta); composing l of them gives
    eps0 = sqrt(2 l ln(1/delta^)) xi_e + l xi_e (e^xi_e - 1), delta0 = 3 l delta + delta^.
    """
    log_inv = math.log(1.0 / delta)
    epochs = math.ceil(k / log_inv)
    xi_e = thm32_xi(epsilon, delta, log_inv)
    return advanced_composition(xi_e, epochs, delta_hat), 3.0 * epochs * delta + delta_hat


def _option_a(epsilon_total: float, delta_total: float, k: int) -> tuple[float, float]:
    delta = delta_total / 3.0
    return epsilon_total / (75.0 * (k + 1) / math.log(1.0 / delta) + 25.0), delta


def _option_b(epsilon_total: float, delta_total: float, k: int) -> tuple[float, float]:
    epochs = option_b_epochs(delta_total, k)
    delta = delta_total / (6.0 * epochs)
    delta_hat = delta_total / 2.0

    def excess(eps: float) -> float:
        return thm38_epsilon_total(eps, delta, k, delta_hat)[0] - epsilon_total

    high = epsilon_total
    while excess(high) < 0:  # eps_total grows without bound in eps: terminates
        high *= 2.0
    return brentq(excess, 1e-300, high, xtol=1e-15, rtol=1e-12), delta


def option_parameters(epsilon_total: float, delta_total: float, k: int) -> dict[str, tuple[float, float]]:
    """Alg. 3's noise parameters (eps, delta) under each option: {"A": (eps, delta), "B": (eps, delta)}."""
    epsilon_total = check_epsilon(epsilon_total, "epsilon_total")
    delta_total = check_delta(delta_total, "delta_total")
    k = check_positive_int(k, "k")
    return {"A": _option_a(epsilon_total, delta_total, k), "B": _option_b(epsilon_total, delta_total, k)}


def calibrate(epsilon_total: float, delta_total: float, k: int, kappa: float = 1.0) -> MonitorCalibration:
    """Noise parameters (eps, delta) of ThresholdMonitor for an (epsilon_total, delta_total) guarantee with cap k.

    Option A (Thm 3.2): delta = delta_total/3, eps = eps_total / (75 (k+1)/ln(1/delta) + 25).
    Option B (Thm 3.8, see ``thm38_epsilon_total``): delta = delta_total / (6 l), eps solves eps0 = eps_total.
    Returns the option with the larger eps (less noise) and records which one was used. Raises when
    Alg. 3's preconditions ln(1/delta)/eps >= 2 and eps <= ln(1/delta) fail. ``kappa`` < 1 scales every noise
    value by kappa (``check_kappa``): NOT privacy-certified.
    """
    kappa = check_kappa(kappa)
    options = option_parameters(epsilon_total, delta_total, k)
    (eps_a, _), (eps_b, _) = options["A"], options["B"]
    option = "A" if eps_a >= eps_b else "B"
    eps, delta = options[option]
    log_inv = math.log(1.0 / delta)
    if not (log_inv / eps >= 2.0 and eps <= log_inv):
        raise ValueError(
            f"ThresholdMonitor needs ln(1/delta)/eps >= 2 and eps <= ln(1/delta); calibrate({epsilon_total}, "
            f"{delta_total}, {k}) gives eps={eps:.3g}, ln(1/delta)={log_inv:.3g}"
        )
    return MonitorCalibration(epsilon_total, delta_total, k, eps, delta, option, eps_a, eps_b, kappa)
