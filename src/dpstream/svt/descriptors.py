"""Descriptors of the sparse-vector configurations (Kaplan, Mansour, Stemmer; the SVT notes).

``atoms_trial`` runs the classes with a ``runner`` and bounds their accuracy with their ``theory``
(``dpstream.trials.svt``).
"""

from __future__ import annotations

from dpstream.descriptor import Descriptor, Style, register
from dpstream.svt import AboveThreshold, Sparse, ThresholdMonitor
from dpstream.svt.shifting import HistogramEveryStep, ShiftingHeavyHitters, SparseThenHistogram

TRIALS = "dpstream.trials.svt"


def atoms(name: str, cls: type, style: Style, kind: str) -> Descriptor:
    """A mechanism ``atoms_trial`` runs as ``kind`` ("monitor" or "sparse"), bounded by that kind's theorem."""
    return Descriptor(name, cls, style, runner=f"{TRIALS}:run_{kind}", theory=f"{TRIALS}:alpha_{kind}")


register(
    atoms("svt_tm", ThresholdMonitor, Style("tab:orange", "o", "-"), "monitor"),
    atoms("svt_sparse", Sparse, Style("tab:blue", "s", "--"), "sparse"),
    atoms("svt_sparse_short", Sparse, Style("tab:cyan", "v", "-."), "sparse"),
    atoms("svt_above_threshold", AboveThreshold, Style("tab:pink", "^", ":"), "sparse"),
    atoms("svt_sparse_discrete", Sparse, Style("tab:blue", "D", ":"), "sparse"),
    atoms("svt_tm_discrete", ThresholdMonitor, Style("tab:orange", "d", ":"), "monitor"),
    Descriptor("svt_hh_tme", ShiftingHeavyHitters, Style("tab:green", "o", "-")),
    Descriptor("svt_hh_histogram", HistogramEveryStep, Style("tab:blue", "D", "--")),
    Descriptor("svt_hh_sparse_histogram", SparseThenHistogram, Style("tab:orange", "^", "-.")),
    Descriptor("svt_theory", None, Style("tab:gray", "p", "-")),
    Descriptor("svt_audit", None, Style("tab:gray", "h", "--")),
    Descriptor("svt_audit_power", None, Style("tab:gray", "h", ":")),
)
