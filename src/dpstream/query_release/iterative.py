"""Iterative construction IC (iterative-construction notes) with pluggable database updates; PMW, MWEM, Laplace.

Neighbouring relation of every mechanism here: replace-one-record databases of public size n; all queries
1/n-sensitive. Privacy: (epsilon, delta)-DP (delta = 0: pure epsilon-DP), accounted by ``calibration``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from dpstream.noise import NoiseSource, SeedLike
from dpstream.privacy.accounting import composed_epsilon
from dpstream.privacy.composition import compose_advanced
from dpstream.privacy.maps import LaplaceMap
from dpstream.privacy.query_release import ic_step_epsilon, laplace_answer_scale
from dpstream.privacy.statement import AnalystRelation, Certified, Privacy, Relation
from dpstream.query_release.updates import MultiplicativeWeights, MWEMUpdate
from dpstream.query_release.workloads import Workload
from dpstream.validation import check_epsilon, check_positive_int


def data_privacy(epsilon: float, delta: float, eps_analyst: float | None = None,
                 analysts: AnalystRelation | None = None) -> Privacy:
    """The ``Privacy`` of a query release.

    (epsilon, delta) for replace-one-record databases (pure if delta = 0), plus the analyst guarantee ``eps_analyst``
    under the analyst relation ``analysts`` where it applies.
    """
    return Privacy(epsilon, delta, Relation.REPLACE_ONE_RECORD, None, eps_analyst, analysts)


@dataclass
class Release:
    """What a query-release mechanism outputs.

    An answer per query plus its accounted privacy (the per-release record of the mechanism's ``privacy``: ``eps_data``,
    ``delta_data``, ``eps_analyst``).
    """

    answers: np.ndarray
    eps_data: float
    delta_data: float
    rounds: int = 0
    eps_analyst: float | None = None
    info: dict[str, float | int | bool | str] = field(default_factory=dict)
    trace: dict[str, np.ndarray] = field(default_factory=dict)

    def clipped(self, low: float = 0.0, high: float = 1.0) -> np.ndarray:
        """The answers clipped to [low, high] (post-processing: no privacy cost); ``answers`` stays raw.

        The default is the range of every workload here: linear queries with q(x) in [0, 1] on a normalised
        histogram answer in [0, 1]. A clipped answer is never further from a true answer in the range.
        """
        if not low <= high:
            raise ValueError(f"low must be <= high, got low={low!r}, high={high!r}")
        return np.clip(self.answers, low, high)


class DatabaseUpdate(Protocol):
    """The DUA interface IC runs against (see ``dpstream.query_release.updates``)."""

    def rounds(self, alpha: float) -> int:
        """T(alpha): no database update sequence at accuracy alpha is longer."""
    def current(self) -> np.ndarray:
        """f(S) for every query of the workload."""
    def update(self, j: int, v: float, current_j: float) -> None:
        """Move S after the noisy answer ``v`` to query ``j`` (``current_j`` = f_j(S))."""


def check_one_run(n_runs: int) -> None:
    """``n_runs`` of a query release's ``run``: 1 only.

    A query release is one adaptive pass over the workload whose rounds depend on its own noise; independent runs
    are independent mechanisms (one per seed), not a batch of one.
    """
    if isinstance(n_runs, bool) or n_runs != 1:
        raise ValueError(f"n_runs must be 1 (a query release is one adaptive run: build one mechanism per seed for "
                         f"more), got {n_runs!r}")


def check_delta_or_zero(delta: float) -> float:
    """Delta in [0, 1): 0 selects pure DP."""
    if isinstance(delta, bool) or not isinstance(delta, int | float) or not (0.0 <= delta < 1.0):
        raise ValueError(f"delta must be in [0, 1) (0 = pure DP), got {delta!r}")
    return float(delta)


def exponential_mechanism(scores: np.ndarray, eps0: float, sensitivity: float, noise: NoiseSource) -> int:
    """Index j with probability proportional to exp(eps0 scores_j / (2 sensitivity)) (Gumbel-max, exact)."""
    return int(np.argmax(eps0 * scores / (2 * sensitivity) + noise.rng.gumbel(size=scores.size)))


class IterativeConstruction(Certified):
    """IC(D, alpha, eps0) with the exponential-mechanism distinguisher (the iterative-construction notes).

    Per round: f = EM over Q with score |f(D) - f(S)| (sensitivity 1/n); v = f(D) + Lap(1/(n eps0)); stop when
    |v - f(S)| < 3 alpha / 4 (``alpha`` = 0: never stop), else update S. ``rounds`` defaults to T(alpha/2).
    Privacy: (epsilon, delta)-DP, replace-one neighbours; 2 x rounds eps0-DP steps composed (``ic_step_epsilon``);
    ``privacy.epsilon`` is that composition (<= epsilon).
    ``average``: output the mean of the states' answers over rounds (MWEM) instead of the last state.
    """

    def __init__(self, *, update: DatabaseUpdate, epsilon: float, delta: float, n: int, alpha: float = 0.0,
                 rounds: int | None = None, average: bool = False, seed: SeedLike = None) -> None:
        """Validate the parameters; rounds default to T(alpha/2), eps0 from ``ic_step_epsilon``, noise 1/(n eps0)."""
        self.update = update
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta_or_zero(delta)
        self.n = check_positive_int(n, "n")
        if not (alpha == 0 or 0 < alpha <= 1):
            raise ValueError(f"alpha must be in (0, 1] (or 0 to never stop early), got {alpha!r}")
        self.alpha = float(alpha)
        if rounds is None and alpha == 0:
            raise ValueError("rounds is required when alpha = 0")
        self.rounds = update.rounds(alpha / 2) if rounds is None else check_positive_int(rounds, "rounds")
        self.eps0 = ic_step_epsilon(self.epsilon, self.delta, self.rounds)
        self.noise_scale = 1.0 / (self.n * self.eps0)
        self.average = average
        self.noise = NoiseSource(seed)

    @property
    def privacy(self) -> Privacy:
        """(eps_data, delta) for replace-one-record neighbours: 2 x rounds eps0-DP steps composed.

        eps0 of a step from the Laplace answer's noise (sensitivity 1/n, ``LaplaceMap``); the distinguisher runs
        the exponential mechanism at the same eps0.
        """
        step = LaplaceMap(1.0 / self.n, self.noise_scale).epsilon(0.0)
        return compose_advanced(data_privacy(step, 0.0), 2 * self.rounds, self.delta)

    def run(self, true_answers: np.ndarray, *, n_runs: int = 1) -> Release:
        """Run IC against the true answers f(D) of every query; return the synthetic answers f(S)."""
        check_one_run(n_runs)
        true_answers = np.asarray(true_answers, dtype=np.float64)
        current = self.update.current()
        total = np.zeros_like(current)
        chosen, noisy = [], []
        stopped = False
        for _ in range(self.rounds):
            j = exponential_mechanism(np.abs(true_answers - current), self.eps0, 1.0 / self.n, self.noise)
            v = true_answers[j] + self.noise.laplace(self.noise_scale, 1)[0]
            chosen.append(j)
            noisy.append(v)
            if self.alpha > 0 and abs(v - current[j]) < 0.75 * self.alpha:
                stopped = True
                break
            self.update.update(j, v, current[j])
            current = self.update.current()
            total += current
        answers = total / len(chosen) if self.average and not stopped else current
        return Release(
            answers=answers, eps_data=self.privacy.epsilon, delta_data=self.delta, rounds=len(chosen),
            info={"stopped_early": stopped, "eps0": self.eps0},
            trace={"chosen": np.array(chosen), "noisy": np.array(noisy)},
        )


def pmw(*, workload: Workload, epsilon: float, delta: float, n: int, alpha: float, rounds: int | None = None,
        seed: SeedLike = None) -> IterativeConstruction:
    """Private multiplicative weights = IC with the MW update at eta = alpha/4 (the DUA runs at alpha/2).

    Privacy: (epsilon, delta)-DP for replace-one neighbours of size n (IC accounting).
    """
    return IterativeConstruction(update=MultiplicativeWeights(workload, eta=alpha / 4), epsilon=epsilon, delta=delta,
                                 n=n, alpha=alpha, rounds=rounds, seed=seed)


def mwem(*, workload: Workload, epsilon: float, delta: float, n: int, rounds: int, replays: int = 5,
         seed: SeedLike = None) -> IterativeConstruction:
    """MWEM (Hardt, Ligett, McSherry 2012): IC that never stops early, MWEM update, averaged output.

    Privacy: (epsilon, delta)-DP for replace-one neighbours of size n (2 x rounds composed steps).
    """
    return IterativeConstruction(update=MWEMUpdate(workload, replays), epsilon=epsilon, delta=delta, n=n, alpha=0.0,
                                 rounds=rounds, average=True, seed=seed)


class LaplaceRelease(Certified):
    """Independent Laplace answers to all k queries: q(D) + Lap(b), b from ``laplace_answer_scale``.

    Privacy: (epsilon, delta)-DP for replace-one neighbours of size n (k-fold composition, DRV if delta > 0).
    ``privacy`` is that nominal (epsilon, delta): the scale is fitted to each release's k, and ``Release.eps_data``
    records the composition actually accounted (equal up to the root finder's round-off).
    """

    def __init__(self, *, epsilon: float, delta: float, n: int, seed: SeedLike = None) -> None:
        """Validate (epsilon, delta, n) and seed the noise source."""
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta_or_zero(delta)
        self.n = check_positive_int(n, "n")
        self.noise = NoiseSource(seed)

    @property
    def privacy(self) -> Privacy:
        """(epsilon, delta) for replace-one-record neighbours (pure if delta = 0)."""
        return data_privacy(self.epsilon, self.delta)

    def run(self, true_answers: np.ndarray, *, n_runs: int = 1) -> Release:
        """q(D) + Lap(b) for every query, b fitted to their number k."""
        check_one_run(n_runs)
        true_answers = np.asarray(true_answers, dtype=np.float64)
        scale = laplace_answer_scale(self.n, self.epsilon, self.delta, true_answers.size)
        eps_data = composed_epsilon(1.0 / (self.n * scale), true_answers.size, self.delta)
        return Release(answers=true_answers + self.noise.laplace(scale, true_answers.size), eps_data=eps_data,
                       delta_data=self.delta, info={"laplace_scale": scale})
