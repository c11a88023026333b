"""Every row norm of the normalised square root's decoder by blocks of steps: O(T^2 log T / B + T B) instead of O(T^2).

The decoder L = A D^{-1} S^{-1} of the normalised square root (Henzinger, Kalinin, Upadhyay, arXiv 2509.14334;
``factorisation.NormalisedRoot``) has rows k^(s)_t = L_{s, s-t} = sum_{t' <= t} q_{t'} nu_{s-t+t'}, t < s
(``root_rows``: q the coefficients of (1 - x)^{1/2}, nu_u the column norms of S = A^{1/2}), and
Var(s) / sigma^2 = ||k^(s)||^2. The row recursion (``root_rows._row_norms``) costs O(s) a step. Here the steps come
in blocks s = s0 + b, b < B. Row s0 is one FFT (``root_rows.normalised_row``), and for b >= 1

    k^(s0+b)_t = H^(b)_t                          for t < b   (the block's own columns j = s - t > s0),
    k^(s0+b)_t = k^(s0)_{t-b} + V^(b)_{t-b}       for t >= b,  V^(b)_tau = sum_{j=1}^{b} nu_{s0+j} q_{tau+j},

so ||k^(s0+b)||^2 = ||H^(b)||^2 + ||k^(s0)||^2 + 2 C_b + T_b with

- ||H^(b)||^2: the row recursion over the block's own b columns (``root_rows.add_tiles``), O(B^2) a block;
- C_b = sum_tau k^(s0)_tau V^(b)_tau = C_{b-1} + nu_{s0+b} X_b, X_b = sum_tau k^(s0)_tau q_{tau+b}: one FFT correlation;
- T_b = ||V^(b)||^2 = T_{b-1} + nu_{s0+b}^2 G(b, b) + 2 nu_{s0+b} sum_{j<b} nu_{s0+j} G(j, b) with
  G(j, b) = sum_{tau < s0} q_{tau+j} q_{tau+b} (``_tail``). Row b of G comes from row b - 1 by
  G(j, b) = G(j-1, b-1) - q_{j-1} q_{b-1} + q_{s0+j-1} q_{s0+b-1}, and G(1, b) = sum_{tau < s0} q_{tau+1} q_{tau+b},
  carried from block to block as plain sums (``_carry``, O(B^2) a block).

No piece cancels: T_b grows like ln b and its increments like 1/b. (Updating the norm of the new columns'
contribution over the whole row instead subtracts two terms of about 5 at every step, and loses 8 digits over a block
of 2^14.) Against the row recursion: largest relative difference 1.2e-12 over every row at T = 2^18 (B = 2^14), and
at most 1.1e-12 on the summary at 2^20. ||H^(b)||^2's sums are reassociated (``root_rows._add_tile``), so the last
bits depend on the CPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit
from scipy.signal import fftconvolve

from dpstream.counters.root_rows import add_tiles, normalised_row, root_column_norms, root_inverse_coefficients


def block_length(horizon: int) -> int:
    """B, the least power of two >= sqrt(T log2 T): the block's O(B^2) work against its O(T log T) FFTs."""
    return 1 << max(0, math.ceil(0.5 * math.log2(max(2, horizon) * math.log2(max(2, horizon)))))


def row_norms_by_blocks(horizon: int, block: int | None = None,
                        progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """||row s of L||^2 for s = 1..``horizon``, ``block`` steps at a time (``block_length`` by default).

    ``progress(done, horizon)`` is called after each block.
    """
    if horizon < 1:
        raise ValueError(f"horizon {horizon}; allowed: >= 1")
    block = block_length(horizon) if block is None else block
    if block < 1:
        raise ValueError(f"block {block}; allowed: >= 1")
    # q is one infinite sequence: B - 1 more of it keep every index of the carry into the last block in range
    q = np.ascontiguousarray(root_inverse_coefficients(horizon + block - 1))
    q_reversed = np.ascontiguousarray(q[:horizon][::-1])
    nu = np.ascontiguousarray(root_column_norms(horizon))
    out = np.empty(horizon)
    carried = np.zeros(block - 1)  # G(1, 1 + d) at the block's first step, d = 0..B-2 (all that _tail reads)
    _carry(q, carried, 0, 1)
    for s0 in range(1, horizon + 1, block):
        steps = min(block, horizon - s0 + 1)
        first = normalised_row.__wrapped__(horizon, s0)  # not kept in its cache
        x = np.zeros(steps + 1)
        if steps > 1:  # X_b = sum_tau k_tau q_{tau+b}, b = 1..steps-1
            x[1:steps] = fftconvolve(q[: s0 + steps - 1], first[::-1])[s0: s0 + steps - 1]
        _tail(q, nu, s0, x, carried, float(first @ first), steps, out)
        add_tiles(q_reversed, nu, s0, s0 + steps - 1, out)  # rows s0 + 1.. of the block: + ||H^(b)||^2
        if s0 + block <= horizon:
            _carry(q, carried, s0, s0 + block)
        if progress is not None:
            progress(s0 + steps - 1, horizon)
    return out


@njit(cache=True)
def _tail(q: np.ndarray, nu: np.ndarray, s0: int, x: np.ndarray, carried: np.ndarray, first: float, steps: int,
          out: np.ndarray) -> None:
    """out[s0 - 1 + b] = ||k^(s0)||^2 + 2 C_b + T_b for b < ``steps`` (module docstring): all but ||H^(b)||^2."""
    g = np.zeros(steps + 1)  # g[j] = G(j, b)
    cross_sum = 0.0  # C_b
    tail = 0.0  # T_b
    out[s0 - 1] = first
    for b in range(1, steps):
        for j in range(b, 1, -1):
            g[j] = g[j - 1] - q[j - 1] * q[b - 1] + q[s0 + j - 1] * q[s0 + b - 1]
        g[1] = carried[b - 1]
        scale = nu[s0 + b - 1]
        mixed = 0.0
        for j in range(1, b):
            mixed += nu[s0 + j - 1] * g[j]
        tail += scale * scale * g[b] + 2.0 * scale * mixed
        cross_sum += scale * x[b]
        out[s0 - 1 + b] = first + 2.0 * cross_sum + tail


@njit(cache=True)
def _carry(q: np.ndarray, carried: np.ndarray, start: int, stop: int) -> None:
    """carried[d] += sum_{tau = start}^{stop - 1} q_{tau+1} q_{tau+1+d}: G(1, 1 + d) moved from step start to stop."""
    for d in range(carried.shape[0]):
        total = 0.0
        for tau in range(start, stop):
            total += q[tau + 1] * q[tau + 1 + d]
        carried[d] += total
