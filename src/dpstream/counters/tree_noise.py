"""The noise of the factorisation counters: one object per noise source, each counter holding one.

A factorisation counter (the trees: binary, Honaker's estimates, smooth, hybrid, k-ary Laplace; the Toeplitz
factorisations and BLT) releases exact prefix sums plus the noise its factorisation names; the source
(``counters.sources``) says how that noise is made. ``TreeNoise`` is what the counter asks of it: the state it adds,
the draws a push consumes, the release of nodes derived from a key, what is written by ``to_bytes`` and checked on
restore, and the memory it holds. It keeps no state of its own (the arrays live on the counter, which ``to_bytes``
writes), so one object serves every counter of its source.

Two kinds. Stored (``StoredNodes``, ``KeyedStoredNodes`` in ``counters.discrete``): a node's noise is drawn when the
node closes and added to the factorisation's stored sums; the push kernel and the state are the factorisation's
(``stored_kind``, ``_allocate_stored``). Derived (``PhiloxNodes``; ``DiscreteNodes`` and its variants in
``counters.discrete``): a push adds to the exact count only (kernel ``DERIVED``) and a release regenerates the nodes
of its tree step from the key; ``PhiloxNoise`` leaves the regeneration to the factorisation (``derived_release``).

Models: TF Privacy's ``ValueGenerator`` (``tree_aggregation.py``: the tree asks a generator for its node noise,
stored or from a seed).
"""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np

from dpstream import serial
from dpstream.counters import _derived, sources
from dpstream.counters import _kernels as kernels
from dpstream.counters.base import FactorisedCounter, source_facts
from dpstream.counters.node_tree import NodeTree
from dpstream.counters.philox import NODE_NORMAL
from dpstream.privacy.maps import GaussianMap, PrivacyMap
from dpstream.secure.chacha import MAX_CELLS

C = TypeVar("C", bound=FactorisedCounter)
"""The counters a source serves: every factorisation, or the trees alone (``NodeTree``)."""


class DerivedState(NamedTuple):
    """The derived-noise tree: the exact count of every counter, (1, n); the node noise is regenerated at release."""

    exact: np.ndarray


