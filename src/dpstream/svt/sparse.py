"""AboveThreshold, Sparse and NumericSparse (the SVT notes; Dwork and Roth Sec. 3.6) on one parameterised core."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpstream.noise import NoiseSource, SeedLike
from dpstream.privacy.accounting import sparse_sigma
from dpstream.privacy.composition import compose
from dpstream.privacy.maps import PrivacyMap, SparseMap
from dpstream.privacy.statement import Certified, Notion, Privacy, Relation
from dpstream.privacy.svt import CONTINUOUS, DISCRETE_SECURE, check_svt_noise
from dpstream.secure.laplace import KeyedLaplace, laplace_grid
from dpstream.svt import _kernels
from dpstream.svt.discrete import integer_answers, integer_value
from dpstream.svt.queries import query_answers
from dpstream.validation import check_delta, check_epsilon, check_positive_int

CHUNK = 1 << 16  # queries per noise draw when a run may halt early
RELEASE_NONE = _kernels.RELEASE_NONE
"""``GeneralisedSparse(release=...)``: output TOP / BOTTOM only."""
RELEASE_FRESH = _kernels.RELEASE_FRESH
"""``GeneralisedSparse(release=...)``: release f_i + fresh noise for each TOP (``NumericSparse``)."""
RELEASE_SAME = _kernels.RELEASE_SAME
"""``GeneralisedSparse(release=...)``: release f_i + the query noise of its comparison. NOT private (Lyu et al. Alg. 3,
a negative control: ``dpstream.audit.negative_controls``)."""


def sparse_privacy(privacy_map: PrivacyMap, delta: float, svt_noise: str = CONTINUOUS) -> Privacy | None:
    """The ``Privacy`` of a part of AboveThreshold / Sparse / NumericSparse: its map at ``delta`` (pure when 0).

    Add/remove-one-record neighbours; computational with ``svt_noise="discrete_secure"`` (noise from ChaCha20 as a
    pseudorandom function). None when the map does not certify (``maps.NOT_CERTIFIED``).
    """
    notion: Notion | None = "computational" if svt_noise == DISCRETE_SECURE else None
    return privacy_map.statement(delta, Relation.ADD_REMOVE_RECORD, notion)


@dataclass
class SVTRun:
    """Result of R runs over m queries: outcomes (R, m) int8 (1 TOP, 0 BOTTOM, -1 not processed).

    ``noise`` holds every noise value actually drawn (by name); ``released`` the noisy answers of
    mechanisms that release them (NaN elsewhere; with ``svt_noise="discrete_secure"`` int64, 0 elsewhere: read
    ``outcomes == 1``); ``values`` f_i(S_i) where the database changes. ``deployable``: the noise was exact and keyed
    from OS entropy and the mechanism certified (``svt_noise="discrete_secure"`` without a seed).
    """

    outcomes: np.ndarray
    noise: dict[str, np.ndarray]
    released: np.ndarray | None = None
    values: np.ndarray | None = None
    deployable: bool = False

    @property
    def processed(self) -> np.ndarray:
        """Queries processed before halting, per run."""
        return (self.outcomes >= 0).sum(axis=-1)

    def clipped(self, low: float, high: float) -> np.ndarray:
        """The released answers clipped to the queries' range [low, high] (post-processing: no privacy cost).

        ``released`` stays raw; NaN (not released) stays NaN (the int64 answers of ``svt_noise="discrete_secure"``:
        read them where ``outcomes == 1``). Raises ``ValueError`` when nothing is released.
        """
        if self.released is None:
            raise ValueError("this run released no answers (only NumericSparse releases them)")
        if not low <= high:
            raise ValueError(f"low must be <= high, got low={low!r}, high={high!r}")
        return np.clip(self.released, low, high)


def _laplace(noise: NoiseSource, scale: float, shape: tuple[int, int]) -> np.ndarray:
    return noise.laplace(scale, shape) if scale > 0 else np.zeros(shape)


class GeneralisedSparse(Certified):
    """The shared core: noisy threshold, per-query noise, optional cutoff, redraw and release.

    Not a mechanism by itself, NOT private as such (``privacy`` is None): its privacy depends on the parameters.
    The certified settings are ``AboveThreshold``, ``Sparse`` and ``NumericSparse``;
    ``dpstream.audit.negative_controls`` builds known-broken ones on it.

    ``svt_noise="discrete_secure"`` (``dpstream.svt.discrete``): integer answers and threshold (a one-line error
    otherwise), each scale rounded up to a rational t/s (``secure.laplace.laplace_grid``; ``grids``), exact discrete
    Laplace draws from a ChaCha20 key (from ``secrets`` when ``seed`` is None: ``deployable``; else derived from the
    seed: reproducible, NOT deployable), integer decisions.
    """

    private = False
    _repr_attrs: ClassVar[dict[str, str]] = {"c": "cutoff"}

    def __init__(
        self,
        *,
        threshold: float,
        cutoff: int | None,
        threshold_scale: float,
        query_scale: float,
        answer_scale: float = 0.0,
        redraw: bool = True,
        release: int = RELEASE_NONE,
        seed: SeedLike = None,
        svt_noise: str = CONTINUOUS,
    ) -> None:
        """Validate and store the threshold, the noise scales, the cutoff, redraw and release options."""
        self.svt_noise = check_svt_noise(svt_noise)
        if not np.isfinite(threshold):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        if cutoff is None and redraw:
            raise ValueError("redrawing the threshold after each TOP needs a cutoff")
        if cutoff is None and release == RELEASE_FRESH:
            raise ValueError("fresh answer noise for each TOP needs a cutoff (it is drawn up front, c per run)")
        self.threshold = float(threshold)
        self.cutoff = None if cutoff is None else check_positive_int(cutoff, "c")
        self.threshold_scale = float(threshold_scale)
        self.query_scale = float(query_scale)
        self.answer_scale = float(answer_scale)
        self.redraw = bool(redraw)
        self.release = int(release)
        self.noise = NoiseSource(seed)
        self._keyed: KeyedLaplace | None = None
        self.grids: dict[str, tuple[int, int] | None] = {}
        if self.svt_noise == DISCRETE_SECURE:
            self.threshold = integer_value(threshold, "threshold")
            scales = {"threshold": self.threshold_scale, "query": self.query_scale, "answer": self.answer_scale}
            self.grids = {role: laplace_grid(scale) if scale > 0 else None for role, scale in scales.items()}
            self._keyed = KeyedLaplace(seed)

    @property
    def deployable(self) -> bool:
        """Exact discrete noise keyed from OS entropy and a certified setting (``svt_noise="discrete_secure"``)."""
        return self._keyed is not None and not self._keyed.seeded and self.certified

    def _counts(self) -> tuple[int, int]:
        n_thr = self.cutoff if self.redraw and self.cutoff is not None else 1  # __init__: redraw needs a cutoff
        n_ans = self.cutoff if self.release == RELEASE_FRESH and self.cutoff is not None else 0
        return n_thr, n_ans

    def _discrete(self, n_runs: int, m: int) -> tuple[dict[str, np.ndarray], int]:
        """Threshold and answer noise of a fresh call, and query noise for the first m queries; (noise, call)."""
        keyed, call = self._keyed, self._keyed.next_call()  # type: ignore[union-attr]  # discrete only
        n_thr, n_ans = self._counts()
        noise = {role: keyed.draw(role, self.grids[role], call, n_runs, 0, n)  # type: ignore[union-attr]
                 for role, n in (("threshold", n_thr), ("answer", n_ans), ("query", m))}
        return noise, call

    def draw_noise(self, m: int, n_runs: int = 1) -> dict[str, np.ndarray]:
        """All noise R runs over m queries can use, drawn in bulk (threshold, answer, then query noise)."""
        if self._keyed is not None:
            return self._discrete(n_runs, m)[0]
        n_thr, n_ans = self._counts()
        return {
            "threshold": _laplace(self.noise, self.threshold_scale, (n_runs, n_thr)),
            "answer": _laplace(self.noise, self.answer_scale, (n_runs, n_ans)),
            "query": _laplace(self.noise, self.query_scale, (n_runs, m)),
        }

    @property
    def privacy(self) -> Privacy | None:
        """The guarantee: None here (not a certified setting); the subclasses state theirs (None if kappa < 1)."""
        return None

    def run(
        self, queries: object, counts: np.ndarray | None = None, *, n_runs: int = 1, noise: dict | None = None
    ) -> SVTRun:
        """R independent runs over the same queries (answers, or linear queries on ``counts``).

        With ``noise`` given (from ``draw_noise``) it is used as is; otherwise query noise is drawn
        in chunks and drawing stops once every run has halted.
        """
        discrete = self._keyed is not None
        answers = integer_answers(queries, counts) if discrete else query_answers(queries, counts)
        n_runs = check_positive_int(n_runs, "n_runs")
        m = answers.shape[0]
        out = np.full((n_runs, m), -1, dtype=np.int8)
        released = np.zeros((n_runs, m), dtype=np.int64) if discrete else np.full((n_runs, m), np.nan)
        count = np.zeros(n_runs, dtype=np.int64)
        if noise is not None:
            self._pass(answers, noise, noise["query"], count, out, released)
        else:
            noise, call = self._discrete(n_runs, 0) if discrete else (self.draw_noise(0, n_runs), -1)
            drawn = []
            for start in range(0, m, CHUNK):
                if self.cutoff is not None and (count >= self.cutoff).all():
                    break
                stop = min(m, start + CHUNK)
                drawn.append(self._query_noise(call, n_runs, start, stop))
                self._pass(answers[start:stop], noise, drawn[-1], count, out[:, start:stop], released[:, start:stop])
            noise["query"] = np.concatenate(drawn, axis=1) if drawn else noise["query"]
        return SVTRun(out, noise, released if self.release else None, deployable=self.deployable)

    def _query_noise(self, call: int, n_runs: int, start: int, stop: int) -> np.ndarray:
        """Query noise of queries start..stop: index-keyed discrete draws of ``call``, or the next continuous ones."""
        if self._keyed is not None:
            return self._keyed.draw("query", self.grids["query"], call, n_runs, start, stop - start)
        return _laplace(self.noise, self.query_scale, (n_runs, stop - start))

    def _pass(self, answers, noise, query_noise, count, out, released) -> None:
        _kernels.sparse_pass(
            answers,
            self.threshold,
            noise["threshold"],
            query_noise,
            noise["answer"],
            self.cutoff or 0,
            self.redraw,
            self.release,
            count,
            out,
            released,
        )



class AboveThreshold(GeneralisedSparse):
    """AboveThreshold (the SVT notes; Dwork and Roth Alg. 1): t^ = t + Lap(2/eps), TOP iff f_i + Lap(4/eps) >= t^, halt.

    Privacy: (epsilon, 0)-DP for any number of sensitivity-1 queries under any neighbouring relation
    that makes them sensitivity 1 (for linear queries with f_i(x) in [0, 1]: add/remove one record).
    ``kappa`` < 1 scales both noises by kappa: NOT privacy-certified. ``svt_noise="discrete_secure"``: integer
    queries, exact discrete Laplace at scales rounded up from the same ones, the same (epsilon, 0) computationally
    (``dpstream.svt.discrete``).
    """

    def __init__(self, *, epsilon: float, threshold: float, seed: SeedLike = None, kappa: float = 1.0,
                 svt_noise: str = CONTINUOUS) -> None:
        """Noise scales from ``sparse_sigma`` at c = 1: threshold Lap(2/eps), queries Lap(4/eps)."""
        sigma = sparse_sigma(check_epsilon(epsilon), 1, kappa=kappa)
        super().__init__(threshold=threshold, cutoff=1, threshold_scale=sigma, query_scale=2.0 * sigma, seed=seed,
                         svt_noise=svt_noise)
        self.epsilon, self.delta = float(epsilon), 0.0
        self.private, self.kappa = True, kappa

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, 0) for add/remove-one-record neighbours from the threshold scale held; None if kappa < 1."""
        return sparse_privacy(SparseMap(self.threshold_scale, 1), 0.0, self.svt_noise)


