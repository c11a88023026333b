"""Compiled release of the binary tree with derived discrete Gaussian node noise (``node_noise="discrete_secure"``).

The node of level l that a release at step s uses (bit l of s set) has index s >> l; its noise is one N_Z(0, a/b)
draw from the ChaCha20 stream with nonce (cell, index low 32 bits, level | index high bits << 6)
(``chacha.node_nonce``): the same node gets the same value at every release that uses it. Integer output only.

``block_noise_sums`` (timing level 1) draws every node of a step's block of 2^k steps, ``noise_sums_ct`` (level 2)
uses the constant-time table sampler (``cdt``). The nodes are drawn ``chacha.LANES`` at a time (``lanes``).
``cached_noise_sums`` is a whole-table release that keeps the nodes of levels >= k it drew, so that a release draws
only the nodes its block does not share with the cell's previous block (module doc of ``counters.discrete``).
``Prefetch`` computes it one release ahead on a second thread (the compiled loops release the GIL).
"""

from __future__ import annotations

import concurrent.futures
import functools

import numpy as np
from numba import njit

from dpstream.secure import lanes
from dpstream.secure.chacha import LANES
from dpstream.secure.samplers import CHUNKS, settle


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def node_nonce(cell: np.int64, level: np.int64, index: np.int64, nonces: np.ndarray, lane: int) -> None:
    """Write the 96-bit nonce of node (cell, level, index) into column ``lane`` of ``nonces`` (3 x LANES uint32)."""
    nonces[0, lane] = np.uint32(cell & 0xFFFFFFFF)
    nonces[1, lane] = np.uint32(index & 0xFFFFFFFF)
    nonces[2, lane] = np.uint32((level & 63) | ((index >> 32) << 6))


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _enqueue(key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, cell: np.int64, level: int,
             indices: np.int64, stride: np.int64, last: np.int64, s: np.int64, row: np.int64, nonces: np.ndarray,
             rows: np.ndarray, used: np.ndarray, queued: int, words: np.ndarray, nonce: np.ndarray, buf: np.ndarray,
             st: np.ndarray, out: np.ndarray) -> int:
    """Queue the nodes of ``level`` at ``indices``, ``indices + stride``, ... < ``last`` of ``cell``; new queue length.

    Those step s uses are added to ``out[row]`` (the others times 0); the queue is drawn whenever it is full.
    """
    for index in range(indices, last, stride):
        node_nonce(cell, level, index, nonces, queued)
        rows[queued], used[queued] = row, np.int64((s >> level) == index)
        queued += 1
        if queued == LANES:
            lanes.draw_queued(key, sampler, hi, lo, nonces, rows, used, queued, words, nonce, buf, st, out)
            queued = 0
    return queued


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def _block_level(s: np.int64, k: np.int64, level: int) -> tuple[np.int64, np.int64, np.int64]:
    """(first, stride, end) of the nodes of ``level`` < k in block B = s >> k.

    They are the odd indices in [B 2^(k-l), (B + 1) 2^(k-l)).
    """
    first = (s >> k) << (k - level)
    return first + 1, np.int64(2), first + (np.int64(1) << (k - level))


@njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]  # numba option: no refcount
def in_block_columns(k: np.int64, ahead: bool) -> np.int64:
    """Node-cache columns before the levels >= k: the in-block sum, or, ``ahead``, each of the 2^k - 1 nodes."""
    return (np.int64(1) << k) - 1 if ahead else np.int64(1)


@njit(cache=True)
def _node_sums(key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, k: np.int64,
               cells: np.ndarray, steps: np.ndarray, st: np.ndarray) -> np.ndarray:
    """Per (cell, step s): the nodes of s's block of 2^k steps drawn in a fixed order, the sum of those s uses.

    The block's nodes: the 2^k - 1 nodes of levels < k inside block s >> k (level l: the odd indices in
    [B 2^(k-l), (B + 1) 2^(k-l))) and the nodes of levels >= k on the set bits of s (shared by the whole block).
    Every draw is made; those s does not use are multiplied by 0. k = 0: the nodes of the set bits of s alone.
    """
    out = np.zeros(cells.shape[0], dtype=np.int64)
    nonces, rows, used, words, nonce, buf = lanes.queue()
    queued = 0
    for c in range(cells.shape[0]):
        s = steps[c]
        for level in range(64):  # s < 2^63: the break comes at level 63 at the latest
            if level < k:  # the block's own nodes, all drawn: the odd indices of level l inside it
                indices, stride, last = _block_level(s, k, level)
            elif (s >> level) & 1:  # the step is public: which nodes a release uses depends on the time alone
                indices, stride, last = s >> level, np.int64(1), (s >> level) + 1
            elif s >> level:
                continue
            else:
                break
            queued = _enqueue(key, sampler, hi, lo, cells[c], level, indices, stride, last, s, np.int64(c), nonces,
                              rows, used, queued, words, nonce, buf, st, out)
    if queued:
        lanes.draw_queued(key, sampler, hi, lo, nonces, rows, used, queued, words, nonce, buf, st, out)
    return out


