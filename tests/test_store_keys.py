"""Store keys.

The declared row columns replace the hand-bumped ``schema:`` keys, and rows stored before issue 12 (Hydra-native
configs) are re-keyed instead of recomputed (``dpstream.harness.migrate``).
"""

import _harness_fake
import pytest
from conftest import CONF_DIR
from test_harness import fake_cfg, fake_conf

from dpstream.harness.config import load_option
from dpstream.harness.migrate import legacy_params, migrate
from dpstream.harness.runner import config_columns, plan, run, store_key, trial_function
from dpstream.harness.store import ResultsStore, trial_key
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
    monkeypatch.setattr(_harness_fake.declared_trial, "row_columns", ("value", "elapsed_s", "new_metric"))
    run(cfg, conf)
    assert computed(capsys) == 24, "a changed declaration must invalidate the stored rows"


def test_a_row_with_an_undeclared_column_is_rejected(tmp_path, monkeypatch):
    conf = declared_conf(tmp_path)
    monkeypatch.setattr(_harness_fake.declared_trial, "row_columns", ("elapsed_s",))
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


# Keys of the first trial of each experiment at profile=smoke, as written by the code before issue 12 (commit 7ae5ddb,
# the `key` column of its smoke tables): legacy_params must give back exactly the config those keys hashed.
KEYS_BEFORE = {"svt_c": "d7d0916e57b97aeaafb5", "shifting_hh": "ecab11986ae96b97924e",
               "audit_svt": "1db1b8720294c6835fe3", "audit_power": "1006b2f5361faba1895c",
               "svt_kcap": "3d7ecbdcad3352262d32", "fig3a": "9d15aca5398a7df978bb", "fig4a": "497438dad3822da97d17",
               "qr_median_toy": "2590470af0099dc05f42"}


def first_trial(compose_cfg, experiment, tmp_path):
    overrides = [f"experiment={experiment}", "profile=smoke", f"results_dir={tmp_path}"]
    spec, trials = plan(compose_cfg(overrides), CONF_DIR, overrides).experiments[0]
    return spec, trials[0]


@pytest.mark.parametrize("experiment", sorted(KEYS_BEFORE))
def test_legacy_params_give_the_keys_stored_before_issue_12(experiment, compose_cfg, tmp_path):
    spec, params = first_trial(compose_cfg, experiment, tmp_path)
    assert trial_key(legacy_params(params)) == KEYS_BEFORE[experiment]
    assert store_key(params, trial_function(params, spec)) != KEYS_BEFORE[experiment]


def test_migrate_rekeys_a_legacy_row_with_the_new_config_columns(compose_cfg, tmp_path):
    spec, params = first_trial(compose_cfg, "svt_c", tmp_path)
    old = legacy_params(params)
    store = ResultsStore(tmp_path / "trials.jsonl")
    metrics = {"emp_alpha": 12.5, "recall": 1.0, "certified": True, "dpstream_version": "0"}
    store.append({"key": trial_key(old), **config_columns(old), **metrics})
    key = store_key(params, trial_function(params, spec))
    jobs = [(key, trial_function(params, spec), params)]
    assert migrate(jobs, store) == 1 and migrate(jobs, store) == 0
    row = ResultsStore(tmp_path / "trials.jsonl").get(key)  # durable: read back from the file
    assert row == {"key": key, **config_columns(params), **metrics}
    assert "mechanism.c" not in row and "mechanism.schema" not in row and row["data.c"] == old["mechanism"]["c"]


def test_every_trial_function_of_the_configs_declares_its_row_columns():
    from dpstream.harness.config import import_object, options

    functions = {load_option(CONF_DIR, "mechanism", n).get("trial") for n in options(CONF_DIR, "mechanism")}
    functions |= {load_option(CONF_DIR, "experiment", n).get("trial") for n in options(CONF_DIR, "experiment")}
    missing = sorted(f for f in functions - {None} if row_schema(import_object(f)) is None)
    assert not missing, f"declare the row columns of {missing} with @row_columns(...)"
