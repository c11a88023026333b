"""Privacy maps: from the noise a mechanism holds to the privacy it buys; ``calibrate``, the inverse by search.

The model is OpenDP's measurement (``Measurement.map(d_in) -> d_out`` and ``check(d_in, d_out)``, OpenDP
``python/src/opendp/mod.py``). A map here fixes d_in, the sensitivity the noise covers, and holds the noise scale; it
gives ``epsilon(delta)``, the smallest epsilon of an (epsilon, delta) guarantee at ``delta`` (a point of the privacy
profile), and ``check(epsilon, delta)``: epsilon(delta) <= epsilon. Where the theorem behind a map does not apply
(Sparse's advanced composition failing its exact check, say), ``epsilon`` is ``NOT_CERTIFIED`` and the map's
``statement`` is None. A mechanism's ``privacy`` is its map's ``statement`` at the delta it holds, so the epsilon it
states is computed from its noise scale, never restated from the epsilon it was built with. A mechanism that is not
``certified`` (kappa != 1, scaled constants: ``dpstream.privacy.statement.certify``) states None whatever its map says.

Each closed-form calibration (``calibration``, ``accounting``, ``svt``, ``query_release``, ``discrete_gaussian``)
inverts one of these maps; ``calibrate`` inverts any of them by bisection in log scale, and the tests check that the
two agree.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from numbers import Real
from typing import Protocol

from dpstream.privacy.accounting import QUERY_SENSITIVITY, composed_epsilon, sparse_advanced_certified
from dpstream.privacy.calibration import CALIBRATIONS, analytic_gaussian_delta
from dpstream.privacy.discrete_gaussian import discrete_gaussian_delta
from dpstream.privacy.statement import AnalystRelation, Notion, Privacy, Relation
from dpstream.validation import check_choice

NOT_CERTIFIED = math.inf
"""The epsilon of a map whose theorem does not apply: no (epsilon, delta) statement is made."""
CLASSIC_RANGE = 1.0
"""Dwork and Roth's Thm A.1 (the classic Gaussian) is proved for epsilon below this."""
SEARCH_RTOL = 1e-13
"""Relative width at which the bisections of this module stop (the result is the end that meets the target)."""


STATED_DIGITS = 12
"""Significant digits of a stated epsilon (``stated``)."""


def stated(epsilon: float) -> float:
    """``epsilon`` as a statement gives it: to ``STATED_DIGITS`` significant digits, never below it but for rounding.

    The nearest 12-digit number when it lies at most 4 ulps below ``epsilon`` (the float error of the maps' own
    arithmetic: a map gives back the epsilon a closed form was calibrated for to about an ulp), else the next
    12-digit number above. So a classic Gaussian counter built for epsilon 1 states 1.0, not 0.9999999999999999.
    """
    if not math.isfinite(epsilon) or epsilon <= 0:
        return epsilon
    nearest = float(f"{epsilon:.{STATED_DIGITS}g}")
    if nearest >= epsilon - 4.0 * math.ulp(epsilon):
        return nearest
    unit = 10.0 ** (math.floor(math.log10(epsilon)) - STATED_DIGITS + 1)
    return float(f"{math.ceil(epsilon / unit) * unit:.{STATED_DIGITS}g}")


def _bisect(meets: Callable[[float], bool], start: float, rtol: float = SEARCH_RTOL) -> float:
    """The smallest x > 0 with meets(x), to relative ``rtol``, for meets monotone (False below, True above).

    Bisection in log x from a doubling/halving bracket around ``start``; returns the end that meets. NOT_CERTIFIED when
    no x up to 2^1000 start meets.
    """
    hi = start
    for _ in range(1000):
        if meets(hi):
            break
        hi *= 2.0
    else:
        return NOT_CERTIFIED
    lo = hi / 2.0
    for _ in range(2000):
        if not meets(lo):
            break
        hi, lo = lo, lo / 2.0
    else:
        return hi
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:
            break
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


class Checks(Protocol):
    """Anything that answers OpenDP's ``check``: does it give (epsilon, delta)-DP?"""

    def check(self, epsilon: float, delta: float) -> bool:
        """True when the held noise gives (epsilon, delta)-DP."""


def check_map_delta(delta: float) -> float:
    """``delta`` as a float if it lies in [0, 1) (a point of a privacy profile), else a one-line ``ValueError``."""
    if isinstance(delta, bool) or not isinstance(delta, Real) or not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1) (0 for pure DP), got {delta!r}")
    return float(delta)


