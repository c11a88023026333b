"""Compiled kernels of the query-release family: Gamma_s projection, sampling, game updates, sparse-vector scan."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def gamma_scale(w: np.ndarray, log_w: np.ndarray, s: float, n_bins: int, shift: float) -> float:
    """Scale c of Gamma_s for weights ``w`` = exp(``log_w`` - ``shift``) with max 1: sum_a min(1, c w_a) = s.

    Returns -1.0 when undecided. Three passes: (1) total and smallest positive weight; (2) histogram of -log w in
    ``n_bins`` bins, from which F(tau) = #{w >= tau} + sum_{w < tau} w / tau (= s at tau = 1/c, decreasing in tau)
    is known at every bin edge, locating the bin that holds 1/c; (3) that bin's weights are sorted and the capped
    prefix solved exactly.
    """
    total, w_min = _total_and_min(w)
    c = s / total
    if c <= 1.0:  # max w = 1, so nothing is capped
        return c
    width = -np.log(w_min) / n_bins * (1.0 + 1e-12)  # bins of -log w, read from log_w (no per-entry log)
    if width <= 0.0:
        return -1.0
    count, mass = _log_histogram(w, log_w, shift, width, n_bins)
    suffix = _suffix_sums(mass)
    hit, above = _locate_bin(count, suffix, width, s)
    if hit < 1:
        return -1.0
    b = hit - 1  # 1/c lies in bin b: (edge_hit, edge_b]
    vals = _bin_values(w, log_w, shift, width, n_bins, b, count[b])
    return _solve_capped(vals, suffix[hit], above - count[b], s)


@njit(cache=True)
def _total_and_min(w: np.ndarray) -> tuple[float, float]:
    """Pass 1 of ``gamma_scale``: sum of ``w`` (added in index order) and its smallest positive entry (1.0 if none).

    The minimum runs in 8 independent lanes, so it does not wait on the sum.
    """
    total = 0.0
    lanes = np.ones(8)
    n8 = w.size - w.size % 8
    for i in range(0, n8, 8):
        for j in range(8):
            v = w[i + j]
            total += v
            lanes[j] = min(lanes[j], v) if v > 0.0 else lanes[j]
    w_min = lanes.min()
    for i in range(n8, w.size):
        total += w[i]
        if 0.0 < w[i] < w_min:
            w_min = w[i]
    return total, w_min


@njit(cache=True)
def _log_histogram(w: np.ndarray, log_w: np.ndarray, shift: float, width: float,
                   n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Pass 2 of ``gamma_scale``: count and mass of the positive weights in ``n_bins`` bins of -log w."""
    count = np.zeros(n_bins, dtype=np.int64)
    mass = np.zeros(n_bins)
    for i in range(w.size):
        if w[i] > 0.0:
            b = min(int(-(log_w[i] - shift) / width), n_bins - 1)
            count[b] += 1
            mass[b] += w[i]
    return count, mass


@njit(cache=True)
def _suffix_sums(mass: np.ndarray) -> np.ndarray:
    """suffix[j] = mass of bins >= j (summed small to large: no cancellation), suffix[n_bins] = 0."""
    suffix = np.zeros(mass.size + 1)
    for j in range(mass.size - 1, -1, -1):
        suffix[j] = suffix[j + 1] + mass[j]
    return suffix


@njit(cache=True)
def _locate_bin(count: np.ndarray, suffix: np.ndarray, width: float, s: float) -> tuple[int, int]:
    """First bin edge j with F(edge_j) >= s, and the number of elements in bins < j (all > edge_j); -1 if none."""
    n_bins = count.size
    above = 0
    for j in range(n_bins + 1):
        if above + suffix[j] / np.exp(-j * width) >= s:
            return j, above
        if j < n_bins:
            above += count[j]
    return -1, above


