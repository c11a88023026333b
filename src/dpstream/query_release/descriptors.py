"""Descriptors of the query-release configurations (the iterative-construction notes; Hsu, Roth, Ullman)."""

from __future__ import annotations

from dpstream.descriptor import Descriptor, Style, register
from dpstream.query_release import LaplaceRelease, PrivateEquilibriumRelease, mwem, pmw
from dpstream.query_release.alg5 import AnalystPrivateMW, AnalystPrivateMWScaledUNCERTIFIED
from dpstream.query_release.game import AnalystEquilibriumRelease
from dpstream.query_release.online import online_pmw

register(
    Descriptor("qr_laplace", LaplaceRelease, Style("tab:gray", "x", ":")),
    Descriptor("qr_pmw", pmw, Style("tab:orange", "s", "-")),
    Descriptor("qr_pmw_online", online_pmw, Style("tab:brown", "v", "-.")),
    Descriptor("qr_mwem", mwem, Style("tab:green", "^", "--")),
    Descriptor("qr_median", None, Style("tab:olive", "*", "-")),
    Descriptor("qr_hru_private", PrivateEquilibriumRelease, Style("tab:red", "o", "-")),
    Descriptor("qr_hru_uncapped", PrivateEquilibriumRelease, Style("tab:purple", "D", "--")),
    Descriptor("qr_hru", PrivateEquilibriumRelease, Style("tab:red", "o", ":")),
    Descriptor("qr_alg4", AnalystEquilibriumRelease, Style("tab:cyan", "P", "-")),
    Descriptor("qr_alg5", AnalystPrivateMW, Style("tab:cyan", "o", "--")),
    Descriptor("qr_alg5_scaled_UNCERTIFIED", AnalystPrivateMWScaledUNCERTIFIED, Style("tab:pink", "X", "--")),
    Descriptor("qr_audit", None, Style("tab:gray", "h", "-.")),
)