class Sparse(GeneralisedSparse):
    """Sparse (SVT notes): c restarts of AboveThreshold; T^ = t + Lap(sigma) redrawn per TOP, nu_i = Lap(2 sigma).

    sigma = 2c/eps (delta = 0) or sqrt(32 c ln(1/delta))/eps; halts at the c-th TOP (cutoff fixed in advance).
    Privacy: (epsilon, delta)-DP (pure if delta = 0: basic composition; else advanced composition, checked
    exactly by ``check_sparse_advanced``) for sensitivity-1 queries, neighbours as in ``AboveThreshold``.
    ``kappa`` < 1 scales both noises by kappa: NOT privacy-certified. ``svt_noise="discrete_secure"``: as in
    ``AboveThreshold`` (both compositions hold for any (epsilon', 0)-DP parts), computationally.
    """

    def __init__(
        self,
        *,
        epsilon: float,
        threshold: float,
        c: int,
        delta: float = 0.0,
        seed: SeedLike = None,
        kappa: float = 1.0,
        svt_noise: str = CONTINUOUS,
    ) -> None:
        """Noise scales from ``sparse_sigma`` (pure or approximate): threshold Lap(sigma), queries Lap(2 sigma)."""
        epsilon = check_epsilon(epsilon)
        delta = 0.0 if delta == 0 else check_delta(delta)
        sigma = sparse_sigma(epsilon, c, delta, kappa)
        super().__init__(threshold=threshold, cutoff=c, threshold_scale=sigma, query_scale=2.0 * sigma, seed=seed,
                         svt_noise=svt_noise)
        self.epsilon, self.delta = epsilon, delta
        self.sigma = sigma
        self.private, self.kappa = True, kappa

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta), add/remove-one-record neighbours, from the threshold scale held (``SparseMap``).

        Pure if delta = 0; None if kappa < 1 (NOT certified).
        """
        return sparse_privacy(SparseMap(self.threshold_scale, self.cutoff or 1), self.delta, self.svt_noise)


class NumericSparse(GeneralisedSparse):
    """NumericSparse (the SVT notes; Dwork and Roth Alg. 3, budget halved): Sparse releasing f_i + Lap(sigma) per TOP.

    The selection is Sparse at (eps/2, delta/2) with scale sigma; each TOP's answer gets fresh
    Lap(sigma) noise, an (eps/2, delta/2) release of c sensitivity-1 answers (sigma = 2c/(eps/2) is
    basic composition; with delta > 0 advanced composition needs even less). Privacy: (epsilon, delta)-DP
    by composition, neighbours as in ``AboveThreshold``. We follow the spec's "doubles the privacy cost"
    rather than Dwork and Roth's 8/9 : 1/9 split. ``svt_noise="discrete_secure"``: as in ``Sparse``; the c
    released answers are integers with discrete Laplace noise (the discrete Laplace mechanism, the same epsilon),
    computationally.
    """

    private = True

    def __init__(
        self, *, epsilon: float, threshold: float, c: int, delta: float = 0.0, seed: SeedLike = None,
        svt_noise: str = CONTINUOUS,
    ) -> None:
        """Sparse at (eps/2, delta/2) for the selection; each TOP's answer gets fresh Lap(sigma)."""
        epsilon = check_epsilon(epsilon)
        delta = 0.0 if delta == 0 else check_delta(delta)
        sigma = sparse_sigma(epsilon / 2.0, c, delta / 2.0)
        super().__init__(
            threshold=threshold, cutoff=c, threshold_scale=sigma, query_scale=2.0 * sigma, answer_scale=sigma,
            release=RELEASE_FRESH, seed=seed, svt_noise=svt_noise,
        )  # fmt: skip
        self.epsilon, self.delta = epsilon, delta
        self.sigma = sigma

    @property
    def privacy(self) -> Privacy | None:
        """The selection (Sparse's map at delta/2) composed with the release of the c answers.

        The answers are c Laplace(sigma) releases of sensitivity-1 values, accounted by the composition Sparse's
        sigma is calibrated for (``SparseMap`` at the answer scale: basic if delta = 0, else advanced; c fresh
        Lap(sigma) answers cost at most that).
        """
        c = self.cutoff or 1
        selection = sparse_privacy(SparseMap(self.threshold_scale, c), self.delta / 2.0, self.svt_noise)
        answers = sparse_privacy(SparseMap(self.answer_scale, c), self.delta / 2.0, self.svt_noise)
        return None if selection is None or answers is None else compose(selection, answers)
