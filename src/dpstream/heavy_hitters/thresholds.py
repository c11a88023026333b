"""LazyHH's thresholds (Holland, Alg. 6 and Lemma 6): the noise term gamma and the output thresholds.

Log base as in ``dpstream.privacy.heavy_hitters`` (log2 for every unannotated log, ln where the paper writes ln).
gamma: Lemma 6 bounds Lemma 4's noise tail (at failure probability beta/2) sigma * sqrt(2 h ln(4 |I| n / beta)) of the
LazyCMS counters (h = ceil(log2(|I| + 1)) tree levels, sigma = ``dpstream.privacy.calibration.gauss_bm_sigma``,
|I| = ceil(T/k~) steps per counter, n = d k~ counters) by the closed form (1). With ln for log(T/k~) (and
log(1.25/delta)) the closed form falls 15-30% BELOW that tail bound at the paper's scale (inequality (3) fails); with
log2 it is above it except for short streams (small T/k~). ``noise_term`` therefore returns the closed form with log2,
raised to the Lemma 4 tail bound when it would fall below it, so inequality (3) -- on which the privacy proof's
thresholds rest -- always holds. Both values are exposed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpstream.counters import counter_class
from dpstream.intervals import chernoff_sum_bound
from dpstream.privacy.calibration import cell_neighbour_m, gauss_bm_levels, gauss_bm_sigma


def lazy_cms_noise_tail(horizon: int, k_tilde: int, epsilon: float, delta: float, depth: int,
                        beta: float, calibration: str = "classic", counter: str = "binary",
                        node_noise: str = "stored", flush_every: int = 1) -> float:
    """Lemma 4 at failure probability beta/2 for the d x k~ LazyCMS of Alg. 6 (the bound eq. (3) uses).

    Each of the n = d k~ GaussBM counters sees |I| = ceil(T/k~) steps, so with probability >= 1 - beta/2
    every counter at every step has |noise| <= sigma sqrt(2 h ln(4 |I| n / beta)), with
    h = ceil(log2(|I| + 1)) and sigma = sqrt(2 h (2d) ln(1.25/delta)) / eps (Count-Min cells are
    2d-neighbouring: ``calibration.cell_neighbour_m``, the m the LazyCMS itself uses). With
    ``calibration="analytic"`` sigma is the larger of the two calibrations' (the analytic one exceeds the classic
    one only at eps above ~7), so the bound covers the noise the sketch adds.

    Another ``counter`` (``dpstream.counters``): the same union bound with its largest release variance over the
    |I| steps, max_s Var(s), for sigma^2 h (the tree's popcount(s) <= h), under the larger calibration. A counter
    with Laplace node noise (``node_log_mgf``): ``laplace_sum_tail``.

    ``flush_every`` B: the counters step once per B k~ items (``LazyHH``'s ``flush_every``), so |I| = ceil(T/(B k~)).
    """
    steps = math.ceil(horizon / (k_tilde * flush_every))
    levels = gauss_bm_levels(steps)
    m = cell_neighbour_m(False, depth)
    if scans_variance(counter, node_noise):
        cls = counter_class(counter, node_noise)
        if hasattr(cls, "node_log_mgf"):
            probe = cls(n=1, horizon=steps, epsilon=epsilon, delta=delta, m=m, seed=0)
            return laplace_sum_tail(probe, steps, k_tilde * depth, beta)
        largest = max(largest_variance(cls(n=1, horizon=steps, epsilon=epsilon, delta=delta, m=m, seed=0,
                                           calibration=c), steps) for c in {"classic", calibration})
        return math.sqrt(largest * 2.0 * math.log(4.0 * steps * k_tilde * depth / beta))
    sigma = max(gauss_bm_sigma(steps, epsilon, delta, m), gauss_bm_sigma(steps, epsilon, delta, m, calibration))
    return sigma * math.sqrt(2.0 * levels * math.log(4.0 * steps * k_tilde * depth / beta))


SCAN_BYTES_PER_STEP = 32
"""Working bytes a step of ``lazy_cms_noise_tail``'s variance scan takes: its step (int64), its variance (float64)
and the row-norm temporaries behind it."""


def scans_variance(counter: str, node_noise: str) -> bool:
    """Whether ``lazy_cms_noise_tail`` scans the variance of a cell at every step (``largest_variance``).

    Every counter but the binary tree, whose largest variance has a closed form (sigma^2 h, at any node noise):
    a Gaussian counter for its largest variance, a Laplace tree (``node_log_mgf``) for its largest digit sum.
    ``node_noise`` must be one the counter takes (``counter_class``).
    """
    counter_class(counter, node_noise)
    return counter != "binary"


def largest_variance(counter: Any, steps: int) -> float:
    """The largest release variance of ``counter`` over steps 1..``steps``: the scan ``scans_variance`` predicts.

    Over its whole horizon, its factorisation's largest row norm^2 (``Factorisation.row_norms_summary``) times its
    draw variance: the same number, and the one a committed summary gives where every row costs O(T^2) (``nsqrt``).
    """
    if steps == counter.horizon:
        try:
            factorisation = counter.factorisation()
        except NotImplementedError:  # a counter that states its variance only
            pass
        else:
            return factorisation.row_norms_summary()[0] * float(counter.draw_variance)
    return float(counter.variance(np.arange(1, steps + 1)).max())


def noise_tail_working_bytes(horizon: int, k_tilde: int, counter: str, node_noise: str) -> int:
    """Bytes of the table ``lazy_cms_noise_tail`` builds: the variance at every step of a cell (``scans_variance``).

    0 for the binary tree (closed form).
    """
    if not scans_variance(counter, node_noise):
        return 0
    return SCAN_BYTES_PER_STEP * math.ceil(horizon / k_tilde)


def laplace_sum_tail(counter: Any, steps: int, counters: int, beta: float) -> float:
    """Lemma 4's union bound for a counter whose release noise is a sum of D(s) i.i.d. Laplace-type node noises.

    D = max_s Var(s) / Var(node) over the ``steps`` steps (the k-ary tree's largest digit sum). Chernoff: for
    0 < lam < 1/b (b the node scale), P(|S| >= x) <= 2 exp(-lam x + D ln E exp(lam Y)) for a sum S of at most D of
    them (each term's moment generating function is >= 1), so with probability >= 1 - beta/2 every one of the
    ``counters`` counters at every step has |noise| <= (D ln E exp(lam Y) + ln(4 steps counters / beta)) / lam;
    the smallest over a grid of lam is returned (every lam gives a valid bound).
    """
    largest = largest_variance(counter, steps)
    if largest == 0.0:
        return 0.0
    digits = round(largest / counter.draw_variance)
    return float(chernoff_sum_bound(np.asarray(digits), counter.node_log_mgf, counter._noise_scale,
                                    math.log(4.0 * steps * counters / beta)))


def noise_term_closed_form(horizon: int, k_tilde: int, epsilon: float, delta: float, depth: int,
                           beta: float, flush_every: int = 1) -> float:
    """Alg. 6 line 4: gamma = 3 log2(T/k~) / eps * sqrt(d ln(4 T d / beta) log2(1.25/delta)).

    ``flush_every`` B: the counters' horizon T/k~ becomes T/(B k~) (their steps); the union bound's ln(4 T d / beta)
    is kept (it only grows the term).
    """
    return (3.0 * math.log2(horizon / (k_tilde * flush_every)) / epsilon
            * math.sqrt(depth * math.log(4.0 * horizon * depth / beta) * math.log2(1.25 / delta)))


def noise_term(horizon: int, k_tilde: int, epsilon: float, delta: float, depth: int, beta: float,
               calibration: str = "classic", counter: str = "binary", node_noise: str = "stored",
               flush_every: int = 1) -> float:
    """The gamma LazyHH uses: max(closed form of Alg. 6 line 4, Lemma 4 tail bound of its LazyCMS's counters).

    ``flush_every`` B: counters that step once per B k~ items (ceil(T/(B k~)) steps: fewer levels, less noise).
    """
    return max(noise_term_closed_form(horizon, k_tilde, epsilon, delta, depth, beta, flush_every),
               lazy_cms_noise_tail(horizon, k_tilde, epsilon, delta, depth, beta, calibration, counter, node_noise,
                                   flush_every))


@dataclass(frozen=True)
class Thresholds:
    """The thresholds of Alg. 6's ``output`` at output step t (all in counts)."""

    lambda1: float  # gamma + B k~: largest underestimate of a candidate (noise + lazy delay; B = flush_every)
    lambda2: float  # 2t/k~ + gamma: largest overestimate of a candidate (collisions + noise)
    tau1: float  # t/k: the heavy-hitter threshold
    tau2: float  # t/k~ + lambda1 + 2 lambda2: the suppression threshold
    tau: float  # max(tau1, tau2) + 1: an item is reported iff its estimate is STRICTLY above tau


def thresholds(t: int, k: int, k_tilde: int, gamma: float, flush_every: int = 1) -> Thresholds:
    """Alg. 6, ``output`` lines 3-6 and 9, exactly: lambda1, lambda2, tau1, tau2 and tau.

    ``flush_every`` B > 1 (``LazyHH``): a cell's lazy delay is at most B k~ items, so lambda1 = gamma + B k~
    (``LazyHH``'s docstring derives it); gamma is then ``noise_term``'s at the same B.
    """
    lambda1 = gamma + k_tilde * flush_every
    lambda2 = 2.0 * t / k_tilde + gamma
    tau1 = t / k
    tau2 = t / k_tilde + lambda1 + 2.0 * lambda2
    return Thresholds(lambda1, lambda2, tau1, tau2, max(tau1, tau2) + 1.0)


def tau_many(times: np.ndarray, k: int, k_tilde: int, gamma: float, flush_every: int = 1) -> np.ndarray:
    """``thresholds(t, ...).tau`` at every output step of ``times`` (int64), in the same float operations."""
    t = np.asarray(times, dtype=np.int64)
    lambda1 = gamma + k_tilde * flush_every
    lambda2 = 2.0 * t / k_tilde + gamma
    tau1 = t / k
    tau2 = t / k_tilde + lambda1 + 2.0 * lambda2
    return np.maximum(tau1, tau2) + 1.0
