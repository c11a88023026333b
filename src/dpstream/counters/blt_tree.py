"""The BLT counter's noise as dyadic block vectors, generated top down (the math of ``BLTCounter``'s derived noise).

The BLT counter (Dvijotham, McMahan, Pillutla, Steinke, Thakurta, "Efficient and near-optimal noise generation for
streaming differential privacy", FOCS 2024; the recurrence in ``blt_params``) adds at step s the noise
N_s = sum_{u <= s} b_{s-u} z_u, z_u i.i.d. N(0, 1), b_t = alpha - sum_j beta_j theta_hat_j^t with beta_j =
omega_hat_j / (1 - theta_hat_j) and alpha = 1 + sum_j beta_j (``blt_params._prefix_noise_coefs``: the running total of
Alg. 3's x = C^{-1} z).

Block vectors. For a block of steps (a, e], V = (sum_u z_u, sum_u theta_hat_1^{e-u} z_u, ..., theta_hat_k^{e-u} z_u):
the k + 1 geometrically weighted sums ending at e (decay r_0 = 1, r_j = theta_hat_j). The prefix (0, s] is the union of
the dyadic blocks (l, (s >> l) - 1) over the set bits l of s, block (l, i) = steps (i 2^l, (i + 1) 2^l], and
N_s = sum_blocks w(s - e)^T V(block), w(d) = (alpha, -beta_1 r_1^d, ..., -beta_k r_k^d), e the block's last step.

Orthonormal coordinates. V(block of length 2^l) = W_l z with W_l of rows (r_a^{2^l - 1 - t})_t, and W_l^T = Q_l R_l
(reduced QR, R_l of size d_l x (k + 1), d_l = min(2^l, k + 1)); y = Q_l^T z ~ N(0, I) and V = R_l^T y. A parent's
rows are (r_a^h W_L, W_R) over its halves, so W_P^T = diag(Q_L, Q_L) [R_L D; R_L], D = diag(r^h); the QR of that small
stacked matrix, [R_L D; R_L] = G R_P, gives R_P and y_P = G^T (y_L; y_R). Since (y_L; y_R) ~ N(0, I) and G has
orthonormal columns, (y_L; y_R) given y_P is EXACTLY G y_P + G_perp g with g ~ N(0, I) and G_perp completing G to an
orthogonal matrix (the complete QR). So the root's y ~ N(0, I) and one conditional split per level, each from its own
fresh normals, generate every block vector with the joint law of the z's: all releases, at all steps, have the BLT's
joint distribution, and a release needs only the O(log T) splits on the path to its step. Every matrix is orthogonal
or a QR factor: no covariance is inverted, so near-equal decays (the optimiser's surplus buffers) lose no accuracy
(a test checks the implied covariance against sum_u b_{s-u} b_{t-u} to 1e-12).

The QR is this module's own (``householder_qr``, compiled without fast-math): where decays are nearly equal the
stacked matrices are nearly rank-deficient, and the basis a QR picks for their near-null directions moves with the
last bits of its arithmetic (a 1e-15 relative change of the input moved a lazy sketch's releases by 8e-4). LAPACK's
QR takes other kernels on other CPUs, so the same key released other noise there; this one does the same operations
in the same order everywhere, and so are its inputs' logarithms and exponentials (numpy's own vectorised ones round
otherwise on CPUs with AVX-512).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from dpstream.counters.blt_params import BLTParams


@dataclass(frozen=True, eq=False)
class BLTTree:
    """Tables of the top-down generation over ``levels`` dyadic levels (blocks of 2^0..2^levels steps), K = k + 1.

    ``factors[l]`` is R_l (d_l x K, zero-padded to K x K); ``splits[l]`` G and ``complements[l]`` G_perp of the split
    of a level-l block into its two level-(l - 1) halves, (2 d_{l-1} x d_l) and (2 d_{l-1} x (2 d_{l-1} - d_l)), each
    zero-padded to (2K x K) (l >= 1; index 0 unused); ``dims[l]`` = d_l. ``weights`` = (alpha, beta_1..beta_k) and
    ``log_decay`` = (log theta_hat_j) give w(d).
    """

    factors: np.ndarray
    splits: np.ndarray
    complements: np.ndarray
    dims: np.ndarray
    weights: np.ndarray
    log_decay: np.ndarray

    @property
    def levels(self) -> int:
        """The root's level H: the tree covers steps 1..2^H - 1 (a release at step s < 2^H)."""
        return int(self.dims.shape[0] - 1)


