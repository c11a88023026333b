"""The sketches' compiled-kernel API for other packages' compiled loops (LazyHH's refreshes, the watcher's loop).

``hash_keys`` hashes a block of keys to every row's columns (and signs), ``query_hashed`` reads a sketch's cells at
hashed positions, ``block_keys(kind, depth)`` is the number of keys a Lazy loop takes per block, and
``lazy_block_derived`` adds a block of updates to the exact counts of a Lazy sketch whose node noise is derived.
"""

from __future__ import annotations

from dpstream.sketches._kernels import block_keys, hash_keys, lazy_block_derived, query_hashed

__all__ = ["block_keys", "hash_keys", "lazy_block_derived", "query_hashed"]
