"""Results that cannot go stale or lie about their config: content-keyed file inputs, declared top-level keys."""

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import CONF_DIR

from dpstream.data.cache import file_fingerprint
from dpstream.data.traces import caida_trace
from dpstream.harness.config import SHARED_KEYS, declared_uses
from dpstream.harness.runner import run
from dpstream.harness.store import trial_key
from dpstream.registry import load_option, options


def file_conf(tmp_path: Path, trace: Path, uses: str = "[epsilon, delta, width]", fixed: str = "") -> Path:
    conf = tmp_path / "conf"
    for group in ("mechanism", "data", "experiment"):
        (conf / group).mkdir(parents=True)
    (conf / "mechanism" / "reader.yaml").write_text(f"name: reader\ntrial: _harness_fake:read_trial\nuses: {uses}\n"
                                                      "data_kinds: [stream]\n")
    (conf / "data" / "file.yaml").write_text(f"name: file\nkind: stream\npath: {trace}\n")
    (conf / "experiment" / "e.yaml").write_text(
        f"id: e\ntitle: reads a file\ntrials: 1\nfixed: {{mechanism: reader{fixed}}}\n")
    return conf


def file_cfg(conf: Path, tmp_path: Path) -> dict:
    return {
        "mechanism": load_option(conf, "mechanism", "reader"), "data": load_option(conf, "data", "file"),
        "profile": {"name": "paper", "results_dir": "unused", "overrides": {}},
        "experiment": load_option(conf, "experiment", "e"),
        "epsilon": 0.3, "delta": 0.001, "width": 5, "depth": 3, "memory_kb": None, "noise": "numpy",
        "trials": 1, "seed": 0, "n_jobs": 1, "backend": "sequential", "scheduler_address": None, "rerun": False,
        "data_dir": str(tmp_path / "data"), "results_dir": str(tmp_path / "results"),
    }


def replace_keeping_size_and_mtime(path: Path, text: str) -> None:
    before = path.stat()
    assert len(text.encode()) == before.st_size
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def test_replaced_input_file_is_recomputed_not_served_from_the_store(tmp_path):
    trace = tmp_path / "trace.txt"
    trace.write_text("first")
    conf = file_conf(tmp_path, trace)
    first = run(file_cfg(conf, tmp_path), conf)[0]
    assert first["content"].tolist() == ["first"]
    assert first["data.path_xxh3"].iloc[0] == file_fingerprint(trace)
    replace_keeping_size_and_mtime(trace, "other")
    second = run(file_cfg(conf, tmp_path), conf)[0]
    assert second["content"].tolist() == ["other"], "a replaced file must not return the old row"
    assert second["key"].iloc[0] != first["key"].iloc[0]
    assert second["data.path_xxh3"].iloc[0] != first["data.path_xxh3"].iloc[0]


def test_missing_input_file_is_named(tmp_path):
    conf = file_conf(tmp_path, tmp_path / "no-such-trace.pcap")
    with pytest.raises(ValueError, match=r"data\.path=.*no-such-trace\.pcap.*does not exist"):
        run(file_cfg(conf, tmp_path), conf)


