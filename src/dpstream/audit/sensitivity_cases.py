"""Sensitivity cases of every private mechanism family (``dpstream.audit.sensitivity``), and their registry.

- GaussBM and the private sketches (PunctualCMS/CS, LazyCMS/CS, LazyHH's LazyCMS, PunctualHH's PunctualCMS):
  L2 change of every released dyadic tree node of every cell (the node closing at a cell's step s covers
  steps (s - lowbit(s), s]), computed with numpy from the per-cell pushed increment streams; with every counter
  and node noise, the exact discrete Gaussian's (stored, derived, under Honaker's estimates) included.
- Sparse vector family (AboveThreshold, Sparse, NumericSparse, ThresholdMonitor, and with
  ``svt_noise="discrete_secure"`` ThresholdMonitorEvolving too; their cases are registered from their mechanism
  specs, ``dpstream.testing.shipped``, with ``LinearQueryCase``): per-query change of linear query answers,
  add/remove one record.
- Shifting heavy hitters (TME queries f_x = 1{y = x}, Sparse over the step maxima, Laplace histograms):
  per-query / per-step L1 change of the user weights, replace one user.
- Query release (Laplace baseline, PMW, MWEM, online PMW, the clean-up Sparse + Laplace of Hsu-Roth-Ullman
  Alg. 3): per-query change of the normalised answers (also the exponential mechanism's scores), replace one
  record; Alg. 4's clean-up Sparse over analysts and Alg. 5's Laplace answers likewise. Not covered: the HRU game
  itself (exponential weights, no additive noise).

The assumed sensitivity is read from each mechanism's calibrated noise (a GaussBM's sigma through
``calibration.gaussian_l2_sensitivity``; a Laplace scale times the epsilon it was calibrated for) or from
the calibration module's named constant the scales are built on.

A case whose mechanism options are those of a config is registered under the config's name (``lazycms``,
``punctualcms_derived_analytic``, ``lazyhh``); the others under their class and what they vary (``LazyCS_d3_w8``,
``GaussBM_honaker``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from dpstream import descriptor
from dpstream.audit.sensitivity import REGISTRY, Neighbours, Sensitivity, SensitivityCase, register
from dpstream.counters import BinaryTree, Counter, LaplaceTree
from dpstream.counters.gauss_bm import GaussBM
from dpstream.counters.registry import PROBED
from dpstream.descriptor import resolve
from dpstream.hashing import bucket_many
from dpstream.heavy_hitters import LazyHH
from dpstream.heavy_hitters.baselines import PunctualHH
from dpstream.privacy.accounting import QUERY_SENSITIVITY, advanced_per_step_epsilon, per_step_epsilon
from dpstream.privacy.calibration import gaussian_l2_sensitivity
from dpstream.privacy.discrete_gaussian import discrete_gaussian_l2_sensitivity
from dpstream.privacy.query_release import alg5_data_epsilon, laplace_answer_scale
from dpstream.query_release import KWayMarginals, LaplaceRelease, PrivateEquilibriumRelease, mwem, pmw
from dpstream.query_release.alg5 import AnalystPrivateMW
from dpstream.query_release.game import AnalystEquilibriumRelease
from dpstream.query_release.iterative import IterativeConstruction
from dpstream.query_release.online import OnlineIC, online_pmw, online_sigma
from dpstream.query_release.workloads import Workload
from dpstream.sketches import LazyCMS, LazyCS, PunctualCMS, PunctualCS
from dpstream.sketches.core import PrivateSchedule, SketchCore
from dpstream.svt import (
    ThresholdMonitorEvolving,
    sparse_sigma,
)
from dpstream.svt.queries import LinearQueries
from dpstream.svt.shifting import (
    HistogramEveryStep,
    ShiftingHeavyHitters,
    SparseThenHistogram,
    heavy_rows,
    step_maxima,
)

RANDOM_PAIRS = 40
KEY_SEARCH = 1 << 15
"""Keys searched for hash collisions (vectorised over the sketch's own hash parameters)."""


# ---- Binary mechanism trees --------------------------------------------------------------------------------------

def counter_protected(counter: Counter, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """What a counter's noise protects, from its noiseless increments (``Counter.protected``)."""
    return counter.protected(increments, steps)


def tree_positions(horizon: int) -> np.ndarray:
    """0-based steps where a tree is most fragile: first, last, 2^k and 2^k - 1 (1-based: 2^k + 1 and 2^k)."""
    powers = 1 << np.arange(max(1, horizon.bit_length()))
    return np.unique(np.concatenate(([0, horizon - 1], powers, powers - 1)).clip(0, horizon - 1))


def gauss_bm_assumed(bm: GaussBM | Counter) -> Sensitivity:
    """The L2 sensitivity a GaussBM's (or counter array's) sigma is calibrated for (sqrt(h m) when it is right).

    Exact discrete Gaussian node noise is inverted with its own calibration (``discrete_gaussian``), not the Gaussian's.
    """
    counter = bm.counter if isinstance(bm, GaussBM) else bm
    if isinstance(counter, LaplaceTree):  # pure: Laplace node noise of scale b covers L1 sensitivity b epsilon
        return Sensitivity("l1", counter.scale * counter.epsilon)
    if isinstance(counter, BinaryTree) and counter.source.distribution == "discrete_gaussian":
        # sigma^2 covers calibration_delta: delta less a constant-time sampler's share
        covered = discrete_gaussian_l2_sensitivity(counter.sigma2, bm.epsilon, counter.calibration_delta)
        return Sensitivity("l2", covered)
    return Sensitivity("l2", gaussian_l2_sensitivity(bm.sigma, bm.epsilon, bm.delta, bm.calibration))


@dataclass
class GaussBMCase:
    """GaussBM over n counters updated together (``update_all``).

    m-neighbouring inputs change m counters by 1 at one step each (Thm 1's relation).
    """

    name: str
    bm: GaussBM

    def assumed(self) -> Sensitivity:
        """The L2 sensitivity the GaussBM's sigma is calibrated for (m-neighbouring, Thm 1)."""
        return gauss_bm_assumed(self.bm)

    def protected(self, data: np.ndarray) -> np.ndarray:
        """Every node the counters release, from increments ``data`` (n, horizon)."""
        return counter_protected(self.bm.counter, data, np.full(data.shape[0], data.shape[1]))

    def neighbours(self, rng: np.random.Generator) -> Iterator[Neighbours]:
        """Random m-neighbouring pairs, then a change at every tree position."""
        n, horizon, m = self.bm.n, self.bm.horizon, min(self.bm.m, self.bm.n)
        base = rng.integers(0, 3, size=(n, horizon))
        for _ in range(RANDOM_PAIRS):
            other = base.copy()
            other[rng.choice(n, m, replace=False), rng.integers(0, horizon, m)] += rng.choice([-1, 1], m)
            yield Neighbours("random m counters at random steps", base, other)
        for step in tree_positions(horizon):
            other = base.copy()
            other[:m, step] += 1
            yield Neighbours(f"m counters at step {step + 1}", base, other)


# ---- Sketches ----------------------------------------------------------------------------------------------------

def cell_increments(sketch: SketchCore, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell pushed increment streams (d w, S) and step counts (d w,) of a private sketch after ``keys``.

    Punctual (Alg. 3): every cell steps at every item, cell (i, h_i(x_t)) gets c_i(x_t) at step t + 1.
    Lazy (Alg. 5): item t waits in P[i, h_i(x_t)] until the first t' >= t with t' mod w = h_i(x_t), and is
    pushed as that cell's step floor(t'/w) + 1; items not yet pushed when the stream ends are not released.
    c_i = g_i(x) (Count Sketch) or 1 (Count-Min).
    """
    d, w, length = sketch.depth, sketch.width, keys.shape[0]
    cols, signs = bucket_many(sketch._params, keys, w)
    incs = signs if sketch._estimator.signed else np.ones_like(signs)
    t = np.broadcast_to(np.arange(length), (d, length))
    cells = np.arange(d)[:, None] * w + cols
    kind = type(sketch._state).kind
    if kind == "punctual":
        horizon, step, keep = length, t, np.ones((d, length), dtype=bool)
        steps = np.full(d * w, length)
    elif kind == "lazy":
        push_t = t + (cols - t) % w
        horizon, step, keep = -(-length // w), push_t // w, push_t < length
        steps = np.tile((length - np.arange(w) + w - 1) // w, d)
    else:
        raise ValueError(f"cell_increments needs a private sketch (punctual or lazy), got schedule {kind!r}")
    out = np.zeros((d * w, horizon), dtype=np.int64)
    np.add.at(out, (cells[keep], step[keep]), incs[keep])
    return out, steps


def adversarial_key_pairs(sketch: SketchCore, candidates: int = 64) -> list[tuple[str, int, int]]:
    """Key pairs (x, x') found by search over the sketch's hash parameters.

    Colliding in as many rows as possible with opposite signs, with equal signs, and colliding in no row.
    """
    keys = np.arange(KEY_SEARCH, dtype=np.uint64)
    cols, signs = bucket_many(sketch._params, keys, sketch.width)
    best = {"opposite": (-1, 0, 0), "equal": (-1, 0, 0), "apart": (-1, 0, 0)}
    for x in range(candidates):
        same = cols == cols[:, x : x + 1]
        flip = signs != signs[:, x : x + 1]
        scores = {
            "opposite": (same & flip).sum(axis=0),
            "equal": (same & ~flip).sum(axis=0),
            "apart": (~same).sum(axis=0),
        }
        for label, score in scores.items():
            score[x] = -1
            y = int(np.argmax(score))
            if score[y] > best[label][0]:
                best[label] = (int(score[y]), x, y)
    return [(f"{label} in {hits}/{sketch.depth} rows", x, y) for label, (hits, x, y) in best.items()]


def stream_positions(length: int, width: int) -> np.ndarray:
    """Tree positions plus the Lazy push boundaries: t = q w - 1, q w and q w + 1 for every q."""
    q = np.arange(0, length, width)
    lazy = np.concatenate((q - 1, q, q + 1))
    return np.unique(np.concatenate((tree_positions(length), lazy)).clip(0, length - 1))


def cell_counters(sketch: SketchCore) -> Counter:
    """The d*w cell counters of a private sketch (its ``PrivateSchedule``); an exact sketch has none."""
    state = sketch._state
    if not isinstance(state, PrivateSchedule):
        raise TypeError(f"{type(sketch).__name__} releases exact cells: no noise to probe")
    return state.counters


@dataclass
class SketchCase:
    """A private sketch (or a tracker's sketch) under replace-one neighbouring streams of ``length`` items."""

    name: str
    sketch: SketchCore
    length: int
    universe: int = 200
    mechanism: Any = None  # the tracker that owns ``sketch`` (None: the sketch is the mechanism)

    def assumed(self) -> Sensitivity:
        """The L2 sensitivity the sketch's GaussBM cells are calibrated for (2d or 4d neighbouring)."""
        return gauss_bm_assumed(cell_counters(self.sketch))

    def protected(self, data: np.ndarray) -> np.ndarray:
        """Every node of every cell counter, from the item stream ``data``."""
        return counter_protected(cell_counters(self.sketch), *cell_increments(self.sketch, data.astype(np.uint64)))

    def neighbours(self, rng: np.random.Generator) -> Iterator[Neighbours]:
        """Random one-item replacements, then the adversarial key pairs of ``adversarial_key_pairs``."""
        base = rng.integers(0, self.universe, self.length)
        for _ in range(RANDOM_PAIRS):
            p = int(rng.integers(self.length))
            other = base.copy()
            other[p] = (base[p] + rng.integers(1, self.universe)) % self.universe
            yield Neighbours(f"random replacement at t={p}", base, other)
        for label, x, y in adversarial_key_pairs(self.sketch):
            for p in stream_positions(self.length, self.sketch.width):
                first, second = base.copy(), base.copy()
                first[p], second[p] = x, y
                yield Neighbours(f"keys {x}, {y} ({label}) at t={p}", first, second)


# ---- Sparse vector family: linear queries, add/remove one record -------------------------------------------------

@dataclass
class LinearQueryCase:
    """Per-query answers f_i(S) = Q[i] @ counts of a sparse-vector mechanism; neighbours add or remove one record."""

    name: str
    mechanism: Any
    queries: LinearQueries

    def assumed(self) -> Sensitivity:
        """Sensitivity 1 per query in l_inf (``QUERY_SENSITIVITY``)."""
        return Sensitivity("linf", QUERY_SENSITIVITY)

    def protected(self, data: np.ndarray) -> np.ndarray:
        """The exact answers to every query of the atom counts ``data``."""
        return self.queries.answers(data).reshape(-1, 1)

    def neighbours(self, rng: np.random.Generator) -> Iterator[Neighbours]:
        """Add or remove one record of each atom."""
        base = rng.integers(1, 20, self.queries.n_atoms).astype(float)
        for atom in range(self.queries.n_atoms):
            for sign, verb in ((1.0, "add"), (-1.0, "remove")):
                other = base.copy()
                other[atom] += sign
                yield Neighbours(f"{verb} one record of atom {atom}", base, other)


def svt_queries(rng: np.random.Generator, m: int = 30, atoms: int = 12, binary: bool = False) -> LinearQueries:
    """Random linear queries with values in [0, 1], plus the extreme rows: all ones, a single 1, all zeros.

    ``binary``: values in {0, 1} (the queries ``svt_noise="discrete_secure"`` takes, ``svt.discrete``).
    """
    matrix = rng.uniform(0.0, 1.0, size=(m, atoms)) * (rng.uniform(size=(m, atoms)) < 0.5)
    if binary:
        matrix = np.ceil(matrix)  # every nonzero value becomes 1
    matrix[0], matrix[1], matrix[2] = 1.0, np.eye(atoms)[0], 0.0
    return LinearQueries.from_matrix(matrix)


# ---- Shifting heavy hitters: replace one user --------------------------------------------------------------------

def weight_matrix(holdings: np.ndarray, sizes: np.ndarray, domain_size: int) -> np.ndarray:
    """Dense w_i(x) (m steps, domain) from ``heavy_rows`` (the code path the mechanisms use)."""
    rows = heavy_rows(holdings, sizes, domain_size)
    out = np.zeros((holdings.shape[0], domain_size))
    out[rows.step, rows.element] = rows.weight
    return out


def replace_one_user(rng: np.random.Generator, steps: int, atoms: int, domain: int) -> Iterator[Neighbours]:
    """(holdings, sizes) pairs: one user of an atom moves to a new atom of size 1 holding another element sequence.

    Both inputs have the extra atom (in the first it repeats the user's old holdings), so the arrays align.
    """
    holdings = rng.integers(0, domain, size=(steps, atoms))
    sizes = rng.integers(1, 6, atoms).astype(float)
    for atom in range(atoms):
        for label, new in (
            ("random elements", rng.integers(0, domain, steps)),
            ("a different element every step", (holdings[:, atom] + 1) % domain),
            ("the heaviest element every step", np.full(steps, int(np.bincount(holdings.ravel()).argmax()))),
        ):
            moved = sizes.copy()
            moved[atom] -= 1
            sizes_both = np.append(moved, 1.0)
            first = (np.column_stack([holdings, holdings[:, atom]]), sizes_both)
            second = (np.column_stack([holdings, new]), sizes_both)
            yield Neighbours(f"one user of atom {atom} switches to {label}", first, second)


@dataclass
class WeightsCase:
    """A shifting-heavy-hitters release over user weights; ``view`` maps the (m, domain) weights to (B, K)."""

    name: str
    mechanism: Any
    sensitivity: Sensitivity
    view: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    steps: int = 12
    atoms: int = 8
    domain: int = 6

    def assumed(self) -> Sensitivity:
        """The sensitivity this case's view claims."""
        return self.sensitivity

    def protected(self, data: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """The view of the weights of (holdings, sizes) this case checks."""
        holdings, sizes = data
        return self.view(holdings, sizes, weight_matrix(holdings, sizes, self.domain))

    def neighbours(self, rng: np.random.Generator) -> Iterator[Neighbours]:
        """Replace-one-user pairs (``replace_one_user``)."""
        return replace_one_user(rng, self.steps, self.atoms, self.domain)


def per_query(holdings: np.ndarray, sizes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """TME with f_x = 1{y = x}: one query per (step, element), answered by the weight."""
    return weights.reshape(-1, 1)


def per_step_histogram(holdings: np.ndarray, sizes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """One Laplace histogram per step: the weight vector of that step."""
    return weights


def per_step_maximum(holdings: np.ndarray, sizes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Sparse over q_i = max_x w_i(x) (``step_maxima``, the code path of ``SparseThenHistogram``)."""
    domain = weights.shape[1]
    return step_maxima(heavy_rows(holdings, sizes, domain), holdings.shape[0]).reshape(-1, 1)


# ---- Query release: replace one record of a size-n database ------------------------------------------------------

@dataclass
class AnswersCase:
    """Normalised answers q(D) of a workload on a database of n records (codes in [0, 2^d)); replace-one."""

    name: str
    workload: Workload
    n: int
    per_query: float
    mechanism: Any = None  # the release whose noise ``per_query`` is read from

    def assumed(self) -> Sensitivity:
        """The per-query l_inf sensitivity the mechanism's accounting assumes."""
        return Sensitivity("linf", self.per_query)

    def protected(self, data: np.ndarray) -> np.ndarray:
        """The exact workload answers on the empirical distribution of records ``data``."""
        hist = np.bincount(data, minlength=2**self.workload.d) / self.n
        return self.workload.answers(hist).reshape(-1, 1)

    def neighbours(self, rng: np.random.Generator) -> Iterator[Neighbours]:
        """Random one-record replacements, then records 0 and 2^d - 1 each replaced by its complement."""
        universe = 2**self.workload.d
        base = rng.integers(0, universe, self.n)
        for _ in range(RANDOM_PAIRS):
            other = base.copy()
            other[rng.integers(self.n)] = rng.integers(universe)
            yield Neighbours("random record replaced", base, other)
        for code in (0, universe - 1):
            first, second = base.copy(), base.copy()
            first[0], second[0] = code, universe - 1 - code  # complement: differs in every attribute
            yield Neighbours(f"record {code} replaced by its complement", first, second)


def laplace_release_per_query(mech: LaplaceRelease, k: int) -> float:
    """Per-query sensitivity LaplaceRelease's scale is calibrated for: scale x per-query epsilon (1/n)."""
    return laplace_answer_scale(mech.n, mech.epsilon, mech.delta, k) * per_step_epsilon(mech.epsilon, mech.delta, k)


def ic_per_query(mech: IterativeConstruction) -> float:
    """Per-query sensitivity of IC's Laplace answer: noise scale x eps0 (1/n)."""
    return mech.noise_scale * mech.eps0


def online_per_query(mech: OnlineIC) -> float:
    """Per-query sensitivity of online IC's NumericSparse: its sigma over the sensitivity-1 sigma (1/n)."""
    return mech.sigma / online_sigma(mech.epsilon, mech.delta, mech.cutoff) * QUERY_SENSITIVITY


def hru_cleanup_per_query(mech: PrivateEquilibriumRelease | AnalystEquilibriumRelease) -> float:
    """Per-query sensitivity of Alg. 3's (or 4's) clean-up Sparse (eps/3, delta/3, cutoff s).

    sigma over the sensitivity-1 sigma (1/n); the flagged Laplace answers are accounted at the same 1/n
    (``hru_data_epsilon``).
    """
    unit = sparse_sigma(mech.epsilon / 3, max(1, math.floor(mech.s)), mech.delta / 3)
    return mech.sparse_sigma / unit * QUERY_SENSITIVITY


def alg5_per_query(mech: AnalystPrivateMW) -> float:
    """Per-query sensitivity Algorithm 5's Thm 5.6 accounting assumes.

    Its eps_data over the eps_data of the same sigma and R on sensitivity-1 answers (n = 1), i.e. 1/n.
    """
    return mech.accounted().epsilon / alg5_data_epsilon(1, mech.delta, mech.sigma, mech.max_bad)


# ---- Registry ----------------------------------------------------------------------------------------------------

SKETCH_KW: dict[str, Any] = {"width": 4, "depth": 2, "epsilon": 1.0, "delta": 1e-3, "horizon": 256, "seed": 3}


def sketch_case(cls: type[SketchCore], **overrides: Any) -> SketchCase:
    """A small ``cls`` (d = 2, w = 4, T = 256 unless overridden) probed over full-length streams."""
    kw = SKETCH_KW | overrides
    return SketchCase(cls.__name__, cls(**kw), kw["horizon"])


for _cls in (PunctualCMS, PunctualCS, LazyCMS, LazyCS):
    register(_cls.__name__.lower())(partial(sketch_case, _cls))  # the config of the class defaults
register("LazyCS_d3_w8")(lambda: sketch_case(LazyCS, depth=3, width=8, horizon=1024))
register("PunctualCS_d3_w3")(lambda: sketch_case(PunctualCS, depth=3, width=3, horizon=64))
BEYOND = {"node_noise": "derived", "calibration": "analytic", "hash_family": "multiply_shift"}
register("LazyCS_beyond")(lambda: sketch_case(LazyCS, depth=3, width=8, horizon=1024, **BEYOND))
register("punctualcms_derived_analytic")(lambda: sketch_case(PunctualCMS, **BEYOND))
register("LazyCS_honaker")(lambda: sketch_case(LazyCS, depth=3, width=8, horizon=512, counter="honaker"))
register("PunctualCS_blt")(lambda: sketch_case(PunctualCS, depth=3, width=3, horizon=64, counter="blt"))
register("lazycms_blt_analytic")(lambda: sketch_case(LazyCMS, counter="blt", calibration="analytic"))
register("LazyCMS_blt_derived")(lambda: sketch_case(LazyCMS, depth=3, width=8, horizon=1024, counter="blt", **BEYOND))
register("LazyCS_discrete_secure")(lambda: sketch_case(LazyCS, depth=3, width=8, horizon=1024,
                                                    node_noise="discrete_secure"))
register("lazycms_discrete_secure")(lambda: sketch_case(LazyCMS, node_noise="discrete_secure"))
register("punctualcs_discrete_secure_stored")(lambda: sketch_case(PunctualCS, depth=3, width=3, horizon=64,
                                                                  node_noise="discrete_secure_stored"))
register("LazyCMS_smooth")(lambda: sketch_case(LazyCMS, counter="smooth"))
register("LazyCS_smooth_derived")(lambda: sketch_case(LazyCS, depth=3, width=8, horizon=1024, counter="smooth",
                                                      **BEYOND))
register("PunctualCMS_smooth_discrete_secure")(lambda: sketch_case(PunctualCMS, horizon=64, counter="smooth",
                                                                   node_noise="discrete_secure"))
register("LazyCMS_laplace")(lambda: sketch_case(LazyCMS, counter="laplace"))
register("PunctualCS_laplace")(lambda: sketch_case(PunctualCS, depth=3, width=3, horizon=400, counter="laplace"))
register("LazyCMS_laplace_discrete_secure_stored")(lambda: sketch_case(LazyCMS, counter="laplace",
                                                                      node_noise="discrete_secure_stored"))
register("LazyCMS_hybrid_derived")(lambda: sketch_case(LazyCMS, counter="hybrid", node_noise="derived"))
register("lazycs_honaker_discrete_secure_stored")(lambda: sketch_case(LazyCS, depth=3, width=8, horizon=512,
                                                                      counter="honaker",
                                                                      node_noise="discrete_secure_stored"))


@register("GaussBM")
def _gauss_bm() -> SensitivityCase:
    return GaussBMCase("GaussBM", GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0))


@register("GaussBM_honaker")
def _gauss_bm_honaker() -> SensitivityCase:
    return GaussBMCase("GaussBM (Honaker)", GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0,
                                                   counter="honaker"))


@register("GaussBM_blt")
def _gauss_bm_blt() -> SensitivityCase:
    return GaussBMCase("GaussBM (BLT)", GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, counter="blt"))


@register("GaussBM_blt_derived")
def _gauss_bm_blt_derived() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, counter="blt", node_noise="derived")
    return GaussBMCase("GaussBM (BLT, noise derived from a key)", bm)


FACTORISATIONS = PROBED
"""The counters probed from their descriptor (``counters.registry``): the square root, banded4 (every band count
shares its code) and the unbounded factorisation."""
for _name in FACTORISATIONS:
    register(f"GaussBM_{_name}")(partial(lambda c: GaussBMCase(f"GaussBM ({c})", GaussBM(
        n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, counter=c)), _name))
    register(f"LazyCMS_{_name}")(partial(sketch_case, LazyCMS, counter=_name))
register("LazyCMS_sqrt_derived")(lambda: sketch_case(LazyCMS, counter="sqrt", node_noise="derived"))
register("LazyCMS_unbounded_derived")(lambda: sketch_case(LazyCMS, counter="unbounded", node_noise="derived"))
register("LazyCMS_nsqrt_derived")(lambda: sketch_case(LazyCMS, counter="nsqrt", node_noise="derived"))
register("GaussBM_nsqrt_derived")(lambda: GaussBMCase("GaussBM (normalised square root, derived noise)", GaussBM(
    n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, counter="nsqrt", node_noise="derived")))
register("PunctualCS_sqrt")(lambda: sketch_case(PunctualCS, depth=3, width=3, horizon=64, counter="sqrt"))


@register("GaussBM_beyond")
def _gauss_bm_beyond() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, node_noise="derived", calibration="analytic")
    return GaussBMCase("GaussBM (derived noise, analytic calibration)", bm)


@register("GaussBM_discrete_secure")
def _gauss_bm_discrete_secure() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, node_noise="discrete_secure")
    return GaussBMCase("GaussBM (exact discrete Gaussian node noise)", bm)


def _gauss_bm_smooth(node_noise: str) -> SensitivityCase:
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, counter="smooth", node_noise=node_noise)
    return GaussBMCase(f"GaussBM (smooth binary mechanism, {node_noise} node noise)", bm)


for _noise in ("stored", "derived", "discrete_secure"):
    register("_".join(["GaussBM_smooth", *([_noise] if _noise != "stored" else [])]))(partial(_gauss_bm_smooth, _noise))


@register("GaussBM_laplace")
def _gauss_bm_laplace() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=400, epsilon=0.5, delta=1e-3, m=3, seed=0, counter="laplace")
    return GaussBMCase("GaussBM (19-ary Laplace tree, pure DP)", bm)


