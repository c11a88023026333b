"""Shifting heavy hitters (Kaplan, Mansour, Stemmer, Sec. 4, Thm 4.7) and the paper's two baselines (Sec. 1.1.2).

Input (vectorised): ``holdings`` (m, A) int, the element each user group ("atom", ``sizes`` users)
holds at each step, or PRIVATE (-1) when each of its users holds a distinct element of weight 1.
Weights w_i(x) = sum of sizes of the groups holding x. The domain has ``domain_size`` elements;
those of weight 0 at a step are exchangeable, so how many of them get reported is drawn exactly as
Binomial(#zero-weight, Pr[report | weight 0]) (spec). PRIVATE elements (weight 1) are drawn the same
way with Pr[report | weight 1]; their effect on counters is NOT simulated, so each result counts
them (``private_reports``): a run with private_reports == 0 is exact. Output per method: a boolean
(R, n_rows) "reported" for every (step, positive-weight element) row plus the two report counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from dpstream.noise import NoiseSource, SeedLike, children
from dpstream.privacy.accounting import advanced_per_step_epsilon, sparse_prefers_pure
from dpstream.privacy.calibration import laplace_scale
from dpstream.privacy.composition import compose
from dpstream.privacy.maps import ComposedMap, LaplaceMap, with_relation
from dpstream.privacy.statement import Certified, Privacy, Relation
from dpstream.privacy.svt import MonitorCalibration
from dpstream.svt.monitor import ThresholdMonitorEvolving
from dpstream.svt.sparse import Sparse
from dpstream.svt.theory import alpha_sparse_approx, alpha_sparse_pure, heavy_hitter_tau
from dpstream.validation import check_delta, check_epsilon, check_open_interval, check_positive_int

PRIVATE = -1
HISTOGRAM_L1_SENSITIVITY = 2.0
"""L1 change of one step's weight vector when one user's element changes (-1 at the old, +1 at the new)."""


@dataclass(frozen=True)
class Rows:
    """Every (step, element) with positive weight: ``step``, ``element``, ``weight``, and the CSR of its holders."""

    step: np.ndarray
    element: np.ndarray
    weight: np.ndarray
    holders: sparse.csr_matrix
    zero_per_step: np.ndarray
    private_per_step: np.ndarray


def heavy_rows(holdings: np.ndarray, sizes: np.ndarray, domain_size: int) -> Rows:
    """Group the holdings into (step, element) rows (vectorised: one sort, no loop over users)."""
    holdings = np.asarray(holdings, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=float)
    m, n_atoms = holdings.shape
    if sizes.shape != (n_atoms,) or (sizes < 0).any():
        raise ValueError(f"sizes must be {n_atoms} non-negative group sizes, got shape {sizes.shape}")
    if holdings.min(initial=0) < PRIVATE or holdings.max(initial=0) >= domain_size:
        raise ValueError(f"holdings must be element ids in [0, {domain_size}) or PRIVATE (-1)")
    step, atom = np.nonzero(holdings >= 0)
    element = holdings[step, atom]
    key = step * domain_size + element
    uniq, row_of = np.unique(key, return_inverse=True)
    holders = sparse.csr_matrix((np.ones(atom.size), (row_of, atom)), shape=(uniq.size, n_atoms))
    weight = holders @ sizes
    private = (np.where(holdings == PRIVATE, 1.0, 0.0) @ sizes).astype(np.int64)
    distinct = np.bincount(uniq // domain_size, minlength=m)
    zero = domain_size - distinct - private
    if (zero < 0).any():
        raise ValueError("domain_size is smaller than the number of distinct elements held at some step")
    return Rows(uniq // domain_size, uniq % domain_size, weight, holders, zero, private)


def step_maxima(rows: Rows, m: int) -> np.ndarray:
    """q_i = max_x w_i(x) per step (1 at a step where some user holds a PRIVATE element of weight 1; 0 if empty)."""
    q = np.zeros(m)
    np.maximum.at(q, rows.step, rows.weight)
    return np.maximum(q, (rows.private_per_step > 0).astype(float))


def _exp_piece(terms: list[tuple[float, float, float]], lo: float, hi: float) -> float:
    """Integral over [lo, hi] of sum(sign * e^{log_c + r v}) (lo may be -inf, where each r > 0)."""
    total = 0.0
    for sign, log_c, r in terms:
        if r == 0.0:
            total += sign * math.exp(log_c) * (hi - lo)
        else:
            low = 0.0 if lo == -math.inf else math.exp(log_c + r * lo)
            total += sign * (math.exp(log_c + r * hi) - low) / r
    return total


def monitor_report_probability(calibration: MonitorCalibration, gap: float) -> float:
    """Pr[w + min(v, Delta) >= gap] for w ~ Lap(W = 10 Delta), v ~ Lap(b): one TME round's TOP probability.

    Exact, for every gap (also gap < Delta, where gap - v changes sign inside v <= Delta): the integral of the
    Laplace density of v times Pr[w >= gap - v] over v <= Delta, split at v = 0 and v = gap into pieces on which
    both factors are exponentials in v, plus the atom Pr[v > Delta] Pr[w >= gap - Delta] = e^{-Delta/b}/2 * ...
    """
    big_w, b, cap = calibration.w_scale, calibration.v_scale, calibration.cap
    log_half = math.log(0.5)
    cuts = [-math.inf, *sorted({x for x in (0.0, float(gap)) if x < cap}), cap]
    below = 0.0
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        mid = hi - 1.0 if lo == -math.inf else 0.5 * (lo + hi)
        density = (-math.log(2 * b), 1.0 / b) if mid < 0 else (-math.log(2 * b), -1.0 / b)  # e^{-|v|/b}/(2b)
        if mid <= gap:  # Pr[w >= gap - v] = e^{-(gap - v)/W}/2
            tail = [(1.0, log_half - gap / big_w, 1.0 / big_w)]
        else:  # Pr[w >= gap - v] = 1 - e^{(gap - v)/W}/2
            tail = [(1.0, 0.0, 0.0), (-1.0, log_half + gap / big_w, -1.0 / big_w)]
        terms = [(s, density[0] + c, density[1] + r) for s, c, r in tail]
        below += _exp_piece(terms, lo, hi)
    return below + 0.5 * math.exp(-cap / b) * _laplace_tail(big_w, gap - cap)


@dataclass(frozen=True)
class ShiftingDesign:
    """The input of the shifting heavy-hitter experiment (spec E2).

    ``holdings`` (m, groups), the element each user group holds at each step (or PRIVATE), the group ``sizes``, and the
    domain size |X|.
    """

    holdings: np.ndarray
    sizes: np.ndarray
    m: int
    k_star: int
    domain_size: int


def shifting_design(*, m: int, groups: int, size_min: float, size_max: float, k_star: int, domain_size: float,
                    rng: np.random.Generator) -> ShiftingDesign:
    """E2 design: user groups of log-spaced sizes, each holding a fresh element at k* steps.

    ``groups`` user groups of log-spaced sizes in [size_min, size_max], each holding a fresh element at k* distinct
    steps of m (drawn by ``rng``) and distinct private elements else; |X| = ``domain_size`` must exceed the number of
    users.
    """
    groups, k_star, m = int(groups), int(k_star), int(m)
    sizes = np.round(np.logspace(np.log10(size_min), np.log10(size_max), groups))
    steps = rng.choice(m, size=groups * k_star, replace=False).reshape(groups, k_star)
    holdings = np.full((m, groups), PRIVATE, dtype=np.int64)
    holdings[steps, np.arange(groups)[:, None]] = np.arange(groups * k_star).reshape(groups, k_star)
    return ShiftingDesign(holdings, sizes, m, k_star, int(float(domain_size)))


@dataclass
class HHResult:
    """Per method and run: reported (R, n_rows), zero-weight reports (R,), private (weight-1) reports (R,)."""

    reported: np.ndarray
    zero_reports: np.ndarray
    private_reports: np.ndarray
    threshold: float


class ShiftingHeavyHitters(Certified):
    """Thm 4.7: TME with cap k*, t = 2B, queried with f_x = 1{y = x} for every x at every step.

    Guarantee (w.p. >= 1 - beta): never reports a weight-0 element; reports every x with w_i(x) >= tau = 3B.
    Privacy: (epsilon, delta)-DP for replace-one-user neighbours over the whole stream (Thm 4.4, via
    ``ThresholdMonitorEvolving``'s group-privacy calibration).
    """

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        k_star: int,
        m: int,
        domain_size: int,
        beta: float,
        seed: SeedLike = None,
    ) -> None:
        """Validate the parameters and build the TME at threshold t = 2B (``heavy_hitter_tau``)."""
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
        self.bounds = heavy_hitter_tau(epsilon, delta, k_star, m, domain_size, beta)
        self.tme = ThresholdMonitorEvolving(
            epsilon=epsilon, delta=delta, threshold=self.bounds.threshold, k=k_star, seed=seed
        )
        self.domain_size = domain_size
        self.epsilon, self.delta, self.k_star, self.m, self.beta = epsilon, delta, k_star, m, beta
        self.tau = self.bounds.tau

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta) for replace-one-user neighbours over the whole stream: its TME's (None if not certified)."""
        return self.tme.privacy

    def run(self, holdings: np.ndarray, sizes: np.ndarray, *, n_runs: int = 1) -> HHResult:
        """R runs; TME rounds for weight-0 and PRIVATE elements are drawn as binomials (module docstring)."""
        rows = heavy_rows(holdings, sizes, self.domain_size)
        res = self.tme.run(rows.holders, np.asarray(sizes, float), n_runs=n_runs)
        t = self.bounds.threshold
        p0 = monitor_report_probability(self.tme.calibration, t)
        p1 = monitor_report_probability(self.tme.calibration, t - 1.0)
        rng = self.tme.noise.rng
        zero = rng.binomial(rows.zero_per_step.sum(), p0, size=n_runs)  # same p every step: one binomial
        private = rng.binomial(rows.private_per_step.sum(), p1, size=n_runs)
        return HHResult(res.outcomes == 1, zero, private, t)


def _laplace_tail(scale: float, gap: float) -> float:
    """Pr[Lap(scale) >= gap]."""
    return 0.5 * math.exp(-gap / scale) if gap >= 0 else 1.0 - 0.5 * math.exp(gap / scale)


def histogram_tau(epsilon: float, delta: float, m: int, domain_size: int, beta: float) -> float:
    """Baseline (a): weight reported w.p. >= 1 - beta/2 at each of <= m heavy rows: threshold + scale ln(2m/beta)."""
    scale = laplace_scale(HISTOGRAM_L1_SENSITIVITY, advanced_per_step_epsilon(epsilon, delta, m))
    return scale * math.log(m * domain_size / beta) + scale * math.log(2 * m / beta)


class _HistogramCore:
    """Laplace histograms at chosen steps: L1 sensitivity 2 per step (a user's element changes: -1, +1)."""

    def __init__(
        self, epsilon: float, delta: float, steps: int, domain_size: int, beta: float, noise: NoiseSource
    ) -> None:
        self.scale = laplace_scale(HISTOGRAM_L1_SENSITIVITY, advanced_per_step_epsilon(epsilon, delta, steps))
        self.steps, self.delta = steps, delta
        self.threshold = self.scale * math.log(steps * domain_size / beta)  # no weight-0 report w.p. >= 1 - beta/2
        self.noise = noise

    def privacy(self) -> Privacy | None:
        """The histograms' statement from their held scale: ``steps`` Laplace releases composed at ``delta``."""
        return ComposedMap(LaplaceMap(HISTOGRAM_L1_SENSITIVITY, self.scale), self.steps).statement(
            self.delta, Relation.REPLACE_ONE_USER)

    def release(self, rows: Rows, active_steps: np.ndarray, n_runs: int) -> HHResult:
        """Report rows whose noisy weight >= threshold, at the steps ``active_steps`` (R, m) bool only."""
        noisy = rows.weight + self.noise.laplace(self.scale, (n_runs, rows.weight.size))
        reported = (noisy >= self.threshold) & active_steps[:, rows.step]
        p0, p1 = _laplace_tail(self.scale, self.threshold), _laplace_tail(self.scale, self.threshold - 1.0)
        rng = self.noise.rng
        zero = rng.binomial(active_steps @ rows.zero_per_step, p0)  # same p at every active step: one binomial
        private = rng.binomial(active_steps @ rows.private_per_step, p1)
        return HHResult(reported, zero, private, self.threshold)


class HistogramEveryStep(Certified):
    """Baseline (a): a Laplace histogram at every step, composed over m steps (error grows like sqrt(m)).

    Privacy: (epsilon, delta)-DP for replace-one-user neighbours: each step's histogram has L1
    sensitivity 2, Lap(2/eps_s) with eps_s from basic or advanced composition over m steps.
    """

    def __init__(
        self, *, epsilon: float, delta: float, m: int, domain_size: int, beta: float, seed: SeedLike = None
    ) -> None:
        """Validate the parameters; histograms at every one of the m steps, the budget composed over them."""
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
        check_open_interval(beta, "beta", 0.0, 1.0)
        self.core = _HistogramCore(epsilon, delta, check_positive_int(m, "m"), domain_size, beta, NoiseSource(seed))
        self.domain_size, self.epsilon, self.delta, self.m, self.beta = domain_size, epsilon, delta, m, beta
        self.tau = histogram_tau(epsilon, delta, m, domain_size, beta)

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta) for replace-one-user neighbours over the whole stream: its m histograms composed."""
        return self.core.privacy()

    def run(self, holdings: np.ndarray, sizes: np.ndarray, *, n_runs: int = 1) -> HHResult:
        """R runs over every step."""
        rows = heavy_rows(holdings, sizes, self.domain_size)
        return self.core.release(rows, np.ones((n_runs, holdings.shape[0]), dtype=bool), n_runs)


class SparseThenHistogram(Certified):
    """Baseline (b): Sparse on q_i = max_x w_i(x) finds <= c heavy steps; a Laplace histogram at those only.

    Budget halves: Sparse at (eps/2, delta/2) (q_i has sensitivity 1 for replace-one-user), histograms
    at <= c steps composed to (eps/2, delta/2); (epsilon, delta)-DP for replace-one-user neighbours.
    Sparse's threshold is alpha_Sparse + 1, so steps whose heaviest element has weight 1 (everyone
    holds a private element) are skipped and steps with an element of weight >= 2 alpha_Sparse + 1 are found.
    """

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        c: int,
        m: int,
        domain_size: int,
        beta: float,
        seed: SeedLike = None,
    ) -> None:
        """Split the budget in halves: Sparse at threshold alpha_Sparse + 1, histograms at <= c steps."""
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
        c = check_positive_int(c, "c")
        hist_seed, sparse_seed = children(seed, 2)
        self.core = _HistogramCore(epsilon / 2, delta / 2, c, domain_size, beta / 2, NoiseSource(hist_seed))
        pure = sparse_prefers_pure(epsilon / 2, c, delta / 2)
        alpha = alpha_sparse_pure(epsilon / 2, c, m, beta / 2) if pure else alpha_sparse_approx(
            epsilon / 2, delta / 2, c, m, beta / 2
        )
        self.sparse_threshold = alpha + 1.0  # steps whose heaviest element has weight 1 stay BOTTOM w.p. 1 - beta/2
        self.sparse = Sparse(
            epsilon=epsilon / 2, threshold=self.sparse_threshold, c=c, delta=0.0 if pure else delta / 2,
            seed=sparse_seed,
        )  # fmt: skip
        self.tau = max(self.sparse_threshold + alpha, self.core.threshold + self.core.scale * math.log(2 * c / beta))
        self.domain_size, self.epsilon, self.delta, self.c, self.m, self.beta = domain_size, epsilon, delta, c, m, beta

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta) for replace-one-user neighbours over the whole stream: its Sparse and histograms composed.

        Sparse's statement (its queries have sensitivity 1 for replace-one-user neighbours), at its half delta/2 of the
        budget (a pure one holds at every delta), with the <= c histograms'.
        """
        selection = with_relation(self.sparse.privacy, Relation.REPLACE_ONE_USER, delta=self.delta / 2)
        histograms = self.core.privacy()
        return None if selection is None or histograms is None else compose(selection, histograms)

    def run(self, holdings: np.ndarray, sizes: np.ndarray, *, n_runs: int = 1) -> HHResult:
        """R runs: Sparse over the per-step maxima, then histograms at the TOP steps."""
        rows = heavy_rows(holdings, sizes, self.domain_size)
        active = self.sparse.run(step_maxima(rows, holdings.shape[0]), n_runs=n_runs).outcomes == 1
        return self.core.release(rows, active, n_runs)
