"""Exact discrete Gaussian node noise from a keyed ChaCha20 stream, for the tree counters (``tree_noise``).

Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (2020) for the noise and its privacy;
``dpstream.secure`` for the generator, the integer-only samplers and the calibration. Four sources: derived at
release (``DiscreteNodes``, ``node_noise="discrete_secure"``), the same keeping a block's nodes drawn ahead
(``AheadNodes``, ``discrete_secure_ahead``), the same with a constant-time table sampler (``ConstantTimeNodes``,
``discrete_secure_ct``), and drawn when a node closes and stored (``KeyedStoredNodes``, ``discrete_secure_stored``).

Calibration (every source here): sigma^2 from ``discrete_gaussian.discrete_gaussian_sigma2`` for the tree's integer
squared L2 sensitivity (h m for the binary tree: one node per level), a rational rounded up; the counter's
``calibration`` is ignored, the discrete Gaussian has its own bound. Privacy: (epsilon, delta)-DP under continual
observation for m-neighbouring inputs, COMPUTATIONALLY (ChaCha20 as a pseudorandom function): independent discrete
Gaussian noise on the integer node sums has the delta bound of ``discrete_gaussian.discrete_gaussian_delta`` (the
exact Gaussian curve at sigma^2 - s^2 plus a total-variation term, or Canonne-Kamath-Steinke's zCDP conversion when
smaller). Every release of the binary tree is an integer.

Key: ``seed=None`` takes 32 bytes from ``secrets.token_bytes`` (``deployable``); a seed derives it reproducibly from
the seed (certified when calibrated, NOT deployable: whoever knows the seed knows the noise). The key is never shown
in ``repr`` or results; ``to_bytes`` state files hold it and are SECRET. A restored counter is never deployable
(unverifiable, docs/secure-noise.md).
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction
from typing import Any

import numpy as np

from dpstream import serial
from dpstream.counters import sources
from dpstream.counters.node_tree import NodeTree
from dpstream.counters.tree_noise import DerivedNodes, TreeNoise
from dpstream.noise import as_seed_sequence
from dpstream.privacy.discrete_gaussian import discrete_gaussian_sigma2
from dpstream.privacy.maps import DiscreteGaussianMap, PrivacyMap
from dpstream.secure import cdt, lanes, sequential
from dpstream.secure import release as secure_release
from dpstream.secure.chacha import KEY_BYTES, key_words
from dpstream.secure.samplers import EXACT_SAMPLER, gaussian_params, gaussian_table, new_state

DELTA_SHARE = 2.0**-10
"""The share of delta the constant-time sampler's distance from the exact discrete Gaussian takes."""
AHEAD_BYTES = 8
"""Bytes of one node kept ahead (an int64 in the node cache)."""


