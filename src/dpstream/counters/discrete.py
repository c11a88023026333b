"""The binary tree with derived EXACT discrete Gaussian node noise from a keyed ChaCha20 stream.

Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy" (2020) for the noise and its privacy;
``dpstream.secure`` for the generator, the integer-only samplers and the calibration.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpstream import serial
from dpstream.counters import _kernels as kernels
from dpstream.counters import sources
from dpstream.counters._discrete_noise import DiscreteNoise
from dpstream.counters.binary import BinaryTree, DerivedState
from dpstream.secure import cdt, lanes
from dpstream.secure import release as secure_release
from dpstream.secure.samplers import EXACT_SAMPLER, gaussian_params


class DiscreteSecureBinary(DiscreteNoise, BinaryTree):
    """Binary tree, node noise N_Z(0, sigma^2) derived from (key, cell, level, node index) by ChaCha20.

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring inputs (at most m counters change,
    each by at most 1 at one step), COMPUTATIONALLY (ChaCha20 as a pseudorandom function): the node sums have integer
    L2 sensitivity sqrt(h m), and independent discrete Gaussian noise on them has the delta bound of
    ``discrete_gaussian.discrete_gaussian_delta`` (the exact Gaussian curve at sigma^2 - s^2 plus a total-variation
    term, or Canonne-Kamath-Steinke's zCDP conversion when smaller); ``discrete_gaussian.discrete_gaussian_sigma2``
    gives sigma^2 as a rational rounded up (``calibration`` is ignored: the discrete Gaussian has its own bound).
    Every release is an integer.

    Key: ``seed=None`` takes 32 bytes from ``secrets.token_bytes`` (``deployable``); a seed derives it
    reproducibly from the seed (certified when calibrated, NOT deployable: whoever knows the seed knows the noise).
    The key is never shown in ``repr`` or results; ``to_bytes`` state files hold it and are SECRET.

    Timing (level 1, always on): a release at step s draws every node of s's block of 2^``block_levels`` steps
    (``secure.release.block_noise_sums``), using those s needs, so its work is the same at every step of the block:
    an observer who times a release learns at most the total work of its block. Here the block's other nodes are
    drawn again at each release, not kept: a node drawn ahead of its use is counted in ``memory_bytes`` (2^k - 1
    values per cell, at 24 KB half a LazyCMS's width), which ``AheadDiscreteBinary`` pays for. Values are the
    same as without blocks (nodes are derived).

    Whole-table releases (``release_all``: every sketch query and LazyHH refresh) keep a node cache: per counter,
    one node for each level >= k (the last node of that level a release used), its last release step and a step of
    its previous block, (n, 1 + h - k) and (2, n) int64. A release then draws the block's 2^k - 1 nodes below level
    k and only those of its nodes >= k that the previous block does not share (``secure.release.cached_noise_sums``):
    the same set at every step of the block, fixed by the release times alone, so the level-1 property holds with
    fewer draws (one push apart: 2 nodes a cell instead of popcount + 1); a release at the cell's last release step
    draws nothing. Every node in the cache has been used by a release already; in this class none is drawn ahead.
    It is a speed cache outside the state, as ``DerivedBinary``'s: not in
    ``memory_bytes`` (its size is ``noise_cache_bytes``, several times the counts' bytes), not serialised, dropped
    when a release raises and rebuilt on demand; it is as secret as the key.
    """

    source = sources.DISCRETE_SECURE
    exact_sampler: str | None = EXACT_SAMPLER
    """The exact sampler's version, written by ``to_bytes`` and checked on restore (None: another sampler)."""
    kind = kernels.DERIVED  # pushes as the derived tree (the exact sums only); the noise differs at release
    tracks_steps = False
    block_levels = 1
    """Timing level 1: a release draws every node of its block of 2^k steps (``release.block_noise_sums``)."""
    keeps_block = False
    """Whether whole-table releases keep the block's nodes below level k, drawn ahead (``AheadDiscreteBinary``)."""
    _kept_nodes: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
    """The node cache of ``release_all``: (k, key, nodes, blocks), or None before the first (or after a failed) one."""
    _prefetch: secure_release.Prefetch | None = None
    """Set by ``prefetch_releases``: whole-table releases drawn one step ahead on a second thread."""

    def prefetch_releases(self) -> None:
        """Draw each whole-table release's successor (every step + 1) on a second thread (``release.Prefetch``).

        For a caller whose whole-table releases move one step at a time (a LazyHH refresh): the same values, drawn
        while the caller works on the next items. The draws land in the node cache and ``_st`` only.
        """
        self._prefetch = secure_release.Prefetch()

    def _settled(self) -> None:
        """Wait for a running prefetch (before anything reads or writes ``_st`` or the node cache)."""
        if self._prefetch is not None:
            self._prefetch.wait()

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """The exact count alone (the key is ``fixed_bytes``)."""
        return count_bytes

    def _allocate(self) -> None:
        self._discrete_setup()
        self._exact: np.ndarray = np.zeros((1, self.n), dtype=self.count_dtype)
        self.state = DerivedState(self._exact)

    def _noise_sums(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        self._settled()
        return secure_release.sampled_noise_sums(self._key, *self._sampler(), cells, steps, self._st)

    def _sampler(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The draws' sampler for ``secure.lanes`` (sampler, hi, lo) and the timing block levels k."""
        a, b, t = self._abt
        return (*lanes.gaussian(a, b, t, self._chunks), self.block_levels)

    def noise_count(self, steps: np.ndarray) -> int:
        """No draws at push time: the noise is derived at release."""
        return 0

    def _state_arrays(self) -> dict[str, np.ndarray]:
        self._settled()
        return {**super()._state_arrays(), "key": self._key}

    def _state_scalars(self) -> dict[str, Any]:
        """As ``DiscreteNoise``, and the exact sampler's version (``samplers.EXACT_SAMPLER``) if it draws the nodes."""
        scalars = super()._state_scalars()
        if self.exact_sampler is not None:
            scalars["exact_sampler"] = self.exact_sampler
        return scalars

    def _restore_scalars(self, scalars: dict[str, Any]) -> None:
        """Refuse a state whose nodes another version of the exact sampler drew, then restore.

        Restored, it would release other values for nodes it has already released (the nodes are drawn again at each
        release): two noisy copies of the same sums, which the privacy guarantee does not cover.
        """
        self._settled()
        found = scalars.get("exact_sampler")
        if self.exact_sampler is not None and found != self.exact_sampler:
            which = (f"exact_sampler={found!r}" if found else
                     "this state names no exact sampler (written by the rejection sampler before the tables)")
            raise serial.SerialError(f"{which}, not this version's {self.exact_sampler!r}: its node noise came from "
                                     "another sampler and continuing it could release other noise for nodes already "
                                     "released. Finish its stream with the dpstream version that wrote it")
        super()._restore_scalars(scalars)

    def variance(self, steps: np.ndarray | int) -> np.ndarray:
        """popcount(s) sigma^2: an upper bound (the discrete Gaussian's variance is slightly below sigma^2)."""
        return super().variance(steps)

    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the nodes' discrete Gaussian noise (integers, returned as float64)."""
        cells = np.asarray(cells, dtype=np.int64)
        steps = np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), cells.shape))
        exact = self._exact[0, cells].astype(np.int64)
        if self._noiseless:
            return exact.astype(np.float64)
        return (exact + self._noise_sums(np.ascontiguousarray(cells), steps)).astype(np.float64)

    def release_all(self, steps: np.ndarray) -> np.ndarray:
        """Every counter's release at ``steps`` (n,), drawing only the nodes not kept from earlier blocks.

        ``secure.release.cached_noise_sums``: the values are ``release``'s; the node cache is described in the class
        doc.
        """
        steps, cacheable = self._table_steps(steps)
        if self._noiseless or not cacheable:
            return self.release(np.arange(self.n), steps)
        sampler, hi, lo, k = self._sampler()
        nodes, blocks = self._node_cache(k)
        draw = secure_release.cached_noise_sums if self._prefetch is None else self._prefetch.sums
        try:
            noise = draw(self._key, sampler, hi, lo, k, steps, self._st, nodes, blocks, self.keeps_block)
        except BaseException:  # the cache may hold draws not yet settled: drop it, the next release rebuilds it
            self._kept_nodes = None
            raise
        return (self._exact[0].astype(np.int64) + noise).astype(np.float64)

    def _node_cache(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The node cache (nodes (n, b + h - k), blocks (2, n)), new when the key, k or b changed (nodes are the key's).

        b: 1 column for the in-block sum, or, ``keeps_block``, 2^k - 1, one per in-block node.
        """
        cache = self._kept_nodes
        width = int(secure_release.in_block_columns(np.int64(k), self.keeps_block)) + max(self.levels - k, 0)
        if (cache is None or cache[0] != k or cache[2].shape[1] != width
                or not np.array_equal(cache[1], self._key)):
            nodes = np.zeros((self.n, width), dtype=np.int64)
            cache = (k, self._key.copy(), nodes, np.full((2, self.n), -1, dtype=np.int64))
            self._kept_nodes = cache
        return cache[2], cache[3]

    @property
    def noise_cache_bytes(self) -> int:
        """Bytes of the node cache of ``release_all`` (0 before the first whole-table release)."""
        cache = self._kept_nodes
        return 0 if cache is None else cache[2].nbytes + cache[3].nbytes

    @property
    def memory_bytes(self) -> int:
        """Bytes of the exact counts and the key (the node cache is not state: ``noise_cache_bytes``)."""
        return self._exact.nbytes + self._key.nbytes


class AheadDiscreteBinary(DiscreteSecureBinary):
    """``DiscreteSecureBinary`` whose whole-table releases keep the nodes of a block drawn at its first release.

    The same values, privacy statement (computational (epsilon, delta)-DP under continual observation for
    m-neighbouring inputs, as ``DiscreteSecureBinary``), key and partial releases. A whole-table release
    (``release_all``) at a cell's first step in a block of 2^k steps draws D(s), which holds the block's 2^k - 1 nodes
    below level k, and keeps those nodes; the cell's later releases in the block draw nothing
    (``secure.release.cached_noise_sums`` with ``ahead``). Timing level 1 as the issue states it: the block's nodes
    are drawn at once, at the cell's first whole-table release in the block (whichever step of it that is), so a
    release reveals the work of its whole block or none. Half the draws of ``DiscreteSecureBinary`` where releases
    are one push apart (a LazyHH refresh at every period). Partial releases (``release``) draw the whole block each
    time, as ``DiscreteSecureBinary``'s.

    Memory: the kept nodes are drawn ahead of their use, so they are state: 2^k - 1 int64 per counter (8 bytes at
    k = 1) in ``bytes_per_counter`` and ``memory_bytes``, which at a fixed budget buys fewer counters (a LazyCMS at 24
    KB, int64 counts: 497 columns instead of 994); the rest of the node cache stays ``noise_cache_bytes``.
    """

    source = sources.DISCRETE_SECURE_AHEAD
    keeps_block = True
    AHEAD_BYTES = 8
    """Bytes of one node kept ahead (an int64 in the node cache)."""

    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """The exact count and the 2^k - 1 nodes of a block kept ahead."""
        return count_bytes + cls.AHEAD_BYTES * ((1 << cls.block_levels) - 1)

    @property
    def noise_cache_bytes(self) -> int:
        """The node cache without the nodes kept ahead (those are in ``memory_bytes``)."""
        cache = self._kept_nodes
        return 0 if cache is None else super().noise_cache_bytes - self.n * self.AHEAD_BYTES * ((1 << cache[0]) - 1)

    @property
    def memory_bytes(self) -> int:
        """The exact counts, the key and the nodes kept ahead: n ``bytes_per_counter`` + the key, from the start."""
        count_bytes = self._exact.itemsize
        return self.n * type(self).bytes_per_counter(self.horizon, count_bytes) + self.fixed_bytes


class ConstantTimeDiscreteBinary(DiscreteSecureBinary):
    """``DiscreteSecureBinary`` whose node draws take the same work whatever their value (``secure.cdt``).

    Each node value is one draw of a cumulative-table sampler for N_Z(0, sigma^2) truncated to [-K, K]: one ChaCha20
    block, a fixed 4 keystream words (``words_consumed`` grows by 4 per node) and a full branch-free scan of the K
    table entries. A release at step s draws popcount(s) nodes per cell, so the words and iterations of every release
    are a function of the cells' steps (the time) alone; a whole-table release, with the node cache (k = 0), draws
    only the nodes of s that the cell's previous release step does not share, a function of the release times. The
    table (2 x 8 bytes per entry) is a public constant of (sigma^2, K), recomputed on restore: reported as
    ``table_bytes``, not in ``memory_bytes`` (the state).

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring inputs, COMPUTATIONALLY (as
    ``DiscreteSecureBinary``), where delta is split: sigma^2 is calibrated for ``calibration_delta`` = delta (1 -
    2^-10), and the sampler's distance to the exact discrete Gaussian, summed over every draw the stream can make,
    ``sampler_delta`` = (1 + e^eps) N eta <= delta 2^-10 (``secure.cdt``: eta = P(|Y| > K) + (K + 1) 2^-126 per
    draw; N = n x horizon, at least the number of distinct nodes the n counters can release over their horizon).
    K is the smallest table size whose tail term fits half that share. ``privacy.sampler_delta`` of the sketches and
    GaussBM built on it shows the term; the stated delta is the total.
    """

    source = sources.DISCRETE_SECURE_CT
    exact_sampler = None
    DELTA_SHARE = 2.0**-10
    """The share of delta given to the sampler's distance from the exact discrete Gaussian."""

    @property
    def calibration_delta(self) -> float:
        """The delta sigma^2 is calibrated for, delta (1 - 2^-10): the rest of delta is the sampler's."""
        return self.delta * (1 - self.DELTA_SHARE)

    @property
    def sampler_delta(self) -> float:
        """(1 + e^eps) N eta: the constant-time sampler's addition to delta (0 without noise)."""
        return 0.0 if self._noiseless else self._sampler_delta

    @property
    def draws_bound(self) -> int:
        """N = n x horizon: no counter releases more distinct nodes than it has steps."""
        return self.n * self.horizon

    def _prepare_sampler(self, scaled: Fraction) -> None:
        gaussian_params(scaled.numerator, scaled.denominator)  # the same sigma range as the exact sampler
        sigma2 = float(scaled)
        self.table_size = cdt.table_size(sigma2, self.draws_bound, self.epsilon, self.delta * self.DELTA_SHARE)
        self._hi, self._lo = cdt.cdt_table(scaled.numerator, scaled.denominator, self.table_size)
        self._sampler_delta = cdt.sampler_delta(sigma2, self.table_size, self.draws_bound, self.epsilon)

    def _sampler(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The table sampler and no blocks (k = 0): every draw's work is fixed already."""
        return lanes.table(), self._hi, self._lo, 0

    def _constants(self) -> dict[str, Any]:
        extra = {} if self._noiseless else {"table_size": self.table_size, "sampler_delta": self._sampler_delta}
        return {**super()._constants(), **extra}

    @property
    def table_bytes(self) -> int:
        """Bytes of the sampler's table (public, recomputed from sigma^2 and K; 0 without noise)."""
        return 0 if self._noiseless else self._hi.nbytes + self._lo.nbytes

    def variance(self, steps: np.ndarray | int) -> np.ndarray:
        """popcount(s) sigma^2 (the truncated table's variance is below the discrete Gaussian's up to K^3 2^-126)."""
        return super().variance(steps)
