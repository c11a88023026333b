"""Descriptors of the sketch configurations (``conf/mechanism/``): Holland's Figure 3 and the variants beyond it.

Count-Min variants are drawn solid, Count Sketch variants dashed; derived noise dotted, Honaker dash-dot, BLT dashed.
"""

from __future__ import annotations

from dpstream.descriptor import Descriptor, Style, register
from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS

PAPER_TREE = ("paper", "actual")  # the paper's stored binary tree: its model and the bytes held
ACTUAL = ("actual",)  # other counters and hash families: the bytes held only

register(
    Descriptor("cms", CMS, Style("tab:blue", "o", "-"), private=False, memory=PAPER_TREE),
    Descriptor("cs", CS, Style("tab:orange", "s", "--"), private=False, memory=PAPER_TREE),
    Descriptor("punctualcms", PunctualCMS, Style("tab:green", "^", "-"), memory=PAPER_TREE),
    Descriptor("punctualcs", PunctualCS, Style("tab:red", "v", "--"), memory=PAPER_TREE),
    Descriptor("lazycms", LazyCMS, Style("tab:purple", "D", "-"), memory=PAPER_TREE),
    Descriptor("lazycs", LazyCS, Style("tab:brown", "P", "--"), memory=PAPER_TREE),
    Descriptor("cms_ms", CMS, Style("tab:cyan", "o", ":"), private=False, memory=ACTUAL),
    Descriptor("lazycms_analytic", LazyCMS, Style("tab:purple", "d", ":"), memory=ACTUAL),
    Descriptor("lazycms_derived", LazyCMS, Style("tab:pink", "D", ":"), memory=ACTUAL),
    Descriptor("punctualcms_derived", PunctualCMS, Style("tab:olive", "^", ":"), memory=ACTUAL),
    Descriptor("lazycms_honaker", LazyCMS, Style("tab:brown", "H", "-."), memory=ACTUAL),
    Descriptor("lazycms_blt", LazyCMS, Style("tab:red", "*", "--"), memory=ACTUAL),
    Descriptor("lazycms_derived_analytic", LazyCMS, Style("tab:pink", "p", "-"), memory=ACTUAL),
    Descriptor("punctualcms_derived_analytic", PunctualCMS, Style("tab:olive", "<", "-"), memory=ACTUAL),
    Descriptor("lazycms_blt_analytic", LazyCMS, Style("tab:red", "8", "-."), memory=ACTUAL),
    Descriptor("lazycms_blt_derived_analytic", LazyCMS, Style("tab:red", "P", ":"), memory=ACTUAL),
    Descriptor("lazycms_derived_analytic_trimmed", LazyCMS, Style("tab:pink", "h", "--"), memory=ACTUAL),
    Descriptor("lazycms_blt_derived_analytic_trimmed", LazyCMS, Style("tab:red", "X", "-"), memory=ACTUAL),
    Descriptor("lazycms_discrete_secure", LazyCMS, Style("tab:gray", "D", "-"), memory=ACTUAL),
    Descriptor("lazycms_discrete_secure_ct", LazyCMS, Style("tab:gray", "d", "--"), memory=ACTUAL),
)