def test_converted_trace_cache_is_keyed_by_content(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("time,proto,src\n0,6,10.0.0.1\n1,6,10.0.0.2\n")
    first = caida_trace(str(trace), format="csv", cache_dir=tmp_path / "cache")
    replace_keeping_size_and_mtime(trace, "time,proto,src\n0,6,10.0.0.3\n1,6,10.0.0.4\n")
    second = caida_trace(str(trace), format="csv", cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(second.items - first.items, [2, 2])


def test_every_mechanism_declares_the_top_level_keys_it_uses():
    for name in options(CONF_DIR, "mechanism"):
        uses = declared_uses(load_option(CONF_DIR, "mechanism", name))
        assert set(uses) <= set(SHARED_KEYS), name


def test_missing_declaration_is_rejected(tmp_path):
    trace = tmp_path / "t.txt"
    trace.write_text("x")
    conf = file_conf(tmp_path, trace, uses="null")
    with pytest.raises(ValueError, match="'reader' must declare `uses"):
        run(file_cfg(conf, tmp_path), conf)


def test_declaration_is_not_part_of_the_store_key():
    params = {"epsilon": 1.0, "mechanism": {"name": "m", "uses": ["epsilon"]}}
    assert trial_key(params) == trial_key({**params, "mechanism": {"name": "m", "uses": ["delta"]}})
    assert trial_key(params) != trial_key({**params, "epsilon": 2.0})


def test_command_line_key_the_mechanism_ignores_is_rejected(compose_cfg, tmp_path):
    overrides = ["mechanism=svt_theory", "data=none", "width=7", f"results_dir={tmp_path}"]
    with pytest.raises(ValueError, match=r"width=7: set \(on the command line\) but no mechanism .* reads width "
                                         r"\(mechanism svt_theory uses \['epsilon', 'delta'\]\)"):
        run(compose_cfg(overrides), CONF_DIR, overrides)


def test_experiment_key_no_mechanism_uses_is_rejected(tmp_path):
    trace = tmp_path / "t.txt"
    trace.write_text("x")
    conf = file_conf(tmp_path, trace, fixed=", memory_kb: 8")
    with pytest.raises(ValueError, match=r"memory_kb=8: set \(by experiment 'e'\) but no .* \(mechanism reader uses"):
        run(file_cfg(conf, tmp_path), conf)


def test_svt_audit_runs_at_the_epsilon_on_the_command_line(compose_cfg, tmp_path, capsys):
    overrides = ["mechanism=svt_audit", "data=none", "epsilon=5", "mechanism.runs_factor=0.05", "trials=1",
                 f"results_dir={tmp_path}"]
    df = run(compose_cfg(overrides), CONF_DIR, overrides)[0]
    assert df["epsilon"].tolist() == [5.0] and df["claimed_epsilon"].tolist() == [5.0]
    config_line = capsys.readouterr().out.split("config: ")[1].splitlines()[0]
    assert "epsilon=5" in config_line.replace(",", " ").split() and " delta=" not in config_line \
        and "width=" not in config_line


def test_typed_keys_are_read_from_one_conversion_of_the_config(monkeypatch):
    """``typed_experiment_keys`` and ``command_line_overrides`` convert the config once each, not once per key."""
    from omegaconf import OmegaConf

    from dpstream.harness.config import command_line_overrides, typed_experiment_keys

    cfg = {"experiment": {"id": "x", "grid": {"a": [1, 2], "b": [3]}, "trials": 4}, "epsilon": 0.5, "width": 8,
           "trials": 2, "mechanism": {"name": "m", "width": 16}}
    task = ["experiment.grid.a=[1,2]", "+experiment.grid.b=[3]", "experiment.trials=4", "epsilon=0.5", "width=8",
            "trials=2", "mechanism=m", "mechanism.width=16", "~delta", "profile=smoke"]
    converted = []
    create = OmegaConf.create
    monkeypatch.setattr(OmegaConf, "create", lambda obj=None, *a, **k: (converted.append(obj), create(obj, *a, **k))[1])
    assert typed_experiment_keys(task, cfg) == {"grid": {"a": [1, 2], "b": [3]}, "trials": 4}
    assert command_line_overrides(task, cfg) == [("epsilon", 0.5), ("width", 8), ("mechanism", cfg["mechanism"]),
                                                 ("mechanism.width", 16)]
    assert sum(obj is cfg for obj in converted) == 2
    converted.clear()
    assert typed_experiment_keys(["mechanism=m"], cfg) == {} and command_line_overrides(["mechanism=m"], cfg) == \
        [("mechanism", cfg["mechanism"])]
    assert not any(obj is cfg for obj in converted)  # nothing to select: the config is not converted
