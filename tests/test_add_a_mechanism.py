"""docs/harness.md "Add a mechanism", followed for a toy SVT variant and a toy counter through config only.

The toy variant is a class of this module (walk-through step 1), named as ``_target_`` by a mechanism yaml written
into a temporary copy of the config tree (step 2) and swept beside Sparse by a temporary experiment (step 5); one smoke
trial of each runs through the harness. The toy class is Sparse under another name, so its row must equal Sparse's at
the same seeds: that checks that the harness really built the class the config names with the configured arguments.
"""

import re
import shutil

import pytest
from conftest import CONF_DIR, ROOT
from hydra import compose, initialize_config_dir

from dpstream.audit.sensitivity import probe
from dpstream.audit.sensitivity_cases import sketch_case
from dpstream.counters import COUNTERS, StoredBinary
from dpstream.harness.runner import is_timing, run
from dpstream.sketches import LazyCMS
from dpstream.svt import Sparse


class ToySparse(Sparse):
    """Sparse under another name (the walk-through's toy variant): Sparse's privacy and noise, unchanged."""

    built = 0

    def __init__(self, **kwargs):
        ToySparse.built += 1
        super().__init__(**kwargs)


TOY_YAML = """# Toy SVT variant of tests/test_add_a_mechanism.py (docs/harness.md, Add a mechanism).
name: svt_toy
_target_: test_add_a_mechanism.ToySparse
trial: dpstream.trials.svt:atoms_trial
private: true
uses: [epsilon, delta]
data_kinds: [svt_atoms]
cutoff_ratio: 1.0
composition: best
kappa: 1.0
runs: 500
beta: 0.05
"""
EXPERIMENT_YAML = """id: toy
title: "toy variant beside Sparse"
trials: 1
fixed: {data: svt_atoms, epsilon: 1.0, delta: 1.0e-6, data.c: 10, data.k_star: 2, data.n_near: 10, data.n_far: 10,
        mechanism.runs: 5}
grid:
  mechanism: [svt_sparse, svt_toy]
"""


def walkthrough_lists() -> dict[str, list[str]]:
    """The numbered file lists of the docs' "Add a mechanism" section, by the paragraph that introduces them."""
    section = (ROOT / "docs" / "harness.md").read_text().split("## Add a mechanism", 1)[1]
    heading = r"^(A new [\w ]+?)(?: \([^)]*\))?, at most \d+ files:$"
    parts = re.split(heading, section, flags=re.MULTILINE)  # [intro, name, body, name, body, ...]
    return {name: re.findall(r"^\d+\. `([^`]+)`", body, flags=re.MULTILINE)
            for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_the_walkthrough_touches_at_most_six_files_that_exist():
    lists = walkthrough_lists()
    assert set(lists) == {"A new SVT variant", "A new continual counter"}
    for name, files in lists.items():
        assert 1 <= len(files) <= 6, (name, files)
        for path in files:  # a template <name> must sit in an existing folder; a named file must exist
            target = ROOT / path
            assert (target.parent.is_dir() if "<" in path else target.is_file()), path


def test_a_toy_svt_variant_runs_through_the_harness_by_config_only(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    touched = [conf / "mechanism" / "svt_toy.yaml", conf / "experiment" / "toy.yaml"]
    touched[0].write_text(TOY_YAML)
    touched[1].write_text(EXPERIMENT_YAML)
    overrides = ["experiment=toy", "profile=smoke", f"results_dir={tmp_path / 'results'}"]
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    before = ToySparse.built
    df = run(cfg, conf, overrides)[0]
    assert ToySparse.built > before, "the harness built the class the config names"
    rows = {name: row for name, row in zip(df["mechanism.name"], df.to_dict("records"), strict=True)}
    assert set(rows) == {"svt_sparse", "svt_toy"}
    toy, sparse = rows["svt_toy"], rows["svt_sparse"]
    assert toy["mechanism._target_"] == "test_add_a_mechanism.ToySparse"
    assert toy["n_runs"] == 5 and toy["c"] == 10 and toy["certified"]
    same = [c for c in df.columns if not is_timing(c) and c not in ("key", "mechanism.name", "mechanism._target_")]
    assert {c: toy[c] for c in same} == {c: sparse[c] for c in same}
    assert len(touched) + 1 <= 6  # the two yamls and the class: the files a variant of an existing kind needs


class ToyCounter(StoredBinary):
    """The paper's stored binary tree under another name (the walk-through's toy counter): same noise, same privacy."""

    name = "toy_binary"


TOY_COUNTER_YAML = """# Toy counter of tests/test_add_a_mechanism.py (docs/harness.md, Add a mechanism).
name: lazycms_toy
_target_: dpstream.sketches.LazyCMS
trial: dpstream.trials.sketch:run_trial
private: true
uses: [epsilon, delta, width, depth, memory_kb, release_times]
data_kinds: [stream]
counter: toy_binary
"""
COUNTER_EXPERIMENT_YAML = """id: toy_counter
title: "toy counter beside the paper's LazyCMS"
trials: 1
fixed: {data: zipf, data.length: 4096, epsilon: 0.5, delta: 0.001, depth: 3, width: 16}
grid:
  mechanism: [lazycms, lazycms_toy]
"""


def test_a_toy_counter_runs_through_the_harness_and_the_probe_by_registration_and_config(tmp_path, monkeypatch):
    monkeypatch.setitem(COUNTERS, ("toy_binary", "stored"), ToyCounter)  # walk-through step 2
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    (conf / "mechanism" / "lazycms_toy.yaml").write_text(TOY_COUNTER_YAML)  # step 3
    (conf / "experiment" / "toy_counter.yaml").write_text(COUNTER_EXPERIMENT_YAML)  # step 6
    overrides = ["experiment=toy_counter", "profile=smoke", f"results_dir={tmp_path / 'results'}"]
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    df = run(cfg, conf, overrides)[0]
    rows = {name: row for name, row in zip(df["mechanism.name"], df.to_dict("records"), strict=True)}
    toy, paper = rows["lazycms_toy"], rows["lazycms"]
    same = [c for c in df.columns if not is_timing(c) and c not in ("key", "mechanism.name", "mechanism.counter")]
    assert toy["mechanism.counter"] == "toy_binary"
    assert {c: toy[c] for c in same} == {c: paper[c] for c in same}  # the same tree: the same releases
    sketch = LazyCMS(width=8, depth=3, epsilon=0.5, delta=1e-3, horizon=512, seed=0, counter="toy_binary")
    assert type(sketch._state.counters) is ToyCounter
    result = probe(sketch_case(LazyCMS, counter="toy_binary"), seed=0)  # the probe needs no edit for it
    assert not result.exceeds and result.worst == pytest.approx(result.assumed, rel=1e-9)
