"""Noise calibration of ThresholdMonitor (the sparse vector family's per-family formulas; Sparse's are in accounting).

Sparse / AboveThreshold follow the SVT notes; ThresholdMonitor follows Kaplan, Mansour, Stemmer, Algorithm 3,
Theorem 3.2 (Option A) and Theorem 3.8 with the composition theorem
B.1 (Option B). Every scale is built on ``dpstream.privacy.calibration.laplace_scale``; composition, Sparse's scale and
the noise multiplier kappa are in ``dpstream.privacy.accounting``.

With ``svt_noise="discrete_secure"`` (exact discrete Laplace w and v, cap floor(Delta), {0, 1} queries) Theorem 3.2's
xi is replaced by ``thm32_xi_discrete`` (the proof redone for discrete noise: docs/secure-noise.md), in both options.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from scipy.optimize import brentq

from dpstream.privacy.accounting import advanced_composition, check_kappa
from dpstream.privacy.calibration import laplace_scale
from dpstream.privacy.maps import stated
from dpstream.privacy.statement import Notion, Privacy, Relation
from dpstream.secure.laplace import NUMERATOR_BITS
from dpstream.validation import check_delta, check_epsilon, check_positive_int

CONTINUOUS = "continuous"
DISCRETE_SECURE = "discrete_secure"
SVT_NOISES = (CONTINUOUS, DISCRETE_SECURE)
"""``continuous``: Laplace noise from ``dpstream.noise.NoiseSource`` (numpy, or OpenDP under ``noise=secure``);
``discrete_secure``: exact discrete Laplace from a keyed ChaCha20 stream (``dpstream.svt.discrete``)."""


def check_svt_noise(svt_noise: str) -> str:
    """``svt_noise`` if it is one of ``SVT_NOISES``, else a one-line error."""
    if svt_noise not in SVT_NOISES:
        raise ValueError(f"unknown svt_noise {svt_noise!r}; allowed: {', '.join(SVT_NOISES)}")
    return svt_noise


GRID_EXCESS = 2.0 ** -(NUMERATOR_BITS - 1)
"""``secure.laplace.laplace_grid`` rounds a scale b >= 1/2 up to b' with b <= b' <= b (1 + GRID_EXCESS)."""


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
    ``svt_noise``: the noise the constants are for (``thm32_xi`` for "continuous", ``thm32_xi_discrete`` for
    "discrete_secure").
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
    svt_noise: str = CONTINUOUS

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

    @property
    def privacy_map(self) -> MonitorMap:
        """The guarantee of the noise parameters held (option B's slack delta^: half of delta_total, as calibrated)."""
        return MonitorMap(self.epsilon, self.delta, self.k, self.option, self.svt_noise,
                          self.delta_total / 2.0 if self.option == "B" else 0.0)


@dataclass(frozen=True)
class MonitorMap:
    """ThresholdMonitor's noise parameters (eps, delta) of Alg. 3 and the guarantee they buy: one (eps, delta) point.

    Option "A" (Thm 3.2): (xi(eps, delta, k), 3 delta); option "B" (Thm 3.8): ``thm38_epsilon_total`` at slack
    ``delta_hat``. ``svt_noise`` chooses Thm 3.2's xi (``XI``).
    """

    epsilon: float
    delta: float
    k: int
    option: str
    svt_noise: str = CONTINUOUS
    delta_hat: float = 0.0

    def guarantee(self) -> tuple[float, float]:
        """(epsilon_total, delta_total) of the held noise parameters."""
        if self.option == "A":
            return XI[self.svt_noise](self.epsilon, self.delta, self.k), 3.0 * self.delta
        return thm38_epsilon_total(self.epsilon, self.delta, self.k, self.delta_hat, self.svt_noise)

    def check(self, epsilon: float, delta: float) -> bool:
        """Do the held parameters give (epsilon, delta)-DP?"""
        eps, dlt = self.guarantee()
        return eps <= epsilon and dlt <= delta

    def statement(self, relation: Relation, notion: Notion | None = None) -> Privacy:
        """The ``Privacy`` of the held parameters under ``relation`` (epsilon ``maps.stated``)."""
        eps, dlt = self.guarantee()
        return Privacy(stated(eps), dlt, relation, notion)


def thm32_xi(epsilon: float, delta: float, k: float) -> float:
    """Thm 3.2: ThresholdMonitor(eps, delta, k) is (xi, 3 delta)-DP with xi = 75 (k+1) eps / ln(1/delta) + 25 eps."""
    return 75.0 * (k + 1.0) * epsilon / math.log(1.0 / delta) + 25.0 * epsilon


def discrete_cap_tail(epsilon: float, delta: float) -> float:
    """A bound tau on P(v > floor(Delta)): tau = b^(-1/(1 + GRID_EXCESS)) / (1 + e^(-1/b)), b = ln(1/delta)/eps.

    For v discrete Laplace at the grid scale b' in [b, b (1 + GRID_EXCESS)] and D = floor(Delta), Delta = b ln b:
    P(v >= D + 1) = e^(-(D+1)/b') / (1 + e^(-1/b')) <= e^(-Delta/b') / (1 + e^(-1/b)) <= tau (D + 1 > Delta).
    The continuous Laplace has P(v >= Delta) = 1 / (2b) = eps / (2 ln(1/delta)) in its place.
    """
    b = laplace_scale(math.log(1.0 / delta), epsilon)
    return b ** (-1.0 / (1.0 + GRID_EXCESS)) / (1.0 + math.exp(-1.0 / b))


def thm32_xi_discrete(epsilon: float, delta: float, k: float) -> float:
    """Thm 3.2 redone for discrete Laplace w, v (docs/secure-noise.md): ThresholdMonitor is (xi', 3 delta)-DP.

    xi' = (30 (k+1) + 10 L) (2 tau + eps/L) + (15 (k+1) + 5 L) eps/L, L = ln(1/delta), tau = ``discrete_cap_tail``.

    The paper's step for a special-almost-top costs 2 eps/L (its tail eps/(2L) through e^x (1 - x/2) >= 1 at
    x = eps/L); with the discrete tail it costs 2 tau + eps/L. At tau = eps/(2L) this is Thm 3.2's
    75 (k+1) eps/L + 25 eps; the discrete tau is larger (2 b tau in (1, 1.245] for b >= 2), so xi' > xi.
    Needs b = L/eps >= 2 (checked by ``calibrate_monitor``).
    """
    log_inv = math.log(1.0 / delta)
    per_unit = epsilon / log_inv
    return ((30.0 * (k + 1.0) + 10.0 * log_inv) * (2.0 * discrete_cap_tail(epsilon, delta) + per_unit)
            + (15.0 * (k + 1.0) + 5.0 * log_inv) * per_unit)


XI: dict[str, Callable[[float, float, float], float]] = {CONTINUOUS: thm32_xi, DISCRETE_SECURE: thm32_xi_discrete}
"""Theorem 3.2's xi(eps, delta, k) for each ``svt_noise``."""


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


def thm38_epsilon_total(epsilon: float, delta: float, k: int, delta_hat: float,
                        svt_noise: str = CONTINUOUS) -> tuple[float, float]:
    """Thm 3.8 made explicit: (eps0, delta0) of ThresholdMonitor(eps, delta, k) by epochs + Thm B.1.

    Each of l = ceil(k / ln(1/delta)) epochs is an Alg. 7 run with effective cap ln(1/delta), hence
    (xi_e, 3 delta)-DP with xi_e = Thm 3.2's xi at k = ln(1/delta) (``XI[svt_noise]``: the discrete xi' for
    discrete noise); composing l of them gives eps0 = sqrt(2 l ln(1/delta^)) xi_e + l xi_e (e^xi_e - 1),
    delta0 = 3 l delta + delta^.
    """
    log_inv = math.log(1.0 / delta)
    epochs = math.ceil(k / log_inv)
    xi_e = XI[check_svt_noise(svt_noise)](epsilon, delta, log_inv)
    return advanced_composition(xi_e, epochs, delta_hat), 3.0 * epochs * delta + delta_hat


def largest_within(spent: Callable[[float], float], budget: float, high: float) -> float:
    """The largest eps found by bisection with spent(eps) <= budget, for spent increasing in eps.

    Unlike a root finder's answer, the returned eps never spends more than ``budget`` (in floating point).
    """
    while spent(high) <= budget:  # spent grows without bound in eps: terminates
        high *= 2.0
    low = 0.0
    while True:
        mid = 0.5 * (low + high)
        if not low < mid < high:
            break
        low, high = (mid, high) if spent(mid) <= budget else (low, mid)
    if low <= 0.0:
        raise ValueError(f"no eps > 0 spends at most {budget!r}")
    return low


def _option_a(epsilon_total: float, delta_total: float, k: int, svt_noise: str) -> tuple[float, float]:
    delta = delta_total / 3.0
    if svt_noise == DISCRETE_SECURE:  # xi' >= xi: the continuous eps spends at least the budget
        eps_continuous = epsilon_total / (75.0 * (k + 1) / math.log(1.0 / delta) + 25.0)
        return largest_within(lambda eps: thm32_xi_discrete(eps, delta, k), epsilon_total, eps_continuous), delta
    return epsilon_total / (75.0 * (k + 1) / math.log(1.0 / delta) + 25.0), delta


def _option_b(epsilon_total: float, delta_total: float, k: int, svt_noise: str) -> tuple[float, float]:
    epochs = option_b_epochs(delta_total, k)
    delta = delta_total / (6.0 * epochs)
    delta_hat = delta_total / 2.0

    def spent(eps: float) -> float:
        return thm38_epsilon_total(eps, delta, k, delta_hat, svt_noise)[0]

    if svt_noise == DISCRETE_SECURE:
        return largest_within(spent, epsilon_total, epsilon_total), delta

    def excess(eps: float) -> float:
        return spent(eps) - epsilon_total

    high = epsilon_total
    while excess(high) < 0:  # eps_total grows without bound in eps: terminates
        high *= 2.0
    return brentq(excess, 1e-300, high, xtol=1e-15, rtol=1e-12), delta


def option_parameters(epsilon_total: float, delta_total: float, k: int,
                      svt_noise: str = CONTINUOUS) -> dict[str, tuple[float, float]]:
    """Alg. 3's noise parameters (eps, delta) under each option: {"A": (eps, delta), "B": (eps, delta)}.

    ``svt_noise="discrete_secure"``: with ``thm32_xi_discrete`` in place of ``thm32_xi``, eps the largest that
    spends at most epsilon_total (bisection, ``largest_within``).
    """
    epsilon_total = check_epsilon(epsilon_total, "epsilon_total")
    delta_total = check_delta(delta_total, "delta_total")
    k = check_positive_int(k, "k")
    svt_noise = check_svt_noise(svt_noise)
    return {"A": _option_a(epsilon_total, delta_total, k, svt_noise),
            "B": _option_b(epsilon_total, delta_total, k, svt_noise)}


def calibrate_monitor(epsilon_total: float, delta_total: float, k: int, kappa: float = 1.0,
              svt_noise: str = CONTINUOUS) -> MonitorCalibration:
    """Noise parameters (eps, delta) of ThresholdMonitor for an (epsilon_total, delta_total) guarantee with cap k.

    Option A (Thm 3.2): delta = delta_total/3, eps = eps_total / (75 (k+1)/ln(1/delta) + 25).
    Option B (Thm 3.8, see ``thm38_epsilon_total``): delta = delta_total / (6 l), eps solves eps0 = eps_total.
    ``svt_noise="discrete_secure"``: the same with Thm 3.2's xi redone for discrete noise (``thm32_xi_discrete``),
    eps the largest with xi'(eps) <= eps_total (A) or eps0 <= eps_total (B).
    Returns the option with the larger eps (less noise) and records which one was used. Raises when
    Alg. 3's preconditions ln(1/delta)/eps >= 2 and eps <= ln(1/delta) fail (the discrete proof needs the first
    too). ``kappa`` < 1 scales every noise value by kappa (``check_kappa``): NOT privacy-certified.
    """
    kappa = check_kappa(kappa)
    svt_noise = check_svt_noise(svt_noise)
    options = option_parameters(epsilon_total, delta_total, k, svt_noise)
    (eps_a, _), (eps_b, _) = options["A"], options["B"]
    option = "A" if eps_a >= eps_b else "B"
    eps, delta = options[option]
    log_inv = math.log(1.0 / delta)
    if not (log_inv / eps >= 2.0 and eps <= log_inv):
        raise ValueError(
            f"ThresholdMonitor needs ln(1/delta)/eps >= 2 and eps <= ln(1/delta); calibrate_monitor({epsilon_total}, "
            f"{delta_total}, {k}) gives eps={eps:.3g}, ln(1/delta)={log_inv:.3g}"
        )
    return MonitorCalibration(epsilon_total, delta_total, k, eps, delta, option, eps_a, eps_b, kappa, svt_noise)


def calibrate_evolving(epsilon_total: float, delta_total: float, k: int,
                       svt_noise: str = CONTINUOUS) -> MonitorCalibration:
    """ThresholdMonitorEvolving's noise (Alg. 5, Thm 4.4): ``calibrate_monitor(eps/2, delta/(1 + e^{eps/2}), k)``.

    Replace one user = remove + add, a group of two add/remove neighbours: (2 eps, (1 + e^eps) delta) by group
    privacy.
    """
    return calibrate_monitor(epsilon_total / 2.0, delta_total / (1.0 + math.exp(epsilon_total / 2.0)), k,
                     svt_noise=svt_noise)
