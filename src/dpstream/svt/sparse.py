"""AboveThreshold, Sparse and NumericSparse (the SVT notes; Dwork and Roth Sec. 3.6) on one parameterised core."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpstream.noise import NoiseSource, SeedLike
from dpstream.privacy.accounting import sparse_sigma
from dpstream.privacy.composition import compose
from dpstream.privacy.statement import Certified, Privacy, Relation
from dpstream.svt import _kernels
from dpstream.svt.queries import query_answers
from dpstream.validation import check_delta, check_epsilon, check_positive_int

CHUNK = 1 << 16  # queries per noise draw when a run may halt early


def sparse_privacy(epsilon: float, delta: float) -> Privacy:
    """The ``Privacy`` of AboveThreshold / Sparse / NumericSparse at (epsilon, delta): pure when delta = 0."""
    return Privacy(epsilon, delta, Relation.ADD_REMOVE_RECORD)


@dataclass
class SVTRun:
    """Result of R runs over m queries: outcomes (R, m) int8 (1 TOP, 0 BOTTOM, -1 not processed).

    ``noise`` holds every noise value actually drawn (by name); ``released`` the noisy answers of
    mechanisms that release them (NaN elsewhere); ``values`` f_i(S_i) where the database changes.
    """

    outcomes: np.ndarray
    noise: dict[str, np.ndarray]
    released: np.ndarray | None = None
    values: np.ndarray | None = None

    @property
    def processed(self) -> np.ndarray:
        """Queries processed before halting, per run."""
        return (self.outcomes >= 0).sum(axis=-1)


def _laplace(noise: NoiseSource, scale: float, shape: tuple[int, int]) -> np.ndarray:
    return noise.laplace(scale, shape) if scale > 0 else np.zeros(shape)


class GeneralisedSparse(Certified):
    """The shared core: noisy threshold, per-query noise, optional cutoff, redraw and release.

    Not a mechanism by itself, NOT private as such (``privacy`` is None): its privacy depends on the parameters.
    The certified settings are ``AboveThreshold``, ``Sparse`` and ``NumericSparse``;
    ``dpstream.audit.negative_controls`` builds known-broken ones on it.
    """

    private = False

    def __init__(
        self,
        *,
        threshold: float,
        cutoff: int | None,
        threshold_scale: float,
        query_scale: float,
        answer_scale: float = 0.0,
        redraw: bool = True,
        release: int = _kernels.RELEASE_NONE,
        seed: SeedLike = None,
    ) -> None:
        """Validate and store the threshold, the noise scales, the cutoff, redraw and release options."""
        if not np.isfinite(threshold):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        if cutoff is None and redraw:
            raise ValueError("redrawing the threshold after each TOP needs a cutoff")
        if cutoff is None and release == _kernels.RELEASE_FRESH:
            raise ValueError("fresh answer noise for each TOP needs a cutoff (it is drawn up front, c per run)")
        self.threshold = float(threshold)
        self.cutoff = None if cutoff is None else check_positive_int(cutoff, "c")
        self.threshold_scale = float(threshold_scale)
        self.query_scale = float(query_scale)
        self.answer_scale = float(answer_scale)
        self.redraw = bool(redraw)
        self.release = int(release)
        self.noise = NoiseSource(seed)

    def draw_noise(self, m: int, n_runs: int = 1) -> dict[str, np.ndarray]:
        """All noise R runs over m queries can use, drawn in bulk (threshold, answer, then query noise)."""
        n_thr = self.cutoff if self.redraw and self.cutoff is not None else 1  # __init__: redraw needs a cutoff
        n_ans = self.cutoff if self.release == _kernels.RELEASE_FRESH and self.cutoff is not None else 0
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
        answers = query_answers(queries, counts)
        n_runs = check_positive_int(n_runs, "n_runs")
        m = answers.shape[0]
        out = np.full((n_runs, m), -1, dtype=np.int8)
        released = np.full((n_runs, m), np.nan)
        count = np.zeros(n_runs, dtype=np.int64)
        if noise is not None:
            self._pass(answers, noise, noise["query"], count, out, released)
        else:
            noise = self.draw_noise(0, n_runs)
            drawn = []
            for start in range(0, m, CHUNK):
                if self.cutoff is not None and (count >= self.cutoff).all():
                    break
                stop = min(m, start + CHUNK)
                drawn.append(_laplace(self.noise, self.query_scale, (n_runs, stop - start)))
                self._pass(answers[start:stop], noise, drawn[-1], count, out[:, start:stop], released[:, start:stop])
            noise["query"] = np.concatenate(drawn, axis=1) if drawn else np.zeros((n_runs, 0))
        return SVTRun(out, noise, released if self.release else None)

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
    ``kappa`` < 1 scales both noises by kappa: NOT privacy-certified.
    """

    def __init__(self, *, epsilon: float, threshold: float, seed: SeedLike = None, kappa: float = 1.0) -> None:
        """Noise scales from ``sparse_sigma`` at c = 1: threshold Lap(2/eps), queries Lap(4/eps)."""
        sigma = sparse_sigma(check_epsilon(epsilon), 1, kappa=kappa)
        super().__init__(threshold=threshold, cutoff=1, threshold_scale=sigma, query_scale=2.0 * sigma, seed=seed)
        self.epsilon, self.delta = float(epsilon), 0.0
        self.private, self.kappa = True, kappa

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta) for add/remove-one-record neighbours; None when kappa < 1 (NOT certified)."""
        return sparse_privacy(self.epsilon, self.delta) if self.certified else None


class Sparse(GeneralisedSparse):
    """Sparse (SVT notes): c restarts of AboveThreshold; T^ = t + Lap(sigma) redrawn per TOP, nu_i = Lap(2 sigma).

    sigma = 2c/eps (delta = 0) or sqrt(32 c ln(1/delta))/eps; halts at the c-th TOP (cutoff fixed in advance).
    Privacy: (epsilon, delta)-DP (pure if delta = 0: basic composition; else advanced composition, checked
    exactly by ``check_sparse_advanced``) for sensitivity-1 queries, neighbours as in ``AboveThreshold``.
    ``kappa`` < 1 scales both noises by kappa: NOT privacy-certified.
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
    ) -> None:
        """Noise scales from ``sparse_sigma`` (pure or approximate): threshold Lap(sigma), queries Lap(2 sigma)."""
        epsilon = check_epsilon(epsilon)
        delta = 0.0 if delta == 0 else check_delta(delta)
        sigma = sparse_sigma(epsilon, c, delta, kappa)
        super().__init__(threshold=threshold, cutoff=c, threshold_scale=sigma, query_scale=2.0 * sigma, seed=seed)
        self.epsilon, self.delta = epsilon, delta
        self.sigma = sigma
        self.private, self.kappa = True, kappa

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta), add/remove-one-record neighbours (pure if delta = 0); None if kappa < 1 (NOT certified)."""
        return sparse_privacy(self.epsilon, self.delta) if self.certified else None


class NumericSparse(GeneralisedSparse):
    """NumericSparse (the SVT notes; Dwork and Roth Alg. 3, budget halved): Sparse releasing f_i + Lap(sigma) per TOP.

    The selection is Sparse at (eps/2, delta/2) with scale sigma; each TOP's answer gets fresh
    Lap(sigma) noise, an (eps/2, delta/2) release of c sensitivity-1 answers (sigma = 2c/(eps/2) is
    basic composition; with delta > 0 advanced composition needs even less). Privacy: (epsilon, delta)-DP
    by composition, neighbours as in ``AboveThreshold``. We follow the spec's "doubles the privacy cost"
    rather than Dwork and Roth's 8/9 : 1/9 split.
    """

    private = True

    def __init__(
        self, *, epsilon: float, threshold: float, c: int, delta: float = 0.0, seed: SeedLike = None
    ) -> None:
        """Sparse at (eps/2, delta/2) for the selection; each TOP's answer gets fresh Lap(sigma)."""
        epsilon = check_epsilon(epsilon)
        delta = 0.0 if delta == 0 else check_delta(delta)
        sigma = sparse_sigma(epsilon / 2.0, c, delta / 2.0)
        super().__init__(
            threshold=threshold, cutoff=c, threshold_scale=sigma, query_scale=2.0 * sigma, answer_scale=sigma,
            release=_kernels.RELEASE_FRESH, seed=seed,
        )  # fmt: skip
        self.epsilon, self.delta = epsilon, delta
        self.sigma = sigma

    @property
    def privacy(self) -> Privacy:
        """The selection (Sparse at (eps/2, delta/2)) composed with the release of the c answers at the same sigma.

        The answers are c Laplace(sigma) releases of sensitivity-1 values: (eps/2, delta/2) by the composition
        Sparse's sigma is calibrated for (basic if delta = 0, else advanced).
        """
        half = sparse_privacy(self.epsilon / 2.0, self.delta / 2.0)
        return compose(half, half)