@register("GaussBM_hybrid_derived")
def _gauss_bm_hybrid() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, counter="hybrid", node_noise="derived")
    return GaussBMCase("GaussBM (hybrid mechanism, no horizon, derived noise)", bm)


@register("GaussBM_discrete_secure_ct")
def _gauss_bm_discrete_secure_ct() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, node_noise="discrete_secure_ct")
    return GaussBMCase("GaussBM (constant-time discrete Gaussian node noise)", bm)


@register("lazyhh")
def _lazy_hh() -> SensitivityCase:
    hh = LazyHH(k=2, k_tilde=4, epsilon=1.0, delta=1e-3, beta=1e-4, horizon=256, seed=0)
    return SketchCase("LazyHH (its LazyCMS; the tracker adds no other noise)", hh.sketch, 256, mechanism=hh)


@register("LazyHH_sqrt")
def _lazy_hh_sqrt() -> SensitivityCase:
    hh = LazyHH(k=2, k_tilde=4, epsilon=1.0, delta=1e-3, beta=1e-4, horizon=256, seed=0, counter="sqrt")
    return SketchCase("LazyHH, square-root counters (its LazyCMS)", hh.sketch, 256, mechanism=hh)


@register("LazyHH_derived")
def _lazy_hh_derived() -> SensitivityCase:
    hh = LazyHH(k=2, k_tilde=4, epsilon=1.0, delta=1e-3, beta=1e-4, horizon=256, seed=0, node_noise="derived",
                hash_family="multiply_shift", calibration="analytic")
    return SketchCase("LazyHH, derived noise (its LazyCMS)", hh.sketch, 256, mechanism=hh)


