"""Known-broken SVT variants and an under-noised binary tree, as NEGATIVE CONTROLS for the privacy auditors.

None of them is private as claimed: never use them on data.

Lyu, Su and Li (2017, "Understanding the Sparse Vector Technique") Alg. 3, 4, 5, 6; Sparse with too
little noise (half of it; query noise Lap(sigma)); ThresholdMonitor without ``calibrate_monitor``. The SVT
variants are ``GeneralisedSparse`` with the variant's noise, sensitivity Delta = 1; ``claimed_epsilon``
is what was claimed, the docstring says what it really is. Each takes ``svt_noise`` as the certified
mechanisms do (``svt.discrete``): with "discrete_secure" it is the same variant over exact discrete Laplace noise at
its scales rounded up (the discrete SVT audit's controls), just as far from its claim.
"""

from __future__ import annotations

import math

from dpstream.counters.gauss_bm import GaussBM
from dpstream.noise import SeedLike
from dpstream.privacy.accounting import sparse_sigma
from dpstream.privacy.svt import CONTINUOUS, MonitorCalibration
from dpstream.svt.monitor import MonitorCore
from dpstream.svt.sparse import RELEASE_SAME, GeneralisedSparse
from dpstream.validation import check_delta, check_epsilon, check_positive_int


class BrokenSVTNoQueryNoise(GeneralisedSparse):
    """NOT PRIVATE. Lyu et al. Alg. 5 (Stoddard et al. 2014): rho = Lap(2/eps), NO query noise, no cutoff.

    Claimed eps-DP; actually infinity-DP: (BOTTOM, TOP) on answers (0, 1) is impossible on (1, 0).
    """

    def __init__(self, *, epsilon: float, threshold: float, seed: SeedLike = None,
                 svt_noise: str = CONTINUOUS) -> None:
        """Store the claimed epsilon; threshold noise Lap(2/eps), no query noise, no cutoff."""
        self.claimed_epsilon = check_epsilon(epsilon)
        super().__init__(threshold=threshold, cutoff=None, threshold_scale=2.0 / epsilon, query_scale=0.0, redraw=False,
                         seed=seed, svt_noise=svt_noise)


class BrokenSVTUnscaledQueryNoise(GeneralisedSparse):
    """NOT PRIVATE as claimed. Lyu et al. Alg. 4 (Lee and Clifton 2014): rho = Lap(4/eps), nu_i = Lap(4/(3 eps)).

    Cutoff c, threshold drawn once; query noise not scaled with c. Claimed eps-DP; actually
    ((1 + 6c)/4) eps-DP (Lyu et al. Thm 4).
    """

    def __init__(self, *, epsilon: float, threshold: float, c: int, seed: SeedLike = None,
                 svt_noise: str = CONTINUOUS) -> None:
        """Store the claimed epsilon; threshold noise Lap(4/eps), query noise Lap(4/(3 eps)), cutoff c."""
        self.claimed_epsilon = check_epsilon(epsilon)
        super().__init__(threshold=threshold, cutoff=c, threshold_scale=4.0 / epsilon,
                         query_scale=4.0 / (3.0 * epsilon), redraw=False, seed=seed, svt_noise=svt_noise)


class BrokenSVTNoCutoff(GeneralisedSparse):
    """NOT PRIVATE. Lyu et al. Alg. 6 (Chen et al. 2015): rho = Lap(2/eps), nu_i = Lap(2/eps), NO cutoff.

    Claimed eps-DP; actually infinity-DP: each extra TOP costs up to eps more.
    """

    def __init__(self, *, epsilon: float, threshold: float, seed: SeedLike = None,
                 svt_noise: str = CONTINUOUS) -> None:
        """Store the claimed epsilon; threshold and query noise Lap(2/eps), no cutoff."""
        self.claimed_epsilon = check_epsilon(epsilon)
        super().__init__(threshold=threshold, cutoff=None, threshold_scale=2.0 / epsilon, query_scale=2.0 / epsilon,
                         redraw=False, seed=seed, svt_noise=svt_noise)


class BrokenSparseHalfNoise(GeneralisedSparse):
    """NOT PRIVATE as claimed. Sparse with half its noise: T^ = t + Lap(sigma/2), nu_i = Lap(sigma), sigma = 2c/eps.

    This is Sparse at 2 eps with a claim of eps: actually (2 eps)-DP, and the pinning inputs come
    arbitrarily close to 2 eps.
    """

    def __init__(self, *, epsilon: float, threshold: float, c: int, seed: SeedLike = None,
                 svt_noise: str = CONTINUOUS) -> None:
        """Store the claimed epsilon; Sparse's sigma = 2c/eps, threshold noise Lap(sigma/2)."""
        self.claimed_epsilon = check_epsilon(epsilon)
        sigma = sparse_sigma(epsilon, c)
        super().__init__(threshold=threshold, cutoff=c, threshold_scale=sigma / 2.0, query_scale=sigma, seed=seed,
                         svt_noise=svt_noise)


