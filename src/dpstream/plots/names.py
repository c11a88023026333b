"""The papers' names and one fixed line style for every mechanism config (``conf/mechanism/<name>.yaml``).

Display only: the results store keys trials on the whole mechanism config, so a ``label:`` key in those yamls
would change every stored key; the names live here instead. Every figure, legend and report table takes its
mechanism names from ``label`` and its colour / marker / line style from ``line_style``, so a mechanism looks the
same in every figure. Markers are drawn hollow and the line styles of mechanisms that often coincide differ
(PunctualCMS / PunctualCS, Sparse / ThresholdMonitor), so a series hidden under another stays visible.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple


class Style(NamedTuple):
    """A mechanism's line style: colour, marker and line style for ``Axes.plot``."""
    color: str
    marker: str
    linestyle: str


# config name -> (the paper's name, style); the order is the legend order
MECHANISMS: dict[str, tuple[str, Style]] = {
    # Holland, Figure 3: CMS variants solid, CS variants dashed
    "cms": ("CMS (non-private)", Style("tab:blue", "o", "-")),
    "cs": ("CS (non-private)", Style("tab:orange", "s", "--")),
    "punctualcms": ("PunctualCMS", Style("tab:green", "^", "-")),
    "punctualcs": ("PunctualCS", Style("tab:red", "v", "--")),
    "lazycms": ("LazyCMS", Style("tab:purple", "D", "-")),
    "lazycs": ("LazyCS", Style("tab:brown", "P", "--")),
    # beyond the paper (experiment beyond): derived noise dotted, Honaker dash-dot, BLT dashed; analytic = filled
    "cms_ms": ("CMS, multiply-shift (non-private)", Style("tab:cyan", "o", ":")),
    "lazycms_analytic": ("LazyCMS, analytic", Style("tab:purple", "d", ":")),
    "lazycms_derived": ("LazyCMS, derived noise", Style("tab:pink", "D", ":")),
    "punctualcms_derived": ("PunctualCMS, derived noise", Style("tab:olive", "^", ":")),
    "lazycms_honaker": ("LazyCMS, Honaker", Style("tab:brown", "H", "-.")),
    "lazycms_blt": ("LazyCMS, BLT", Style("tab:red", "*", "--")),
    "lazycms_derived_analytic": ("LazyCMS, derived, analytic", Style("tab:pink", "p", "-")),
    "punctualcms_derived_analytic": ("PunctualCMS, derived, analytic", Style("tab:olive", "<", "-")),
    "lazycms_blt_analytic": ("LazyCMS, BLT, analytic", Style("tab:red", "8", "-.")),
    "lazycms_blt_derived_analytic": ("LazyCMS, BLT, derived noise, analytic", Style("tab:red", "P", ":")),
    "lazycms_derived_analytic_trimmed": ("LazyCMS, derived, analytic, trimmed mean", Style("tab:pink", "h", "--")),
    "lazycms_blt_derived_analytic_trimmed": ("LazyCMS, BLT, derived noise, analytic, trimmed mean",
                                             Style("tab:red", "X", "-")),
    "counter_board": ("continual counter (leaderboard cell)", Style("tab:brown", "1", ":")),
    "lazycms_discrete_secure": ("LazyCMS, exact discrete noise (ChaCha20)", Style("tab:gray", "D", "-")),
    "lazycms_discrete_secure_ct": ("LazyCMS, exact discrete noise, constant time", Style("tab:gray", "d", "--")),
    # Holland, Figure 4
    "lazyhh": ("LazyHH", Style("tab:purple", "X", "-")),
    "lazyhh_derived": ("LazyHH, derived noise", Style("tab:pink", "X", ":")),
    "lazyhh_discrete_secure_ahead": ("LazyHH, exact discrete noise, blocks kept", Style("tab:gray", "X", "-.")),
    "cms_heap": ("CMS + heap (non-private)", Style("tab:blue", "s", "-.")),
    "punctual_hh": ("PunctualHH", Style("tab:green", "v", ":")),
    # Kaplan, Mansour, Stemmer; the SVT notes: sparse vector family
    "svt_tm": ("ThresholdMonitor", Style("tab:orange", "o", "-")),
    "svt_sparse": ("Sparse", Style("tab:blue", "s", "--")),
    "svt_sparse_short": ("Sparse (cutoff c/2)", Style("tab:cyan", "v", "-.")),
    "svt_above_threshold": ("AboveThreshold", Style("tab:pink", "^", ":")),
    "svt_sparse_discrete": ("Sparse, exact discrete Laplace", Style("tab:blue", "D", ":")),
    "svt_tm_discrete": ("ThresholdMonitor, exact discrete Laplace", Style("tab:orange", "d", ":")),
    "svt_hh_tme": ("TME", Style("tab:green", "o", "-")),
    "svt_hh_histogram": ("Histogram every step", Style("tab:blue", "D", "--")),
    "svt_hh_sparse_histogram": ("Sparse + histogram", Style("tab:orange", "^", "-.")),
    "svt_theory": ("SVT theory", Style("tab:gray", "p", "-")),
    "svt_audit": ("SVT audit", Style("tab:gray", "h", "--")),
    "svt_audit_power": ("SVT audit power (NOT private at ratio > 1)", Style("tab:gray", "h", ":")),
    # the iterative-construction notes; Hsu, Roth, Ullman: query release
    "qr_laplace": ("Laplace", Style("tab:gray", "x", ":")),
    "qr_pmw": ("PMW", Style("tab:orange", "s", "-")),
    "qr_pmw_online": ("Online PMW", Style("tab:brown", "v", "-.")),
    "qr_mwem": ("MWEM", Style("tab:green", "^", "--")),
    "qr_median": ("Median mechanism", Style("tab:olive", "*", "-")),
    "qr_hru_private": ("HRU game (private)", Style("tab:red", "o", "-")),
    "qr_hru_uncapped": ("HRU game (uncapped, s = 1)", Style("tab:purple", "D", "--")),
    "qr_hru": ("HRU game (paper's T = nL)", Style("tab:red", "o", ":")),
    "qr_alg4": ("HRU Alg 4", Style("tab:cyan", "P", "-")),
    "qr_alg5": ("HRU Alg 5", Style("tab:cyan", "o", "--")),
    "qr_alg5_scaled_UNCERTIFIED": ("HRU Alg 5, scaled (NOT privacy-certified)", Style("tab:pink", "X", "--")),
    "qr_audit": ("HRU game analyst audit", Style("tab:gray", "h", "-.")),
}
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
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ValueError(f"mechanism {name!r} has no display name: add it to dpstream.plots.names.MECHANISMS") from None


