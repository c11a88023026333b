"""Composition over privacy statements: a mechanism built from parts states the composition of its parts.

Basic composition adds epsilons and deltas; advanced composition (Dwork, Rothblum and Vadhan, "Boosting and
differential privacy", Thm III.3) of k identical (eps0, delta0) steps gives
(min(k eps0, sqrt(2 k ln(1/delta^)) eps0 + k eps0 (e^eps0 - 1)), k delta0 + delta^) (``accounting.composed_epsilon``).
Composing statements about different neighbouring relations is an error: they do not add up to a statement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dpstream.privacy.accounting import composed_epsilon
from dpstream.privacy.statement import Notion, Privacy


def _common(parts: Sequence[Privacy]) -> Privacy:
    if not parts:
        raise ValueError("compose needs at least one privacy statement, got none")
    relations = sorted({p.relation.name for p in parts})
    if len(relations) > 1:
        raise ValueError(f"cannot compose statements about different neighbouring relations: {', '.join(relations)}")
    analysts = {p.analysts for p in parts if p.analysts is not None}
    if len(analysts) > 1:
        names = ", ".join(sorted(a.name for a in analysts))
        raise ValueError(f"cannot compose analyst statements about different analyst relations: {names}")
    return parts[0]


def _notion(parts: Sequence[Privacy], delta: float) -> Notion:
    if any(p.notion == "computational" for p in parts):
        return "computational"
    return "pure" if delta == 0 else "approximate"


def compose(*parts: Privacy) -> Privacy:
    """Basic composition: the sums of the parts' epsilons, deltas and analyst epsilons, same relation checked."""
    first = _common(parts)
    delta = math.fsum(p.delta for p in parts)
    analyst = [p.eps_analyst for p in parts if p.eps_analyst is not None]
    return Privacy(math.fsum(p.epsilon for p in parts), delta, first.relation, _notion(parts, delta),
                   math.fsum(analyst) if analyst else None, first.analysts if analyst else None)


def compose_advanced(step: Privacy, k: int, delta_hat: float) -> Privacy:
    """K adaptive repetitions of ``step``: advanced composition at slack ``delta_hat`` (basic where it is tighter)."""
    first = _common([step])
    epsilon = composed_epsilon(step.epsilon, k, delta_hat)
    delta = k * step.delta + delta_hat
    return Privacy(epsilon, delta, first.relation, _notion([step], delta))


def group(statement: Privacy, n: int) -> Privacy:
    """Group privacy: neighbours ``n`` steps apart under ``statement``'s relation.

    (n eps, delta (1 + e^eps + ... + e^((n-1) eps))), at most (n eps, n e^((n-1) eps) delta): each step of the chain
    of n neighbours adds its delta, multiplied by e^eps per step already taken (Dwork and Roth, "The algorithmic
    foundations of differential privacy", Thm 2.2, with delta). Raises ``ValueError`` when the delta reaches 1.
    """
    if n < 1:
        raise ValueError(f"a group has at least one member, got n={n!r}")
    delta = statement.delta * math.fsum(math.exp(i * statement.epsilon) for i in range(n))
    if delta >= 1.0:
        raise ValueError(f"a group of {n} under ({statement.epsilon:g}, {statement.delta:g}) has delta {delta:.3g} "
                         ">= 1: no guarantee; allowed: a smaller group")
    return Privacy(n * statement.epsilon, delta, statement.relation, statement.notion, None, None,
                   statement.sampler_delta * (delta / statement.delta) if statement.delta else 0.0)