def _lazy_hh_discrete(node_noise: str, label: str) -> SensitivityCase:
    hh = LazyHH(k=2, k_tilde=4, epsilon=1.0, delta=1e-3, beta=1e-4, horizon=256, seed=0, node_noise=node_noise)
    return SketchCase(f"LazyHH, {label} (its LazyCMS)", hh.sketch, 256, mechanism=hh)


register("LazyHH_discrete_secure")(lambda: _lazy_hh_discrete("discrete_secure", "exact discrete Gaussian noise"))
register("LazyHH_smooth_discrete_secure")(lambda: SketchCase(
    "LazyHH, smooth binary mechanism, exact discrete Gaussian noise (its LazyCMS)",
    (hh := LazyHH(k=2, k_tilde=4, epsilon=1.0, delta=1e-3, beta=1e-4, horizon=256, seed=0, counter="smooth",
                  node_noise="discrete_secure")).sketch, 256, mechanism=hh))
register("LazyHH_laplace_discrete_secure_stored")(lambda: SketchCase(
    "LazyHH, 19-ary Laplace tree, exact discrete Laplace noise (its LazyCMS)",
    (hh := LazyHH(k=2, k_tilde=4, epsilon=1.0, delta=1e-3, beta=1e-4, horizon=256, seed=0, counter="laplace",
                  node_noise="discrete_secure_stored")).sketch, 256, mechanism=hh))