def block_tree(params: BLTParams, levels: int) -> BLTTree:
    """The generation tables of the BLT ``params`` (C^{-1}'s decays theta_hat, scales omega_hat) over ``levels``."""
    if levels < 1:
        raise ValueError(f"levels must be >= 1, got {levels}")
    log_decay = _log_decays(params.inv_distance)
    lam = np.concatenate(([0.0], -log_decay))
    width = lam.size
    factors = np.zeros((levels + 1, width, width))
    splits = np.zeros((levels + 1, 2 * width, width))
    complements = np.zeros((levels + 1, 2 * width, width))
    dims = np.zeros(levels + 1, dtype=np.int64)
    r = np.ones((1, width))  # a single step: V = z (1, ..., 1)
    factors[0, :1], dims[0] = r, 1
    for level in range(1, levels + 1):
        half = 1 << (level - 1)
        stacked = np.vstack((r * _decayed(lam, half)[None, :], r))
        q, r_full = householder_qr(np.ascontiguousarray(stacked))
        d = min(stacked.shape[0], width)
        r = r_full[:d]
        factors[level, :d], dims[level] = r, d
        splits[level, : stacked.shape[0], :d] = q[:, :d]
        complements[level, : stacked.shape[0], : stacked.shape[0] - d] = q[:, d:]
    beta = params.inv_output_scale / params.inv_distance
    weights = np.concatenate(([1.0 + beta.sum()], beta))
    return BLTTree(factors, splits, complements, dims, weights, log_decay)


def tree_bytes(buffers: int, levels: int) -> int:
    """Bytes of ``block_tree``'s float64 tables: (levels + 1) (K^2 + 2 (2K K)) + levels + 1 + 2k + 1 words."""
    width = buffers + 1
    return 8 * ((levels + 1) * (5 * width * width + 1) + 2 * buffers + 1)


@njit(cache=True)
def householder_qr(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Complete QR of ``a`` (m, n): Q (m, m) orthogonal and R (m, n) upper triangular with Q R = a.

    Householder reflectors as LAPACK's unblocked ``dgeqr2`` makes them (``dlarfg``: beta = -sign(alpha) ||x||, so
    R's diagonal has the opposite sign of the column's leading entry), Q accumulated backwards as ``dorg2r``.
    """
    m, n = a.shape
    r = a.copy()
    k = min(m, n)
    vs = np.zeros((k, m))
    taus = np.zeros(k)
    for i in range(k):
        taus[i] = _reflector(r, i, vs[i])
        _reflect(vs[i], taus[i], i, r, i + 1)
    q = np.eye(m)
    for i in range(k - 1, -1, -1):
        _reflect(vs[i], taus[i], i, q, i)
    return q, r


@njit(cache=True)
def _reflector(r: np.ndarray, i: int, v: np.ndarray) -> float:
    """The reflector H = I - tau v v^T (v[i] = 1) zeroing column i of ``r`` below row i, applied to that column."""
    alpha = r[i, i]
    xnorm = 0.0
    for row in range(i + 1, r.shape[0]):
        xnorm = math.hypot(xnorm, r[row, i])
    if xnorm == 0.0:
        return 0.0  # H = I: nothing below the diagonal
    beta = -math.copysign(math.hypot(alpha, xnorm), alpha)
    v[i] = 1.0
    for row in range(i + 1, r.shape[0]):
        v[row] = r[row, i] / (alpha - beta)
        r[row, i] = 0.0
    r[i, i] = beta
    return (beta - alpha) / beta


@njit(cache=True)
def _reflect(v: np.ndarray, tau: float, i: int, mat: np.ndarray, first: int) -> None:
    """Columns ``first``.. of ``mat`` times H = I - tau v v^T, where v is zero above row ``i``."""
    if tau == 0.0:
        return
    for col in range(first, mat.shape[1]):
        w = 0.0
        for row in range(i, mat.shape[0]):
            w += v[row] * mat[row, col]
        for row in range(i, mat.shape[0]):
            mat[row, col] -= tau * v[row] * w


@njit(cache=True)
def _log_decays(inv_distance: np.ndarray) -> np.ndarray:
    """The logarithms log theta_hat_j = log1p(-(1 - theta_hat_j)), by the C library's log1p on every CPU."""
    out = np.empty(inv_distance.shape[0])
    for j in range(out.shape[0]):
        out[j] = math.log1p(-inv_distance[j])
    return out


@njit(cache=True)
def _decayed(lam: np.ndarray, steps: int) -> np.ndarray:
    """exp(-lam_j steps), by the C library's exp on every CPU."""
    out = np.empty(lam.shape[0])
    for j in range(out.shape[0]):
        out[j] = math.exp(-lam[j] * steps)
    return out