def label(name: str) -> str:
    """The paper's name of mechanism config ``name`` (e.g. ``svt_tm`` -> ``ThresholdMonitor``)."""
    return _entry(name)[0]


def column_label(column: str) -> str:
    """Axis label of a results column (``k_star`` -> ``k* (heavy queries per record)``), else the column."""
    return COLUMNS.get(column, column)


def ordered(names: Any) -> list[str]:
    """``names`` (mechanism config names) in legend order."""
    order = list(MECHANISMS)
    return sorted(set(names), key=lambda n: (order.index(n) if n in MECHANISMS else len(order), n))


def line_style(name: str, variant: int | None = None) -> dict[str, Any]:
    """``Axes.plot`` keywords of mechanism ``name``.

    Its colour, hollow marker and line style; ``variant`` (the index of a second series dimension such as k*) replaces
    the line style by ``VARIANT_LINESTYLES[variant]``.
    """
    style = _entry(name)[1]
    linestyle = style.linestyle if variant is None else VARIANT_LINESTYLES[variant % len(VARIANT_LINESTYLES)]
    return {"color": style.color, "marker": style.marker, "linestyle": linestyle, "markerfacecolor": "none",
            "markeredgewidth": 1.3, "markersize": 6}


_WORD = re.compile(r"(?<![\w./=])(" + "|".join(sorted(map(re.escape, MECHANISMS), key=len, reverse=True)) + r")(?!\w)")


def relabel(text: str) -> str:
    """``text`` with every mechanism config name written as the paper's name.

    For example ``svt_tm`` -> ``ThresholdMonitor``; names inside paths and ``key=value`` (``experiment=qr_alg5``,
    ``tables/qr_alg5.csv``) stay.
    """
    return _WORD.sub(lambda m: label(m.group(1)), text)
