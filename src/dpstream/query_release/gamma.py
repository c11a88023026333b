"""The Gamma_s (Bregman) projection onto density-s measures (Hsu, Roth, Ullman, Def. 2.11)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from dpstream.query_release._kernels import cap_scaled, gamma_scale, index_order_sum

_BINS = 4096


def gamma_projection(log_weights: np.ndarray, s: float, out: np.ndarray | None = None) -> np.ndarray:
    """Gamma_s A from log A: min{1, c A(a)} with c >= 1 chosen so the result sums to s (every entry <= 1).

    Works on max-shifted log-weights, so it is invariant to scaling A (adding a constant to the log-weights).
    A compiled three-pass bucket solve (``gamma_scale``) finds c; if weights underflow so it cannot decide, an
    exact log-domain solve over the s + 1 largest entries (at most s entries can be capped) is used.
    Needs 0 < s < N (N = number of actions): s >= N has no density-s measure with full support.
    ``out`` (float64, the size of ``log_weights``) receives the result when given: no allocation per call.
    """
    return gamma_projection_sum(log_weights, s, out)[0]


def gamma_projection_sum(log_weights: np.ndarray, s: float, out: np.ndarray | None = None,
                         max_shifted: bool = False) -> tuple[np.ndarray, float]:
    """``gamma_projection`` and the sum of its entries added in index order (the total ``sample_index`` uses).

    ``max_shifted``: the caller guarantees finite log-weights whose largest entry is 0 (as the players write
    them), so the check and the shift are skipped.
    """
    log_weights = np.ascontiguousarray(log_weights, dtype=np.float64)
    size = log_weights.size
    if isinstance(s, bool) or not (0 < s < size):
        raise ValueError(f"s must satisfy 0 < s < N_Q = {size} (number of actions), got s = {s!r}")
    top = 0.0 if max_shifted else log_weights.max()
    if not (max_shifted or (np.isfinite(top) and np.isfinite(log_weights.min()))):
        raise ValueError("log_weights must be finite")
    if out is None:
        out = np.empty(size)
    elif (out.shape != (size,) or out.dtype != np.float64 or not out.flags.c_contiguous
          or np.may_share_memory(out, log_weights)):
        raise ValueError(f"out must be a contiguous float64 array of shape ({size},) apart from log_weights, "
                         f"got {out.dtype} {out.shape}")
    w = np.exp(log_weights if max_shifted else np.subtract(log_weights, top, out=out), out=out)
    c = gamma_scale(w, log_weights, float(s), _BINS, top)
    if c > 0:
        return w, cap_scaled(w, c)
    shifted = log_weights - top
    np.exp(np.minimum(0.0, shifted + _log_scale_exact(shifted, float(s))), out=w)
    return w, index_order_sum(w)


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
