"""Figures name mechanisms as the papers do and keep every series visible, even one drawn exactly on another."""

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from conftest import CONF_DIR
from omegaconf import OmegaConf

from dpstream.plots import names, sketch
from dpstream.plots.common import mechanism_lines, subplots
from dpstream.plots.svt import _series

CONFIG_NAMES = sorted(OmegaConf.load(p)["name"] for p in (CONF_DIR / "mechanism").glob("*.yaml"))


def test_every_mechanism_config_has_a_paper_name_and_its_own_style():
    assert set(CONFIG_NAMES) == set(names.MECHANISMS), "names.MECHANISMS must list exactly conf/mechanism/*.yaml"
    labels = [names.label(n) for n in CONFIG_NAMES]
    styles = [tuple(names.line_style(n)[k] for k in ("color", "marker", "linestyle")) for n in CONFIG_NAMES]
    assert len(set(labels)) == len(labels)
    assert len(set(styles)) == len(styles)
    assert all(label != name for label, name in zip(labels, CONFIG_NAMES, strict=True))


@pytest.mark.parametrize("pair", [("punctualcms", "punctualcs"), ("svt_tm", "svt_sparse"), ("cms", "cs"),
                                  ("lazycms", "lazycs"), ("svt_hh_tme", "svt_hh_histogram")])
def test_mechanisms_that_often_coincide_differ_in_marker_and_line_style(pair):
    a, b = (names.line_style(n) for n in pair)
    assert a["marker"] != b["marker"] and a["linestyle"] != b["linestyle"]


def test_unknown_mechanism_name_is_rejected_with_the_fix():
    with pytest.raises(ValueError, match="'lazy_typo' has no descriptor; allowed: a registered name such as lazy"):
        names.label("lazy_typo")


def test_relabel_writes_paper_names_but_keeps_paths_and_overrides():
    text = "svt_sparse_short and svt_sparse vs svt_tm; see experiment=qr_alg5 and tables/qr_pmw.csv; qr_pmw_online"
    assert names.relabel(text) == ("Sparse (cutoff c/2) and Sparse vs ThresholdMonitor; see experiment=qr_alg5 and "
                                   "tables/qr_pmw.csv; Online PMW")


def test_two_identical_series_are_both_drawn_with_different_markers_and_paper_names():
    rows = [{"mechanism.name": m, "memory_kb": x, "seconds": 1.0 + x, "trial": t}
            for m in ("punctualcms", "punctualcs") for x in (8, 16, 32) for t in range(2)]
    fig, ax = subplots()
    mechanism_lines(ax, pd.DataFrame(rows), "memory_kb", "seconds")
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["PunctualCMS", "PunctualCS"]
    assert lines[0].get_ydata().tolist() == lines[1].get_ydata().tolist() == [9.0, 17.0, 33.0]
    assert lines[0].get_marker() != lines[1].get_marker()
    assert lines[0].get_linestyle() != lines[1].get_linestyle()
    assert all(line.get_markerfacecolor() == "none" for line in lines)  # hollow: the one below shows through


def test_sketch_panel_legend_uses_paper_names(tmp_path, monkeypatch):
    rows = [{"mechanism.name": m, "memory_kb": x, "are_top15": 0.5, "certified": True}
            for m in ("lazycms", "cms") for x in (8, 16)]
    saved = []
    monkeypatch.setattr(sketch, "save_figure", lambda fig, *_: saved.append(fig))
    sketch.panel(pd.DataFrame(rows), {"id": "t", "plot_args": {"x": "memory_kb", "y": "are_top15"}},
                 tmp_path / "t.png")
    legend = saved[0].axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["CMS (non-private)", "LazyCMS"]


def test_figures_are_saved_without_touching_pyplot(tmp_path):
    rows = [{"mechanism.name": "lazycms", "memory_kb": x, "are_top15": 0.5, "certified": True} for x in (8, 16)]
    before = plt.get_fignums()
    sketch.panel(pd.DataFrame(rows), {"id": "t", "plot_args": {"x": "memory_kb", "y": "are_top15"}},
                 tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG" and plt.get_fignums() == before


def test_second_series_dimension_changes_line_style_within_a_mechanism():
    df = pd.DataFrame({"mechanism.name": ["svt_hh_tme"] * 2 + ["svt_hh_histogram"] * 2, "k_star": [1, 3, 1, 3]})
    series = _series(df, ["mechanism.name", "k_star"])
    assert [label for label, _, _ in series] == ["TME, k*=1", "TME, k*=3", "Histogram every step, k*=1",
                                                 "Histogram every step, k*=3"]
    (_, s1, _), (_, s3, _) = series[:2]
    assert s1["color"] == s3["color"] and s1["marker"] == s3["marker"]
    assert s1["linestyle"] != s3["linestyle"]
