"""An automated privacy auditor: the event is searched on one half of the runs, certified on the other.

For neighbouring inputs D1, D2, (eps, delta)-DP bounds Pr[M(D_a) in E] <= e^eps Pr[M(D_b) in E] + delta for
EVERY event E and both orders (a, b). ``search_audit`` runs the mechanism ``n_runs`` times per input, split
into a search half and a certify half drawn from independent seeds (both spawned from ``seed``):

1. Search half: candidate events over the output array flattened per run (one row per run):
   - per-coordinate thresholds ``x_j > t`` / ``x_j < t`` (t over the distinct values or quantiles);
   - the same on simple features: sum, count of positive entries (TOPs), count of negative entries,
     index of the first positive entry (d when none), and a ridge logistic-regression score fitted to
     "this run came from D1" (DP-Sniper's classifier, numpy only);
   - discrete outputs: ``pattern == P`` for the most frequent patterns P of the discrete columns
     (few distinct integer values, no NaN), unions of the patterns with the largest empirical ratio
     (DP-Sniper's idea on a finite output space), and every threshold event above restricted to one
     frequent pattern (a depth-2 tree: pattern, then a threshold on a continuous coordinate).
   Each candidate and order (a, b) is scored by the Clopper-Pearson bound it gives on the search half.
2. Certify half: only the best event and order are counted, and ``directed_lower_bound`` gives the
   epsilon lower bound (one-sided bounds at alpha/2 each). The certify runs are independent of the
   choice, so a mechanism that satisfies its claim is flagged with probability <= alpha.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import beta as beta_dist

from dpstream.audit.tester import AuditResult, directed_lower_bound
from dpstream.noise import SeedLike, children
from dpstream.validation import check_epsilon, check_open_interval, check_positive_int

MAX_COORDINATES = 128  # per-coordinate events only for outputs with at most this many numbers per run
MAX_LEVELS = 8  # a column is discrete (joins the pattern) if it has at most this many distinct values
N_PATTERNS = 8  # frequent patterns used as single events and as the first split of the tree
N_QUANTILES = 32  # features with > 2 N_QUANTILES distinct values: N_QUANTILES geometric ranks from each end
SUMMARIES = ("sum", "count>0", "count<0", "first>0")
CLASSIFIER = -1 - len(SUMMARIES)  # feature index of the logistic-regression score
FIT_RUNS = 50_000  # runs per input the classifier is fitted on (the first ones of the search half)
RIDGE = 1.0  # L2 penalty of the logistic regression (on standardised features)


def summary_features(x: np.ndarray) -> np.ndarray:
    """Per run: NaN-ignoring sum, count of entries > 0, count of entries < 0, index of the first entry > 0."""
    pos = x > 0
    first = np.where(pos.any(axis=1), pos.argmax(axis=1), x.shape[1])
    return np.column_stack([np.nansum(x, axis=1), pos.sum(axis=1), (x < 0).sum(axis=1), first]).astype(float)


@dataclass(frozen=True)
class LogisticScore:
    """score(x) = bias + weights . z(x), z = x with NaN -> 0, then isnan(x) of ``nan_columns`` (DP-Sniper's idea)."""

    weights: tuple[float, ...]
    bias: float
    nan_columns: tuple[int, ...]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Logistic score of each row of ``x`` (NaN entries as 0 plus a NaN indicator column)."""
        return _design(x, self.nan_columns) @ np.asarray(self.weights) + self.bias


def _design(x: np.ndarray, nan_columns: tuple[int, ...]) -> np.ndarray:
    return np.hstack([np.nan_to_num(x, nan=0.0), np.isnan(x[:, list(nan_columns)])]).astype(float)


def fit_logistic(x1: np.ndarray, x2: np.ndarray, iterations: int = 30) -> LogisticScore:
    """Ridge logistic regression of "run came from D1" by Newton's method (IRLS); numpy only."""
    nan_columns = tuple(int(j) for j in np.flatnonzero(np.isnan(np.concatenate([x1, x2])).any(axis=0)))
    z = np.concatenate([_design(x1, nan_columns), _design(x2, nan_columns)])
    y = np.concatenate([np.ones(len(x1)), np.zeros(len(x2))])
    mean, scale = z.mean(axis=0), z.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(z), 1)), (z - mean) / scale])
    w, penalty = np.zeros(z.shape[1]), np.r_[0.0, np.full(z.shape[1] - 1, RIDGE)]
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -30, 30)))
        step = np.linalg.solve((z.T * (p * (1 - p))) @ z + np.diag(penalty), z.T @ (y - p) - penalty * w)
        w += step
        if np.abs(step).max() < 1e-8:
            break
    weights = w[1:] / scale
    return LogisticScore(tuple(map(float, weights)), float(w[0] - weights @ mean), nan_columns)


