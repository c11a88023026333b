"""Key and flags of the k-ary Laplace tree with exact discrete Laplace node noise (``laplace_discrete``).

The key is never in ``repr`` or results; ``to_bytes`` state files hold it and are SECRET. The binary tree's exact
discrete Gaussian sources keep theirs as ``counters.discrete`` states.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpstream.counters.base import Counter


class DiscreteFlags(Counter):
    """Base of a counter with exact discrete node noise from a keyed generator (put it first).

    The guarantee is computational; ``deployable``: keyed from OS entropy and certified. It is not written by
    ``to_bytes``: a restored counter is never deployable (unverifiable, docs/secure-noise.md), its written key
    replacing the fresh one its rebuild drew.
    """

    deployable: bool

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        """As ``Counter``; the restored counter is not deployable (unverifiable: docs/secure-noise.md)."""
        super()._restore_scalars(scalars)
        self.deployable = False


class KeyedDraws(DiscreteFlags):
    """Base of a counter whose keyed node noise is drawn when a node closes and stored (put it first).

    State beside the tree's: the key ``_key`` (8 uint32) and ``_drawn`` (1 int64), the number of the next draw,
    written by ``to_bytes`` so a restored counter goes on with fresh streams and never repeats one.
    """

    _key: np.ndarray
    _drawn: np.ndarray

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {**super()._state_arrays(), "key": self._key, "drawn": self._drawn}

    def _restore_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        super()._restore_arrays(arrays)
        if self._drawn[0] < 0:
            raise ValueError(f"corrupt state: {type(self).__name__} drawn={int(self._drawn[0])} < 0")