@njit(cache=True)
def _bin_values(w: np.ndarray, log_w: np.ndarray, shift: float, width: float, n_bins: int, b: int,
                size: int) -> np.ndarray:
    """Pass 3 of ``gamma_scale``: the ``size`` positive weights of bin ``b``, largest first.

    A comparison against bin b's edges widened by half a bin skips the division for entries far from the bin.
    """
    vals = np.empty(size)
    low = (b - 0.5) * width
    high = (b + 1.5) * width if b < n_bins - 1 else np.inf
    k = 0
    for i in range(w.size):
        v = -(log_w[i] - shift)
        if low <= v < high and w[i] > 0.0 and min(int(v / width), n_bins - 1) == b:
            vals[k] = w[i]
            k += 1
    return np.sort(vals)[::-1]


@njit(cache=True)
def _solve_capped(vals: np.ndarray, suffix_hit: float, capped0: int, s: float) -> float:
    """Scale c with capped0 + k weights capped at 1 (k a prefix of ``vals``) and the rest c w; -1.0 if none fits."""
    tail = np.zeros(vals.size + 1)  # tail[k] = sum of vals[k:], small to large
    for k in range(vals.size - 1, -1, -1):
        tail[k] = tail[k + 1] + vals[k]
    for k in range(vals.size + 1):
        c = (s - capped0 - k) / (suffix_hit + tail[k])
        if (k == vals.size or c * vals[k] < 1.0) and (k == 0 or c * vals[k - 1] >= 1.0):
            return c
    return -1.0


@njit(cache=True)
def cap_scaled(w: np.ndarray, c: float) -> float:
    """Set w to min(1, c w) in place, in one pass; returns the sum of the result, added in index order."""
    total = 0.0
    for i in range(w.size):
        w[i] = min(w[i] * c, 1.0)
        total += w[i]
    return total


@njit(cache=True)
def index_order_sum(x: np.ndarray) -> float:
    """Sum of ``x`` added in index order (the total ``sample_index`` draws against)."""
    total = 0.0
    for i in range(x.size):
        total += x[i]
    return total


@njit(cache=True)
def sample_index(weights: np.ndarray, u: float) -> int:
    """Index a with probability weights[a] / sum(weights), by inverse CDF at uniform ``u`` in [0, 1)."""
    return sample_below(weights, u * index_order_sum(weights))


@njit(cache=True)
def sample_below(weights: np.ndarray, target: float) -> int:
    """First index whose running sum of ``weights`` (added in index order) exceeds ``target``; the last if none."""
    acc = 0.0
    for i in range(weights.size):
        acc += weights[i]
        if acc > target:
            return i
    return weights.size - 1


@njit(cache=True)
def query_log_weights(true: np.ndarray, cum: np.ndarray, t: int, half_eta: float, out: np.ndarray) -> None:
    """Max-shifted log-weights of the actions q, then not-q: out[:k] = v - m, out[k:] = -v - m.

    v = (t q(D) - sum_{j<t} q(x_j)) eta/2 and m = max |v| (the largest log-weight, so the largest entry is 0).
    """
    k = true.size
    top = 0.0
    for i in range(k):
        top = max(top, abs((t * true[i] - cum[i]) * half_eta))
    for i in range(k):
        v = (t * true[i] - cum[i]) * half_eta
        out[i] = v - top
        out[k + i] = -v - top


@njit(cache=True)
def satisfied_conjunctions(x: int, d: int) -> np.ndarray:
    """Indices of the 2^d conjunctions (ternary digits, most significant first) that record ``x`` satisfies.

    Digit i is x's bit i or 2 ("any"): the conjunction's index grows by one digit per attribute.
    """
    idx = np.zeros(1 << d, dtype=np.int64)
    size = 1
    for i in range(d):
        bit = (x >> (d - 1 - i)) & 1
        for j in range(size):
            base = idx[j] * 3
            idx[j] = base + bit
            idx[size + j] = base + 2
        size *= 2
    return idx


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
