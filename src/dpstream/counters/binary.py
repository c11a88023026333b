"""The binary-tree counter (Holland, Alg. 1) with its node noise stored (the paper) or derived on demand.

Stored (``StoredBinary``): one node per level per counter (exact partial sum + noisy running sum, as in
``_bm_kernels``); a push closes a node and draws its noise. Derived (``DerivedBinary``, issue "beyond the
paper"): node noise is a keyed pseudorandom function of (cell, level, node index), Philox4x64-10 keyed from the
secret seed, so a counter holds only its exact count, a push is one integer add, and a release regenerates
the popcount(s) node values of its step. Both release exact prefix sum + the noises of the dyadic nodes over
the set bits of s: the same joint distribution of all releases at all times when the generator is a random
function (the computational assumption numpy's own generators rest on as well; see ``DerivedBinary``).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from dpstream import serial
from dpstream.counters import _derived, sources
from dpstream.counters import _kernels as kernels
from dpstream.counters._bm_kernels import popcount as popcount
from dpstream.counters.base import NOISE_BYTES, STEP_BYTES, Counter
from dpstream.counters.factorisation import Dyadic, Factorisation
from dpstream.counters.philox import NODE_NORMAL
from dpstream.privacy.calibration import gauss_bm_levels


def prefix_sums(increments: np.ndarray) -> np.ndarray:
    """Per counter, the exact sums of its first 0..S increments: shape (n, S + 1), int64."""
    prefix = np.zeros((increments.shape[0], increments.shape[1] + 1), dtype=np.int64)
    np.cumsum(increments, axis=1, out=prefix[:, 1:])
    return prefix


def released_nodes(increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Exact value of every node a GaussBM releases, shape (1, n S).

    Counter j's node closing at step s <= steps[j] is the sum of its increments over (s - lowbit(s), s]
    (``_bm_kernels.push``); nodes never closed are 0.
    """
    horizon = increments.shape[1]
    prefix = prefix_sums(increments)
    s = np.arange(1, horizon + 1)
    nodes = prefix[:, s] - prefix[:, s - (s & -s)]
    nodes[s[None, :] > np.asarray(steps)[:, None]] = 0
    return nodes.reshape(1, -1)


class TreeState(NamedTuple):
    """The stored tree, both (levels, n): exact partial sums alpha_l (count dtype) and noisy running sums (float64).

    ``noisy_sums[l, j]`` sums counter j's released nodes at the set bits >= l of its step; row 0 is its release.
    """

    exact: np.ndarray
    noisy_sums: np.ndarray


class DerivedState(NamedTuple):
    """The derived-noise tree: the exact count of every counter, (1, n); the node noise is regenerated at release."""

    exact: np.ndarray


class PhiloxDerived(Counter):
    """Base of the counters whose node noise is derived from a 128-bit Philox key at release (put it first).

    Nothing is drawn at push time; the pushes touch the exact sums only; the guarantee is computational (Philox as a
    pseudorandom function).
    """

    source = sources.DERIVED
    kind = kernels.DERIVED
    tracks_steps = False


class BinaryTree(Counter):
    """Calibration and variance shared by both node-noise choices: h levels, sigma for L2 sensitivity sqrt(h m)."""

    name = "binary"

    @classmethod
    def l2_sensitivity(cls, horizon: int, m: int) -> float:
        """sqrt(h m): one step of each of m counters moves h node values (one per level) by at most 1."""
        return math.sqrt(gauss_bm_levels(horizon) * m)

    def protected(self, increments: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The released nodes: the one node closing at each step (``released_nodes``)."""
        return released_nodes(increments, steps)

    def factorisation(self) -> Factorisation:
        """The dyadic tree: variance popcount(s) sigma^2, one independent node noise per set bit of s."""
        return Dyadic(self.horizon)

    def _table_steps(self, steps: np.ndarray) -> tuple[np.ndarray, bool]:
        """``steps`` as a contiguous int64 (n,) array, and whether all lie in [0, 2^levels) (a node cache's levels)."""
        steps = np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), (self.n,)))
        return steps, not (steps.size and (steps.min() < 0 or steps.max() >> self.levels))


class StoredBinary(BinaryTree):
    """Alg. 1 with one preallocated node per level (``_bm_kernels.push``); one noise per push.

    State: exact partial sums (count dtype) and float64 noisy running sums, both (levels, n), and an int64 step per
    counter.
    """

    kind = kernels.STORED
    tracks_steps = True
    draws_per_push = 1

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """One exact partial sum and one noisy sum per level, and the step count."""
        return gauss_bm_levels(horizon) * (count_bytes + NOISE_BYTES) + STEP_BYTES

    def _allocate(self) -> None:
        self._exact: np.ndarray = np.zeros((self.levels, self.n), dtype=self.count_dtype)
        self._noisy_sums = np.zeros((self.levels, self.n), dtype=np.float64)
        self.state = TreeState(self._exact, self._noisy_sums)

    def noise_count(self, steps: np.ndarray) -> int:
        """One noise per push (the node it closes)."""
        return int(np.size(steps))

    def released_view(self) -> np.ndarray:
        """Read-only view of every counter's released prefix sum (changes with pushes)."""
        view = self._noisy_sums[0]
        view.flags.writeable = False
        return view

    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Release of the stored tree: a read-only gather of the level-0 noisy sums (``steps`` unused)."""
        return self._noisy_sums[0, cells]

    def release_all(self, steps: np.ndarray) -> np.ndarray:
        """Every counter's release: the read-only ``released_view`` (``steps`` unused)."""
        return self.released_view()


