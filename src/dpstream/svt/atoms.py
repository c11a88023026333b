"""The spec's "atoms" design (experiment E1): a static database where c and k* are set independently.

Heavy atoms hold t + gamma records each; each is queried in K = k* layers (one single-atom counting
query per layer), so c = K * (number of heavy atoms) queries lie above t and every record is in
exactly k* of them. Light queries: "near" atoms of t - gamma records, "far" queries on an empty atom.
Records never appear one by one: counts per atom stand for up to ~1e11 users at no cost.

The critical margin of a run is the smallest gamma at which that run's noise answers every query
correctly (heavy TOP, light BOTTOM). A successful run follows one canonical path (the same TOPs for
every such gamma), so it is computed from the noise in one vectorised pass; the empirical alpha is
its (1 - beta) quantile over runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from dpstream.svt.queries import LinearQueries
from dpstream.validation import check_choice, check_positive_int

FAR, NEAR, HEAVY = 0, 1, 2
ORDERS = ("random", "heavy_first", "heavy_last")


@dataclass(frozen=True)
class AtomsDesign:
    """One database and query stream.

    ``kind`` (m,) is FAR / NEAR / HEAVY; ``occurrence`` (m,) is the 1-based index of a heavy query among its atom's
    heavy queries (0 for light ones).
    """

    counts: np.ndarray
    queries: LinearQueries
    kind: np.ndarray
    occurrence: np.ndarray
    threshold: float
    margin: float
    c: int
    k_star: int

    @property
    def m(self) -> int:
        """Number of queries."""
        return self.queries.m


def atoms_design(
    c: int, k_star: int, threshold: float, margin: float, n_near: int, n_far: int, order: str, rng: np.random.Generator
) -> AtomsDesign:
    """Build the design; c is rounded to a multiple of k* (``design.c`` is the value used)."""
    k_star = check_positive_int(k_star, "k_star")
    n_heavy_atoms = max(1, round(check_positive_int(c, "c") / k_star))
    check_choice(order, "order", ORDERS)
    if not 0 <= margin <= threshold:
        raise ValueError(f"margin must be in [0, threshold={threshold}], got {margin!r}")
    # atoms: heavy 0..H-1, near H..H+n_near-1, then one empty atom for the far queries
    counts = np.concatenate([np.full(n_heavy_atoms, threshold + margin), np.full(n_near, threshold - margin), [0.0]])
    heavy_atom = np.tile(np.arange(n_heavy_atoms), k_star)  # layer by layer
    atom = np.concatenate([heavy_atom, n_heavy_atoms + np.arange(n_near), np.full(n_far, counts.size - 1)])
    kind = np.concatenate([np.full(heavy_atom.size, HEAVY), np.full(n_near, NEAR), np.full(n_far, FAR)])
    if order == "random":
        perm = rng.permutation(atom.size)
    elif order == "heavy_first":
        perm = np.concatenate([np.arange(heavy_atom.size), heavy_atom.size + rng.permutation(n_near + n_far)])
    else:
        perm = np.concatenate([heavy_atom.size + rng.permutation(n_near + n_far), np.arange(heavy_atom.size)])
    atom, kind = atom[perm], kind[perm].astype(np.int8)
    occurrence = np.zeros(atom.size, dtype=np.int64)
    heavy = kind == HEAVY
    idx = np.flatnonzero(heavy)
    by_atom = idx[np.argsort(atom[idx], kind="stable")]  # queries grouped by atom, in stream order
    occurrence[by_atom] = np.tile(np.arange(1, k_star + 1), n_heavy_atoms)
    matrix = sparse.csr_matrix((np.ones(atom.size), atom, np.arange(atom.size + 1)), shape=(atom.size, counts.size))
    return AtomsDesign(
        counts, LinearQueries(matrix), kind, occurrence, float(threshold), float(margin), n_heavy_atoms * k_star, k_star
    )


def quantile_margin(critical: np.ndarray, beta: float) -> float:
    """Empirical alpha: the smallest margin at which a fraction >= 1 - beta of the runs succeed."""
    return float(np.quantile(critical, 1.0 - beta, method="higher"))


def monitor_critical_margin(design: AtomsDesign, w: np.ndarray, v: np.ndarray, cap: float, k: int) -> np.ndarray:
    """Per run (rows of w, v): the smallest gamma at which ThresholdMonitor with cap k is correct w.r.t. S_i.

    On the canonical path a heavy atom leaves after its k-th TOP, so its later heavy queries have
    value 0 on S_i and must be BOTTOM (they are misses w.r.t. S when k < k*).
    """
    noise = w + np.minimum(v, cap)
    live = (design.kind == HEAVY) & (design.occurrence <= k)
    zero = (design.kind == FAR) | ((design.kind == HEAVY) & ~live)
    need = np.full(noise.shape[0], -np.inf)
    if live.any():
        need = np.maximum(need, (-noise[:, live]).max(axis=1))
    if (design.kind == NEAR).any():
        need = np.maximum(need, noise[:, design.kind == NEAR].max(axis=1))
    if zero.any():
        need[(noise[:, zero] >= design.threshold).any(axis=1)] = np.inf
    return np.maximum(need, 0.0)


def sparse_critical_margin(design: AtomsDesign, thr: np.ndarray, query: np.ndarray, cutoff: int) -> np.ndarray:
    """Per run: the smallest gamma at which Sparse (cutoff, threshold redrawn per TOP or drawn once) is correct.

    ``thr``: (runs, cutoff) thresholds, one per TOP, or (runs, 1) for a variant that never redraws. inf if the
    cutoff is below the number of heavy queries (it must halt before reporting them all).
    """
    n_runs = query.shape[0]
    if cutoff < design.c:
        return np.full(n_runs, np.inf)
    heavy = design.kind == HEAVY
    before = np.cumsum(heavy) - heavy  # TOPs before each query on the canonical path
    processed = before < cutoff
    n_thr = thr.shape[1]  # one threshold per run (drawn once), or one per TOP (redrawn after each)
    if n_thr not in (1, cutoff):
        raise ValueError(f"thr must hold 1 threshold draw per run (no redraw) or cutoff = {cutoff} (one per TOP), "
                         f"got {n_thr}")
    theta = thr[:, np.minimum(before, n_thr - 1)]
    gap = query - theta  # noisy value minus noisy threshold, without the answer's offset from t
    need = np.full(n_runs, -np.inf)
    need = np.maximum(need, (-gap[:, heavy]).max(axis=1))
    near = (design.kind == NEAR) & processed
    if near.any():
        need = np.maximum(need, gap[:, near].max(axis=1))
    far = (design.kind == FAR) & processed
    if far.any():
        need[(gap[:, far] >= design.threshold).any(axis=1)] = np.inf
    return np.maximum(need, 0.0)