register("lazyhh_discrete_secure_ahead")(lambda: _lazy_hh_discrete("discrete_secure_ahead",
                                                                   "exact discrete Gaussian noise, blocks kept ahead"))


@register("GaussBM_discrete_secure_stored")
def _gauss_bm_discrete_secure_stored() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, node_noise="discrete_secure_stored")
    return GaussBMCase("GaussBM (exact discrete Gaussian node noise, stored)", bm)


@register("GaussBM_laplace_discrete_secure_stored")
def _gauss_bm_laplace_discrete_secure_stored() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=400, epsilon=0.5, delta=1e-3, m=3, seed=0, counter="laplace",
                 node_noise="discrete_secure_stored")
    return GaussBMCase("GaussBM (19-ary Laplace tree, exact discrete Laplace node noise, pure DP)", bm)


@register("GaussBM_honaker_discrete_secure_stored")
def _gauss_bm_honaker_discrete_secure_stored() -> SensitivityCase:
    bm = GaussBM(n=5, horizon=100, epsilon=0.5, delta=1e-3, m=3, seed=0, counter="honaker",
                 node_noise="discrete_secure_stored")
    return GaussBMCase("GaussBM (Honaker over exact discrete Gaussian node noise)", bm)


@register("punctual_hh")
def _punctual_hh() -> SensitivityCase:
    hh = PunctualHH(k=2, universe_size=200, epsilon=1.0, delta=1e-3, horizon=128, width=4, depth=2, seed=0)
    return SketchCase("PunctualHH (its PunctualCMS)", hh.sketch, 128, mechanism=hh)


