"""Compiled kernels of the query-release family: Gamma_s projection, sampling, sparse-vector scan."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def gamma_scale(w: np.ndarray, log_w: np.ndarray, s: float, n_bins: int) -> float:
    """Scale c of Gamma_s for weights ``w`` = exp(``log_w``) with max 1: sum_a min(1, c w_a) = s (-1.0: undecided).

    Three passes: (1) total and smallest positive weight; (2) histogram of -log w in ``n_bins`` bins, from which
    F(tau) = #{w >= tau} + sum_{w < tau} w / tau (= s at tau = 1/c, decreasing in tau) is known at every bin edge,
    locating the bin that holds 1/c; (3) that bin's weights are sorted and the capped prefix solved exactly.
    """
    total = 0.0
    w_min = 1.0
    for i in range(w.size):
        total += w[i]
        if 0.0 < w[i] < w_min:
            w_min = w[i]
    c = s / total
    if c <= 1.0:  # max w = 1, so nothing is capped
        return c
    width = -np.log(w_min) / n_bins * (1.0 + 1e-12)  # bins of -log w, read from log_w (no per-entry log)
    if width <= 0.0:
        return -1.0
    count = np.zeros(n_bins, dtype=np.int64)
    mass = np.zeros(n_bins)
    for i in range(w.size):
        if w[i] > 0.0:
            b = min(int(-log_w[i] / width), n_bins - 1)
            count[b] += 1
            mass[b] += w[i]
    suffix = np.zeros(n_bins + 1)  # suffix[j] = mass of bins >= j (summed small to large: no cancellation)
    for j in range(n_bins - 1, -1, -1):
        suffix[j] = suffix[j + 1] + mass[j]
    above = 0  # elements in bins < j (all > edge_j)
    hit = -1
    for j in range(n_bins + 1):
        if above + suffix[j] / np.exp(-j * width) >= s:
            hit = j
            break
        if j < n_bins:
            above += count[j]
    if hit < 1:
        return -1.0
    b = hit - 1  # 1/c lies in bin b: (edge_hit, edge_b]
    vals = np.empty(count[b])
    k = 0
    for i in range(w.size):
        if w[i] > 0.0 and min(int(-log_w[i] / width), n_bins - 1) == b:
            vals[k] = w[i]
            k += 1
    vals = np.sort(vals)[::-1]
    capped0 = above - count[b]
    tail = np.zeros(vals.size + 1)  # tail[k] = sum of vals[k:], small to large
    for k in range(vals.size - 1, -1, -1):
        tail[k] = tail[k + 1] + vals[k]
    for k in range(vals.size + 1):
        c = (s - capped0 - k) / (suffix[hit] + tail[k])
        if (k == vals.size or c * vals[k] < 1.0) and (k == 0 or c * vals[k - 1] >= 1.0):
            return c
    return -1.0


@njit(cache=True)
def sample_index(weights: np.ndarray, u: float) -> int:
    """Index a with probability weights[a] / sum(weights), by inverse CDF at uniform ``u`` in [0, 1)."""
    target = u * weights.sum()
    acc = 0.0
    for i in range(weights.size):
        acc += weights[i]
        if acc > target:
            return i
    return weights.size - 1


@njit(cache=True)
def sparse_scan(values: np.ndarray, query_noise: np.ndarray, threshold_noise: np.ndarray, threshold: float,
                cutoff: int) -> np.ndarray:
    """Sparse (c = cutoff restarts of AboveThreshold): TOP indices of ``values`` in order.

    A query is TOP when values[i] + query_noise[i] >= threshold + threshold_noise[k], k = TOPs so far; the noisy
    threshold is redrawn (next entry of ``threshold_noise``) after each TOP; halts after ``cutoff`` TOPs.
    """
    tops = np.empty(min(cutoff, values.size), dtype=np.int64)
    k = 0
    for i in range(values.size):
        if k >= cutoff:
            break
        if values[i] + query_noise[i] >= threshold + threshold_noise[k]:
            tops[k] = i
            k += 1
    return tops[:k]


@njit(cache=True)
def first_above(values: np.ndarray, noise: np.ndarray, start: int, threshold: float) -> int:
    """First index i >= start with values[i] + noise[i] >= threshold; -1 if none."""
    for i in range(start, values.size):
        if values[i] + noise[i] >= threshold:
            return i
    return -1