class DiscreteCalibration(TreeNoise[NodeTree]):
    """What every exact discrete Gaussian source shares: sigma^2, the key, the sampler's state, the privacy map.

    ``setup`` (from the source's ``allocate``) sets on the counter ``sigma2`` (Fraction, calibrated for
    ``calibration_delta``), ``sigma``, the sampler's parameters (``prepare_sampler``), ``deployable``, the key
    ``_key`` (8 uint32) and the sampler state ``_st``.
    """

    exact_sampler: str | None = EXACT_SAMPLER
    """The exact sampler's version, written by ``to_bytes`` and checked on restore (None: another sampler)."""

    def setup(self, c: NodeTree) -> None:
        """Calibrate sigma^2 (kappa != 1 scales it, NOT certified), prepare the sampler, make the key."""
        self.check_keyed(c)
        multiplier = c._noise_scale / c.sigma
        c.sigma2 = discrete_gaussian_sigma2(c.squared_sensitivity, c.epsilon, self.calibration_delta(c))
        scaled = c.sigma2
        if multiplier != 1.0:  # NOT certified (``Counter``): sigma^2 times multiplier^2, rounded up on the same grid
            b = c.sigma2.denominator
            scaled = Fraction(math.ceil(c.sigma2 * Fraction(multiplier) ** 2 * b), b)
        c._noiseless = scaled == 0
        if not c._noiseless:
            self.prepare_sampler(c, scaled)
        c.sigma = math.sqrt(c.sigma2)
        c._noise_scale = math.sqrt(scaled)
        seeded = c._seed is not None
        c.deployable = not seeded and c.certified
        if seeded:
            # words 8..15 of the seed's state stream: past the 8 that numpy's PCG64 takes from the same seed
            raw = as_seed_sequence(c._seed).generate_state(16, np.uint32)[8:]
            c._key = np.ascontiguousarray(raw, dtype=np.uint32)
        else:
            c._key = key_words(secrets.token_bytes(KEY_BYTES))
        c._st = new_state()

    def prepare_sampler(self, c: NodeTree, scaled: Fraction) -> None:
        """Parameters of the rejection sampler for N_Z(0, scaled) (range-checked) and its table (cached per sigma^2)."""
        c._abt = np.array(gaussian_params(scaled.numerator, scaled.denominator), dtype=np.int64)
        gaussian_table(int(c._abt[0]), int(c._abt[1]))

    def table_bytes(self, c: NodeTree) -> int:
        """Bytes of the exact sampler's table (0 without noise): public, a function of sigma^2, not state."""
        if c._noiseless:
            return 0
        hi, lo, _, first_v = gaussian_table(int(c._abt[0]), int(c._abt[1]))
        return hi.nbytes + lo.nbytes + first_v.nbytes

    def privacy_map(self, c: NodeTree) -> PrivacyMap:
        """The held N_Z(0, sigma^2) node noise at the integer squared sensitivity (``DiscreteGaussianMap``)."""
        return DiscreteGaussianMap(c.squared_sensitivity, c.sigma2)

    def constants(self, c: NodeTree) -> dict[str, Any]:
        """sigma^2 as a rational."""
        return {"sigma2": str(c.sigma2)}

    def scalars_restored(self, c: NodeTree) -> None:
        """A restored counter is not deployable (unverifiable: docs/secure-noise.md)."""
        c.deployable = False