@dataclass(frozen=True)
class SearchedEvent:
    """``pattern`` (rows of the discrete columns ``columns``; empty: any output) and ``feature`` ``side`` ``threshold``.

    feature: a coordinate index, -1 - i for summary feature i, ``CLASSIFIER`` for ``score``; None for the
    pattern event alone. Several pattern rows mean their union. ``order`` is "D1>D2" or "D2>D1".
    """

    columns: tuple[int, ...]
    patterns: tuple[tuple[float, ...], ...]
    feature: int | None
    side: str
    threshold: float
    order: str
    score: LogisticScore | None = None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Whether each row of ``x`` is in the event (pattern match, then the feature threshold)."""
        hits = np.ones(x.shape[0], dtype=bool)
        if self.patterns:
            sub = x[:, list(self.columns)]
            hits = np.zeros(x.shape[0], dtype=bool)
            for pattern in self.patterns:  # <= 4 N_PATTERNS of them; memory O(runs x columns)
                hits |= (sub == np.asarray(pattern)).all(axis=1)
        if self.feature is not None:
            v = self.values(x)
            hits &= v > self.threshold if self.side == ">" else v < self.threshold
        return hits

    def values(self, x: np.ndarray) -> np.ndarray:
        """The feature this event thresholds, per run."""
        if self.feature is None:
            raise ValueError("a pattern-only event thresholds no feature")
        if self.feature == CLASSIFIER:
            if self.score is None:
                raise ValueError("the classifier feature needs its fitted score")
            return self.score(x)
        return x[:, self.feature] if self.feature >= 0 else summary_features(x)[:, -1 - self.feature]

    def describe(self) -> str:
        """The event in words, for reports."""
        parts = []
        if self.patterns:
            shown = ["".join(_symbol(v) for v in p) for p in self.patterns[:3]]
            more = f" (+{len(self.patterns) - 3} more)" if len(self.patterns) > 3 else ""
            parts.append(f"pattern of {len(self.columns)} discrete coords in {{{', '.join(shown)}}}{more}")
        if self.feature is not None:
            names = {CLASSIFIER: "logistic score", **{-1 - i: f for i, f in enumerate(SUMMARIES)}}
            name = f"x[{self.feature}]" if self.feature >= 0 else names[self.feature]
            parts.append(f"{name} {self.side} {self.threshold:.4g}")
        return f"{' and '.join(parts) or 'any output'}; {self.order}"


def _symbol(v: float) -> str:
    return {1.0: "T", 0.0: "B", -1.0: "-"}.get(float(v), f"({v:g})")


def _as_runs(out: Any, n: int) -> np.ndarray:
    x = np.asarray(out, dtype=float)
    if x.ndim == 0 or x.shape[0] != n:
        raise ValueError(f"sampler must return one output per run ({n}), got an array of shape {x.shape}")
    return x.reshape(n, -1)


def _cp_scores(count_a: np.ndarray, count_b: np.ndarray, n: int, delta: float, alpha: float) -> np.ndarray:
    """Vectorised ``directed_lower_bound`` (without the floor at 0): the score of each candidate."""
    low = np.where(count_a > 0, beta_dist.ppf(alpha / 2, count_a, n - count_a + 1), 0.0)
    high = np.where(count_b < n, beta_dist.ppf(1 - alpha / 2, count_b + 1, n - count_b), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(low > delta, np.log(np.maximum(low - delta, 1e-300) / high), -np.inf)


def _thresholds(values: np.ndarray) -> np.ndarray:
    """Candidate thresholds: every distinct value, or order statistics at geometric ranks from both ends.

    Geometric ranks (1, 2, 4, ... runs beyond the threshold) resolve the tails, where ratios are largest.
    """
    finite = np.unique(values[np.isfinite(values)])
    if finite.size <= 2 * N_QUANTILES:
        return finite
    ranks = np.unique(np.geomspace(1, finite.size / 2, N_QUANTILES).astype(np.int64))
    return np.unique(np.concatenate([finite[ranks - 1], finite[finite.size - ranks]]))


def _threshold_counts(v: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts of v > t and of v < t for every threshold (NaN in neither)."""
    s = np.sort(v[np.isfinite(v)])
    return s.size - np.searchsorted(s, t, "right"), np.searchsorted(s, t, "left")