def check_map_epsilon(epsilon: float) -> float:
    """``epsilon`` as a float if it is >= 0 and finite, else a one-line ``ValueError``."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or not 0.0 <= epsilon < math.inf:
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    return float(epsilon)


class PrivacyMap(ABC):
    """The privacy a held noise buys at a fixed sensitivity: ``epsilon(delta)``, ``check`` and ``statement``."""

    @abstractmethod
    def epsilon(self, delta: float) -> float:
        """The smallest epsilon with (epsilon, delta)-DP at this ``delta``; ``NOT_CERTIFIED`` when there is none."""

    def check(self, epsilon: float, delta: float) -> bool:
        """OpenDP's check: does the held noise give (epsilon, delta)-DP?"""
        return self.epsilon(delta) <= epsilon

    def statement(self, delta: float, relation: Relation, notion: Notion | None = None,
                  sampler_delta: float = 0.0) -> Privacy | None:
        """The ``Privacy`` at total ``delta`` under ``relation`` (epsilon ``stated``); None when not certified.

        ``sampler_delta``: the part of ``delta`` a sampler spends on its distance from the exact noise; epsilon is the
        map's at the rest, delta - sampler_delta.
        """
        epsilon = self.epsilon(delta - sampler_delta)
        if not math.isfinite(epsilon):
            return None
        return Privacy(stated(epsilon), delta, relation, notion, sampler_delta=sampler_delta)


@dataclass(frozen=True)
class GaussianMap(PrivacyMap):
    """N(0, sigma^2) noise on an L2-sensitivity ``l2_sensitivity`` query (one Gaussian mechanism, any dimension).

    ``calibration`` "classic" (Dwork and Roth, Thm A.1): epsilon(delta) = Delta_2 sqrt(2 ln(1.25/delta)) / sigma where
    that is below 1 (the theorem's range); at or above 1, the larger of it and the analytic epsilon (the analytic
    curve is exact, so the larger is always a guarantee, and it is the classic one wherever that one holds).
    "analytic" (Balle and Wang 2018, Thm 8): the smallest epsilon whose exact curve ``analytic_gaussian_delta`` is
    <= delta. Gaussian noise is never pure: at delta = 0 the epsilon is ``NOT_CERTIFIED``.
    """

    l2_sensitivity: float
    sigma: float
    calibration: str = "classic"

    def __post_init__(self) -> None:
        """Check the calibration name."""
        check_choice(self.calibration, "calibration", CALIBRATIONS)

    def delta(self, epsilon: float) -> float:
        """The privacy profile at ``epsilon``: the exact curve, or the classic one solved for delta (``epsilon``)."""
        epsilon = check_map_epsilon(epsilon)
        exact = analytic_gaussian_delta(epsilon, self.l2_sensitivity, self.sigma)
        if self.calibration == "analytic":
            return exact
        classic = 1.25 * math.exp(-0.5 * (epsilon * self.sigma / self.l2_sensitivity) ** 2)
        return classic if epsilon < CLASSIC_RANGE else max(classic, exact)

    def epsilon(self, delta: float) -> float:
        """Classic: the closed form (with the exact curve from 1 up); analytic: bisection on the exact curve."""
        if check_map_delta(delta) == 0.0:
            return NOT_CERTIFIED
        classic = self.l2_sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / self.sigma
        if self.calibration == "classic" and classic < CLASSIC_RANGE:
            return classic
        exact = _bisect(lambda eps: analytic_gaussian_delta(eps, self.l2_sensitivity, self.sigma) <= delta, classic)
        return exact if self.calibration == "analytic" else max(classic, exact)

    def check(self, epsilon: float, delta: float) -> bool:
        """Analytic: the exact curve at ``epsilon`` against ``delta`` (no search); classic: ``epsilon(delta)``."""
        if check_map_delta(delta) == 0.0:
            return False
        if self.calibration == "analytic":
            return self.delta(epsilon) <= delta
        return super().check(epsilon, delta)


@dataclass(frozen=True)
class LaplaceMap(PrivacyMap):
    """Lap(scale) noise on an L1-sensitivity ``l1_sensitivity`` query: pure epsilon = Delta_1 / scale at any delta."""

    l1_sensitivity: float
    scale: float

    def epsilon(self, delta: float) -> float:
        """Delta_1 / b (delta is not used: the Laplace mechanism is pure)."""
        check_map_delta(delta)
        return self.l1_sensitivity / self.scale


@functools.lru_cache(maxsize=256)
def _discrete_gaussian_epsilon(l2_sensitivity_sq: int, sigma2: Fraction, delta: float) -> float:
    start = math.sqrt(2.0 * l2_sensitivity_sq * math.log(1.25 / delta) / float(sigma2))
    return _bisect(lambda eps: discrete_gaussian_delta(l2_sensitivity_sq, sigma2, eps) <= delta, start)


@dataclass(frozen=True)
class DiscreteGaussianMap(PrivacyMap):
    """N_Z(0, sigma2) per coordinate on an integer query of squared L2 sensitivity K (``discrete_gaussian``).

    epsilon(delta): the smallest epsilon whose bound ``discrete_gaussian_delta`` (the smaller of the zCDP and the
    smoothing bound) is <= delta, by bisection (memoised: a bound costs about a millisecond). Never pure: at
    delta = 0 the epsilon is ``NOT_CERTIFIED``.
    """

    l2_sensitivity_sq: int
    sigma2: Fraction

    def delta(self, epsilon: float) -> float:
        """The profile bound ``discrete_gaussian_delta`` at ``epsilon``."""
        return discrete_gaussian_delta(self.l2_sensitivity_sq, Fraction(self.sigma2), check_map_epsilon(epsilon))

    def epsilon(self, delta: float) -> float:
        """Bisection on the discrete Gaussian's delta bound, decreasing in epsilon."""
        if check_map_delta(delta) == 0.0:
            return NOT_CERTIFIED
        return _discrete_gaussian_epsilon(self.l2_sensitivity_sq, Fraction(self.sigma2), delta)

    def check(self, epsilon: float, delta: float) -> bool:
        """The bound at ``epsilon`` against ``delta`` (one evaluation, no search); False at delta = 0."""
        return check_map_delta(delta) > 0.0 and self.delta(epsilon) <= delta


