"""The BLT counter with its noise derived from a key instead of stored in buffers (``DerivedBLT``).

The BLT counter (``BLTCounter``; Dvijotham, McMahan, Pillutla, Steinke, Thakurta, "Efficient and near-optimal noise
generation for streaming differential privacy", FOCS 2024) keeps k buffers and a running total per counter (48
bytes). Here a counter keeps only its exact count: the release at step s regenerates its noise from the dyadic block
vectors of the prefix, derived top down from Philox as the derived binary tree derives its nodes (``blt_tree``,
``_blt_derived``), with exactly the joint law of the stored BLT's noise over all steps and counters.
"""

from __future__ import annotations

import numpy as np

from dpstream.counters import _blt_derived
from dpstream.counters import blt_params as blt
from dpstream.counters.binary import DerivedState, PhiloxDerived
from dpstream.counters.blt import BUFFERS, BLTCounter
from dpstream.counters.blt_tree import block_tree, tree_bytes


class DerivedBLT(PhiloxDerived, BLTCounter):
    """BLT noise sigma (A C^{-1} z)_s regenerated at each release from a 128-bit Philox key; one count per counter.

    Privacy: (epsilon, delta)-DP under continual observation for m-neighbouring counter arrays (at most m counters
    change, each by at most 1 at one step), as ``BLTCounter`` (the same sigma, for L2 sensitivity sqrt(m) ||C e_1||),
    COMPUTATIONALLY: the releases have the stored BLT's joint distribution exactly when Philox4x64-10 is a random
    function (``blt_tree``: the block vectors are generated with the joint law of the z's); against an observer who
    cannot tell Philox from random the guarantee holds as stated, against an unbounded one it does not. The key must
    stay secret: ``seed=None`` takes it from the operating system's entropy. ``noise=secure`` is refused.

    Work: a release costs O(k^2 log T) (one split per level on the path to its step); a push is one integer add.
    Whole-table releases (``release_all``, what a sketch's query reads) keep a path memo per counter, (H + 1, 2 (k + 1))
    float64: the split halves on its last released step's path, so the next release regenerates only the levels where
    its path differs. It is a speed cache outside the state: not in ``memory_bytes`` (its size is
    ``noise_cache_bytes``), not serialised, rebuilt on demand; it is as secret as the key.
    """


    @classmethod
    def bytes_per_counter(cls, horizon: int, count_bytes: int) -> int:
        """The exact count alone (the key is ``fixed_bytes``)."""
        return count_bytes

    @classmethod
    def working_bytes(cls, horizon: int) -> int:
        """The calibration's tables (``BLTCounter.working_bytes``) and the generation tables (``tree_bytes``)."""
        return super().working_bytes(horizon) + tree_bytes(BUFFERS, max(1, horizon.bit_length()))

    def _allocate(self) -> None:
        if self._noise.mode == "secure":
            raise ValueError("noise=secure is not available with counter='blt', node_noise='derived' (its noise comes "
                             "from a keyed Philox generator, not a CSPRNG-keyed exact sampler); allowed: noise=numpy")
        self.params = blt.optimal_blt(max(2, self.horizon), BUFFERS)
        self._coef = np.vstack((self.params.buf_decay, self.params.output_scale)).astype(np.float64)
        self.tree = block_tree(self.params, max(1, self.horizon.bit_length()))
        self._exact: np.ndarray = np.zeros((1, self.n), dtype=self.count_dtype)
        self.state = DerivedState(self._exact)
        # words 4, 5 of the seed's state stream, as ``BinaryTree(node_noise="derived")``: past the 4 words numpy's
        # PCG64 takes
        self._key = self._noise.rng.bit_generator.seed_seq.generate_state(6, np.uint64)[4:]

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The exact counts and the key (the noise is a function of the key)."""
        return {"exact": self._exact, "steps": self._steps, "key": self._key}

    def noise_count(self, steps: np.ndarray) -> int:
        """No draws at push time: the noise is derived at release."""
        return 0

    def release_all(self, steps: np.ndarray) -> np.ndarray:
        """Every counter's release at ``steps`` (n,), with the path memo (``_blt_derived.release_all_cached``)."""
        steps = np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), (self.n,)))
        self._check_steps(steps)
        cache = getattr(self, "_path_cache", None)
        if cache is None or not np.array_equal(cache[0], self._key):  # the paths are a function of the key
            width = 2 * self.tree.factors.shape[1]
            cache = (self._key.copy(), np.zeros((self.n, self.tree.levels + 1, width)), np.zeros(self.n, np.int64))
            self._path_cache = cache
        t = self.tree
        return _blt_derived.release_all_cached(self._exact, self._key, self._noise_scale, steps, t.factors, t.splits,
                                               t.complements, t.dims, t.weights, t.log_decay, cache[1], cache[2])

    @property
    def noise_cache_bytes(self) -> int:
        """Bytes of the path memo of ``release_all`` (0 before the first whole-table release)."""
        cache = getattr(self, "_path_cache", None)
        return 0 if cache is None else cache[1].nbytes + cache[2].nbytes

    def _check_steps(self, steps: np.ndarray) -> None:
        if steps.size and (steps.min() < 0 or steps.max() > self.horizon):
            raise ValueError(f"steps must lie in [0, horizon={self.horizon}], got [{steps.min()}, {steps.max()}]")

    def release(self, cells: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Exact counts plus the key-derived BLT noise of each cell at its step (``_blt_derived.release``)."""
        cells = np.ascontiguousarray(cells, dtype=np.int64)
        steps = np.ascontiguousarray(np.broadcast_to(np.asarray(steps, dtype=np.int64), cells.shape))
        self._check_steps(steps)
        t = self.tree
        return _blt_derived.release(self._exact, self._key, self._noise_scale, cells, steps, t.factors, t.splits,
                                    t.complements, t.dims, t.weights, t.log_decay)

    @property
    def memory_bytes(self) -> int:
        """Bytes of the exact counts and the key."""
        return self._exact.nbytes + self._key.nbytes
