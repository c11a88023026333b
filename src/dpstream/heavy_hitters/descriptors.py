"""Descriptors of the heavy-hitter configurations (Holland, Figure 4, and its variants)."""

from __future__ import annotations

from dpstream.descriptor import Descriptor, Style, register
from dpstream.heavy_hitters import CMSHeap, LazyHH, PunctualHH

register(
    Descriptor("lazyhh", LazyHH, Style("tab:purple", "X", "-")),
    Descriptor("lazyhh_derived", LazyHH, Style("tab:pink", "X", ":")),
    Descriptor("lazyhh_discrete_secure_ahead", LazyHH, Style("tab:gray", "X", "-.")),
    Descriptor("cms_heap", CMSHeap, Style("tab:blue", "s", "-."), private=False),
    Descriptor("punctual_hh", PunctualHH, Style("tab:green", "v", ":")),
)