@register("ShiftingHeavyHitters")
def _shifting() -> SensitivityCase:
    mech = ShiftingHeavyHitters(epsilon=1.0, delta=1e-6, k_star=3, m=12, domain_size=6, beta=0.05, seed=0)
    return WeightsCase("ShiftingHeavyHitters (TME queries)", mech, Sensitivity("linf", QUERY_SENSITIVITY), per_query)


@register("ThresholdMonitorEvolving")
def _tme() -> SensitivityCase:
    mech = ThresholdMonitorEvolving(epsilon=1.0, delta=1e-6, threshold=5.0, k=3, seed=0)
    return WeightsCase("ThresholdMonitorEvolving (f_x = 1{y = x})", mech, Sensitivity("linf", QUERY_SENSITIVITY),
                       per_query)


@register("HistogramEveryStep")
def _histogram() -> SensitivityCase:
    mech = HistogramEveryStep(epsilon=1.0, delta=1e-6, m=12, domain_size=6, beta=0.05, seed=0)
    l1 = mech.core.scale * advanced_per_step_epsilon(1.0, 1e-6, 12)  # the L1 sensitivity its Laplace scale covers
    return WeightsCase("HistogramEveryStep", mech, Sensitivity("l1", l1), per_step_histogram)


@register("SparseThenHistogram_sparse")
def _sparse_then_histogram_sparse() -> SensitivityCase:
    mech = SparseThenHistogram(epsilon=1.0, delta=1e-6, c=3, m=12, domain_size=6, beta=0.05, seed=0)
    return WeightsCase(
        "SparseThenHistogram (Sparse on step maxima)", mech, Sensitivity("linf", QUERY_SENSITIVITY), per_step_maximum
    )


