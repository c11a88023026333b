"""The privacy statement every private mechanism exposes as ``.privacy``: a value, not prose."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from dpstream._repr import ParamsRepr
from dpstream.validation import check_delta, check_epsilon

Notion = Literal["pure", "approximate", "computational"]
"""How a guarantee holds: pure (delta = 0), approximate (delta > 0), or computational (against a bounded adversary:
noise derived from a pseudorandom function)."""


class Relation(StrEnum):
    """The neighbouring relation a statement is made under (its value is the sentence shown to users)."""

    REPLACE_ONE_ITEM = "replace one stream item (same length T; continual observation)"
    M_NEIGHBOURING_COUNTERS = "m-neighbouring counter arrays (at most m counters change, each by at most 1 in total)"
    ADD_REMOVE_RECORD = "add/remove one record (sensitivity-1 queries: linear with f_i(x) in [0, 1])"
    REPLACE_ONE_RECORD = "replace one record (databases of public size n)"
    REPLACE_ONE_USER = "replace one user (whole stream)"


class AnalystRelation(StrEnum):
    """The analysts' neighbouring relation of the query-release game's analyst privacy (Def 2.2, 2.3)."""

    ONE_QUERY_TO_MANY = "one query to many analysts (Def 2.3)"
    ONE_ANALYST_TO_MANY = "one analyst to many analysts (Def 2.2)"


@dataclass(frozen=True)
class Privacy:
    """(epsilon, delta)-DP under ``relation``, in the sense ``notion``; the analyst budget where it applies.

    ``notion``: "pure" (delta = 0), "approximate" ((eps, delta) with delta > 0) or "computational" (the
    (eps, delta) guarantee holds against computationally bounded observers: noise derived from a keyed
    pseudorandom function, see ``dpstream.counters``); left out, it is "pure" when delta = 0, else "approximate".
    ``eps_analyst``: the analyst-privacy epsilon of the query-release game (Hsu, Roth, Ullman, "Differential privacy
    for the analyst via private equilibrium computation") under ``analysts``; None where it does not apply.
    ``sampler_delta``: the part of ``delta`` spent on a sampler's distance from its exact noise (the constant-time
    discrete Gaussian, ``dpstream.secure.cdt``); 0 for exact samplers.
    """

    epsilon: float
    delta: float
    relation: Relation
    notion: Notion | None = None
    eps_analyst: float | None = None
    analysts: AnalystRelation | None = None
    sampler_delta: float = 0.0

    def __post_init__(self) -> None:
        """Validate epsilon, delta (0 for pure DP), the relations and eps_analyst; derive the notion."""
        check_epsilon(self.epsilon)
        if self.delta != 0.0:
            check_delta(self.delta)
        if not isinstance(self.relation, Relation):
            allowed = ", ".join(r.name for r in Relation)
            raise ValueError(f"relation must be a dpstream.privacy.Relation ({allowed}), got {self.relation!r}")
        if self.notion is None:
            object.__setattr__(self, "notion", "pure" if self.delta == 0 else "approximate")
        if self.notion not in ("pure", "approximate", "computational"):
            raise ValueError(f"notion must be pure, approximate or computational, got {self.notion!r}")
        if self.notion == "pure" and self.delta != 0.0:
            raise ValueError(f"notion='pure' needs delta=0, got delta={self.delta!r}")
        if not 0.0 <= self.sampler_delta <= self.delta:
            raise ValueError(f"sampler_delta must be in [0, delta={self.delta!r}], got {self.sampler_delta!r}")
        if self.eps_analyst is not None:
            check_epsilon(self.eps_analyst, "eps_analyst")
            if not isinstance(self.analysts, AnalystRelation):
                raise ValueError(f"eps_analyst needs analysts, an AnalystRelation, got {self.analysts!r}")


def certify(*, private: bool = True, kappa: float = 1.0, paper_constants: bool = True) -> bool:
    """The one rule for ``certified``: private, noise at its calibrated scale, the theorem's constants.

    ``kappa`` is the noise multiplier (1 = calibrated); ``paper_constants``: the constants the privacy theorem is
    proved for.

    Anything else (kappa != 1, scaled constants, a non-private baseline) makes no privacy statement: its ``privacy``
    is None and its rows say ``certified: False``.
    """
    return bool(private) and kappa == 1.0 and bool(paper_constants)


class Certified(ParamsRepr):
    """``certified`` by the one rule (``certify``) from what a mechanism knows of itself; never set by hand.

    Every mechanism derives from it, and so has a ``repr`` with its parameters (``ParamsRepr``).

    A mechanism overrides the defaults where they differ, as a class attribute or in its constructor: ``private``
    (False for a non-private baseline or a setting with no privacy theorem), ``kappa`` (the noise multiplier,
    1 = calibrated) and ``paper_constants`` (False when the constants are not the ones its privacy theorem is proved
    for). A class that assigns ``certified`` itself is refused when it is defined.

    A ``privacy`` property a subclass defines is None whenever the mechanism is not certified: an uncertified
    mechanism (kappa != 1, scaled constants) makes no privacy statement, whatever its formula would give.
    """

    private: bool = True
    kappa: float = 1.0
    paper_constants: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a class-level ``certified``: it comes from ``certify`` only."""
        super().__init_subclass__(**kwargs)
        if "certified" in vars(cls):
            raise TypeError(f"{cls.__name__} sets certified itself; set private, kappa or paper_constants instead "
                            "(certified = dpstream.privacy.certify of them)")
        statement = vars(cls).get("privacy")
        if isinstance(statement, property) and statement.fget is not None:
            cls.privacy = property(_only_if_certified(statement.fget),  # type: ignore[attr-defined]
                                   doc=statement.__doc__)

    @property
    def certified(self) -> bool:
        """``certify(private=..., kappa=..., paper_constants=...)`` of this mechanism."""
        return certify(private=self.private, kappa=self.kappa, paper_constants=self.paper_constants)


