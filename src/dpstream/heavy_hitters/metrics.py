"""Heavy-hitter accuracy (Holland, Sec. 6.2).

Precision, recall and ARE of the reported items at an output step t, where the true heavy hitters are the items with
frequency >= t/k at that time.
"""

from __future__ import annotations

import numpy as np

from dpstream.heavy_hitters._tracker import HeavyHitters
from dpstream.metrics import average_relative_error, exact_counts, precision_recall

UNDEFINED_PRECISION = "precision undefined: nothing reported"
UNDEFINED_RECALL = "recall undefined: no true heavy hitter"
Metrics = dict[str, float | int | str]


def evaluate(reported: HeavyHitters, items: np.ndarray, counts: np.ndarray, k: int) -> Metrics:
    """Metrics of ``reported`` against exact ``counts`` of the sorted distinct ``items``.

    Counts are of the prefix x_1..x_t, t = ``reported.time``.

    precision = |R n T| / |R| and recall = |R n T| / |T| (``dpstream.metrics.precision_recall``). With
    nothing reported (R empty) precision is undefined, with no true heavy hitter (T empty) recall is: each is
    then NaN, not 1, and ``pr_undefined`` says why ("" when both are defined; ``n_reported`` / ``n_true``
    count R and T). ARE = mean |f - f^| / f over the reported items with f > 0 (NaN when there are none);
    ``n_reported_unseen`` counts reported items that never occurred (f = 0).
    """
    t = reported.time
    truth = items[counts >= t / k] if t > 0 else items[:0]
    pos = np.clip(np.searchsorted(items, reported.items), 0, max(items.size - 1, 0))
    seen = (items[pos] == reported.items) if items.size else np.zeros(reported.items.size, bool)
    freqs = np.where(seen, counts[pos] if items.size else 0, 0)
    seen &= freqs > 0  # an item of the whole stream that has not occurred by t is unseen at t
    nothing_reported, no_truth = reported.items.size == 0, truth.size == 0
    precision, recall = precision_recall(reported.items, truth)
    precision, recall = (float("nan") if nothing_reported else precision), (float("nan") if no_truth else recall)
    undefined = [why for why, empty in ((UNDEFINED_PRECISION, nothing_reported), (UNDEFINED_RECALL, no_truth)) if empty]
    are = average_relative_error(freqs[seen], reported.estimates[seen]) if seen.any() else float("nan")
    return {"precision": precision, "recall": recall, "are": are, "n_reported": int(reported.items.size),
            "n_true": int(truth.size), "n_reported_unseen": int((~seen).sum()), "output_time": int(t),
            "pr_undefined": "; ".join(undefined)}


def evaluate_prefix(reported: HeavyHitters, stream: np.ndarray, k: int) -> Metrics:
    """``evaluate`` against the exact counts of ``stream[:reported.time]``."""
    items, counts = exact_counts(stream[:reported.time])
    return evaluate(reported, items, counts, k)


class PrefixCounts:
    """Exact counts of a growing prefix of ``stream``, advanced block by block.

    For metrics at every output step. The true heavy set is kept incrementally: the threshold t/k only grows, so an item
    can join it only in a block where it occurs (O(block + |heavy|) work per step, not O(universe)).
    """

    def __init__(self, stream: np.ndarray, k: int) -> None:
        """Index the distinct items of ``stream``; the prefix starts empty (t = 0)."""
        self.k = k
        self._items, self._ids = np.unique(stream, return_inverse=True)
        self._counts = np.zeros(self._items.size, dtype=np.int64)
        self._heavy = np.empty(0, dtype=np.int64)
        self.t = 0

    def advance(self, n: int) -> None:
        """Count the next ``n`` stream items."""
        ids, c = np.unique(self._ids[self.t:self.t + n], return_counts=True)
        self._counts[ids] += c
        self.t += n
        cand = np.union1d(self._heavy, ids)
        self._heavy = cand[self._counts[cand] >= self.t / self.k]

    def evaluate(self, reported: HeavyHitters) -> Metrics:
        """``evaluate`` at the current prefix (which must end at ``reported.time``)."""
        if reported.time != self.t:
            raise ValueError(f"reported set is from t={reported.time}, prefix counts are at t={self.t}")
        # only the true heavy items and the reported ones matter: restrict the counts to them
        pos = np.searchsorted(self._items, reported.items)
        pos = np.clip(pos, 0, self._items.size - 1)
        ids = np.union1d(self._heavy, pos[self._items[pos] == reported.items])
        return evaluate(reported, self._items[ids], self._counts[ids], self.k)


