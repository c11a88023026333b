"""Compiled loops of the sparse vector family: sequential over queries (as SVT is), all noise precomputed.

Outcomes are int8: 1 = TOP, 0 = BOTTOM, -1 = not processed (halted before it).
"""

from __future__ import annotations

import numpy as np
from numba import njit

RELEASE_NONE = 0  # output TOP / BOTTOM only
RELEASE_FRESH = 1  # NumericSparse: release f_i + fresh Laplace noise for each TOP
RELEASE_SAME = 2  # NOT private (Lyu et al. Alg. 3): release f_i + the query noise used in the comparison


@njit(cache=True)
def sparse_pass(
    answers, threshold, thr_noise, query_noise, answer_noise, cutoff, redraw, release, count, out, released
):
    """One pass of (generalised) Sparse over ``answers`` for R runs at once.

    answers (m,), thr_noise (R, n_thr), query_noise (R, m), answer_noise (R, n_ans); count (R,) is the
    TOPs so far (in/out, so passes over chunks of one stream resume). cutoff <= 0: never halt.
    Query i of run r is TOP iff answers[i] + query_noise[r, i] >= threshold + thr_noise[r, j] with
    j = count[r] when ``redraw`` (threshold redrawn after each TOP), else j = 0.
    """
    n_runs, m = query_noise.shape
    for r in range(n_runs):
        for i in range(m):
            if cutoff > 0 and count[r] >= cutoff:
                out[r, i] = -1
                continue
            j = count[r] if redraw else 0
            if answers[i] + query_noise[r, i] >= threshold + thr_noise[r, j]:
                out[r, i] = 1
                if release == RELEASE_FRESH:
                    released[r, i] = answers[i] + answer_noise[r, count[r]]
                elif release == RELEASE_SAME:
                    released[r, i] = answers[i] + query_noise[r, i]
                count[r] += 1
            else:
                out[r, i] = 0


@njit(cache=True)
def monitor_pass(counts, indptr, indices, data, w, v, cap, threshold, k, out, values):
    """ThresholdMonitor (Alg. 3) / TME (Alg. 5) over atoms, R runs: counters per atom move only on TOP.

    counts (A,) records (users) per atom; query i is the CSR row indptr[i]:indptr[i+1] of f_i(x) per
    atom. Per run: f^ = sum over live atoms of f_i * counts + w_i + min(v_i, cap); TOP iff f^ >= t;
    on TOP every atom's counter grows by f_i(x) and atoms with counter >= k leave the sum for good.
    values[r, i] = f_i(S_i), the answer on the pruned database.
    """
    n_runs, m = w.shape
    n_atoms = counts.shape[0]
    state = np.empty((n_atoms, 2))  # [live records of the atom (0 once removed), counter]: one cache line per atom
    for r in range(n_runs):
        state[:, 0] = counts
        state[:, 1] = 0.0
        for i in range(m):
            value = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                value += data[p] * state[indices[p], 0]
            values[r, i] = value
            if value + w[r, i] + min(v[r, i], cap) >= threshold:
                out[r, i] = 1
                for p in range(indptr[i], indptr[i + 1]):
                    a = indices[p]
                    state[a, 1] += data[p]
                    if state[a, 1] >= k:
                        state[a, 0] = 0.0
            else:
                out[r, i] = 0


@njit(cache=True)
def monitor_pass_int(counts, indptr, indices, w, v, cap, threshold, k, out, values):
    """``monitor_pass`` on integers (``svt_noise="discrete_secure"``).

    f_i(x) in {0, 1} (the CSR pattern holds the ones); int64 counts, noise, cap (the floor of the real cap: equal
    decisions on integers), threshold, k and values.
    """
    n_runs, m = w.shape
    n_atoms = counts.shape[0]
    state = np.empty((n_atoms, 2), dtype=np.int64)  # [live records of the atom (0 once removed), counter]
    for r in range(n_runs):
        state[:, 0] = counts
        state[:, 1] = 0
        for i in range(m):
            value = np.int64(0)
            for p in range(indptr[i], indptr[i + 1]):
                value += state[indices[p], 0]
            values[r, i] = value
            if value + w[r, i] + min(v[r, i], cap) >= threshold:
                out[r, i] = 1
                for p in range(indptr[i], indptr[i + 1]):
                    a = indices[p]
                    state[a, 1] += 1
                    if state[a, 1] >= k:
                        state[a, 0] = 0
            else:
                out[r, i] = 0