class DerivedBinary(PhiloxDerived, BinaryTree):
    """The binary tree with derived node noise.

    Z(cell, level, s >> level) = sigma * N(0, 1) from Philox4x64-10 keyed by two 64-bit words of the noise seed
    (``counters.philox``).

    Privacy: (epsilon, delta)-DP as the stored tree under the same relation, COMPUTATIONALLY: the releases are
    the binary mechanism's exactly when Philox is a random function; against an observer who cannot tell
    Philox from random (the standard PRF assumption) the guarantee holds as stated, against an unbounded one it
    does not (an exhaustive search over the 128-bit key). The key must stay secret: ``seed=None`` takes it
    from the operating system's entropy; a published seed publishes the noise. ``noise=secure`` is refused
    (no CSPRNG-keyed version is built).

    Whole-table releases (``release_all``) and the releases of the cells a sketch's query reads (``release_wanted``)
    keep a node cache: the node normals of every counter's last released step, (n, levels) float64, so the next
    release regenerates only the nodes that changed (one per counter after one push), and none for a cell not read.
    It is a speed cache outside the state: not in ``memory_bytes`` (its size is ``noise_cache_bytes``), not
    serialised, rebuilt on demand; it is as secret as the key.
    """

    partial_release = True

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """The exact count alone (the key is ``fixed_bytes``)."""
        return count_bytes

    def _allocate(self) -> None:
        if self._noise.mode == "secure":
            raise ValueError("noise=secure is not available with node_noise='derived' (its node noise comes from "
                             "a keyed Philox generator, not a CSPRNG-keyed exact sampler); allowed: noise=numpy")
        self._exact: np.ndarray = np.zeros((1, self.n), dtype=self.count_dtype)
        self.state = DerivedState(self._exact)
        # words 4, 5 of the seed's state stream: past the 4 words numpy's PCG64 takes from the same seed
        self._key = self._noise.rng.bit_generator.seed_seq.generate_state(6, np.uint64)[4:]

    def noise_count(self, steps: np.ndarray) -> int:
        """No draws at push time: the noise is derived at release."""
        return 0

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {**super()._state_arrays(), "key": self._key}

    def _constants(self) -> dict[str, Any]:
        """As the tree's, and the node normal's transform (``philox.NODE_NORMAL``)."""
        return {**super()._constants(), "node_normal": NODE_NORMAL}

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        """Refuse a state whose nodes another transform derived, or that names none (older states), then restore.

        Restored, it would release other values for nodes it has already released: two noisy copies of the same sums,
        which the privacy guarantee does not cover.
        """
        found = scalars.get("node_normal")
        if found != NODE_NORMAL:
            which = (f"node_normal={found!r}: this state's node noise was derived by another transform" if found else
                     "this state names no node transform (written before dpstream recorded one: Box-Muller, or the "
                     "ziggurat of the commits that introduced it)")
            raise serial.SerialError(f"{which}, not this version's {NODE_NORMAL!r}; continuing it could release other "
                                     "noise for nodes already released. Finish its stream with the dpstream version "
                                     "that wrote it")
        super()._restore_scalars(scalars)

    def release_all(self, steps: np.ndarray) -> np.ndarray:
        """Every counter's release at ``steps`` (n,), with the node cache (``_derived.release_all_cached``)."""
        steps, cacheable = self._table_steps(steps)
        if not cacheable:
            return self.release(np.arange(self.n), steps)
        cache = self._cache()
        return _derived.release_all_cached(self._exact, self._key, self._noise_scale, steps, cache[1], cache[2])

    def release_wanted(self, steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """``release_all`` at the cells ``wanted`` (bool, (n,)), NaN elsewhere (``_derived.release_wanted_cached``).

        The nodes of the cells skipped are not generated; the cache keeps their older nodes for a later release.
        """
        steps, cacheable = self._table_steps(steps)
        wanted = np.ascontiguousarray(np.broadcast_to(np.asarray(wanted, dtype=np.bool_), (self.n,)))
        if not cacheable:
            return np.where(wanted, self.release(np.arange(self.n), steps), np.nan)
        cache = self._cache()
        return _derived.release_wanted_cached(self._exact, self._key, self._noise_scale, steps, wanted, cache[1],
                                              cache[2])

    def _cache(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The node cache (key, nodes (n, levels), cached steps (n,)), rebuilt when the key changed."""
        cache = getattr(self, "_node_cache", None)
        if cache is None or not np.array_equal(cache[0], self._key):  # the nodes are a function of the key
            cache = (self._key.copy(), np.zeros((self.n, self.levels)), np.zeros(self.n, dtype=np.int64))
            self._node_cache = cache
        return cache

    @property
    def noise_cache_bytes(self) -> int:
        """Bytes of the node cache of ``release_all`` (0 before the first whole-table release)."""
        cache = getattr(self, "_node_cache", None)
        return 0 if cache is None else cache[1].nbytes + cache[2].nbytes

    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the Philox-derived node noises over the set bits of each step (``_derived.release``)."""
        cells = np.asarray(cells, dtype=np.int64)
        steps = np.broadcast_to(np.asarray(steps, dtype=np.int64), cells.shape)
        return _derived.release(self._exact, self._key, self._noise_scale, cells, np.ascontiguousarray(steps))

    @property
    def memory_bytes(self) -> int:
        """Bytes of the exact counts and the key."""
        return self._exact.nbytes + self._key.nbytes
