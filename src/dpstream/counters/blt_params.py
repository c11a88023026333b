"""Buffered linear Toeplitz (BLT) counters: the matrix factorisation A = B C with C a BLT (the math only).

Dvijotham, McMahan, Pillutla, Steinke, Thakurta (FOCS 2024, arXiv 2404.16706) and McMahan, Pillutla et al.
(arXiv 2408.08868); the reference implementation is jax_privacy ``matrix_factorization/buffered_toeplitz.py``,
ported here to numpy (no jax) for single participation and the mean squared error.

The mechanism. A is the n x n prefix-sum matrix (lower triangular ones), n = ``horizon``. C is lower-triangular
Toeplitz with coefficients c_0 = 1, c_t = sum_j omega_j theta_j^(t-1) (t >= 1) ("buf_decay" theta, "output_scale"
omega; generating function C(x) = prod_j (1 - theta_hat_j x) / prod_j (1 - theta_j x)). Its inverse is again a
BLT, (theta_hat, omega_hat) (Lemma 5.2 of 2404.16706). The counter releases A x + sigma A C^{-1} z with
z ~ N(0, I): the Gaussian mechanism on C x followed by the post-processing B = A C^{-1}, so B C = A.

Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring inputs as in ``GaussBM``: a neighbour
changes the increments d_j of counter j with sum_j ||d_j||_1^2 <= m (at most m counters, each by at most 1 in total).
||C d_j||_2 <= ||d_j||_1 max_i ||C e_i||_2 (convexity), and column i of a lower-triangular Toeplitz C holds
c_0..c_{n-1-i}, so the first column has the largest norm whatever the signs: L2 sensitivity sqrt(m) * ||c||_2
(``column_norm``), sigma = gaussian_sigma(sqrt(m) * column_norm, epsilon, delta) (``blt_sigma``). The releases up to
step s depend on z_1..z_s only (C^{-1} is lower triangular), so the online release is post-processing of the one
Gaussian release C x + sigma z.

Noise. Row s (1-based) of A C^{-1} is (b_{s-1}, ..., b_0), b_t = sum_{u <= t} hat c_u, so the prefix sum at step s has
variance sigma^2 * sum_{t < s} b_t^2 (``noise_variance`` per unit sigma). It is generated online by Algorithm 3 of
2408.08868 with C's own parameters: x_i = z_i - sum_j omega_j buf_j, then buf_j <- theta_j buf_j + x_i; the
prefix-sum noise is the running total of x (``blt_noise_stream``, ``blt_step``): k buffers plus one total per counter.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit
from scipy.optimize import minimize

from dpstream.privacy.calibration import gaussian_sigma
from dpstream.validation import check_positive_int


@dataclass(frozen=True, eq=False)
class BLTParams:
    """A BLT strategy C and its inverse C^{-1}, all (k,), for ``horizon`` steps.

    C has ``buf_decay`` theta and ``output_scale`` omega; C^{-1} has ``inv_buf_decay`` theta_hat and
    ``inv_output_scale`` omega_hat. Build with ``blt_from_decays``.

    Also stores ``distance`` d = 1 - theta and ``inv_distance`` 1 - theta_hat exactly (theta can be 1 - 1e-7), and
    ``optimisation_seconds``, the CPU time ``optimal_blt`` took (0 if built otherwise).
    """

    buf_decay: np.ndarray
    output_scale: np.ndarray
    inv_buf_decay: np.ndarray
    inv_output_scale: np.ndarray
    distance: np.ndarray
    inv_distance: np.ndarray
    horizon: int
    optimisation_seconds: float = 0.0

    @property
    def buffers(self) -> int:
        """Number of buffers k."""
        return int(self.buf_decay.shape[0])


@njit(cache=True)
def _partial_fraction_scale(d_pole: np.ndarray, d_zero: np.ndarray) -> np.ndarray:
    """Partial-fraction scales omega_i of prod_j (1 - theta'_j x) / prod_j (1 - theta_j x).

    omega_i = prod_j (theta_i - theta'_j) / prod_{j != i} (theta_i - theta_j), so that the rational function is 1 +
    sum_i omega_i x / (1 - theta_i x) (2404.16706 Lemma 5.2; McMahan and Pillutla 2025, Thm 2). Differences theta_i -
    theta'_j = d'_j - d_i are taken on the distances to 1.
    """
    k = d_pole.shape[0]
    out = np.empty(k)
    for i in range(k):
        num, den = 1.0, 1.0
        for j in range(k):
            num *= d_zero[j] - d_pole[i]
            if j != i:
                den *= d_pole[j] - d_pole[i]
        out[i] = num / den
    return out


def _read_only(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.flags.writeable = False
    return a


def blt_from_decays(
    distance: np.ndarray, inv_distance: np.ndarray, horizon: int, optimisation_seconds: float = 0.0
) -> BLTParams:
    """The BLT pair (C, C^{-1}) with theta = 1 - ``distance`` and theta_hat = 1 - ``inv_distance``.

    As jax_privacy's ``blt_pair_from_theta_pair``. Every distance must lie in (0, 1) and the thetas of each side must be
    distinct (the partial fractions divide by their gaps).
    """
    horizon = check_positive_int(horizon, "horizon")
    d = np.asarray(distance, dtype=np.float64).ravel()
    dh = np.asarray(inv_distance, dtype=np.float64).ravel()
    if d.shape != dh.shape or d.size == 0:
        raise ValueError(f"distance and inv_distance must be non-empty and of equal length, got {d.size}, {dh.size}")
    for name, v in (("distance", d), ("inv_distance", dh)):
        if not np.all((v > 0) & (v < 1)):
            raise ValueError(f"{name} (1 - buf_decay) must lie in (0, 1), got {v.tolist()}")
        if np.unique(v).size != v.size:
            raise ValueError(f"{name} values must be distinct, got {v.tolist()}")
    order, order_h = np.argsort(d), np.argsort(dh)
    d, dh = d[order], dh[order_h]
    return BLTParams(
        buf_decay=_read_only(1.0 - d),
        output_scale=_read_only(_partial_fraction_scale(d, dh)),
        inv_buf_decay=_read_only(1.0 - dh),
        inv_output_scale=_read_only(_partial_fraction_scale(dh, d)),
        distance=_read_only(d),
        inv_distance=_read_only(dh),
        horizon=horizon,
        optimisation_seconds=optimisation_seconds,
    )


def _powers(distance: np.ndarray, t: np.ndarray) -> np.ndarray:
    """theta_j^t = exp(t log1p(-d_j)), shape (len(t), k)."""
    return np.exp(np.multiply.outer(t, np.log1p(-distance)))


def toeplitz_coefs(params: BLTParams, n: int | None = None) -> np.ndarray:
    """c_0..c_{n-1} of C: c_0 = 1, c_t = sum_j omega_j theta_j^(t-1) (jax_privacy ``toeplitz_coefs``); O(n k)."""
    n = params.horizon if n is None else check_positive_int(n, "n")
    c = np.ones(n)
    c[1:] = _powers(params.distance, np.arange(n - 1.0)) @ params.output_scale
    return c


def inverse_toeplitz_coefs(params: BLTParams, n: int | None = None) -> np.ndarray:
    """Coefficients hat c_0..hat c_{n-1} of C^{-1} (the BLT (theta_hat, omega_hat)); O(n k)."""
    n = params.horizon if n is None else check_positive_int(n, "n")
    c = np.ones(n)
    c[1:] = _powers(params.inv_distance, np.arange(n - 1.0)) @ params.inv_output_scale
    return c


def _prefix_noise_coefs(params: BLTParams, n: int) -> np.ndarray:
    """b_t = sum_{u <= t} hat c_u = 1 + sum_j omega_hat_j (1 - theta_hat_j^t) / (1 - theta_hat_j), t = 0..n-1."""
    dh = params.inv_distance
    geo = -np.expm1(np.multiply.outer(np.arange(float(n)), np.log1p(-dh))) / dh
    return 1.0 + geo @ params.inv_output_scale


def column_norm(params: BLTParams) -> float:
    """Largest column norm of C over the horizon, ||(c_0..c_{n-1})||_2: the L2 sensitivity per changed counter."""
    return float(np.sqrt(np.sum(toeplitz_coefs(params) ** 2)))


def noise_variance(params: BLTParams, steps: int | np.ndarray | None = None) -> np.ndarray:
    """Variance of the prefix-sum noise at each step s in 1..n per unit sigma.

    ||row s of A C^{-1}||^2 = sum_{t < s} b_t^2 (default: every step 1..horizon).
    """
    n = params.horizon
    var = np.cumsum(_prefix_noise_coefs(params, n) ** 2)
    if steps is None:
        return var
    s = np.asarray(steps)
    if s.size and (s.min() < 1 or s.max() > n):
        raise ValueError(f"steps must be in [1, {n}], got values in [{s.min()}, {s.max()}]")
    return var[s - 1]


def mean_noise_variance(params: BLTParams) -> float:
    """Mean over s = 1..n of ``noise_variance`` (per unit sigma): ||A C^{-1}||_F^2 / n."""
    return float(np.mean(noise_variance(params)))


def blt_sigma(params: BLTParams, epsilon: float, delta: float, m: int = 1) -> float:
    """Noise scale of the BLT counter.

    sigma = gaussian_sigma(sqrt(m) * column_norm, epsilon, delta) (module docstring: sensitivity of C x for
    m-neighbouring inputs), the classical Gaussian calibration as for ``GaussBM``.
    """
    m = check_positive_int(m, "m")
    return gaussian_sigma(math.sqrt(m) * column_norm(params), epsilon, delta)


def state_bytes(buffers: int) -> int:
    """Noise state of one BLT counter in bytes: k float64 buffers and the float64 running noise total."""
    return 8 * (check_positive_int(buffers, "buffers") + 1)


# ---- closed forms for the optimiser: O(k^2) per evaluation, independent of n -------------------------------------


@njit(cache=True)
def _geometric(lam: float, m: int) -> float:
    """sum_{t=0}^{m-1} r^t with r = exp(-lam), lam >= 0 (no cancellation: a ratio of two expm1)."""
    return math.expm1(-m * lam) / math.expm1(-lam) if lam > 0 else float(m)


@njit(cache=True)
def _weighted_geometric(lam: float, n: int) -> float:
    """S(r) = sum_{t=0}^{n-1} (n - t) r^t, r = exp(-lam) >= 0.

    (n q - r (1 - r^n)) / q^2 with q = 1 - r, and for n lam < 1e-3 (where that difference cancels) the Taylor series
    sum_k (-lam)^k / k! M_k, M_k = sum (n - t) t^k, up to k = 3 (truncation (n lam)^4 / 360 relative, < 3e-15).
    """
    nf = float(n)
    if nf * lam >= 1e-3:
        q = -math.expm1(-lam)
        return (nf * q + (1.0 - q) * math.expm1(-nf * lam)) / q**2
    m0 = nf * (nf + 1) / 2
    m1 = (nf**3 - nf) / 6
    m2 = nf**2 * (nf**2 - 1) / 12
    m3 = nf * (nf * (nf - 1) / 2) ** 2 - (nf - 1) * nf * (2 * nf - 1) * (3 * nf**2 - 3 * nf - 1) / 30
    return m0 - lam * m1 + lam**2 / 2 * m2 - lam**3 / 6 * m3


@njit(cache=True)
def _closed_form_loss(d: np.ndarray, dh: np.ndarray, n: int) -> float:
    """column_norm^2 * mean_noise_variance of the BLT with distances ``d`` (C) and ``dh`` (C^{-1}) in O(k^2).

    Sensitivity: sum_t c_t^2 = 1 + sum_ij omega_i omega_j sum_{t<n-1} (theta_i theta_j)^t (2404.16706 Lemma 5.3).
    Mean error: b_t = alpha - sum_j beta_j theta_hat_j^t with beta_j = omega_hat_j / (1 - theta_hat_j),
    alpha = 1 + sum beta, so n * mean = alpha^2 S(1) - 2 alpha sum_j beta_j S(theta_hat_j)
    + sum_ij beta_i beta_j S(theta_hat_i theta_hat_j) with S from ``_weighted_geometric``.
    """
    k = d.shape[0]
    lam = -np.log1p(-d)
    lam_h = -np.log1p(-dh)
    omega = _partial_fraction_scale(d, dh)
    beta = _partial_fraction_scale(dh, d) / dh
    alpha = 1.0 + beta.sum()
    sens2 = 1.0
    total = alpha**2 * n * (n + 1) / 2
    for i in range(k):
        total -= 2 * alpha * beta[i] * _weighted_geometric(lam_h[i], n)
        for j in range(k):
            sens2 += omega[i] * omega[j] * _geometric(lam[i] + lam[j], n - 1)
            total += beta[i] * beta[j] * _weighted_geometric(lam_h[i] + lam_h[j], n)
    return sens2 * total / n


@njit(cache=True)
def _interlaced_distances(g: np.ndarray, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Map 2k free reals to interlaced distances d_1 < hat d_1 < d_2 < ... < hat d_k in (0.01/horizon, 1).

    Log-distances at the cumulative fractions of [log(0.01/horizon), 0] given by softmax(g, 0) + 1e-4 (the floor keeps
    neighbouring distances >= 0.1% apart, so surplus buffers end as near-cancelling pole-zero pairs, not as a division
    by zero).

    Interlacing (C's pole theta_1 nearest 1) is exactly the sign pattern omega > 0, omega_hat < 0 of
    ``_partial_fraction_scale`` (count the negative factors), the well-behaved class of McMahan and Pillutla
    (2025, Thm 1) that jax_privacy keeps with barrier penalties; it also keeps the thetas distinct.
    """
    low = math.log(0.01 / horizon)
    w = np.exp(np.append(g, 0.0) - max(g.max(), 0.0))
    w = w / w.sum() + 1e-4
    d = np.exp(low * (1.0 - np.cumsum(w)[:-1] / w.sum()))
    return d[0::2].copy(), d[1::2].copy()


@njit(cache=True)
def _objective(g: np.ndarray, horizon: int) -> float:
    """Log of the closed-form loss of the interlaced BLT ``_interlaced_distances(g)``."""
    d, dh = _interlaced_distances(g, horizon)
    loss = _closed_form_loss(d, dh, horizon)
    return math.log(loss) if loss > 0 and math.isfinite(loss) else math.inf


@njit(cache=True)
def _objective_and_gradient(g: np.ndarray, horizon: int) -> tuple[float, np.ndarray]:
    """``_objective`` and its central-difference gradient (step 1e-6), in one compiled call for the optimiser."""
    grad = np.empty(g.shape[0])
    for i in range(g.shape[0]):
        up, down = g.copy(), g.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        grad[i] = (_objective(up, horizon) - _objective(down, horizon)) / 2e-6
    return _objective(g, horizon), grad


@lru_cache(maxsize=64)
def optimal_blt(horizon: int, buffers: int = 4) -> BLTParams:
    """The k-buffer BLT minimising column_norm^2 * mean_noise_variance at ``horizon``.

    Single participation, mean squared prefix-sum error: the loss of 2408.08868 Sec. 4 with the mean instead of the max.

    Parameterised, like jax_privacy's ``Parameterization.buf_decay_pair``, by theta and theta_hat, here through
    ``_interlaced_distances`` (1/(100 horizon) < 1 - theta < 1), unconstrained; BFGS on the O(k^2) closed form
    ``_closed_form_loss`` from equal log-spacing of the distances (BFGS, not L-BFGS-B: the latter's BLAS calls on
    2k-vectors cost 100x more CPU with multithreaded OpenBLAS on a busy machine). It stops at gtol 1e-8 or where
    the central-difference gradient's noise stops line searches ("precision loss"), the loss then flat to ~1e-12.
    Cached by (horizon, buffers); the time it took (CPU seconds) is in ``optimisation_seconds``.
    """
    horizon = check_positive_int(horizon, "horizon", minimum=2)
    k = check_positive_int(buffers, "buffers")
    start = time.process_time()
    res = minimize(_objective_and_gradient, np.zeros(2 * k), args=(horizon,), method="BFGS", jac=True,
                   options={"maxiter": 5000, "gtol": 1e-8})
    if not math.isfinite(res.fun):
        raise RuntimeError(f"BLT optimisation failed at horizon={horizon}, buffers={k}: {res.message}")
    d, dh = _interlaced_distances(res.x, horizon)
    return blt_from_decays(d, dh, horizon, optimisation_seconds=time.process_time() - start)


# ---- streaming noise (Algorithm 3 of 2408.08868) ------------------------------------------------------------------


def blt_noise_stream(params: BLTParams, z: np.ndarray) -> np.ndarray:
    """Prefix-sum noise A C^{-1} z of one counter for i.i.d. ``z`` (n,), n <= horizon.

    By the O(k) buffer recurrence (Alg. 3 of 2408.08868, via ``blt_step``).
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 1 or z.size > params.horizon:
        raise ValueError(f"z must be 1-D with at most horizon={params.horizon} entries, got shape {z.shape}")
    return _stream(np.zeros(params.buffers + 1), params.buf_decay, params.output_scale, z)


@njit(cache=True)
def _stream(state: np.ndarray, theta: np.ndarray, omega: np.ndarray, z: np.ndarray) -> np.ndarray:
    out = np.empty(z.shape[0])
    for i in range(z.shape[0]):
        blt_step(state, theta, omega, z[i])
        out[i] = state[-1]
    return out


@njit(cache=True, inline="always")
def blt_step(state: np.ndarray, theta: np.ndarray, omega: np.ndarray, z: float) -> float:
    """One step of Alg. 3 (2408.08868) for C^{-1}: x = z - sum_j omega_j buf_j, buf_j <- theta_j buf_j + x.

    ``state`` (k + 1,): the k buffers, then the running total of x (the prefix-sum noise, updated here).
    Returns x, the noise increment of this step (scale z by sigma, or scale the result: it is linear).
    """
    k = theta.shape[0]
    x = z
    for j in range(k):
        x -= omega[j] * state[j]
    for j in range(k):
        state[j] = theta[j] * state[j] + x
    state[k] += x
    return x
