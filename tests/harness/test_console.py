"""What a run prints: tables within 100 columns with mean ± 95% interval, heavy hitters with their labels, progress.

The interval is the Student-t one over trials: for [1, 2, 3] the half-width is t(0.975, 2) * 1 / sqrt(3) = 2.48.
"""

import io

import numpy as np
import pandas as pd
import pytest
from conftest import CONF_DIR
from rich.console import Console

from dpstream.certified import CERTIFIED, NOT_PRIVATE
from dpstream.harness.console import ProgressLog, mean_interval, metric_table, why_nothing
from dpstream.harness.runner import run


def test_mean_interval_shows_integers_as_integers_and_the_t_interval():
    assert mean_interval(pd.Series([55, 55, 55])) == "55"
    assert mean_interval(pd.Series([1.0, 2.0, 3.0])) == "2.0 ± 2.5"
    assert mean_interval(pd.Series([0.5])) == "0.5"


def test_undefined_precision_says_nothing_was_reported():
    assert mean_interval(pd.Series([np.nan, np.nan]), "precision") == "n/a (nothing reported)"
    assert mean_interval(pd.Series([np.nan, np.nan]), "recall_mean_t") == "n/a (no true heavy hitter)"
    assert mean_interval(pd.Series([1.0, np.nan, 1.0]), "precision") == "1 (1 of 3 undefined)"


def test_a_wide_sweep_table_fits_100_columns():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"mechanism.name": ["lazycms_derived_analytic"] * 6 + ["punctualcms_derived_analytic"] * 6,
                       "data.skew": [1.1, 1.3, 1.5] * 4,
                       **{f"a_rather_long_metric_name_{i}": rng.random(12) * 10**i for i in range(12)}})
    out = io.StringIO()
    df["same_everywhere"] = 7
    Console(file=out, width=100).print(metric_table(df, ["mechanism.name", "data.skew"], list(df.columns[2:])))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 100
    assert sum(line.split()[:2] == ["lazycms_derived_analytic", "1.1"] for line in lines) == 1  # a row per setting
    assert len(lines) == 1 + 2 + 6 + 2 and lines[-2] == "every setting: same_everywhere=7"
    header = lines[1].split()
    assert header[:3] == ["mechanism", "skew", "a_rather_long_metric_name_0"], "the metrics in order, from the first"
    shown = [h for h in header if h.startswith("a_rather")]
    assert lines[-1].startswith(f"{12 - len(shown)} more in the table file: a_rather_long_metric_name_{len(shown)}, ")


def test_progress_is_logged_every_five_percent_when_not_a_terminal():
    stream = io.StringIO()
    log = ProgressLog(100, "fig3a", stream=stream)
    for _ in range(100):
        log.update()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 20 and lines[0] == "fig3a: 5/100 trials (5%)" and lines[-1] == "fig3a: 100/100 trials (100%)"

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    quiet = ProgressLog(10, "x", stream=terminal)
    quiet.update()
    assert terminal.getvalue() == ""


def test_why_nothing_names_the_threshold_and_what_lowers_it():
    text = why_nothing(pd.Series({"output_time": 1000, "tau_final": 250.0, "gamma": 60.0}), 0.3)
    assert "tau = 250" in text and "25.0% of the stream" in text and "epsilon = 0.3" in text
    assert "larger epsilon" in text and "longer stream" in text and "k_tilde" in text


@pytest.fixture
def words_csv(tmp_path):
    rng = np.random.default_rng(1)
    top, share = np.array(["apple", "banana", "cherry"]), np.array([0.2, 0.15, 0.1])
    u = rng.random(20_000)
    words = np.where(u < share.sum(), top[np.minimum(np.searchsorted(np.cumsum(share), u), 2)],
                     np.char.add("w", rng.integers(0, 5_000, u.size).astype(str)))
    path = tmp_path / "words.csv"
    path.write_text("word\n" + "\n".join(words) + "\n")
    return path


@pytest.mark.slow
def test_a_heavy_hitter_run_prints_its_words_or_why_it_found_none(words_csv, compose_cfg, tmp_path, capsys):
    base = ["mechanism=lazyhh", "data=items", f"data.path={words_csv}", "data.column=word", "trials=1", "n_jobs=1",
            f"results_dir={tmp_path}"]
    found = [*base, "epsilon=6"]  # below 6.21, where LazyHH's delta~ at delta 1e-3 reaches 1
    run(compose_cfg(found), CONF_DIR, found)
    out = capsys.readouterr().out
    assert "heavy hitters reported by trial 0" in out
    assert "apple: " in out and "banana: " in out
    none = [*base, "epsilon=0.05"]
    run(compose_cfg(none), CONF_DIR, none)
    out = capsys.readouterr().out
    assert "nothing reported: at t = " in out and "larger epsilon" in out
    assert "n/a (nothing reported)" in out


