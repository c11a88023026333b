"""The watcher's host cap: at most ``cap`` packets a host (an item key) per epoch, counted exactly, compiled.

A packet beyond its host's ``cap``-th in the epoch is replaced by ``PLACEHOLDER``, a key no release reports,
rather than dropped: the stream keeps its length and every packet its position, so the capped streams of two
neighbours differ position by position and the group-privacy argument of ``epochs.statement`` applies. The counts
are exact: an open-addressing table of int64 keys and counts, 16 bytes a slot, at most half full after each
piece of ``PIECE`` packets and a power of two, so at most 64 (hosts + ``PIECE``) bytes for the epoch's distinct
hosts (4 MB up to 65,536 hosts, 1 GB at 16 M hosts), freed at the epoch's end.
An approximate counter (Count-Min) would not do: its over-counts depend on other hosts' packets, so removing one
host could change which packets of another host are capped, and the capped streams of two neighbours could differ
in more than N packets.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpstream.hashing import canonical_key

PLACEHOLDER = np.iinfo(np.int64).min
"""The key a capped packet is replaced with (filtered from every release)."""
PLACEHOLDER_KEY = canonical_key(int(PLACEHOLDER))
"""The canonical key the tracker counts ``PLACEHOLDER`` under (``_tracker.as_items``): what a release filters out."""
_EMPTY = np.iinfo(np.int64).min
_MIX = np.uint64(0x9E3779B97F4A7C15)
PIECE = 1 << 16


@njit(cache=True, inline="always")
def _slot(key: int, mask: int) -> int:
    """The first probe of ``key`` in a table of ``mask + 1`` slots (a power of two): Fibonacci hashing."""
    return int((np.uint64(key) * _MIX) >> np.uint64(40)) & mask


@njit(cache=True)
def _rehash(keys: np.ndarray, counts: np.ndarray, new_keys: np.ndarray, new_counts: np.ndarray) -> None:
    """Move every occupied slot of (keys, counts) into the empty table (new_keys, new_counts)."""
    mask = new_keys.size - 1
    for i in range(keys.size):
        if keys[i] != _EMPTY:
            j = _slot(keys[i], mask)
            while new_keys[j] != _EMPTY:
                j = (j + 1) & mask
            new_keys[j] = keys[i]
            new_counts[j] = counts[i]


@njit(cache=True)
def _cap(items: np.ndarray, table_keys: np.ndarray, table_counts: np.ndarray, cap: int, out: np.ndarray) -> int:
    """out[i] = items[i], or ``PLACEHOLDER`` past its host's ``cap``-th packet; returns the hosts added."""
    mask = table_keys.size - 1
    added = 0
    for i in range(items.size):
        key = items[i]
        j = _slot(key, mask)
        while table_keys[j] != key and table_keys[j] != _EMPTY:
            j = (j + 1) & mask
        if table_keys[j] == _EMPTY:
            table_keys[j] = key
            added += 1
        if table_counts[j] < cap:
            table_counts[j] += 1
            out[i] = key
        else:
            out[i] = _EMPTY
    return added


class HostCap:
    """Exact per-host packet counts of one epoch and the cap applied to its packets in order."""

    def __init__(self, cap: int, capacity: int = 1 << 16) -> None:
        """An empty table for an epoch; ``cap`` >= 1 packets a host."""
        self.cap = cap
        self.hosts = 0
        self._keys = np.full(capacity, _EMPTY, dtype=np.int64)
        self._counts = np.zeros(capacity, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        """The table's memory."""
        return self._keys.nbytes + self._counts.nbytes

    def apply(self, items: np.ndarray) -> np.ndarray:
        """``items`` (int64 keys, the epoch's next packets, in order) capped: int64, ``PLACEHOLDER`` where capped."""
        items = np.ascontiguousarray(items, dtype=np.int64)
        if (items == PLACEHOLDER).any():
            raise ValueError(f"key {PLACEHOLDER} is reserved for capped packets by --host-cap; allowed: other keys")
        out = np.empty_like(items)
        for start in range(0, items.size, PIECE):  # a loop over pieces, so the table grows with the hosts only
            piece = items[start:start + PIECE]
            need = 2 * (self.hosts + piece.size)  # at most half full after the piece
            if need > self._keys.size:
                size = 1 << (need - 1).bit_length()
                keys, counts = np.full(size, _EMPTY, dtype=np.int64), np.zeros(size, dtype=np.int64)
                _rehash(self._keys, self._counts, keys, counts)
                self._keys, self._counts = keys, counts
            self.hosts += _cap(piece, self._keys, self._counts, self.cap, out[start:start + PIECE])
        return out
