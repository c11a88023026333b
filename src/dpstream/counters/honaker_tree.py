"""Honaker's online estimator for the binary tree (Honaker 2015, Sec. 3).

The paper is "Efficient use of differentially private binary trees". Every closed node is re-estimated from its own
noisy value and its children's estimates.

Tree and noise. The counter's steps 1..T are the leaves of a dyadic tree of h = ceil(log2(T + 1)) levels; the node
of level l ending at step s (2^l divides s) holds the exact sum of steps s - 2^l + 1..s. EVERY node gets its own
noisy value y = sum + N(0, sigma^2) when it closes: at step s the nodes of levels 0..ctz(s) close, so ctz(s) + 1
fresh draws (2 per step on average; ``GaussBM`` draws 1 because it never releases the lower ones).

Estimate (inverse-variance weighting, bottom up). A leaf's estimate is its noisy value, v_0 = sigma^2. A level-l
node's estimate is e = w_l y + (1 - w_l) (e_left + e_right): the children's estimates are independent of y and of
each other (disjoint subtrees) and unbiased, so the best weights are the inverse variances,
v_l = 1 / (1/sigma^2 + 1/(2 v_{l-1})) = sigma^2 2^l / (2^(l+1) - 1) and
w_l = v_l / sigma^2 (``honaker_level_variances``).
The release at step s is the sum of the estimates of the nodes at the set bits of s (as the binary mechanism sums
their noisy values), each fixed when its node closed: variance sum_{l in bits(s)} v_l (``honaker_variance``) instead
of popcount(s) sigma^2; v_l decreases from sigma^2 to sigma^2 / 2.

Privacy (why there is no privacy cost). The noisy values of all nodes of the h-level tree are the Gaussian
mechanism on the vector of all node sums: under m-neighbouring inputs (at most m counters change, each by at most
1 at one step, as for ``GaussBM``) one changed step lies in exactly one node per level, so the L2 sensitivity is
sqrt(h m) and sigma = ``calibration.gauss_bm_sigma(horizon, epsilon, delta, m)``, the binary mechanism's own
(epsilon, delta) calibration. Each node value is computed once, when its node closes, so the values revealed by step
s are a prefix of that one Gaussian release. The release at step s is a fixed linear map (weights depending only on
levels, never on the data) of the noisy values of nodes closed by s: post-processing of that (epsilon, delta)-DP
release under continual observation, at no extra privacy cost.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.counters._bm_kernels import popcount
from dpstream.validation import check_positive_int


def honaker_level_variances(levels: int) -> np.ndarray:
    """v_0..v_{levels-1} per unit sigma^2: v_0 = 1, v_l = 1 / (1 + 1 / (2 v_{l-1})) (= 2^l / (2^(l+1) - 1))."""
    levels = check_positive_int(levels, "levels")
    v = np.ones(levels)
    for level in range(1, levels):
        v[level] = 1.0 / (1.0 + 1.0 / (2.0 * v[level - 1]))
    return v


def honaker_variance(steps: int | np.ndarray, levels: int) -> np.ndarray:
    """Variance of the release at each step s per unit sigma^2: the sum of v_l over the set bits l of s."""
    v = honaker_level_variances(levels)
    s = np.asarray(steps, dtype=np.int64)
    if s.size and (s.min() < 0 or s.max() >= 1 << levels):
        raise ValueError(f"steps must be in [0, 2^levels = {1 << levels}), got values in [{s.min()}, {s.max()}]")
    bits = (s[..., None] >> np.arange(levels)) & 1
    return bits @ v


def honaker_draws(steps: np.ndarray) -> int:
    """Number of node noises the updates that bring counters to ``steps`` (each >= 1) consume: sum of ctz(s) + 1."""
    s = np.asarray(steps, dtype=np.int64)
    if s.size and s.min() < 1:
        raise ValueError(f"steps must be >= 1, got {s.min()}")
    return int(np.sum(popcount((s ^ (s - 1)) >> 1) + 1))


def honaker_stream(increments: np.ndarray, z_per_node: np.ndarray) -> np.ndarray:
    """Reference (numpy, from scratch) released prefix sums at steps 1..n of one counter.

    ``increments`` (n,); ``z_per_node`` (levels, n): z_per_node[l, s - 1] is the noise of the level-l node ending at
    step s (read only where 2^l divides s), at the caller's sigma. Builds each level's nodes, estimates them bottom
    up, and sums the estimates over the set bits of each step.
    """
    x = np.asarray(increments)
    z = np.asarray(z_per_node, dtype=np.float64)
    n = x.shape[0]
    if x.ndim != 1 or z.ndim != 2 or z.shape[1] != n or z.shape[0] < max(1, n.bit_length()):
        raise ValueError(f"need increments (n,) and z_per_node (levels >= {n.bit_length()}, n); got {x.shape}, "
                         f"{z.shape}")
    w = honaker_level_variances(z.shape[0])  # w_l = v_l / sigma^2
    cum = np.concatenate([[0], np.cumsum(x)])
    s = np.arange(1, n + 1)
    released = np.zeros(n)
    est = np.zeros(0)
    for level in range(n.bit_length()):
        size = 1 << level
        ends = np.arange(1, (n >> level) + 1) * size
        noisy = (cum[ends] - cum[ends - size]) + z[level, ends - 1]
        est = noisy if level == 0 else w[level] * noisy + (1 - w[level]) * (est[0:-1:2] + est[1::2])
        on = (s >> level) & 1 == 1
        released[on] += est[(s[on] >> level) - 1]
    return released


@njit(cache=True, inline="always")
def honaker_push(
    exact: np.ndarray,
    noisy_sums: np.ndarray,
    est: np.ndarray,
    j: np.int64,
    level: np.int64,
    c: np.int64,
    noise: np.ndarray,
    z: np.int64,
) -> None:
    """Counter ``j`` gets ``c`` at a step s with ctz(s) = ``level``.

    ``noise[z + l]`` is the noise of its closing level-l node, l = 0..level (all at the binary mechanism's sigma). (An
    offset, not a slice: a slice in the per-push loop allocates an array view and slowed every compiled sketch loop that
    inlines this 10x.)

    As ``_bm_kernels.push`` for ``exact`` and ``noisy_sums`` (levels, n): the level-l node's exact sum is
    c + sum_{l' < l} exact[l'] (the left siblings, cleared). ``est[l, j]`` is the estimate of counter j's last closed
    level-l node; before it is overwritten it is the left child of the level-(l+1) node closing now, whose right
    child is the level-l node just estimated. ``noisy_sums[l, j]`` holds the sum of the estimates at the set bits
    >= l, so row 0 is the release.
    """
    acc = c
    right = 0.0
    left = 0.0
    v = 1.0
    for l in range(level + 1):
        if l > 0:
            acc += exact[l - 1, j]
            exact[l - 1, j] = 0
            v = 2.0 * v / (2.0 * v + 1.0)
        noisy = acc + noise[z + l]
        e = noisy if l == 0 else v * noisy + (1.0 - v) * (left + right)
        left = est[l, j]
        est[l, j] = e
        right = e
    exact[level, j] = acc
    released = noisy_sums[level, j] + right
    for l in range(level + 1):
        noisy_sums[l, j] = released