def _pattern_codes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a discrete array and each row's index among them (mixed-radix codes when they fit)."""
    levels = [np.unique(x[:, j], return_inverse=True) for j in range(x.shape[1])]
    if sum(np.log2(len(lv)) for lv, _ in levels) > 62:
        uniq, inv = np.unique(x, axis=0, return_inverse=True)
        return uniq, inv.ravel()
    code = np.zeros(x.shape[0], dtype=np.int64)
    for lv, idx in levels:
        code = code * len(lv) + idx
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return x[first], inv.ravel()


class _Search:
    """Candidate events on the search half and their scores; ``best()`` returns the winner."""

    def __init__(self, x1: np.ndarray, x2: np.ndarray, delta: float, alpha: float) -> None:
        self.x1, self.x2, self.n = x1, x2, x1.shape[0]
        self.delta, self.alpha = delta, alpha
        self.best_score, self.best_event = -np.inf, SearchedEvent((), (), None, ">", 0.0, "D1>D2")
        both = np.concatenate([x1, x2])
        self.columns = tuple(
            j
            for j in range(both.shape[1])
            if not np.isnan(both[:, j]).any() and np.unique(both[:, j]).size <= MAX_LEVELS
        )
        self.features = [(j, x1[:, j], x2[:, j]) for j in range(x1.shape[1])] if x1.shape[1] <= MAX_COORDINATES else []
        f1, f2 = summary_features(x1), summary_features(x2)
        self.features += [(-1 - i, f1[:, i], f2[:, i]) for i in range(len(SUMMARIES))]
        self.score = None
        if x1.shape[1] <= MAX_COORDINATES:
            self.score = fit_logistic(x1[:FIT_RUNS], x2[:FIT_RUNS])
            self.features.append((CLASSIFIER, self.score(x1), self.score(x2)))

    def consider(self, c1: np.ndarray, c2: np.ndarray, make: Any) -> None:
        """Score candidates with counts (c1, c2) in both orders; make(index, order) builds the event."""
        if not len(c1):
            return
        for order, (ca, cb) in (("D1>D2", (c1, c2)), ("D2>D1", (c2, c1))):
            scores = _cp_scores(np.asarray(ca), np.asarray(cb), self.n, self.delta, self.alpha)
            i = int(np.argmax(scores))
            if scores[i] > self.best_score:
                self.best_score, self.best_event = float(scores[i]), make(i, order)

    def thresholds_within(self, m1: np.ndarray, m2: np.ndarray, patterns: tuple) -> None:
        """Every feature threshold, restricted to runs in the pattern set (all runs if empty)."""
        for feature, v1, v2 in self.features:
            w1, w2 = v1[m1], v2[m2]
            t = _thresholds(np.concatenate([w1, w2]))
            counts_1, counts_2 = _threshold_counts(w1, t), _threshold_counts(w2, t)
            for side, c1, c2 in ((">", counts_1[0], counts_2[0]), ("<", counts_1[1], counts_2[1])):
                self.consider(
                    c1,
                    c2,
                    lambda i, o, f=feature, s=side, t=t: SearchedEvent(
                        self.columns, patterns, f, s, float(t[i]), o, self.score
                    ),
                )

    def patterns(self) -> None:
        """Single frequent patterns (also as tree roots) and unions of the patterns ranked by empirical ratio."""
        if not self.columns:
            return
        uniq, inv = _pattern_codes(np.concatenate([self.x1[:, list(self.columns)], self.x2[:, list(self.columns)]]))
        n1 = np.bincount(inv[: self.n], minlength=len(uniq))
        n2 = np.bincount(inv[self.n :], minlength=len(uniq))
        if len(uniq) > self.n // 4:  # (almost) every run is its own pattern: nothing to learn from patterns
            return
        rows = tuple(tuple(map(float, u)) for u in uniq)
        for order, (na, nb) in (("D1>D2", (n1, n2)), ("D2>D1", (n2, n1))):
            rank = np.argsort(-(na + 0.5) / (nb + 0.5), kind="stable")[: 4 * N_PATTERNS]
            ca, cb = np.cumsum(na[rank]), np.cumsum(nb[rank])
            c1, c2 = (ca, cb) if order == "D1>D2" else (cb, ca)
            self.consider(c1, c2, lambda i, o, r=rank: SearchedEvent(self.columns, tuple(rows[k] for k in r[: i + 1]),
                                                                     None, ">", 0.0, o))  # fmt: skip
        for k in np.argsort(-np.maximum(n1, n2), kind="stable")[:N_PATTERNS]:
            m1, m2 = inv[: self.n] == k, inv[self.n :] == k
            self.thresholds_within(m1, m2, (rows[k],))

    def best(self) -> SearchedEvent:
        everything = np.ones(self.n, dtype=bool)
        self.thresholds_within(everything, everything, ())
        self.patterns()
        return self.best_event


