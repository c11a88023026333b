"""The one privacy statement every private mechanism exposes as ``.privacy``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dpstream.validation import check_delta, check_epsilon

Notion = Literal["pure", "approximate", "computational"]


@dataclass(frozen=True)
class Privacy:
    """(epsilon, delta)-DP under ``neighbours`` (e.g. "replace-one stream item"), in the sense ``notion``.

    ``notion``: "pure" (delta = 0), "approximate" ((eps, delta) with delta > 0) or "computational" (the
    (eps, delta) guarantee holds against computationally bounded observers: noise derived from a keyed
    pseudorandom function, see ``dpstream.counters``). ``eps_analyst``: the analyst-privacy epsilon of the
    query-release game (seed 003), None where it does not apply.
    """

    epsilon: float
    delta: float
    neighbours: str
    notion: Notion = "approximate"
    eps_analyst: float | None = None

    def __post_init__(self) -> None:
        """Validate epsilon, delta (0 for pure DP) and eps_analyst."""
        check_epsilon(self.epsilon)
        if self.delta != 0.0:
            check_delta(self.delta)
        if self.notion == "pure" and self.delta != 0.0:
            raise ValueError(f"notion='pure' needs delta=0, got delta={self.delta!r}")
        if self.eps_analyst is not None:
            check_epsilon(self.eps_analyst, "eps_analyst")
        if not self.neighbours:
            raise ValueError("neighbours must name the neighbouring relation, got an empty string")
