"""Store keys.

The declared row columns replace hand-bumped ``schema:`` keys; the store records its format version and refuses
another one.
"""

import _harness_fake
import pytest
from conftest import CONF_DIR
from test_harness import fake_cfg, fake_conf

from dpstream.counters import philox
from dpstream.harness.runner import run
from dpstream.harness.store import STORE_FORMAT, ResultsStore, StoreError, trial_key
from dpstream.registry import load_option
from dpstream.secure import samplers
from dpstream.trials import row_schema, undeclared


def declared_conf(tmp_path):
    conf = fake_conf(tmp_path)
    path = conf / "mechanism" / "fake.yaml"
    path.write_text(path.read_text().replace("_harness_fake:run_trial", "_harness_fake:declared_trial"))
    return conf


def computed(capsys) -> int:
    out = capsys.readouterr().out
    return int(out.split(" computed")[0].rsplit("(", 1)[1])


def test_a_changed_row_declaration_recomputes_the_stored_rows(tmp_path, capsys, monkeypatch):
    conf = declared_conf(tmp_path)
    cfg = fake_cfg(conf, tmp_path, experiment=load_option(conf, "experiment", "e1"))
    run(cfg, conf)
    assert computed(capsys) == 24
    run(cfg, conf)
    assert computed(capsys) == 0, "same declaration: every row comes from the store"
    monkeypatch.setattr(_harness_fake.declared_trial, "row_columns",
                        ("value", "elapsed_s", "private", "certified", "new_metric"))
    run(cfg, conf)
    assert computed(capsys) == 24, "a changed declaration must invalidate the stored rows"


def test_a_row_with_an_undeclared_column_is_rejected(tmp_path, monkeypatch):
    conf = declared_conf(tmp_path)
    monkeypatch.setattr(_harness_fake.declared_trial, "row_columns", ("elapsed_s", "private", "certified"))
    with pytest.raises(ValueError, match=r"undeclared column\(s\) value: add them to its @row_columns"):
        run(fake_cfg(conf, tmp_path), conf)


def test_row_schema_is_order_free_and_patterns_match():
    def trial(params, seed):
        return {}

    trial.row_columns = ("b", "a", "size_g*")
    digest = row_schema(trial)
    trial.row_columns = ("size_g*", "a", "b")
    assert row_schema(trial) == digest and len(digest) == 8
    assert undeclared(trial, {"a": 1, "size_g07": 2, "c": 3}) == ["c"]
    assert row_schema(lambda p, s: {}) is None  # undeclared functions: no schema entry in the key


def test_a_new_store_records_its_format_and_an_older_or_unknown_one_is_refused(tmp_path):
    path = tmp_path / "trials.jsonl"
    ResultsStore(path).append({"key": "a", "v": 1})
    assert path.with_suffix(".format").read_text() == f"{STORE_FORMAT}\n"
    assert ResultsStore(path).get("a") == {"key": "a", "v": 1}
    path.with_suffix(".format").unlink()  # a store written before formats were recorded
    with pytest.raises(StoreError, match=r"trials\.jsonl has no format version .*move the store away"):
        ResultsStore(path)
    path.with_suffix(".format").write_text("9\n")
    with pytest.raises(StoreError, match=r"is format '9'; this version of dpstream reads format 2: move the store"):
        ResultsStore(path)


def test_every_trial_function_of_the_configs_declares_its_row_columns():
    from dpstream.registry import import_object, options

    functions = {load_option(CONF_DIR, "mechanism", n).get("trial") for n in options(CONF_DIR, "mechanism")}
    functions |= {load_option(CONF_DIR, "experiment", n).get("trial") for n in options(CONF_DIR, "experiment")}
    missing = sorted(f for f in functions - {None} if row_schema(import_object(f)) is None)
    assert not missing, f"declare the row columns of {missing} with @row_columns(...)"


def test_derived_node_noise_is_keyed_by_its_normal_transform(monkeypatch):
    params = {"seed": 0, "trial": 1, "mechanism": {"name": "lazycms", "node_noise": "derived", "width": 8}}
    stored = {**params, "mechanism": {**params["mechanism"], "node_noise": "stored"}}
    before = trial_key(params), trial_key(stored)
    monkeypatch.setattr(philox, "NODE_NORMAL", "box-muller")
    assert trial_key(params) != before[0], "derived noise of another transform must not reuse the stored rows"
    assert trial_key(stored) == before[1], "stored node noise does not depend on the derived transform"


def test_exact_discrete_node_noise_is_keyed_by_its_sampler(monkeypatch):
    noises = ("discrete_secure", "discrete_secure_ahead", "discrete_secure_stored", "discrete_secure_ct", "derived")
    params = {n: {"seed": 0, "trial": 1, "mechanism": {"name": "lazycms", "node_noise": n, "width": 8}} for n in noises}
    before = {n: trial_key(p) for n, p in params.items()}
    monkeypatch.setattr(samplers, "EXACT_SAMPLER", "rejection-2020")
    after = {n: trial_key(p) for n, p in params.items()}
    assert after["discrete_secure"] != before["discrete_secure"], "rows of another exact sampler must not be reused"
    assert after["discrete_secure_ahead"] != before["discrete_secure_ahead"]
    assert after["discrete_secure_stored"] != before["discrete_secure_stored"]
    assert after["discrete_secure_ct"] == before["discrete_secure_ct"], "the table sampler does not use it"
    assert after["derived"] == before["derived"]


def test_exact_discrete_laplace_node_noise_is_keyed_by_its_own_sampler(monkeypatch):
    mechanism = {"name": "lazyhh", "counter": "laplace", "node_noise": "discrete_secure_stored", "width": 8}
    laplace = {"seed": 0, "trial": 1, "mechanism": mechanism}
    gaussian = {**laplace, "mechanism": {**mechanism, "counter": "binary"}}
    before = trial_key(laplace), trial_key(gaussian)
    monkeypatch.setattr(samplers, "LAPLACE_SAMPLER", "alg2-rational-2")
    assert trial_key(laplace) != before[0], "rows of another discrete Laplace sampler must not be reused"
    assert trial_key(gaussian) == before[1], "the discrete Gaussian tree does not use it"
