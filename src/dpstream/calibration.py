"""Noise calibration: the one place where generic noise scales are derived from (epsilon, delta).

Every mechanism gets its noise scale from a function here (or, for a family with its own
accounting, from that family's ``calibration`` module, which builds on these). Tests compare the
noise a mechanism actually adds against these formulas.
"""

from __future__ import annotations

import math

from dpstream.validation import check_delta, check_epsilon, check_positive_int


def gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float) -> float:
    """Classical Gaussian mechanism: sigma = Delta_2 * sqrt(2 ln(1.25/delta)) / epsilon.

    (Dwork and Roth, Thm A.1; seed 004 Sec. 2.) The theorem is stated for epsilon < 1; the Lazy
    Sketch paper applies it for larger epsilon too, and so do we (documented, not hidden).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if not l2_sensitivity > 0:
        raise ValueError(f"l2_sensitivity must be > 0, got {l2_sensitivity!r}")
    return l2_sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def laplace_scale(l1_sensitivity: float, epsilon: float) -> float:
    """Laplace mechanism: b = Delta_1 / epsilon, noise density exp(-|x|/b) / (2b)."""
    epsilon = check_epsilon(epsilon)
    if not l1_sensitivity > 0:
        raise ValueError(f"l1_sensitivity must be > 0, got {l1_sensitivity!r}")
    return l1_sensitivity / epsilon


def gauss_bm_levels(horizon: int) -> int:
    """Tree levels of a binary mechanism over ``horizon`` steps: h = ceil(log2(horizon + 1)) (seed 004, Alg. 1)."""
    horizon = check_positive_int(horizon, "horizon")
    return max(1, math.ceil(math.log2(horizon + 1)))


def gauss_bm_sigma(horizon: int, epsilon: float, delta: float, m: int) -> float:
    """Per-node noise of GaussBM(T, eps, delta, m): sigma = sqrt(2 h m ln(1.25/delta)) / eps (seed 004, Alg. 1).

    One neighbour changes each of at most ``m`` counters by 1 at one step; that step touches h nodes
    of each counter, so the L2 sensitivity of all node values is sqrt(h m).
    """
    m = check_positive_int(m, "m")
    return gaussian_sigma(math.sqrt(gauss_bm_levels(horizon) * m), epsilon, delta)
