"""Known-broken SVT variants from Lyu, Su and Li (2017, "Understanding the Sparse Vector Technique"), as
NEGATIVE CONTROLS for the privacy tester. None of them is private as claimed: never use them on data.

Each is ``GeneralisedSparse`` with the variant's noise; sensitivity Delta = 1; ``claimed_epsilon`` is
what its paper claimed, the docstring says what it really is.
"""

from __future__ import annotations

from dpstream.noise import SeedLike
from dpstream.svt.sparse import GeneralisedSparse
from dpstream.validation import check_epsilon


class BrokenSVTNoQueryNoise(GeneralisedSparse):
    """NOT PRIVATE. Lyu et al. Alg. 5 (Stoddard et al. 2014): rho = Lap(2/eps), NO query noise, no cutoff.

    Claimed eps-DP; actually infinity-DP: (BOTTOM, TOP) on answers (0, 1) is impossible on (1, 0).
    """

    def __init__(self, epsilon: float, threshold: float, seed: SeedLike = None) -> None:
        self.claimed_epsilon = check_epsilon(epsilon)
        super().__init__(threshold, None, 2.0 / epsilon, 0.0, redraw=False, seed=seed)


class BrokenSVTUnscaledQueryNoise(GeneralisedSparse):
    """NOT PRIVATE as claimed. Lyu et al. Alg. 4 (Lee and Clifton 2014): rho = Lap(4/eps), nu_i = Lap(4/(3 eps)).

    Cutoff c, threshold drawn once; query noise not scaled with c. Claimed eps-DP; actually
    ((1 + 6c)/4) eps-DP (Lyu et al. Thm 4).
    """

    def __init__(self, epsilon: float, threshold: float, c: int, seed: SeedLike = None) -> None:
        self.claimed_epsilon = check_epsilon(epsilon)
        super().__init__(threshold, c, 4.0 / epsilon, 4.0 / (3.0 * epsilon), redraw=False, seed=seed)


class BrokenSVTNoCutoff(GeneralisedSparse):
    """NOT PRIVATE. Lyu et al. Alg. 6 (Chen et al. 2015): rho = Lap(2/eps), nu_i = Lap(2/eps), NO cutoff.

    Claimed eps-DP; actually infinity-DP: each extra TOP costs up to eps more.
    """

    def __init__(self, epsilon: float, threshold: float, seed: SeedLike = None) -> None:
        self.claimed_epsilon = check_epsilon(epsilon)
        super().__init__(threshold, None, 2.0 / epsilon, 2.0 / epsilon, redraw=False, seed=seed)
