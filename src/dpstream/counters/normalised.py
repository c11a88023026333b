"""The normalised square-root factorisation: the square root with every column of its encoder scaled to unit norm.

Henzinger, Kalinin, Upadhyay, "Normalized square root: sharper matrix factorization bounds for differentially private
continual counting" (arXiv 2509.14334, FORC 2026): an explicit factorisation of the all-ones lower triangle A with
gamma_2 <= 0.846 + ln(n)/pi + o(1) and gamma_F <= 0.748 + ln(n)/pi + o(1), against the square root's
1.066 + ln(n)/pi for both. Only the abstract could be read from the search corpora; the construction below is the
one its name describes, and its constants are checked numerically here (``tests/counters/test_normalised.py``): its
gamma_2 - ln(n)/pi is 0.880 at n = 2^8 and 0.872 at 2^11, its gamma_F - ln(n)/pi 0.792 and 0.782, falling towards
the stated limits 0.846 and 0.748 (the plain square root: 1.066 and about 0.90).

Construction. S = A^{1/2} (lower-triangular Toeplitz, s_t = binom(2t, t)/4^t, ``toeplitz.sqrt_coefficients``); its
column u (1-based) over the horizon n has norm nu_u = sqrt(sum_{t <= n - u} s_t^2). The encoder is C = S D with
D = diag(1 / nu_u), so every column of C has norm 1 and the L2 sensitivity of C x is sqrt(m) (at most m counters, each
changed by 1 at one step); the decoder is L = A C^{-1} = A D^{-1} S^{-1}: with y = S^{-1} z (the coefficients of
(1 - x)^{1/2}, q_t, ``root_rows.root_inverse_coefficients``) and z_u ~ N(0, 1), the release at step s is the
exact count plus sigma sum_{u <= s} nu_u y_u, and Var(s) = sigma^2 sum_{j <= s} L_{s j}^2 with
L_{s j} = sum_{u=j}^{s} nu_u q_{u-j} (``factorisation.NormalisedRoot``: up to ``ROW_TABLE_LIMIT`` steps the table of
every row, O(n^2) work by the row recursion L_{s j} = L_{s-1, j} + nu_s q_{s-j}; above it one FFT per step asked).
The scale nu_u depends on the horizon: unlike the square root's, L is not Toeplitz.

Node noise: derived only (``node_noise="derived"``): z_u of counter j is ``philox.node_normal`` at (u,
``toeplitz_push.DERIVED_TAG``, j), as the derived square root's; a release at step s regenerates s keyed normals and
weighs them by row s of L (``root_rows.normalised_row``, one FFT per distinct step); a counter keeps one count. The
stored Toeplitz push adds every step's w = C^{-1} z at one scale, so it cannot carry nu_u. Privacy: (epsilon, delta)-DP
under continual observation for m-neighbouring counter arrays, by the Gaussian mechanism on C x followed by the
post-processing L, COMPUTATIONALLY (Philox as a random function, ``BinaryTree(node_noise="derived")``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from dpstream.counters.factorisation import (
    Factorisation,
    NormalisedRoot,
    normalised_unit_variances,
)
from dpstream.counters.root_rows import normalised_row, root_column_norms
from dpstream.counters.toeplitz import SqrtFactorisation, encoder_images
from dpstream.counters.toeplitz_push import derived_release
from dpstream.counters.tree_noise import PHILOX_NORMALS


class NormalisedSqrt(SqrtFactorisation):
    """The normalised square root C = A^{1/2} D, L = A D^{-1} A^{-1/2}, noise derived from a key (module docstring).

    sens^2 = m (unit columns); Var(s) = sigma^2 ||row s of L||^2 (``normalised_unit_variances``).
    """

    name = "nsqrt"
    bands: ClassVar[int] = SqrtFactorisation.bands
    NOISES = {"derived": PHILOX_NORMALS}

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt(m): every column of C = S D has norm 1."""
        return math.sqrt(m)

    @classmethod
    def unit_variance(cls, horizon: int) -> np.ndarray:
        """Var(s) / sigma^2 for s = 1..horizon (``normalised_unit_variances``)."""
        return normalised_unit_variances(horizon)

    def factorisation(self) -> Factorisation:
        """C = S D with unit columns, B = A D^{-1} S^{-1} (``factorisation.NormalisedRoot``)."""
        return NormalisedRoot(self.horizon)

    def _allocate_derived(self) -> None:
        super()._allocate_derived()
        self._norms = np.ascontiguousarray(root_column_norms(self.horizon))

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """C x = S (D x): each step's increment over its column norm nu_u, then the square root."""
        return encoder_images(increments / self._norms[: increments.shape[1]], steps, self._coef)

    def derived_release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the key-derived noise of each cell at its step: row s of L per distinct step s."""
        cells = np.ascontiguousarray(cells, dtype=np.int64)
        steps = self._checked_steps(steps, cells.shape)
        out = np.empty(cells.shape[0], dtype=np.float64)
        for step in np.unique(steps):  # a sketch's cells are at one or two steps
            at = np.flatnonzero(steps == step)
            decoder = np.ascontiguousarray(normalised_row(self.horizon, int(step)))
            out[at] = derived_release(self._exact, self._key, self._noise_scale, decoder, cells[at], steps[at])
        return out