class TreeNoise(Generic[C]):
    """A noise source of a factorisation ``C``: stored draws of the counter's numpy generator (``STORED_NODES``).

    Subclasses change what differs (module doc). ``partial_release``: ``release_wanted`` saves work over
    ``release_all``.
    """

    partial_release = False

    def __init__(self, source: sources.NodeNoise) -> None:
        """The handling of node noise from ``source``."""
        self.source = source

    def __repr__(self) -> str:
        """The class and its source's name."""
        return f"{type(self).__name__}({self.source.name!r})"

    def facts(self, tree: type[C]) -> dict[str, Any]:
        """What a counter of the factorisation ``tree`` with this source states (``Counter.noise_facts``)."""
        return {**source_facts(self.source), "kind": self.kind(tree), "tracks_steps": self.tracks_steps(tree),
                "draws_per_push": self.draws_per_push(tree),
                "partial_release": self.partial_release and tree.cached_releases}

    def tracks_steps(self, tree: type[C]) -> bool:
        """Whether the counter keeps each counter's step: the factorisation's stored layout's."""
        return tree.stored_tracks_steps

    def kind(self, tree: type[C]) -> int:
        """The compiled push: the factorisation's stored push (``stored_kind``)."""
        return tree.stored_kind

    def draws_per_push(self, tree: type[C]) -> int:
        """Noise draws per push on average (buffer sizing): the factorisation's stored draws."""
        return tree.stored_draws

    def bytes_per_counter(self, tree: type[C], horizon: int, count_bytes: int) -> int:
        """State bytes per counter: the factorisation's stored layout (``bytes_per_counter``)."""
        return tree.bytes_per_counter(horizon, count_bytes)

    def allocate(self, c: C) -> None:
        """Create the counter's state arrays (``Counter._allocate``)."""
        c._allocate_stored()

    def draw(self, c: C, size: int) -> np.ndarray:
        """``size`` noises of the counter's generator at its scale, in the order the pushes take them.

        N(0, (sigma kappa)^2), or Laplace(b kappa) for a Laplace source.
        """
        if self.source.distribution == "laplace":
            return c._noise.laplace(c._noise_scale, size)
        return c._noise.gaussian(c._noise_scale, size)

    def noise_count(self, c: C, steps: np.ndarray) -> int:
        """Draws a push at each of ``steps`` consumes: the factorisation's (``stored_noise_count``)."""
        return c.stored_noise_count(steps)

    def release(self, c: C, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The stored release of ``cells`` (int64) at release ``steps`` (``stored_release``; ``steps`` unused)."""
        return c.stored_release(cells)

    def release_all(self, c: C, steps: np.ndarray) -> np.ndarray:
        """Every counter's stored release."""
        return c.stored_release_all()

    def release_wanted(self, c: C, steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """Every counter's stored release (reading it costs nothing per cell)."""
        return c.stored_release_all()

    def state_arrays(self, c: C) -> dict[str, np.ndarray]:
        """Arrays written after the counter's own (a key, a draw count): none."""
        return {}

    def state_scalars(self, c: C) -> dict[str, Any]:
        """Scalars written after the counter's constants (a sampler version): none."""
        return {}

    def constants(self, c: C) -> dict[str, Any]:
        """Values recomputed from the arguments and checked on restore, after ``sigma``: none."""
        return {}

    def restore_scalars(self, c: C, scalars: dict[str, Any]) -> None:
        """Refuse a state this source cannot continue (before the counter's own checks): accept every one."""

    def scalars_restored(self, c: C) -> None:
        """After the counter restored its scalars: nothing to do."""

    def arrays_restored(self, c: C) -> None:
        """After the arrays were copied in: nothing to check."""

    def memory_bytes(self, c: C) -> int:
        """Bytes of the state: every written array."""
        return sum(a.nbytes for a in c._state_arrays().values())

    def noise_cache_bytes(self, c: C) -> int:
        """Bytes of a speed cache outside the state: none."""
        return 0

    def privacy_map(self, c: C) -> PrivacyMap:
        """The held N(0, (sigma kappa)^2) node noise at the tree's L2 sensitivity (``GaussianMap``)."""
        return GaussianMap(c.l2_sensitivity(c.horizon, c.m), c._noise_scale, c.calibration)

    def check_keyed(self, c: C) -> None:
        """Refuse a counter an exact sampler keyed by ChaCha20 cannot serve.

        Under ``noise=secure`` (the source has its own sampler), or with more than 2^32 counters (``chacha.MAX_CELLS``).
        """
        if c._noise.mode == "secure":
            raise ValueError(f"noise=secure is not available with counter={c.name!r}, "
                             f"node_noise={self.source.name!r} (it has its own exact sampler); allowed: noise=numpy")
        if c.n > MAX_CELLS:
            raise ValueError(f"node_noise={self.source.name!r} takes at most 2^32 counters, got n={c.n}")

    def calibration_delta(self, c: C) -> float:
        """The delta sigma is calibrated for: all of ``delta``."""
        return c.delta

    def sampler_delta(self, c: C) -> float:
        """What the sampler adds to delta: 0."""
        return 0.0


class StoredNodes(TreeNoise[C]):
    """Stored nodes from the counter's numpy generator (``sources.STORED``, ``STORED_LAPLACE``): ``TreeNoise`` as is."""


class DerivedNodes(TreeNoise[C]):
    """Base of the sources whose nodes are derived from a secret key at release: the exact counts are the state.

    Nothing is drawn at push time (kernel ``DERIVED``: a push adds to the exact count); the guarantee is
    computational.
    """

    def tracks_steps(self, tree: type[C]) -> bool:
        """No: a release is given its step."""
        return False

    def kind(self, tree: type[C]) -> int:
        """The push of the exact counts alone."""
        return kernels.DERIVED

    def draws_per_push(self, tree: type[C]) -> int:
        """None: the noise is derived at release."""
        return 0

    def bytes_per_counter(self, tree: type[C], horizon: int, count_bytes: int) -> int:
        """The exact count alone (the key is the source's ``key_bytes``)."""
        return count_bytes

    def allocate(self, c: C) -> None:
        """The exact counts, (1, n)."""
        c._exact = np.zeros((1, c.n), dtype=c.count_dtype)
        c.state = DerivedState(c._exact)

    def noise_count(self, c: C, steps: np.ndarray) -> int:
        """No draws at push time: the noise is derived at release."""
        return 0

    def state_arrays(self, c: C) -> dict[str, np.ndarray]:
        """The key."""
        return {"key": c._key}

    def memory_bytes(self, c: C) -> int:
        """Bytes of the exact counts and the key."""
        return c._exact.nbytes + c._key.nbytes


class PhiloxNoise(DerivedNodes[C]):
    """Noise derived at release from a Philox4x64-10 key (``sources.DERIVED``, ``counters.philox``).

    The key is two 64-bit words of the noise seed.

    The factorisation regenerates a release's noise from the key (``derived_release``, after its tables,
    ``_allocate_derived``). Privacy: the stored noise's (epsilon, delta)-DP under the same relation, COMPUTATIONALLY:
    the releases have the stored noise's joint law exactly when Philox is a random function; against an observer who
    cannot tell Philox from random (the standard PRF assumption) the guarantee holds as stated, against an unbounded
    one it does not (an exhaustive search over the 128-bit key). The key must stay secret: ``seed=None`` takes it from
    the operating system's entropy; a published seed publishes the noise. ``noise=secure`` is refused (no
    CSPRNG-keyed version is built).
    """

    def allocate(self, c: C) -> None:
        """The exact counts and the key, words 4, 5 of the seed's state stream (past the 4 numpy's PCG64 takes)."""
        if c._noise.mode == "secure":
            raise ValueError(f"noise=secure is not available with counter={c.name!r}, node_noise='derived' (its noise "
                             "comes from a keyed Philox generator, not a CSPRNG-keyed exact sampler); allowed: "
                             "noise=numpy")
        super().allocate(c)
        c._key = c._noise.rng.bit_generator.seed_seq.generate_state(6, np.uint64)[4:]
        c._allocate_derived()

    def release(self, c: C, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The factorisation's derived release (``derived_release``)."""
        return c.derived_release(cells, steps)

    def release_all(self, c: C, steps: np.ndarray) -> np.ndarray:
        """Every counter's derived release (``derived_release_all``)."""
        return c.derived_release_all(steps)

    def release_wanted(self, c: C, steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """Every counter's derived release."""
        return c.derived_release_all(steps)


class PhiloxNormals(PhiloxNoise[C]):
    """Philox noise whose normals are ``philox.node_normal`` (the ziggurat): its version is written and checked."""

    def constants(self, c: C) -> dict[str, Any]:
        """The node normal's transform (``philox.NODE_NORMAL``)."""
        return {"node_normal": NODE_NORMAL}

    def restore_scalars(self, c: C, scalars: dict[str, Any]) -> None:
        """Refuse a state whose nodes another transform derived, or that names none (older states).

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


class PhiloxNodes(PhiloxNormals[NodeTree]):
    """N(0, sigma^2) tree nodes derived from a Philox4x64-10 key (``PhiloxNoise``).

    Z(cell, level, s >> level) = sigma * N(0, 1) from Philox keyed by two 64-bit words of the noise seed: the binary
    mechanism's releases when Philox is a random function.

    Whole-table releases (``release_all``) and the releases of the cells a sketch's query reads (``release_wanted``)
    keep a node cache: the node normals of every counter's last released step, (n, levels) float64, so the next
    release regenerates only the nodes that changed (one per counter after one push), and none for a cell not read.
    It is a speed cache outside the state: not in ``memory_bytes`` (its size is ``noise_cache_bytes``), not
    serialised, rebuilt on demand; it is as secret as the key.
    """

    partial_release = True

    def release(self, c: NodeTree, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the Philox-derived node noises over the set bits of each release's tree step."""
        return self.release_at(c, cells, c.tree_steps(steps))

    @staticmethod
    def release_at(c: NodeTree, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """``release`` at tree steps ``steps`` (``_derived.release``)."""
        return _derived.release(c._exact, c._key, c._noise_scale, cells, np.ascontiguousarray(steps))

    def release_all(self, c: NodeTree, steps: np.ndarray) -> np.ndarray:
        """Every counter's release at ``steps`` (n,), with the node cache (``_derived.release_all_cached``)."""
        steps, cacheable = c._table_steps(steps)
        if not cacheable:
            return self.release_at(c, np.arange(c.n), steps)
        key, nodes, cached = self.cache(c)
        return _derived.release_all_cached(c._exact, c._key, c._noise_scale, steps, nodes, cached)

    def release_wanted(self, c: NodeTree, steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """``release_all`` at the cells ``wanted`` (bool, (n,)), NaN elsewhere (``_derived.release_wanted_cached``).

        The nodes of the cells skipped are not generated; the cache keeps their older nodes for a later release.
        """
        steps, cacheable = c._table_steps(steps)
        wanted = np.ascontiguousarray(np.broadcast_to(np.asarray(wanted, dtype=np.bool_), (c.n,)))
        if not cacheable:
            return np.where(wanted, self.release_at(c, np.arange(c.n), steps), np.nan)
        key, nodes, cached = self.cache(c)
        return _derived.release_wanted_cached(c._exact, c._key, c._noise_scale, steps, wanted, nodes, cached)

    @staticmethod
    def cache(c: NodeTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The node cache (key, nodes (n, levels), cached steps (n,)), rebuilt when the key changed."""
        cache = c._node_cache
        if cache is None or not np.array_equal(cache[0], c._key):  # the nodes are a function of the key
            cache = (c._key.copy(), np.zeros((c.n, c.levels)), np.zeros(c.n, dtype=np.int64))
            c._node_cache = cache
        return cache

    def noise_cache_bytes(self, c: NodeTree) -> int:
        """Bytes of the node cache (0 before the first whole-table release)."""
        cache = c._node_cache
        return 0 if cache is None else cache[1].nbytes + cache[2].nbytes


STORED_NODES: StoredNodes[FactorisedCounter] = StoredNodes(sources.STORED)
PHILOX_NODES = PhiloxNodes(sources.DERIVED)
PHILOX_NOISE: PhiloxNoise[FactorisedCounter] = PhiloxNoise(sources.DERIVED)
"""Philox noise of a factorisation drawing its own normals from the key (``_blt_derived``)."""
PHILOX_NORMALS: PhiloxNormals[FactorisedCounter] = PhiloxNormals(sources.DERIVED)
"""Philox noise of a factorisation whose normals are ``philox.node_normal`` (``toeplitz_push.derived_release``)."""
