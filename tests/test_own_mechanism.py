"""docs/harness.md "Add a mechanism", followed from outside the package: ``examples/own_mechanism``.

A toy sparse vector variant (``toy_svt.py``) and a toy continual counter (``toy_counter.py``) live outside ``src/`` and
``tests/``, with their configs in the researcher's own config dir (``conf/``, reached by ``hydra.searchpath``) and
their own contract test. This test puts that directory on the path as a researcher would (``PYTHONPATH``), runs
``check_mechanism`` over both and one experiment point of each through the harness, and checks that the docs list at
most 4 files per mechanism, all outside ``src/`` and ``tests/``.
"""

import math
import re

import pytest
from conftest import CONF_DIR, ROOT
from hydra import compose, initialize_config_dir

from dpstream.harness.runner import is_timing, run
from dpstream.testing import check_mechanism

OWN = ROOT / "examples" / "own_mechanism"


@pytest.fixture
def own(monkeypatch):
    """The researcher's directory on the import path, and its modules."""
    monkeypatch.syspath_prepend(str(OWN))
    import toy_counter
    import toy_svt

    return toy_svt, toy_counter


def walkthrough_lists() -> dict[str, list[str]]:
    """The numbered file lists of the docs' "Add a mechanism" section, by the paragraph that introduces them."""
    section = (ROOT / "docs" / "harness.md").read_text().split("## Add a mechanism", 1)[1]
    heading = r"^(A new [\w ]+?)(?: \([^)]*\))?, at most \d+ files:$"
    parts = re.split(heading, section, flags=re.MULTILINE)  # [intro, name, body, name, body, ...]
    return {name: re.findall(r"^\d+\. `([^`]+)`", body, flags=re.MULTILINE)
            for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_the_walkthrough_lists_at_most_four_files_per_mechanism_all_outside_the_package_and_tests():
    lists = walkthrough_lists()
    assert set(lists) == {"A new SVT variant", "A new continual counter"}
    for name, files in lists.items():
        assert 1 <= len(files) <= 4, (name, files)
        for path in files:
            assert not path.startswith(("src/", "tests/")), path
            assert (ROOT / path).is_file(), path  # the example's file of that step


@pytest.mark.parametrize("which", ["svt", "counter"])
def test_check_mechanism_passes_on_the_toy_mechanisms(own, which):
    module = own[0] if which == "svt" else own[1]
    report = check_mechanism(module.SPEC)
    assert {"arguments", "privacy", "noise", "sensitivity", "reproducibility"} <= set(report.passed)


def one_point(experiment, tmp_path):
    overrides = [f"experiment={experiment}", "profile=smoke", f"results_dir={tmp_path / 'results'}", "n_jobs=1"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):  # as dpstream hydra.searchpath=[...]
        cfg = compose(config_name="config", overrides=[f"hydra.searchpath=[file://{OWN / 'conf'}]", *overrides])
    df = run(cfg, [CONF_DIR, OWN / "conf"], overrides)[0]
    return {name: row for name, row in zip(df["mechanism.name"], df.to_dict("records"), strict=True)}, df


def test_a_one_point_experiment_runs_the_toy_svt_variant_beside_sparse(own, tmp_path):
    with pytest.warns(UserWarning, match="theory_alpha of WideQuerySparse is NaN: no accuracy bound is registered"):
        rows, _ = one_point("toy_svt", tmp_path)
    wide, sparse = rows["svt_wide"], rows["svt_sparse"]
    assert wide["mechanism._target_"] == "toy_svt.WideQuerySparse" and wide["certified"]
    assert wide["n_runs"] == sparse["n_runs"] == 20 and wide["c"] == sparse["c"] == 10
    assert wide["emp_alpha"] != sparse["emp_alpha"]  # wider query noise: other (and here larger) errors
    # no accuracy theorem for the variant: NaN (never Sparse's bound), while Sparse keeps its own
    assert math.isnan(wide["theory_alpha"]) and math.isnan(wide["emp_over_theory"])
    assert math.isfinite(sparse["theory_alpha"]) and sparse["theory_alpha"] > 0


def test_a_one_point_experiment_runs_the_toy_counter_as_the_cells_of_lazycms(own, tmp_path):
    rows, df = one_point("toy_counter", tmp_path)
    toy, paper = rows["lazycms_toy"], rows["lazycms"]
    assert toy["mechanism.counter"] == "toy_counter:ToyCounter"
    own = ("key", "mechanism.name", "mechanism.counter", "mechanism.node_noise")  # node_noise: the paper's tree only
    same = [c for c in df.columns if not is_timing(c) and c not in own]
    assert {c: toy[c] for c in same} == {c: paper[c] for c in same}  # the paper's tree under another name
