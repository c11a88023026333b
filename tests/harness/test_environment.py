"""Every results row and the report header record numpy, numba, scipy, pandas and the lock's hash; keys ignore them."""

import hashlib
from importlib import metadata

import pandas as pd
from conftest import ROOT
from test_harness import fake_cfg, fake_conf
from test_store_keys import computed

from dpstream.harness import environment as env_module
from dpstream.harness.environment import ENV_COLUMNS, environment, lock_hash
from dpstream.harness.runner import run
from dpstream.registry import load_option


def test_the_environment_names_the_installed_versions_and_the_lock_hash():
    env = environment()
    assert tuple(env) == ENV_COLUMNS
    for package in ("numpy", "numba", "scipy", "pandas"):
        assert env[f"{package}_version"] == metadata.version(package)
    lock = ROOT / "requirements.lock"
    assert env["lock_sha256"] == hashlib.sha256(lock.read_bytes()).hexdigest()[:12]
    assert lock_hash(ROOT / "no-such.lock") == "none"


def test_rows_record_the_environment_and_a_new_environment_recomputes_nothing(tmp_path, capsys, monkeypatch):
    conf = fake_conf(tmp_path)
    cfg = fake_cfg(conf, tmp_path, experiment=load_option(conf, "experiment", "e1"))
    run(cfg, conf)
    assert computed(capsys) == 24
    (folder,) = (tmp_path / "results" / "runs").iterdir()
    table = pd.read_csv(folder / "tables" / "e1.csv", dtype=str)
    for column, value in environment().items():
        assert (table[column] == value).all(), column
    other = {**environment(), "numpy_version": "0.0.1", "lock_sha256": "000000000000"}
    monkeypatch.setattr(env_module, "environment", lambda: other)
    monkeypatch.setattr("dpstream.harness.runner.environment", lambda: other)
    run(cfg, conf)
    assert computed(capsys) == 0, "the environment is recorded, never part of the store key"


def test_the_report_header_names_the_versions_and_the_lock_hash():
    from dpstream.harness.report import provenance

    cfg = {"profile": {"name": "smoke"}, "seed": 0, "noise": "numpy", "backend": "loky", "n_jobs": 1}
    header = provenance(cfg)
    env = environment()
    assert [header[p] for p in ("numpy", "numba", "scipy", "pandas")] == [
        env[f"{p}_version"] for p in ("numpy", "numba", "scipy", "pandas")]
    assert header["requirements.lock sha256"] == env["lock_sha256"] != "none"