class DiscreteNodes(DiscreteCalibration, DerivedNodes[NodeTree]):
    """N_Z(0, sigma^2) nodes derived from (key, cell, level, node index) by ChaCha20 at release (``discrete_secure``).

    Timing (level 1, always on): a release at step s draws every node of s's block of 2^``block_levels`` steps
    (``secure.release.block_noise_sums``), using those s needs, so its work is the same at every step of the block:
    an observer who times a release learns at most the total work of its block. Here the block's other nodes are
    drawn again at each release, not kept: a node drawn ahead of its use is counted in ``memory_bytes`` (2^k - 1
    values per cell, at 24 KB half a LazyCMS's width), which ``AheadNodes`` pays for. Values are the same as without
    blocks (nodes are derived).

    Whole-table releases (``release_all``: every sketch query and LazyHH refresh) keep a node cache: per counter,
    one node for each level >= k (the last node of that level a release used), its last release step and a step of
    its previous block, (n, 1 + h - k) and (2, n) int64. A release then draws the block's 2^k - 1 nodes below level
    k and only those of its nodes >= k that the previous block does not share (``secure.release.cached_noise_sums``):
    the same set at every step of the block, fixed by the release times alone, so the level-1 property holds with
    fewer draws (one push apart: 2 nodes a cell instead of popcount + 1); a release at the cell's last release step
    draws nothing. Every node in the cache has been used by a release already; with this source none is drawn ahead.
    It is a speed cache outside the state, as Philox's: not in ``memory_bytes`` (its size is ``noise_cache_bytes``,
    several times the counts' bytes), not serialised, dropped when a release raises and rebuilt on demand; it is as
    secret as the key.
    """

    keeps_block = False
    """Whether whole-table releases keep the block's nodes below level k, drawn ahead (``AheadNodes``)."""

    def allocate(self, c: NodeTree) -> None:
        """Calibration and key (``setup``), then the exact counts."""
        self.setup(c)
        super().allocate(c)

    def sampler(self, c: NodeTree) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The draws' sampler for ``secure.lanes`` (sampler, hi, lo) and the timing block levels k."""
        a, b, t = c._abt
        return (*lanes.gaussian(a, b, t, c._chunks), c.block_levels)

    def state_arrays(self, c: NodeTree) -> dict[str, np.ndarray]:
        """The key (after a running prefetch settles)."""
        c._settled()
        return super().state_arrays(c)

    def state_scalars(self, c: NodeTree) -> dict[str, Any]:
        """The exact sampler's version (``samplers.EXACT_SAMPLER``) if it draws the nodes."""
        return {} if self.exact_sampler is None else {"exact_sampler": self.exact_sampler}

    def restore_scalars(self, c: NodeTree, scalars: dict[str, Any]) -> None:
        """Refuse a state whose nodes another version of the exact sampler drew.

        Restored, it would release other values for nodes it has already released (the nodes are drawn again at each
        release): two noisy copies of the same sums, which the privacy guarantee does not cover.
        """
        c._settled()
        found = scalars.get("exact_sampler")
        if self.exact_sampler is not None and found != self.exact_sampler:
            which = (f"exact_sampler={found!r}" if found else
                     "this state names no exact sampler (written by the rejection sampler before the tables)")
            raise serial.SerialError(f"{which}, not this version's {self.exact_sampler!r}: its node noise came from "
                                     "another sampler and continuing it could release other noise for nodes already "
                                     "released. Finish its stream with the dpstream version that wrote it")

    def noise_sums(self, c: NodeTree, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """The nodes' noise sums of ``cells`` at tree steps ``steps`` (``secure.release.sampled_noise_sums``)."""
        c._settled()
        return secure_release.sampled_noise_sums(c._key, *self.sampler(c), cells, np.ascontiguousarray(steps), c._st)

    def release(self, c: NodeTree, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the nodes' discrete Gaussian noise at each release's tree step (integers as float64)."""
        return self.release_at(c, cells, steps if c._noiseless else c.tree_steps(steps))

    def release_at(self, c: NodeTree, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """``release`` at tree steps ``steps``."""
        exact = c._exact[0, cells].astype(np.int64)
        if c._noiseless:
            return exact.astype(np.float64)
        return (exact + self.noise_sums(c, np.ascontiguousarray(cells), steps)).astype(np.float64)

    def release_all(self, c: NodeTree, steps: np.ndarray) -> np.ndarray:
        """Every counter's release at ``steps`` (n,), drawing only the nodes not kept from earlier blocks.

        ``secure.release.cached_noise_sums``: the values are ``release``'s; the node cache is described in the class
        doc.
        """
        steps, cacheable = c._table_steps(steps)
        if c._noiseless or not cacheable:
            return self.release_at(c, np.arange(c.n), steps)
        sampler, hi, lo, k = self.sampler(c)
        nodes, blocks = self._node_cache(c, k)
        draw = secure_release.cached_noise_sums if c._prefetch is None else c._prefetch.sums
        try:
            noise = draw(c._key, sampler, hi, lo, k, steps, c._st, nodes, blocks, self.keeps_block)
        except BaseException:  # the cache may hold draws not yet settled: drop it, the next release rebuilds it
            c._kept_nodes = None
            raise
        return (c._exact[0].astype(np.int64) + noise).astype(np.float64)

    def release_wanted(self, c: NodeTree, steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """``release_all``: the block's draws are made for every cell whatever is read."""
        return self.release_all(c, steps)

    def _node_cache(self, c: NodeTree, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The node cache (nodes (n, b + h - k), blocks (2, n)), new when the key, k or b changed (nodes are the key's).

        b: 1 column for the in-block sum, or, ``keeps_block``, 2^k - 1, one per in-block node.
        """
        cache = c._kept_nodes
        width = int(secure_release.in_block_columns(np.int64(k), self.keeps_block)) + max(c.levels - k, 0)
        if (cache is None or cache[0] != k or cache[2].shape[1] != width
                or not np.array_equal(cache[1], c._key)):
            nodes = np.zeros((c.n, width), dtype=np.int64)
            cache = (k, c._key.copy(), nodes, np.full((2, c.n), -1, dtype=np.int64))
            c._kept_nodes = cache
        return cache[2], cache[3]

    def noise_cache_bytes(self, c: NodeTree) -> int:
        """Bytes of the node cache of ``release_all`` (0 before the first whole-table release)."""
        cache = c._kept_nodes
        return 0 if cache is None else cache[2].nbytes + cache[3].nbytes

    def memory_bytes(self, c: NodeTree) -> int:
        """Bytes of the exact counts and the key (the node cache is not state: ``noise_cache_bytes``)."""
        c._settled()
        return super().memory_bytes(c)


class AheadNodes(DiscreteNodes):
    """``DiscreteNodes`` whose whole-table releases keep the nodes of a block drawn at its first release.

    The same values, privacy statement, key and partial releases. A whole-table release (``release_all``) at a
    cell's first step in a block of 2^k steps draws D(s), which holds the block's 2^k - 1 nodes below level k, and
    keeps those nodes; the cell's later releases in the block draw nothing (``secure.release.cached_noise_sums`` with
    ``ahead``). Timing level 1 as the issue states it: the block's nodes are drawn at once, at the cell's first
    whole-table release in the block (whichever step of it that is), so a release reveals the work of its whole
    block or none. Half the draws of ``DiscreteNodes`` where releases are one push apart (a LazyHH refresh at every
    period). Partial releases (``release``) draw the whole block each time, as ``DiscreteNodes``'.

    Memory: the kept nodes are drawn ahead of their use, so they are state: 2^k - 1 int64 per counter (8 bytes at
    k = 1) in ``bytes_per_counter`` and ``memory_bytes``, which at a fixed budget buys fewer counters (a LazyCMS at 24
    KB, int64 counts: 497 columns instead of 994); the rest of the node cache stays ``noise_cache_bytes``.
    """

    keeps_block = True

    def bytes_per_counter(self, tree: type[NodeTree], horizon: int, count_bytes: int) -> int:
        """The exact count and the 2^k - 1 nodes of a block kept ahead."""
        return count_bytes + AHEAD_BYTES * ((1 << tree.block_levels) - 1)

    def noise_cache_bytes(self, c: NodeTree) -> int:
        """The node cache without the nodes kept ahead (those are in ``memory_bytes``)."""
        cache = c._kept_nodes
        return 0 if cache is None else super().noise_cache_bytes(c) - c.n * AHEAD_BYTES * ((1 << cache[0]) - 1)

    def memory_bytes(self, c: NodeTree) -> int:
        """The exact counts, the key and the nodes kept ahead: n ``bytes_per_counter`` + the key, from the start."""
        return c.n * self.bytes_per_counter(type(c), c.horizon, c._exact.itemsize) + self.source.key_bytes


class ConstantTimeNodes(DiscreteNodes):
    """``DiscreteNodes`` whose node draws take the same work whatever their value (``secure.cdt``).

    Each node value is one draw of a cumulative-table sampler for N_Z(0, sigma^2) truncated to [-K, K]: one ChaCha20
    block, a fixed 4 keystream words (``words_consumed`` grows by 4 per node) and a full branch-free scan of the K
    table entries. A release at step s draws popcount(s) nodes per cell, so the words and iterations of every release
    are a function of the cells' steps (the time) alone; a whole-table release, with the node cache (k = 0), draws
    only the nodes of s that the cell's previous release step does not share, a function of the release times. The
    table (2 x 8 bytes per entry) is a public constant of (sigma^2, K), recomputed on restore: reported as
    ``table_bytes``, not in ``memory_bytes`` (the state).

    Privacy: as ``DiscreteNodes``, where delta is split: sigma^2 is calibrated for ``calibration_delta`` = delta (1 -
    2^-10), and the sampler's distance to the exact discrete Gaussian, summed over every draw the stream can make,
    ``sampler_delta`` = (1 + e^eps) N eta <= delta 2^-10 (``secure.cdt``: eta = P(|Y| > K) + (K + 1) 2^-126 per
    draw; N = n x horizon, at least the number of distinct nodes the n counters can release over their horizon).
    K is the smallest table size whose tail term fits half that share. ``privacy.sampler_delta`` of the sketches and
    GaussBM built on it shows the term; the stated delta is the total. ``variance``: popcount(s) sigma^2 (the truncated
    table's variance is below the discrete Gaussian's up to K^3 2^-126).
    """

    exact_sampler = None

    def calibration_delta(self, c: NodeTree) -> float:
        """The delta sigma^2 is calibrated for, delta (1 - 2^-10): the rest of delta is the sampler's."""
        return c.delta * (1 - DELTA_SHARE)

    def sampler_delta(self, c: NodeTree) -> float:
        """(1 + e^eps) N eta: the constant-time sampler's addition to delta (0 without noise)."""
        return 0.0 if c._noiseless else c._sampler_delta

    def prepare_sampler(self, c: NodeTree, scaled: Fraction) -> None:
        """The table of size K for N_Z(0, scaled) over N = n x horizon draws (``secure.cdt``)."""
        gaussian_params(scaled.numerator, scaled.denominator)  # the same sigma range as the exact sampler
        sigma2 = float(scaled)
        draws_bound = c.n * c.horizon  # no counter releases more distinct nodes than it has steps
        c.table_size = cdt.table_size(sigma2, draws_bound, c.epsilon, c.delta * DELTA_SHARE)
        c._hi, c._lo = cdt.cdt_table(scaled.numerator, scaled.denominator, c.table_size)
        c._sampler_delta = cdt.sampler_delta(sigma2, c.table_size, draws_bound, c.epsilon)

    def sampler(self, c: NodeTree) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The table sampler and no blocks (k = 0): every draw's work is fixed already."""
        return lanes.table(), c._hi, c._lo, 0

    def constants(self, c: NodeTree) -> dict[str, Any]:
        """sigma^2, and the table size K and the sampler's delta (with noise)."""
        extra = {} if c._noiseless else {"table_size": c.table_size, "sampler_delta": c._sampler_delta}
        return {**super().constants(c), **extra}

    def table_bytes(self, c: NodeTree) -> int:
        """Bytes of the sampler's table (public, recomputed from sigma^2 and K; 0 without noise)."""
        return 0 if c._noiseless else c._hi.nbytes + c._lo.nbytes


class KeyedStoredNodes(DiscreteCalibration):
    """N_Z(0, sigma^2) nodes drawn when the node closes and stored (``discrete_secure_stored``).

    Every node's noise is one draw made when the node closes, from a ChaCha20 stream keyed by the counter's secret key
    (``secure.sequential``: draw number i has its own stream, batched and compiled), and stored in the tree as the
    numpy noise of ``StoredNodes`` is. The trees' push kernels are unchanged: the draws arrive as float64 values that
    are integers (exact below 2^53), so the stored binary tree's noisy sums and releases are exact integers and
    Honaker's estimates are post-processing of exact integer node values.

    State beside the tree's: the key ``_key`` (8 uint32) and ``_drawn`` (1 int64), the number of the next draw, written
    by ``to_bytes`` so a restored counter goes on with fresh streams and never repeats one.

    Timing: the draws are made at push time, so the time of an update (or of a sketch's block of updates) depends on
    the noise values drawn in it (rejection sampling); a release only reads stored values. ``discrete_secure``
    draws at release instead; docs/secure-noise.md says what an observer sees in each.
    """

    exact_sampler = None  # the stored values are state: another sampler version changes no value already drawn

    def allocate(self, c: NodeTree) -> None:
        """The factorisation's stored tree, then calibration and key (``setup``) and the draw count."""
        super().allocate(c)
        self.setup(c)
        c._drawn = np.zeros(1, dtype=np.int64)

    def draw(self, c: NodeTree, size: int) -> np.ndarray:
        """The next ``size`` node noises N_Z(0, sigma^2) (integers as float64), in the order the pushes take them."""
        size = int(size)
        if c._noiseless:
            return np.zeros(size)
        a, b, t = c._abt
        out = sequential.draws(c._key, c._drawn[0], np.int64(size), a, b, t, c._st, c._chunks)
        c._drawn[0] += size
        return out.astype(np.float64)

    def state_arrays(self, c: NodeTree) -> dict[str, np.ndarray]:
        """The key and the draw count."""
        return {"key": c._key, "drawn": c._drawn}

    def arrays_restored(self, c: NodeTree) -> None:
        """Refuse a negative draw count."""
        if c._drawn[0] < 0:
            raise ValueError(f"corrupt state: {type(c).__name__} drawn={int(c._drawn[0])} < 0")


DISCRETE_NODES = DiscreteNodes(sources.DISCRETE_SECURE)
AHEAD_NODES = AheadNodes(sources.DISCRETE_SECURE_AHEAD)
CONSTANT_TIME_NODES = ConstantTimeNodes(sources.DISCRETE_SECURE_CT)
KEYED_STORED_NODES = KeyedStoredNodes(sources.DISCRETE_SECURE_STORED)