class BrokenSparseQueryNoiseSigma(GeneralisedSparse):
    """NOT PRIVATE as claimed. Sparse with query noise nu_i = Lap(sigma) instead of Lap(2 sigma), sigma = 2c/eps.

    Each of the c AboveThreshold rounds pays eps/(2c) for the threshold and 2/sigma = eps/c for the
    TOP query (shifted by 2): actually (1.5 eps)-DP, approached by the pinning inputs.
    """

    def __init__(self, *, epsilon: float, threshold: float, c: int, seed: SeedLike = None,
                 svt_noise: str = CONTINUOUS) -> None:
        """Store the claimed epsilon; Sparse's sigma = 2c/eps, query noise Lap(sigma)."""
        self.claimed_epsilon = check_epsilon(epsilon)
        sigma = sparse_sigma(epsilon, c)
        super().__init__(threshold=threshold, cutoff=c, threshold_scale=sigma, query_scale=sigma, seed=seed,
                         svt_noise=svt_noise)


class LyuAlg3NumericSparseSameNoise(GeneralisedSparse):
    """NOT PRIVATE. Lyu et al. Alg. 3 (Roth 2011): NumericSparse releasing f_i + nu_i, the SAME nu_i it compared.

    rho = Lap(2/eps) drawn once, nu_i = Lap(4c/eps), cutoff c, and each TOP releases a_i = f_i + nu_i.
    Claimed eps-DP; actually infinity-DP (Lyu et al. Sec. 3): a_i >= t + rho caps the noisy threshold
    at a_i, so the threshold noise can no longer absorb a shift of the BOTTOM answers and every BOTTOM
    before a TOP pays its own query noise (up to eps/(4c) each, without bound as BOTTOMs accumulate).
    """

    def __init__(self, *, epsilon: float, threshold: float, c: int, seed: SeedLike = None,
                 svt_noise: str = CONTINUOUS) -> None:
        """Store the claimed epsilon; threshold noise Lap(2/eps), query noise Lap(4c/eps), released as compared."""
        self.claimed_epsilon = check_epsilon(epsilon)
        c = check_positive_int(c, "c")
        super().__init__(threshold=threshold, cutoff=c, threshold_scale=2.0 / epsilon, query_scale=4.0 * c / epsilon,
                         redraw=False, release=RELEASE_SAME, seed=seed, svt_noise=svt_noise)


class BrokenThresholdMonitorUncalibrated(MonitorCore):
    """NOT PRIVATE as claimed. ThresholdMonitor (Alg. 3) skipping ``calibrate_monitor``: noise (eps, delta) = the claim.

    w = Lap(10 Delta), v = Lap(b) with b = ln(1/delta)/eps and Delta = b ln b at the CLAIMED (eps, delta);
    Thm 3.2 then only gives (75 (k+1) eps / ln(1/delta) + 25 eps, 3 delta). Its true epsilon is not
    known in closed form; with k large enough that no record is pruned, m queries near the threshold
    leak like m Laplace releases at scale ~10 Delta (true eps grows like m / (10 Delta)).
    """

    def __init__(self, *, epsilon: float, delta: float, threshold: float, k: int, seed: SeedLike = None,
                 svt_noise: str = CONTINUOUS) -> None:
        """Alg. 3's noise at the claimed (eps, delta), skipping ``calibrate_monitor``; rejects an out-of-range one."""
        eps, delta = check_epsilon(epsilon), check_delta(delta)
        log_inv = math.log(1.0 / delta)
        if not (log_inv / eps >= 2.0 and eps <= log_inv):
            raise ValueError(f"Alg. 3 needs ln(1/delta)/eps >= 2 and eps <= ln(1/delta), got eps={eps}, delta={delta}")
        k = check_positive_int(k, "k")
        cal = MonitorCalibration(eps, delta, k, eps, delta, "uncalibrated", math.nan, math.nan, svt_noise=svt_noise)
        super().__init__(cal, threshold, seed, svt_noise)
        self.claimed_epsilon, self.claimed_delta = eps, delta

    private = False  # NOT private as claimed: never certified, never deployable
    privacy = None


class BrokenGaussBMDiscreteTenthSigma(GaussBM):
    """NOT PRIVATE as claimed. GaussBM with exact discrete Gaussian node noise at a TENTH of its calibrated sigma.

    The noise multiplier kappa = 0.1 (``certified`` is False, as for any kappa != 1) with a claim of the calibrated
    (eps, delta): the node noise N_Z(0, sigma^2 / 100) is rho-zCDP with 100 times the rho the claim rests on
    (``discrete_gaussian``), so its epsilon at the same delta is far above the claim: the zCDP conversion bounds it by
    17.4 for the audited tree (horizon 8, m = 1, claimed (1, 1e-3)), where the calibrated tree has 1.
    """

    def __init__(self, *, n: int, horizon: int, epsilon: float, delta: float, m: int = 1, seed: SeedLike = None,
                 counter: str = "binary", node_noise: str = "discrete_secure") -> None:
        """Store the claimed epsilon; the counters of ``GaussBM`` with node noise scaled by 0.1."""
        self.claimed_epsilon = check_epsilon(epsilon)
        self._setup(n, horizon, epsilon, delta, m, seed, counter, node_noise, "classic", kappa=0.1)
