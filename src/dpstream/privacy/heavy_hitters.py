"""LazyHH's privacy parameters (Holland, Alg. 6 and Sec. 6.5): its sketch depth and its final delta.

Log base: the spec leaves the unannotated ``log`` of Alg. 6 open; we take **log2** for every unannotated log and keep
the explicit ``ln`` as ln, because that is the choice under which the proof's inequalities hold. Depth
d = ceil(log2(4T/beta)): the candidate collision bound (Lemma 6, eq. (2)) uses the CMS error 2t/k~, which a row exceeds
with probability <= 1/2 (Markov), so d rows fail together with probability <= 2^-d <= beta/(4T) only for a base-2 log.
It also meets the privacy requirement d >= ln(2T/delta), since log2(4T/beta) > ln(4T/delta) for beta < delta. The
thresholds and the noise term gamma are in ``dpstream.heavy_hitters.thresholds``.
"""

from __future__ import annotations

import math

from dpstream.validation import check_delta, check_epsilon, check_open_interval, check_positive_int


def lazy_hh_depth(horizon: int, beta: float) -> int:
    """Sketch depth d = ceil(log2(4T/beta)) (Alg. 6 line 3, log base 2; see the module docstring)."""
    horizon = check_positive_int(horizon, "horizon")
    beta = check_open_interval(beta, "beta", 0.0, 1.0)
    return math.ceil(math.log2(4.0 * horizon / beta))


def final_delta(epsilon: float, delta: float) -> float:
    """delta~ = 2 delta (3/2 + e^eps + delta): LazyHH's overall delta (Holland, Sec. 6.5 / Thm 3 text)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    return 2.0 * delta * (1.5 + math.exp(epsilon) + delta)


def final_delta_epsilon_bound(delta: float) -> float:
    """The epsilon below which delta~ < 1 at ``delta``: ln(1/(2 delta) - 3/2 - delta) (-inf when there is none)."""
    room = 0.5 / check_delta(delta) - 1.5 - delta
    return math.log(room) if room > 0 else -math.inf


def check_final_delta(epsilon: float, delta: float) -> float:
    """delta~ (``final_delta``) when it is < 1, else a one-line ``ValueError`` naming epsilon and what is allowed.

    A delta~ >= 1 is no guarantee at all. Where no epsilon > 0 gives delta~ < 1 at this delta, the error names delta.
    """
    tilde = final_delta(epsilon, delta)
    if tilde < 1.0:
        return tilde
    why = f"LazyHH's delta~ = 2 delta (3/2 + e^epsilon + delta) is {tilde:.4g} >= 1 there: no guarantee"
    bound = final_delta_epsilon_bound(delta)
    if bound > 0:
        raise ValueError(f"epsilon must be below {bound:.4g} at delta={delta:g} ({why}), got {epsilon!r}")
    grow = 1.5 + math.exp(epsilon)  # delta~ < 1 <=> delta^2 + (3/2 + e^eps) delta - 1/2 < 0
    largest = (math.sqrt(grow * grow + 2.0) - grow) / 2.0
    raise ValueError(f"delta must be below {largest:.4g} at epsilon={epsilon:g} ({why}), got {delta!r}")