def search_audit(
    sampler: Any,
    data_1: Any,
    data_2: Any,
    *,
    n_runs: int,
    claimed_epsilon: float,
    delta: float = 0.0,
    alpha: float = 0.05,
    seed: SeedLike = 0,
) -> AuditResult:
    """Search an event on n_runs // 2 runs per input, certify an epsilon lower bound on the other runs.

    ``sampler(data, n, seed)`` returns a numeric array with one output per run (any trailing shape).
    The result's ``n_runs`` and counts are those of the certify half; ``n_search`` the search half;
    ``event`` describes the chosen event and ``direction`` its order.
    """
    n_runs = check_positive_int(n_runs, "n_runs", minimum=20)
    claimed_epsilon = check_epsilon(claimed_epsilon, "claimed_epsilon")
    alpha = check_open_interval(alpha, "alpha", 0.0, 1.0)
    if isinstance(delta, bool) or not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    search_seed, certify_seed = children(seed, 2)
    n_search = n_runs // 2
    n_cert = n_runs - n_search

    def outputs(s: np.random.SeedSequence, n: int) -> tuple[np.ndarray, np.ndarray]:
        s1, s2 = children(s, 2)
        return _as_runs(sampler(data_1, n, s1), n), _as_runs(sampler(data_2, n, s2), n)

    event = _Search(*outputs(search_seed, n_search), delta, alpha).best()
    x1, x2 = outputs(certify_seed, n_cert)
    counts = int(event(x1).sum()), int(event(x2).sum())
    count_a, count_b = counts if event.order == "D1>D2" else counts[::-1]
    eps_lower = directed_lower_bound(count_a, count_b, n_cert, delta, alpha)
    return AuditResult(
        n_cert, counts[0], counts[1], eps_lower, claimed_epsilon, float(delta), alpha, event.order,
        event.describe(), n_search,
    )  # fmt: skip