@register("SparseThenHistogram_histogram")
def _sparse_then_histogram_hist() -> SensitivityCase:
    mech = SparseThenHistogram(epsilon=1.0, delta=1e-6, c=3, m=12, domain_size=6, beta=0.05, seed=0)
    l1 = mech.core.scale * advanced_per_step_epsilon(0.5, 0.5e-6, 3)  # histograms at <= c steps, (eps/2, delta/2)
    return WeightsCase("SparseThenHistogram (histograms)", mech, Sensitivity("l1", l1), per_step_histogram)


@register("LaplaceRelease")
def _laplace_release() -> SensitivityCase:
    workload, n = KWayMarginals(d=4, k=2), 50
    mech = LaplaceRelease(epsilon=1.0, delta=1e-6, n=n, seed=0)
    return AnswersCase("LaplaceRelease", workload, n, laplace_release_per_query(mech, workload.n_queries), mech)


@register("PMW")
def _pmw() -> SensitivityCase:
    workload, n = KWayMarginals(d=4, k=2), 50
    mech = pmw(workload=workload, epsilon=1.0, delta=1e-6, n=n, alpha=0.3, seed=0)
    return AnswersCase("PMW (Laplace answers and EM scores)", workload, n, ic_per_query(mech), mech)


@register("MWEM")
def _mwem() -> SensitivityCase:
    workload, n = KWayMarginals(d=4, k=2), 50
    mech = mwem(workload=workload, epsilon=1.0, delta=1e-6, n=n, rounds=5, seed=0)
    return AnswersCase("MWEM (Laplace answers and EM scores)", workload, n, ic_per_query(mech), mech)


