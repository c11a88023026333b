"""The counters' compiled-kernel API for other packages' compiled loops (sketches, heavy hitters, audits).

A loop over pushes is written once as a factory ``make(kind, external)`` whose inner function calls
``cell_push(kind, state, cell, step, c, noise, z)`` (the package's counters, ``kind`` in ``KINDS``) or
``external(state, ...)`` (a counter's own ``push_kernel``, ``kind`` then ``EXTERNAL``); ``specialise(make)`` compiles
it once per kind, cached on disk for the package's kinds (see ``counters._kernels`` for why a compiled function is
never an argument of a cached kernel). ``DERIVED`` is the kind whose pushes only add to the exact counts (derived node
noise: a push of 0 may be skipped), and ``release_wanted_cached`` releases the derived binary tree's cells a reader
asks for, regenerating only the nodes not in its cache.
"""

from __future__ import annotations

from dpstream.counters._derived import release_wanted_cached
from dpstream.counters._kernels import DERIVED, EXTERNAL, KINDS, cell_push, push_many, specialise

__all__ = ["DERIVED", "EXTERNAL", "KINDS", "cell_push", "push_many", "release_wanted_cached", "specialise"]