class BlockPrefixCounts:
    """Exact counts of a growing prefix, advanced by the blocks themselves (``PrefixCounts`` without the whole stream).

    Holds the distinct items seen so far (sorted) and their counts, so memory is O(distinct items + block), not
    O(stream): the harness feeds a trace larger than memory through it. The true heavy set is kept as in
    ``PrefixCounts``.
    """

    def __init__(self, k: int) -> None:
        """Start with the empty prefix (t = 0)."""
        self.k = k
        self._items = np.empty(0, dtype=np.int64)
        self._counts = np.empty(0, dtype=np.int64)
        self._heavy = np.empty(0, dtype=np.int64)  # indices into _items
        self.t = 0

    def _index(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position of each value in the sorted distinct items, whether it is there)."""
        pos = np.searchsorted(self._items, values)
        found = np.zeros(values.size, dtype=bool)
        inside = pos < self._items.size
        found[inside] = self._items[pos[inside]] == values[inside]
        return pos, found

    def advance(self, block: np.ndarray) -> None:
        """Count the items of ``block`` (the stream's next items)."""
        values, c = np.unique(np.asarray(block, dtype=np.int64), return_counts=True)
        pos, found = self._index(values)
        self._counts[pos[found]] += c[found]
        heavy_items = self._items[self._heavy]
        if not found.all():
            self._items = np.insert(self._items, pos[~found], values[~found])
            self._counts = np.insert(self._counts, pos[~found], c[~found])
        self.t += int(block.size)
        cand = self._index(np.union1d(heavy_items, values))[0]
        self._heavy = cand[self._counts[cand] >= self.t / self.k]

    def evaluate(self, reported: HeavyHitters) -> Metrics:
        """``evaluate`` at the current prefix (which must end at ``reported.time``)."""
        if reported.time != self.t:
            raise ValueError(f"reported set is from t={reported.time}, prefix counts are at t={self.t}")
        pos, found = self._index(np.asarray(reported.items, dtype=np.int64))
        ids = np.union1d(self._heavy, pos[found])
        return evaluate(reported, self._items[ids], self._counts[ids], self.k)


def _defined(rows: list[Metrics], name: str, count: str) -> np.ndarray:
    """``name`` over the rows where it is defined.

    Precision needs reports (``count`` = n_reported > 0), recall needs true heavy hitters (n_true > 0); ``evaluate``
    gives NaN in the other rows.
    """
    return np.array([r[name] for r in rows if float(r[count]) > 0], dtype=np.float64)


def _mean(values: np.ndarray) -> float:
    """Mean of the finite ``values``; NaN when there are none."""
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else float("nan")


def summarise_steps(rows: list[Metrics]) -> dict[str, float | int]:
    """Per-output-step metrics reduced to flat columns.

    Mean and min of precision and recall over the steps with reports / true heavy hitters, mean ARE, and the number of
    steps.
    """
    out: dict[str, float | int] = {"steps": len(rows)}
    for name, count in (("precision", "n_reported"), ("recall", "n_true")):
        vals = _defined(rows, name, count)
        out[f"{name}_steps_mean"] = _mean(vals)
        out[f"{name}_steps_min"] = float(vals.min()) if vals.size else float("nan")
    out["are_steps_mean"] = _mean(np.array([r["are"] for r in rows], dtype=np.float64))
    return out


def summarise_release_times(rows: list[Metrics]) -> dict[str, float | int]:
    """Metrics at the output steps of the release times, reduced to their means.

    The columns are ``precision_mean_t``, ``recall_mean_t`` and ``are_mean_t``, and their number ``n_release_times``.

    Precision with nothing reported and recall with no true heavy hitter are undefined: such times
    count as NaN and are left out of the mean (as are times with no ARE); a mean over no defined time
    is NaN.
    """
    return {"n_release_times": len(rows),
            "precision_mean_t": _mean(_defined(rows, "precision", "n_reported")),
            "recall_mean_t": _mean(_defined(rows, "recall", "n_true")),
            "are_mean_t": _mean(np.array([r["are"] for r in rows], dtype=np.float64))}
