"""Heavy-hitter baselines of Holland, Sec. 6.5.

The non-private Count-Min + heap tracker, and the prior-art private tracker (Epasto et al. 2023) that queries every
universe item of a PunctualCMS.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpstream import serial
from dpstream.heavy_hitters._tracker import BlockTracker, int64_items
from dpstream.noise import SeedLike, as_seed_sequence
from dpstream.privacy.statement import Privacy
from dpstream.sketches import CMS, PunctualCMS
from dpstream.sketches.core import SketchCore
from dpstream.validation import check_delta, check_epsilon, check_positive_int

DEFAULT_MAX_UNIVERSE = 2**16


def _sized(cls: type[SketchCore], width: int | None, memory_kb: float | None, **common: Any) -> SketchCore:
    """``cls`` sized by ``memory_kb`` (the sketches' memory model) when given, else by ``width``."""
    if memory_kb is not None:
        return cls.from_memory(kilobytes=memory_kb, **common)
    if width is None:
        raise ValueError(f"{cls.__name__} needs width or memory_kb, got neither")
    return cls(width=width, **common)


class CMSHeap(BlockTracker):
    """Non-private Count-Min + heap heavy hitters (the paper's baseline). NOT private.

    Keeps the k items with the largest CMS estimates (the "heap") and reports those whose estimate is
    >= t/k (a CMS never underestimates, so every tracked true heavy hitter is reported). The heap is
    maintained at block boundaries every ``period`` updates (default k): candidates = heap u distinct
    items of the block, ranked by their CURRENT estimates and cut to k -- the classical per-arrival
    heap (which ranks by the estimate each item had at its last arrival) evaluated in blocks, so that
    no Python code runs per item. Deviation: it is not item-for-item the per-arrival heap.
    """

    private = False
    privacy = None  # NOT private

    def __init__(self, *, k: int, horizon: int, width: int | None = None, depth: int = 3,
                 memory_kb: float | None = None, period: int | None = None, seed: SeedLike = None) -> None:
        """Validate k and build the CMS (by ``width`` or ``memory_kb``); the heap is refreshed every ``period``."""
        self.k = check_positive_int(k, "k")
        sketch = _sized(CMS, width, memory_kb, depth=depth, horizon=horizon, seed=as_seed_sequence(seed))
        super().__init__(sketch, period=self.k if period is None else period, horizon=horizon, capacity=self.k)

    def _reported_mask(self, estimates: np.ndarray, t: int) -> np.ndarray:
        return estimates >= t / self.k

    def _serial_args(self) -> dict[str, Any]:
        return {"k": self.k, "horizon": self.horizon, "width": self.sketch.width, "depth": self.sketch.depth,
                "period": self.period}

    @classmethod
    def _allocation_bytes(cls, args: dict[str, Any]) -> int:
        return CMS._allocation_bytes({**args, "counter": "binary", "node_noise": "stored", "hash_family": "modp"})


class PunctualHH(BlockTracker):
    """Prior-art private heavy hitters: a PunctualCMS queried on EVERY universe item at every output step.

    Items with estimate >= t/k are reported (Epasto et al. 2023, as described in Holland, Sec. 5).

    Privacy: the PunctualCMS is (epsilon, delta)-DP under continual observation for replace-one
    neighbouring streams (Alg. 3: 2d-neighbouring GaussBM inputs); querying it is post-processing.
    Cost per output step is Theta(universe_size * depth * log T) on top of the Theta(d w log T) update,
    so it is only feasible for small universes: items must be integers in [0, universe_size), and
    ``universe_size`` above ``max_universe`` is refused. ``period`` = 1 outputs after every update.
    """

    def __init__(self, *, k: int, universe_size: int, epsilon: float, delta: float, horizon: int,
                 width: int | None = None, depth: int = 3, memory_kb: float | None = None, period: int = 1,
                 max_universe: int = DEFAULT_MAX_UNIVERSE, seed: SeedLike = None) -> None:
        """Validate the arguments (refusing ``universe_size`` above ``max_universe``) and build the PunctualCMS."""
        self.k = check_positive_int(k, "k")
        self.universe_size = check_positive_int(universe_size, "universe_size")
        self.max_universe = max_universe = check_positive_int(max_universe, "max_universe")
        if self.universe_size > max_universe:
            raise ValueError(
                f"PunctualHH refuses universe_size={universe_size}: it queries every universe item at every "
                f"output step (universe_size x depth x log T work per step), which is infeasible beyond "
                f"max_universe={max_universe} (raise max_universe to force it, or use LazyHH, which only "
                f"queries its k~ candidates)")
        self.epsilon, self.delta = check_epsilon(epsilon), check_delta(delta)
        sketch = _sized(PunctualCMS, width, memory_kb, depth=depth, epsilon=self.epsilon, delta=self.delta,
                        horizon=horizon, seed=as_seed_sequence(seed))
        super().__init__(sketch, period=period, horizon=horizon, capacity=None,
                         universe=np.arange(self.universe_size, dtype=np.int64))

    @property
    def privacy(self) -> Privacy | None:
        """(epsilon, delta) under continual observation for replace-one neighbouring streams: its PunctualCMS's."""
        return self.sketch.privacy

    def extend(self, items: Any) -> None:
        """Process ``items`` in order after checking that they lie in [0, universe_size)."""
        items = int64_items(items)  # as given: [0, universe_size) lies in [0, p), where each item is its own key
        if items.size and (items.min() < 0 or items.max() >= self.universe_size):
            raise ValueError(f"PunctualHH items must lie in [0, universe_size={self.universe_size}), "
                             f"got values in [{items.min()}, {items.max()}]")
        super().extend(items)

    def _reported_mask(self, estimates: np.ndarray, t: int) -> np.ndarray:
        return estimates >= t / self.k

    def _serial_args(self) -> dict[str, Any]:
        return {"k": self.k, "universe_size": self.universe_size, "epsilon": self.epsilon, "delta": self.delta,
                "horizon": self.horizon, "width": self.sketch.width, "depth": self.sketch.depth,
                "period": self.period, "max_universe": self.max_universe}

    @classmethod
    def _allocation_bytes(cls, args: dict[str, Any]) -> int:
        universe = 8 * serial.size_arg(args, "universe_size")  # the int64 universe the tracker queries
        sketch = {**args, "counter": "binary", "node_noise": "stored", "hash_family": "modp"}
        return universe + PunctualCMS._allocation_bytes(sketch)