@register("OnlinePMW")
def _online_pmw() -> SensitivityCase:
    workload, n = KWayMarginals(d=4, k=2), 50
    mech = online_pmw(workload=workload, epsilon=1.0, delta=1e-6, n=n, alpha=0.3, seed=0)
    return AnswersCase("OnlinePMW (NumericSparse)", workload, n, online_per_query(mech), mech)


@register("PrivateEquilibriumRelease_cleanup")
def _hru_cleanup() -> SensitivityCase:
    workload, n = KWayMarginals(d=4, k=2), 50
    mech = PrivateEquilibriumRelease(workload=workload, analysts=np.zeros(workload.n_queries, dtype=np.int64),
                                     epsilon=1.0, delta=1e-6, n=n, rounds=1, seed=0)
    return AnswersCase("PrivateEquilibriumRelease (clean-up Sparse + Laplace)", workload, n,
                       hru_cleanup_per_query(mech), mech)


@register("AnalystEquilibriumRelease_cleanup")
def _alg4_cleanup() -> SensitivityCase:
    workload, n = KWayMarginals(d=4, k=2), 50
    mech = AnalystEquilibriumRelease(workload=workload, analysts=np.arange(workload.n_queries) % 8, epsilon=1.0,
                                     delta=1e-6, n=n, rounds=2, s=3.0, seed=0)
    return AnswersCase("AnalystEquilibriumRelease (clean-up Sparse over analysts)", workload, n,
                       hru_cleanup_per_query(mech), mech)


@register("AnalystPrivateMW")
def _alg5() -> SensitivityCase:
    workload, n = KWayMarginals(d=4, k=2), 50
    mech = AnalystPrivateMW(workload=workload, epsilon=1.0, delta=1e-6, n=n, seed=0)
    return AnswersCase("AnalystPrivateMW (Lap(sigma) on bad rounds, Thm 5.6)", workload, n, alg5_per_query(mech),
                       mech)


def cases() -> dict[str, Callable[[], SensitivityCase]]:
    """Every sensitivity case: the shipped ones above and those of the descriptors.

    A descriptor's ``sensitivity`` factories (``dpstream.descriptor``) are registered under its name (``<name>_<i>``
    when it has several).
    """
    for d in descriptor.load().values():
        for i, path in enumerate(d.sensitivity, start=1):
            name = d.name if len(d.sensitivity) == 1 else f"{d.name}_{i}"
            if name not in REGISTRY:
                register(name)(resolve(path))
    return REGISTRY
