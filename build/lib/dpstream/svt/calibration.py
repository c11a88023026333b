"""Noise calibration of the sparse vector family: the one place its noise scales come from.

Sparse / AboveThreshold follow the notes (seed 001); ThresholdMonitor follows Kaplan, Mansour and
Stemmer (seed 000), Algorithm 3, Theorem 3.2 (Option A) and Theorem 3.8 with the composition theorem
B.1 (Option B). Every scale is built on ``dpstream.calibration.laplace_scale``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.optimize import brentq

from dpstream.calibration import laplace_scale
from dpstream.validation import check_delta, check_epsilon, check_positive_int

QUERY_SENSITIVITY = 1.0
"""|f_i(S) - f_i(S')| <= 1 for every query and neighbouring S, S': the per-query sensitivity every noise scale
of this family is calibrated for (linear queries with f_i(x) in [0, 1], add/remove one record; checked by
``dpstream.audit.sensitivity``)."""


def check_kappa(kappa: float) -> float:
    """The noise multiplier kappa in (0, 1]: 1 is the calibrated (certified) noise; kappa < 1 multiplies every noise
    scale by kappa and is NOT privacy-certified (spec E1, optional mode for curve shapes at small n)."""
    try:
        value = float(kappa)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 < value <= 1.0:
        raise ValueError(f"kappa must be in (0, 1] (1 = calibrated noise; < 1 is NOT privacy-certified), got {kappa!r}")
    return value


def sparse_composed_epsilon(epsilon: float, c: float, delta: float) -> float:
    """The exact guarantee of approximate Sparse at threshold scale sqrt(32 c ln(1/delta))/eps: its ceil(c)
    AboveThreshold rounds are each eps' = eps / sqrt(8 c ln(1/delta))-DP (threshold noise 2/eps'), composed by
    Thm B.1 at delta: sqrt(2 ceil(c) ln(1/delta)) eps' + ceil(c) eps' (e^eps' - 1), = eps/2 + ... for integer c."""
    per_round = epsilon / math.sqrt(8.0 * c * math.log(1.0 / delta))
    return advanced_composition(per_round, math.ceil(c), delta)


def sparse_advanced_certified(epsilon: float, c: float, delta: float) -> bool:
    """True when the approximate Sparse scale at (epsilon, delta), cutoff c, is (epsilon, delta)-DP, i.e.
    ``sparse_composed_epsilon <= epsilon``. (The notes' eps <= 4 ln(1/delta) only bounds e^eps' - 1 by eps' and
    is too loose: at delta = 1e-6, c = 1 the largest certified eps is 19.3, not 55.)"""
    return sparse_composed_epsilon(epsilon, c, delta) <= epsilon * (1.0 + 1e-12)


def check_sparse_advanced(epsilon: float, c: float, delta: float) -> None:
    """Reject an approximate Sparse calibration whose composition does not reach (epsilon, delta)."""
    if not sparse_advanced_certified(epsilon, c, delta):
        raise ValueError(
            f"Sparse with delta > 0 at epsilon={epsilon}, c={c}, delta={delta} composes (advanced composition) to "
            f"epsilon {sparse_composed_epsilon(epsilon, c, delta):.4g} > {epsilon}: not certified; use delta = 0 "
            f"(pure composition, sigma = 2c/eps) or a smaller epsilon"
        )


def sparse_sigma(epsilon: float, c: int, delta: float = 0.0, kappa: float = 1.0) -> float:
    """Threshold noise scale of Sparse (seed 001): sigma = 2c/eps if delta = 0, else sqrt(32 c ln(1/delta))/eps,
    times ``kappa`` (``check_kappa``; kappa < 1 is NOT privacy-certified).

    Query noise is Lap(2 sigma). AboveThreshold is the case c = 1, delta = 0 (Lap(2/eps), Lap(4/eps)).
    With delta > 0 the advanced composition is checked exactly (``check_sparse_advanced``); failing points are rejected.
    """
    c = check_positive_int(c, "c")
    kappa = check_kappa(kappa)
    if delta == 0:
        return kappa * laplace_scale(2.0 * c * QUERY_SENSITIVITY, epsilon)
    delta = check_delta(delta)
    check_sparse_advanced(epsilon, c, delta)
    return kappa * laplace_scale(math.sqrt(32.0 * c * math.log(1.0 / delta)) * QUERY_SENSITIVITY, epsilon)


def monitor_delta_cap(epsilon: float, delta: float) -> float:
    """Delta = b ln(b) with b = ln(1/delta)/eps (seed 000, Alg. 3, step 2): cap of v and scale/10 of w."""
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
    def certified(self) -> bool:
        """True at the calibrated noise (option A or B, kappa = 1); kappa < 1 buys no privacy guarantee."""
        return self.kappa == 1.0 and self.option in ("A", "B")

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


def advanced_composition(epsilon: float, rounds: int, delta_hat: float) -> float:
    """Thm B.1 (Dwork, Rothblum, Vadhan): eps^ = sqrt(2 l ln(1/delta^)) eps + l eps (e^eps - 1)."""
    growth = math.expm1(epsilon) if epsilon < 700.0 else math.inf  # e^eps overflows beyond ~709
    return math.sqrt(2.0 * rounds * math.log(1.0 / delta_hat)) * epsilon + rounds * epsilon * growth


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