@dataclass(frozen=True)
class ComposedMap(PrivacyMap):
    """``k`` adaptive repetitions of a pure ``step``: min(basic, advanced composition at ``delta``) (``accounting``).

    ``composed_epsilon(step epsilon, k, delta)``: basic composition k eps0 when delta = 0, else the smaller of it and
    Dwork, Rothblum and Vadhan's sqrt(2 k ln(1/delta)) eps0 + k eps0 (e^eps0 - 1).
    """

    step: PrivacyMap
    k: int

    def epsilon(self, delta: float) -> float:
        """The composed epsilon of k steps, each at its own epsilon for delta 0."""
        check_map_delta(delta)
        return composed_epsilon(self.step.epsilon(0.0), self.k, delta)


@dataclass(frozen=True)
class SparseMap(PrivacyMap):
    """Sparse's threshold noise Lap(sigma) (queries Lap(2 sigma)) for ``c`` TOPs of ``sensitivity`` queries (SVT notes).

    The theorem Sparse's scale is calibrated by (``accounting.sparse_sigma``): pure at delta = 0 (basic composition),
    epsilon = 2 c Delta / sigma; approximate at delta > 0 (advanced composition), epsilon = sqrt(32 c ln(1/delta))
    Delta / sigma where the exact check ``sparse_advanced_certified`` holds, else ``NOT_CERTIFIED``. AboveThreshold is
    c = 1, delta = 0. A mechanism calibrated by the pure theorem states it at delta = 0 (and may state it at any
    larger delta).
    """

    sigma: float
    c: float
    sensitivity: float = QUERY_SENSITIVITY

    def epsilon(self, delta: float) -> float:
        """The epsilon Sparse's scale sigma buys by the pure (delta = 0) or the approximate (delta > 0) theorem."""
        if check_map_delta(delta) == 0.0:
            return 2.0 * self.c * self.sensitivity / self.sigma
        epsilon = math.sqrt(32.0 * self.c * math.log(1.0 / delta)) * self.sensitivity / self.sigma
        return epsilon if sparse_advanced_certified(epsilon, self.c, delta) else NOT_CERTIFIED


def group_of_two(statement: Privacy, relation: Relation) -> Privacy:
    """Group privacy for neighbours two steps apart: (2 eps, (1 + e^eps) delta) under ``relation``."""
    return replace(statement, epsilon=2.0 * statement.epsilon,
                   delta=(1.0 + math.exp(statement.epsilon)) * statement.delta, relation=relation)


def with_relation(statement: Privacy | None, relation: Relation, *, delta: float | None = None,
                  eps_analyst: float | None = None, analysts: AnalystRelation | None = None) -> Privacy | None:
    """``statement`` restated under ``relation`` (the same noise, read as a guarantee for another neighbour)."""
    if statement is None:
        return None
    changes: dict[str, object] = {"relation": relation}
    if delta is not None:
        changes["delta"] = delta
        if statement.notion == "pure" and delta > 0:  # a pure guarantee holds at every delta
            changes["notion"] = "approximate"
    if eps_analyst is not None:
        changes.update(eps_analyst=eps_analyst, analysts=analysts)
    return replace(statement, **changes)  # type: ignore[arg-type]


def calibrate(privacy_map: Callable[[float], Checks], epsilon: float, delta: float, *,
              start: float = 1.0, rtol: float = SEARCH_RTOL) -> float:
    """The smallest noise scale whose map meets (epsilon, delta): one search for every mechanism.

    ``privacy_map(scale)`` builds the map of a mechanism holding noise ``scale`` (more noise, less privacy loss:
    the check must be monotone in the scale). Bisection in log scale from a doubling/halving bracket around
    ``start`` to a relative ``rtol``; the scale returned meets the target. The closed forms are checked against it
    (tests/privacy/test_maps.py). A one-line ``ValueError`` for epsilon not > 0, delta not in [0, 1), or a target
    no scale meets (Gaussian noise at delta = 0: it is never pure).
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or not 0.0 < epsilon < math.inf:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    delta = check_map_delta(delta)
    scale = _bisect(lambda scale: privacy_map(scale).check(epsilon, delta), start, rtol)
    if not math.isfinite(scale):
        raise ValueError(f"delta must be > 0 for this noise (no scale gives ({epsilon!r}, {delta!r})-DP; Gaussian "
                         f"noise is never pure), got {delta!r}")
    return scale