def test_the_reported_heavy_hitters_carry_their_mechanisms_label(monkeypatch):
    """A non-private tracker's list (CMS heap: near-exact counts) says so, as the table above it does."""
    from dpstream.harness import console as console_module

    monkeypatch.setattr(console_module, "replay_reported", lambda params: ([("apple", 5189.0)], 19968, None))
    for label in (NOT_PRIVATE, CERTIFIED):
        lines = console_module.heavy_hitter_lines(pd.DataFrame([{"n_reported": 1, "privacy": label}]), {})
        assert lines[0].endswith(f"(item: estimated count; privacy: {label}):") and lines[1] == "  apple: 5189"
    # review 4's new user: a certified list names the numbers of its guarantee (LazyHH: the delta~ that holds)
    monkeypatch.setattr(console_module, "replay_reported",
                        lambda params: ([("apple", 5189.0)], 19968, (4.0, 0.11219830006628848)))
    row = {"n_reported": 1, "privacy": CERTIFIED, "delta_tilde": 0.11219830006628848}
    lines = console_module.heavy_hitter_lines(pd.DataFrame([row]), {})
    assert lines[0].endswith(f"privacy: {CERTIFIED} at (epsilon, delta~) = (4, 0.1122)):")


def test_a_run_of_private_and_non_private_mechanisms_labels_each_setting(capsys):
    """fig3b's heading said "privacy: (epsilon, delta)-DP, certified, none (not private)" over CMS and LazyCMS alike."""
    from dpstream.harness.console import print_run

    df = pd.DataFrame([{"mechanism.name": "cms", "privacy": NOT_PRIVATE, "memory_bytes": 756},
                       {"mechanism.name": "lazycms", "privacy": CERTIFIED, "memory_bytes": 19896}])
    print_run(df, "fig3b", {}, ["mechanism.name"], ["memory_bytes"])
    out = capsys.readouterr().out
    assert "released by the mechanisms (privacy: per setting):" in out and f"privacy: {CERTIFIED}, {NOT_PRIVATE}" \
        not in out
    rows = [line.split() for line in out.splitlines()]
    assert ["cms", *NOT_PRIVATE.split(), "756"] in rows and ["lazycms", *CERTIFIED.split(), "19896"] in rows
    print_run(df.iloc[1:], "fig3b", {}, ["mechanism.name"], ["memory_bytes"])
    assert f"released by the mechanism (privacy: {CERTIFIED}):" in capsys.readouterr().out


def test_the_report_names_the_command_as_typed():
    from dpstream.harness.console import typed_command

    assert typed_command(["/venv/bin/dpstream", "experiment=all", "profile=smoke"]) == \
        "dpstream experiment=all profile=smoke"
    assert typed_command(["/x/dpstream/__main__.py", "experiment=fig3"]) == "python -m dpstream experiment=fig3"
    assert typed_command(["run.py"]) == "python run.py"


def test_figures_are_png_at_300_dpi_and_fmt_adds_pdf_and_svg(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from dpstream.harness.runner import figure_formats
    from dpstream.plots.common import save_figure

    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [0, 1])
    path = tmp_path / "f.png"
    save_figure(fig, pd.DataFrame(), {"id": "f", "formats": figure_formats({"fmt": ["pdf", "svg"]})}, path)
    assert round(Image.open(path).info["dpi"][0]) == 300
    assert (tmp_path / "f.pdf").stat().st_size > 0 and (tmp_path / "f.svg").stat().st_size > 0
    assert figure_formats({"fmt": "png"}) == ["png"]
    with pytest.raises(ValueError, match="fmt"):
        figure_formats({"fmt": "gif"})


@pytest.mark.parametrize("profile", ["smoke", "paper"])
def test_a_smoke_report_marks_every_verdict_as_reduced_scale(tmp_path, monkeypatch, profile):
    from dpstream.harness.report import write_report

    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "x.claims.csv").write_text(
        "claim,rule,measured,verdict\nA falls,p<0.05,p 0.01,confirmed\nB holds,x<1,x 2,not confirmed\n")
    monkeypatch.setattr("sys.argv", ["/venv/bin/dpstream", "experiment=all", f"profile={profile}"])
    cfg = {"results_dir": str(tmp_path), "profile": {"name": profile}, "seed": 0, "noise": "numpy",
           "backend": "loky", "n_jobs": 1}
    report = write_report([{"id": "x", "title": "X"}], [pd.DataFrame({"certified": [True]})], cfg).read_text()
    assert f"Regenerated by `dpstream experiment=all profile={profile}`" in report
    banner = "reduced scale, not a reproduction"
    assert report.count(f"confirmed ({banner})**") == (2 if profile == "smoke" else 0)


def test_the_config_line_fits_100_columns_and_counts_what_it_leaves_out():
    from dpstream.harness.console import config_line

    line = config_line({f"mechanism.key_{i}": "x" * 20 for i in range(10)}, "config.yaml")
    assert len(line) <= 100 and line == f"config: mechanism.key_0={'x' * 20}, +9 more (every key: config.yaml)"
    assert config_line({}, "config.yaml") == "config: the defaults (every key: config.yaml)"


def test_a_run_shows_the_keys_it_changed_and_writes_every_key_to_its_folder(compose_cfg, tmp_path, capsys):
    from dpstream.harness.runner import run
    from dpstream.registry import CONF_DIR

    over = ["mechanism=lazycms", "trials=2", "data.length=4096", "width=40", "mechanism.private=true",
            f"results_dir={tmp_path}"]
    run(compose_cfg(over), CONF_DIR, over)
    lines = capsys.readouterr().out.splitlines()
    assert "config: data.length=4096, width=40 (every key: config.yaml)" in lines  # private: true is the default
    (folder,) = (tmp_path / "runs").iterdir()
    written = (folder / "config.yaml").read_text()
    assert "length: 4096" in written and "width: 40" in written and "epsilon: 0.3" in written
