"""Sensitivity probe: the exact change of the noiseless protected values between neighbours.

It is checked against the sensitivity the mechanism's calibration assumes.

A mechanism adds Gaussian or Laplace noise to some exact values (tree nodes of every sketch cell, query
answers, histogram counts). Its noise scale is calibrated for a sensitivity: the largest L2 (Gaussian) or
L1 (Laplace) change of those values between neighbouring inputs. The probe computes the exact values on
both inputs of many neighbour pairs, random and adversarial, and reports the worst change; a mechanism
passes when it never exceeds the assumption. This is the check that finds the Count Sketch erratum
(``calibration.cell_neighbour_m``): a CS calibrated with m = 2d has nodes that move by sqrt(4 h d), not
sqrt(2 h d).

A mechanism family takes part by implementing ``SensitivityCase`` (three small methods: the assumed
sensitivity, read from the mechanism's own calibrated noise scale; the noiseless protected values of an
input; and neighbour pairs, usually from the shared generators of ``sensitivity_cases``) and registering a
factory with ``register``; the shared test runs ``probe`` over every registered case.

Protected values have shape (B, K): B releases calibrated separately (one query answer of a sparse vector
run, one histogram step, ...), each of K values; the norm is taken over K and the worst over B is reported,
so an assumed *per-release* sensitivity is checked release by release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from dpstream.noise import SeedLike
from dpstream.validation import check_choice

Norm = Literal["l1", "l2", "linf"]
NORMS = ("l1", "l2", "linf")
REL_TOL = 1e-9
"""Relative slack for float round-off when the assumed value is recovered from a calibrated noise scale."""


@dataclass(frozen=True)
class Sensitivity:
    """``value``: largest ``norm`` change of one release's protected values between neighbours."""

    norm: Norm
    value: float

    def __post_init__(self) -> None:
        """Reject an unknown norm or a non-positive value."""
        check_choice(self.norm, "norm", NORMS)
        if not self.value > 0:
            raise ValueError(f"sensitivity value must be > 0, got {self.value!r}")


@dataclass(frozen=True)
class Neighbours:
    """Two neighbouring inputs and a label saying how they were made (shown when the pair is the worst)."""

    label: str
    first: Any
    second: Any


class SensitivityCase(Protocol):
    """What a private mechanism exposes to the probe."""

    name: str

    def assumed(self) -> Sensitivity:
        """The sensitivity its calibration assumes (derived from its calibrated noise scale where possible)."""
        ...

    def protected(self, data: Any) -> np.ndarray:
        """The exact (noiseless) values its noise protects on input ``data``, shape (B, K)."""
        ...

    def neighbours(self, rng: np.random.Generator) -> Iterable[Neighbours]:
        """Random and adversarial neighbour pairs of the mechanism's neighbouring relation."""
        ...


@dataclass(frozen=True)
class ProbeResult:
    """Worst observed change over all pairs, the assumption, and the pair that attained the worst."""

    name: str
    norm: Norm
    assumed: float
    worst: float
    worst_label: str
    pairs: int

    @property
    def exceeds(self) -> bool:
        """True when some neighbour pair moves the protected values by more than the calibration assumes."""
        return self.worst > self.assumed * (1.0 + REL_TOL)

    @property
    def ratio(self) -> float:
        """Worst / assumed."""
        return self.worst / self.assumed


def change(first: np.ndarray, second: np.ndarray, norm: Norm) -> float:
    """Largest ``norm`` of a row of ``second - first`` (both (B, K)): the worst single release's change."""
    if first.shape != second.shape or first.ndim != 2:
        raise ValueError(f"protected values must be two (B, K) arrays of one shape, got {first.shape}, {second.shape}")
    diff = np.abs(np.asarray(second, dtype=np.float64) - np.asarray(first, dtype=np.float64))
    if diff.size == 0:
        return 0.0
    if norm == "l1":
        per_release = diff.sum(axis=1)
    elif norm == "l2":
        per_release = np.sqrt((diff**2).sum(axis=1))
    else:
        per_release = diff.max(axis=1)
    return float(per_release.max())


def probe(case: SensitivityCase, seed: SeedLike = 0) -> ProbeResult:
    """Worst exact change of ``case.protected`` over ``case.neighbours`` against ``case.assumed()``."""
    assumed = case.assumed()
    rng = np.random.default_rng(seed)
    worst, worst_label, pairs = 0.0, "", 0
    for pair in case.neighbours(rng):
        moved = change(case.protected(pair.first), case.protected(pair.second), assumed.norm)
        pairs += 1
        if moved > worst:
            worst, worst_label = moved, pair.label
    if pairs == 0:
        raise ValueError(f"sensitivity case {case.name!r} produced no neighbour pairs")
    return ProbeResult(case.name, assumed.norm, assumed.value, worst, worst_label, pairs)


REGISTRY: dict[str, Callable[[], SensitivityCase]] = {}
"""name -> factory of a small instance of the mechanism wrapped as a case; the shared test probes them all."""


def register(name: str) -> Callable[[Callable[[], SensitivityCase]], Callable[[], SensitivityCase]]:
    """Decorator: add a case factory to ``REGISTRY`` under ``name`` (a name may be registered once)."""

    def add(factory: Callable[[], SensitivityCase]) -> Callable[[], SensitivityCase]:
        if name in REGISTRY:
            raise ValueError(f"sensitivity case {name!r} is already registered")
        REGISTRY[name] = factory
        return factory

    return add