def noise_sums(key: np.ndarray, a: np.int64, b: np.int64, t: np.int64, cells: np.ndarray, steps: np.ndarray,
               st: np.ndarray, _chunks: int = CHUNKS) -> np.ndarray:
    """Per (cell, step): the sum of its nodes' N_Z(0, a/b) draws over the set bits of step (int64)."""
    return block_noise_sums(key, a, b, t, np.int64(0), cells, steps, st, _chunks)


def block_noise_sums(key: np.ndarray, a: np.int64, b: np.int64, t: np.int64, k: np.int64, cells: np.ndarray,
                     steps: np.ndarray, st: np.ndarray, _chunks: int = CHUNKS) -> np.ndarray:
    """``noise_sums`` drawing, for each (cell, step s), EVERY node of s's block of 2^k steps (block s >> k).

    The work of a release is then the work of its whole block, the same for every step of the block. Draws the
    compiled sampler leaves undecided are added exactly afterwards (``samplers.settle``); ``_chunks``: tests only.
    """
    return sampled_noise_sums(key, *lanes.gaussian(a, b, t, _chunks), int(k), cells, steps, st)


def noise_sums_ct(key: np.ndarray, hi: np.ndarray, lo: np.ndarray, cells: np.ndarray, steps: np.ndarray,
                  st: np.ndarray) -> np.ndarray:
    """``noise_sums`` with the constant-time table sampler (``cdt``): 4 words and one full table scan per node."""
    return sampled_noise_sums(key, lanes.table(), hi, lo, 0, cells, steps, st)


def sampled_noise_sums(key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, k: int,
                       cells: np.ndarray, steps: np.ndarray, st: np.ndarray) -> np.ndarray:
    """Per (cell, step): the sum of the nodes the step uses (int64), every node of its block of 2^k steps drawn.

    ``sampler``, ``hi``, ``lo``: ``lanes.gaussian`` or ``lanes.table``; undecided draws are settled exactly.
    """
    out = _node_sums(key, sampler, hi, lo, np.int64(k), cells, steps, st)
    _settle(key, sampler, st, out)
    return out


def _settle(key: np.ndarray, sampler: np.ndarray, st: np.ndarray, out: np.ndarray) -> None:
    """``samplers.settle`` for a discrete Gaussian sampler (the table sampler leaves no draw undecided)."""
    if sampler[0] == lanes.GAUSSIAN:
        settle(key, int(sampler[1]), int(sampler[2]), int(sampler[3]), st, out)


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _in_block_column(k: np.int64, level: int, index: np.int64) -> np.int64:
    """Column of an in-block node (level < k, odd index) among its block's 2^k - 1: level by level, index order."""
    return (np.int64(1) << k) - (np.int64(1) << (k - level)) + ((index & ((np.int64(1) << (k - level)) - 1)) >> 1)


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _enqueue_kept(key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, cell: np.int64, k: np.int64,
                  level: int, s: np.int64, base: np.int64, nonces: np.ndarray, rows: np.ndarray, used: np.ndarray,
                  queued: int, words: np.ndarray, nonce: np.ndarray, buf: np.ndarray, st: np.ndarray,
                  out: np.ndarray) -> int:
    """Queue the nodes of ``level`` < k inside s's block, each to be added whole to ``out[base + its column]``.

    Each is queued as the node of a step that uses it (index << level), so its weight is 1.
    """
    first, stride, end = _block_level(s, k, level)
    for index in range(first, end, stride):
        queued = _enqueue(key, sampler, hi, lo, cell, level, index, np.int64(1), index + 1, index << level,
                          base + _in_block_column(k, level, index), nonces, rows, used, queued, words, nonce, buf,
                          st, out)
    return queued


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba option: no reference counting
def _advance(blocks: np.ndarray, c: int, s: np.int64, k: np.int64, ahead: bool) -> bool:
    """Note cell c's release at step s in ``blocks``; whether it draws (not at its last step, nor, ``ahead``, block)."""
    last_step = blocks[0, c]
    same_block = last_step >= 0 and (last_step >> k) == (s >> k)
    blocks[0, c] = s
    if not same_block:
        blocks[1, c] = last_step
    return not (last_step == s or (ahead and same_block))


