"""The Gamma_s (Bregman) projection onto density-s measures (Hsu, Roth, Ullman, Def. 2.11)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from dpstream.query_release._kernels import gamma_scale

_BINS = 4096


def gamma_projection(log_weights: np.ndarray, s: float) -> np.ndarray:
    """Gamma_s A from log A: min{1, c A(a)} with c >= 1 chosen so the result sums to s (every entry <= 1).

    Works on max-shifted log-weights, so it is invariant to scaling A (adding a constant to the log-weights).
    A compiled three-pass bucket solve (``gamma_scale``) finds c; if weights underflow so it cannot decide, an
    exact log-domain solve over the s + 1 largest entries (at most s entries can be capped) is used.
    Needs 0 < s < N (N = number of actions): s >= N has no density-s measure with full support.
    """
    log_weights = np.ascontiguousarray(log_weights, dtype=np.float64)
    size = log_weights.size
    if isinstance(s, bool) or not (0 < s < size):
        raise ValueError(f"s must satisfy 0 < s < N_Q = {size} (number of actions), got s = {s!r}")
    if not np.isfinite(log_weights.sum()):
        raise ValueError("log_weights must be finite")
    shifted = np.subtract(log_weights, log_weights.max())
    w = np.exp(shifted)
    c = gamma_scale(w, shifted, float(s), _BINS)
    if c > 0:
        w *= c
        return np.minimum(w, 1.0, out=w)
    return np.exp(np.minimum(0.0, shifted + _log_scale_exact(shifted, float(s))))


def _log_scale_exact(lw: np.ndarray, s: float) -> float:
    """Log c of Gamma_s by sorting the s + 1 largest log-weights; the rest enter through one log-sum-exp."""
    top_n = min(lw.size, int(np.floor(s)) + 1)
    top_idx = np.argpartition(lw, lw.size - top_n)[lw.size - top_n:]
    top = np.sort(lw[top_idx])[::-1]
    rest_mask = np.ones(lw.size, dtype=bool)
    rest_mask[top_idx] = False
    rest = logsumexp(lw[rest_mask]) if rest_mask.any() else -np.inf
    # tail[k] = log sum_{i >= k} exp(sorted lw_i), over the top entries and the rest
    tail = np.logaddexp(np.concatenate([np.logaddexp.accumulate(top[::-1])[::-1], [-np.inf]]), rest)
    k = np.arange(top_n)
    with np.errstate(divide="ignore"):
        log_c = np.log(np.maximum(s - k, 0.0)) - tail[:-1]
    prev = np.concatenate([[np.inf], top[:-1]])
    ok = (top + log_c < 0.0) & (prev + log_c >= 0.0)
    return float(log_c[np.argmax(ok)])
