"""What ``check_mechanism`` needs to know about a mechanism, and the one registry of them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

NoiseKind = Literal["laplace", "gaussian", "discrete_laplace"]


@dataclass(frozen=True)
class NoiseDraws:
    """Noise a mechanism drew, to compare against its formula: ``samples`` should be i.i.d. ``kind``(0, ``scale``).

    ``scale`` (Laplace b, Gaussian sigma, or the discrete Laplace's b: P(y) proportional to exp(-|y| / b) on the
    integers) must come from the calibration code evaluated at the configuration, never
    from the mechanism's own attribute: the check compares what was drawn with what the formula says.
    ``formula`` names it in messages (e.g. "threshold noise Lap(sigma), sigma = sparse_sigma(eps, c, delta)").
    """

    formula: str
    samples: np.ndarray
    scale: float
    kind: NoiseKind


@dataclass(frozen=True)
class AuditCase:
    """A short ``search_audit``: ``sampler(data, n, seed)`` returns n outputs of the mechanism on ``data``.

    ``data_1`` and ``data_2`` are neighbours under the mechanism's relation; ``claimed_epsilon`` / ``delta`` its
    statement for them. The check fails when the certified lower bound exceeds the claim.
    """

    sampler: Callable[[Any, int, np.random.SeedSequence], np.ndarray]
    data_1: Any
    data_2: Any
    claimed_epsilon: float
    delta: float = 0.0
    n_runs: int = 4000


@dataclass(frozen=True)
class MechanismSpec:
    """One mechanism as ``check_mechanism`` sees it.

    - ``factory(**config(), seed=s)`` builds it (a class with keyword-only arguments, or a function);
    - ``output(mechanism)`` runs it on a small fixed input and returns its outputs as one numeric array;
    - ``privacy``: "configured" (its ``privacy``, the map of its noise, meets the configured epsilon and delta within a
      relative ``check.STATED_RTOL``; ``expected_delta``
      maps the configuration to another stated delta where the mechanism states a derived one), "accounted"
      (``accounted(mechanism)`` gives the (epsilon, delta, eps_analyst) its outputs record) or None (NOT private:
      ``privacy`` must be None);
    - ``noise(mechanism, config)``: draws against their formulas; ``noise_tests``: where else the noise is tested
      (``tests/<file>.py::<test>``), for mechanisms whose noise is not reachable from outside;
    - ``sensitivity``: factories of ``dpstream.audit.sensitivity`` cases probing this mechanism;
    - ``audit``: a short search audit, or None.
    """

    name: str
    factory: Callable[..., Any]
    config: Callable[[], dict[str, Any]]
    output: Callable[[Any], np.ndarray]
    privacy: Literal["configured", "accounted"] | None = "configured"
    expected_delta: Callable[[dict[str, Any]], float] | None = None
    accounted: Callable[[Any], tuple[float, float, float | None]] | None = None
    noise: Callable[[Any, dict[str, Any]], Sequence[NoiseDraws]] | None = None
    noise_tests: tuple[str, ...] = ()
    sensitivity: tuple[Callable[[], Any], ...] = ()
    audit: AuditCase | None = None
    notes: dict[str, str] = field(default_factory=dict)
    """Why a check does not apply (key: the check's name), shown in the report."""

    def build(self, seed: int = 0, **overrides: Any) -> Any:
        """The mechanism at its configuration (with ``overrides``) and ``seed``."""
        return self.factory(**{**self.config(), **overrides}, seed=seed)


MECHANISMS: dict[str, MechanismSpec] = {}
"""Every registered mechanism by name: the shipped ones (``dpstream.testing.shipped``), the ``check`` of every
descriptor (``dpstream.descriptor``) and yours; ``dpstream.testing.registered()`` loads them all."""


def register(spec: MechanismSpec) -> MechanismSpec:
    """Add ``spec`` to ``MECHANISMS`` (a name is registered once) and return it."""
    if spec.name in MECHANISMS and MECHANISMS[spec.name] is not spec:
        raise ValueError(f"mechanism {spec.name!r} is already registered")
    MECHANISMS[spec.name] = spec
    return spec