def _only_if_certified(fget: Callable[[Any], Privacy | None]) -> Callable[[Any], Privacy | None]:
    """``fget`` of a ``privacy`` property, giving None for a mechanism that is not certified."""
    @functools.wraps(fget)
    def statement(self: Any) -> Privacy | None:
        return fget(self) if self.certified else None
    return statement


def labels(mechanism: Any) -> dict[str, bool]:
    """The privacy labels of a result row, read from the mechanism object that produced it (never from a config).

    ``private``: the mechanism claims privacy (False for a baseline, or an object that is not a ``Certified``);
    ``certified``: ``certify`` of it; ``deployable``: certified, with exact noise keyed from OS entropy. A trial
    returns ``**labels(mechanism)`` in its row; a row without them is not private.
    """
    certified = bool(getattr(mechanism, "certified", False))
    return {"private": bool(getattr(mechanism, "private", False)), "certified": certified,
            "deployable": certified and bool(getattr(mechanism, "deployable", False))}


STATED = "stated_privacy"
"""The key under which a trial returns its mechanism's own (epsilon, delta) (``stated``).

The runner takes it out before the row is checked and stored (it is not a row column) and books it in the privacy
ledger of one's own data (``dpstream.harness.ledger``)."""


def stated(mechanism: Any) -> dict[str, tuple[float, float] | None]:
    """``{STATED: (epsilon, delta)}`` of ``mechanism.privacy``, the statement it computes from the noise it holds.

    None when it makes none: not private, not certified, or no guarantee (a LazyHH with delta~ >= 1). The delta is
    the one that holds, which is not always the configured one: delta~ of LazyHH, 0 for a pure (Laplace) sketch.
    """
    statement = getattr(mechanism, "privacy", None) if labels(mechanism)["certified"] else None
    return {STATED: None if statement is None else (float(statement.epsilon), float(statement.delta))}