@njit(cache=True, nogil=True)  # nogil: ``Prefetch`` runs it on a second thread
def _cached_draws(key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, k: np.int64, ahead: bool,
                  steps: np.ndarray, st: np.ndarray, nodes: np.ndarray, blocks: np.ndarray) -> None:
    """Draw, for cell c at step s = steps[c], the nodes D(s) of ``cached_noise_sums``, into ``nodes``.

    ``nodes`` (n, b + h - k): its first b columns receive the in-block nodes (zeroed first): b = 1, the sum of those
    s uses, or, ``ahead``, b = 2^k - 1, each node in its own column (``_in_block_column``); column b + l - k the node
    of level l >= k (zeroed, then drawn, when it is in D(s)). ``blocks`` (2, n): the cell's last release step (-1:
    none) and a step of its previous block, which moves when s enters a new block. A cell released at the same step
    as last time, or, ``ahead``, in the same block, draws nothing: the cache holds every node s uses.
    """
    nonces, rows, used, words, nonce, buf = lanes.queue()
    flat = nodes.reshape(-1)
    width = nodes.shape[1]
    kept = in_block_columns(k, ahead)
    queued = 0
    for c in range(steps.shape[0]):
        s = steps[c]
        if not _advance(blocks, c, s, k, ahead):
            continue
        previous = blocks[1, c]
        base = c * width
        for column in range(kept):
            flat[base + column] = 0
        for level in range(k + width - kept):
            if level < k and ahead:  # the block's own nodes, each kept whole in its column
                queued = _enqueue_kept(key, sampler, hi, lo, np.int64(c), k, level, s, base, nonces, rows, used,
                                       queued, words, nonce, buf, st, flat)
                continue
            if level < k:  # the block's own nodes, all drawn: the odd indices of level l inside it
                indices, stride, last = _block_level(s, k, level)
                row = base
            elif (s >> level) & 1 and (previous < 0 or (previous >> level) != (s >> level)):
                indices, stride, last = s >> level, np.int64(1), (s >> level) + 1
                row = base + kept + level - k
                flat[row] = 0
            elif s >> level:
                continue
            else:
                break
            queued = _enqueue(key, sampler, hi, lo, np.int64(c), level, indices, stride, last, s, row, nonces, rows,
                              used, queued, words, nonce, buf, st, flat)
    if queued:
        lanes.draw_queued(key, sampler, hi, lo, nonces, rows, used, queued, words, nonce, buf, st, flat)


@njit(cache=True, nogil=True)
def _cached_sums(nodes: np.ndarray, k: np.int64, ahead: bool, steps: np.ndarray) -> np.ndarray:
    """Per cell: its in-block nodes its step uses, plus its cached nodes of the set bits >= k of its step.

    The in-block nodes: column 0 (their sum), or, ``ahead``, the columns of the set bits < k (``_in_block_column``).
    """
    out = np.empty(steps.shape[0], dtype=np.int64)
    kept = in_block_columns(k, ahead)
    for c in range(steps.shape[0]):
        s = steps[c]
        total = np.int64(0)
        if ahead:
            for level in range(k):
                if (s >> level) & 1:
                    total += nodes[c, _in_block_column(k, level, s >> level)]
        else:
            total = nodes[c, 0]
        high = s >> k
        column = kept
        while high:
            if high & 1:
                total += nodes[c, column]
            high >>= 1
            column += 1
        out[c] = total
    return out


