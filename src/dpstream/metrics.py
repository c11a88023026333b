"""Accuracy metrics of the papers' experiments."""

from __future__ import annotations

import numpy as np


def exact_counts(stream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct items of ``stream`` and their frequencies (vectorised)."""
    return np.unique(stream, return_counts=True)


def top_k(stream: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` most frequent items of ``stream`` and their exact frequencies, most frequent first.

    Ties are broken by item id (stable), so the set is deterministic.
    """
    items, counts = exact_counts(stream)
    order = np.lexsort((items, -counts))[:k]
    return items[order], counts[order]


def average_relative_error(true: np.ndarray, estimate: np.ndarray) -> float:
    """ARE = (1/k) sum_i |f_i - f^_i| / f_i (seed 004, Sec. 6, over the top-k items)."""
    true = np.asarray(true, dtype=np.float64)
    if true.size == 0 or np.any(true <= 0):
        raise ValueError("average_relative_error needs at least one item and positive true frequencies")
    return float(np.mean(np.abs(true - np.asarray(estimate, dtype=np.float64)) / true))


def precision_recall(reported: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """Precision |R n T| / |R| (1 when nothing is reported) and recall |R n T| / |T| (1 when T is empty)."""
    hits = np.intersect1d(reported, truth).size
    precision = hits / reported.size if reported.size else 1.0
    recall = hits / truth.size if truth.size else 1.0
    return float(precision), float(recall)
