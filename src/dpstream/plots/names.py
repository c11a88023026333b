"""The label and line style of every mechanism config (``conf/mechanism/<name>.yaml``), read off its descriptor.

Display only: labels come from ``dpstream.descriptor.label`` and styles from the descriptors, not from the yamls
(the results store keys trials on the whole mechanism config). Every figure, legend and report table takes its
mechanism names from ``label`` and its colour / marker / line style from ``line_style``, so a mechanism looks the
same in every figure. Markers are drawn hollow and the line styles of mechanisms that often coincide differ
(PunctualCMS / PunctualCS, Sparse / ThresholdMonitor), so a series hidden under another stays visible.
"""

from __future__ import annotations

import re
from typing import Any

from dpstream import descriptor
from dpstream.descriptor import Style

__all__ = ["COLUMNS", "MECHANISMS", "MEDIAN_KINDS", "VARIANT_LINESTYLES", "Style", "column_label", "label",
           "line_style", "ordered", "relabel"]


def _table() -> dict[str, tuple[str, Style]]:
    return {d.name: (d.label, d.style) for d in descriptor.load().values()}


MECHANISMS: dict[str, tuple[str, Style]] = _table()
"""Config name -> (label, style) of the descriptors registered when this module was imported, in legend order;
``label``, ``line_style``, ``ordered`` and ``relabel`` read the registry (``dpstream.descriptor``) as it is now."""
# the ``kind`` of qr_median (toy-scale IC, spec E10) -> the mechanism config that names and styles it
MEDIAN_KINDS = {"median": "qr_median", "pmw": "qr_pmw", "laplace": "qr_laplace"}
# line styles of a second series dimension (k*, kappa, eps, ...) of one mechanism: its colour and marker stay
VARIANT_LINESTYLES = ("-", "--", ":", "-.")
# column -> axis label
COLUMNS = {
    "c": "c (number of heavy queries)", "k_star": "k* (heavy queries per record)", "k": "k (cap)",
    "kappa": "kappa", "epsilon": "epsilon", "data.n": "n (records)", "data.n_queries": "|Q| (queries)",
    "memory_kb": "memory (KB)", "data.skew": "Zipf skew", "data.d": "d",
}


def _entry(name: str) -> tuple[str, Style]:
    found = descriptor.descriptor(name)
    return found.label, found.style


def label(name: str) -> str:
    """The label of mechanism config ``name`` (e.g. ``svt_tm`` -> ``ThresholdMonitor``)."""
    return _entry(name)[0]


def column_label(column: str) -> str:
    """Axis label of a results column (``k_star`` -> ``k* (heavy queries per record)``), else the column."""
    return COLUMNS.get(column, column)


def ordered(names: Any) -> list[str]:
    """``names`` (mechanism config names) in legend order."""
    order = {name: i for i, name in enumerate(descriptor.load())}
    return sorted(set(names), key=lambda n: (order.get(n, len(order)), n))


def line_style(name: str, variant: int | None = None) -> dict[str, Any]:
    """``Axes.plot`` keywords of mechanism ``name``.

    Its colour, hollow marker and line style; ``variant`` (the index of a second series dimension such as k*) replaces
    the line style by ``VARIANT_LINESTYLES[variant]``.
    """
    style = _entry(name)[1]
    linestyle = style.linestyle if variant is None else VARIANT_LINESTYLES[variant % len(VARIANT_LINESTYLES)]
    return {"color": style.color, "marker": style.marker, "linestyle": linestyle, "markerfacecolor": "none",
            "markeredgewidth": 1.3, "markersize": 6}


def relabel(text: str) -> str:
    """``text`` with every mechanism config name written as its label.

    For example ``svt_tm`` -> ``ThresholdMonitor``; names inside paths and ``key=value`` (``experiment=qr_alg5``,
    ``tables/qr_alg5.csv``) stay.
    """
    registered = sorted(map(re.escape, descriptor.load()), key=len, reverse=True)
    word = re.compile(r"(?<![\w./=])(" + "|".join(registered) + r")(?!\w)")
    return word.sub(lambda m: label(m.group(1)), text)