def cached_noise_sums(key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, k: int,
                      steps: np.ndarray, st: np.ndarray, nodes: np.ndarray, blocks: np.ndarray,
                      ahead: bool = False) -> np.ndarray:
    """The noise sums of every cell c at ``steps[c]`` (a whole-table release), keeping its drawn nodes in ``nodes``.

    A release at step s (block B = s >> k) draws D(s): the 2^k - 1 nodes of levels < k inside B (as
    ``block_noise_sums``) and the nodes of levels >= k on the set bits of s that B does not share with P, the cell's
    previous block (all of them if it has none); the other nodes s uses are B's and were drawn, and kept, at an
    earlier release. D(s) is the same set for every step of B (it depends on B and P only), so every release inside
    a block does the same work, a part of what the block alone would cost. A cell released again at the step of its
    last release draws nothing (its sums are kept): whether a step repeats is fixed by the release times.

    ``ahead``: the block's 2^k - 1 nodes below level k are kept too, each in its own column, so only a cell's first
    release in a block draws (D(s) of that step) and its later releases in the block none: the nodes of the block's
    later steps are drawn ahead of their use. ``nodes`` (n, 1 + h - k; 2^k - 1 + h - k with ``ahead``) and
    ``blocks`` (2, n, int64, -1 at first) are the cache, ``sampler``, ``hi``, ``lo``: ``lanes.gaussian`` or
    ``lanes.table``. Steps must be below 2^h. The values are those of ``block_noise_sums`` (the nodes are derived).
    """
    steps = np.ascontiguousarray(steps, dtype=np.int64)
    kept = int(in_block_columns(np.int64(k), ahead))
    if nodes.ndim != 2 or nodes.shape[1] < kept or blocks.shape != (2, nodes.shape[0]) or steps.size != nodes.shape[0]:
        raise ValueError(f"node cache of shape {nodes.shape} (blocks {blocks.shape}) does not fit {steps.size} cells "
                         f"with {kept} in-block column(s) (k = {k}, ahead = {ahead})")
    if steps.size and int(steps.max()) >> k >= 1 << (nodes.shape[1] - kept):
        raise ValueError(f"step {int(steps.max())} is past the node cache's {nodes.shape[1] - kept + k} levels")
    _cached_draws(key, sampler, hi, lo, np.int64(k), ahead, steps, st, nodes, blocks)
    _settle(key, sampler, st, nodes.reshape(-1))
    return _cached_sums(nodes, np.int64(k), ahead, steps)


@functools.cache
def _worker() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread that draws whole-table releases ahead (``Prefetch``), started on first use."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpstream-noise-ahead")


class Prefetch:
    """``cached_noise_sums`` of the next whole-table release (every step + 1), drawn on a second thread.

    A LazyHH refresh releases every cell one push after the last, so its steps are the last release's plus one. After
    each release ``sums`` starts those draws on ``_worker`` (the compiled loops hold no GIL) and returns; the next call
    waits for them and returns them when its steps are the ones predicted, else draws its own (from the cache as the
    prefetch left it: nodes are derived from (key, cell, level, index), so the values are ``block_noise_sums``'
    either way). The values never depend on the thread: it only moves when the draws are made, and they are made
    after a release, for a step that depends on the time alone. The caller must not touch ``st``, ``nodes`` or
    ``blocks`` while a prefetch runs: ``wait`` first.
    """

    def __init__(self) -> None:
        """No prefetch running."""
        self._future: concurrent.futures.Future[np.ndarray] | None = None
        self._for: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (key, nodes, steps) of the prefetch

    def wait(self) -> np.ndarray | None:
        """The running prefetch's sums once it is done (its exception re-raised), or None if none runs.

        The prefetch is forgotten only once it is done: a wait interrupted (KeyboardInterrupt) leaves it to the next
        wait, since its thread still writes ``st`` and the node cache.
        """
        future = self._future
        if future is None:
            return None
        try:
            return future.result()
        finally:
            if future.done():
                self._future = None

    def sums(self, key: np.ndarray, sampler: np.ndarray, hi: np.ndarray, lo: np.ndarray, k: int, steps: np.ndarray,
             st: np.ndarray, nodes: np.ndarray, blocks: np.ndarray, ahead: bool = False) -> np.ndarray:
        """``cached_noise_sums`` at ``steps`` (the prefetched sums if they were predicted); then prefetch steps + 1."""
        steps = np.ascontiguousarray(steps, dtype=np.int64)
        predicted, made_for = self.wait(), self._for
        self._for = None
        if (predicted is not None and made_for is not None and made_for[1] is nodes
                and np.array_equal(made_for[0], key) and np.array_equal(made_for[2], steps)):
            noise = predicted
        else:
            noise = cached_noise_sums(key, sampler, hi, lo, k, steps, st, nodes, blocks, ahead)
        following = steps + 1
        levels = nodes.shape[1] - int(in_block_columns(np.int64(k), ahead))
        if following.size and int(following.max()) >> k < 1 << levels:
            self._for = (key.copy(), nodes, following)
            self._future = _worker().submit(cached_noise_sums, key, sampler, hi, lo, k, following, st, nodes, blocks,
                                            ahead)
        return noise
