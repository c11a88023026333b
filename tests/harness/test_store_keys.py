"""Store keys.

The declared row columns replace hand-bumped ``schema:`` keys; the store records its format version and refuses
another one.
"""

import ast
import itertools
import re
from pathlib import Path
from typing import Any

import _harness_fake
import pandas as pd
import pytest
from conftest import CONF_DIR, ROOT
from omegaconf import OmegaConf
from test_harness import fake_cfg, fake_conf

from dpstream.counters import philox
from dpstream.harness import runner
from dpstream.harness.config import RUN_KEYS
from dpstream.harness.runner import run, store_key
from dpstream.harness.store import NOT_IN_KEY, STORE_FORMAT, ResultsStore, StoreError, trial_key
from dpstream.harness.verify import BLOCK
from dpstream.registry import load_option, options
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


# --- the committed tables: every row's key is the key of the config it records ---------------------------------------
#
# A row records its config flattened (``runner.config_columns``) and its key (``runner.store_key``); a key the current
# code does not compute from that config is a trial the next run computes again instead of reading it from the store.
# The CSV keeps what the key hashes except where a cell is ambiguous, and each reading of such a cell is tried:
# - an empty cell of a ``mechanism.*`` / ``data.*`` column is a null value, or a key this row's option does not have
#   (a pooled table's column of another option);
# - an integral float in a column with empty cells may be an int (pandas writes an int column with gaps as float);
# - a top-level key's empty cell is null (``conf/config.yaml`` has every one); ``profile.overrides`` is an empty
#   mapping (it flattens to no column); a pooled table's ``trial`` is ``seed * BLOCK + trial`` (``verify.pooled``).
# A column is split into keys only where the config's own mappings nest (``structure``, ``nested``): the dotted name
# of an option inside a mapping (fig4a's timing reference ``{mechanism.k_tilde: 128}``) is one key.

TABLES = ROOT / "results" / "tables"
GROUPS = ("mechanism", "data", "profile")
INTEGRAL = re.compile(r"-?\d+\.0")
WRITTEN_UNDER = {
    # Tables written before their trial function's declared row columns changed: their rows are keyed by the
    # declaration they were written under, and the next run recomputes them (by design, ``trials.row_schema``). Their
    # keys are checked with that declaration's digest, and must not reproduce under the current one.
    # fig4a-c: the seed-0 verify run's rows (7db20ad; the three panels share their 60 trials), keyed like the other
    # Fig. 4 tables; they reproduce once the timing reference's literal key mechanism.k_tilde is read as one key
    **dict.fromkeys(("fig4a", "fig4b", "fig4c"), "417025cd"),  # trials.heavy_hitters
    "qr_analyst_audit": "4d5419c3",  # trials.query_release:analyst_audit_trial
}
NOT_REPRODUCED: dict[str, frozenset[str]] = {}
"""Rows whose key the current code does not compute from their recorded config, by table; the next run of their
experiment recomputes them. Any other row that does not reproduce fails the test, and so does a listed one that does."""


def parse_cell(text: str) -> Any:
    """A CSV cell as ``DataFrame.to_csv`` wrote the config value: None, bool, int, float, list or str."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return ast.literal_eval(text) if text[:1] in "[{" else text


def ambiguous_cells(row: dict[str, str], gappy: set[str]) -> list[str]:
    """The option cells of ``row`` with two readings: empty (null or absent), or integral in a gappy column."""
    return [c for c, v in row.items() if c.split(".")[0] in ("mechanism", "data") and (
        v == "" or (c in gappy and INTEGRAL.fullmatch(v)))]


def structure(experiment: dict[str, Any], row: dict[str, str]) -> dict[str, Any]:
    """The mappings a row's config is made of: its mechanism and data options, and the experiment's keys set on them.

    An experiment's dotted key (``mechanism.timing``) is a path, as the runner sets it; the keys inside its value are
    literal (``reference: {mechanism.k_tilde: 128}`` holds the one key ``mechanism.k_tilde``).
    """
    out: dict[str, Any] = {"mechanism": {}, "data": {}}
    for group in out:
        if row.get(f"{group}.name") in options(CONF_DIR, group):  # a name since renamed has no option file
            out[group] = load_option(CONF_DIR, group, row[f"{group}.name"])
    sections = [experiment, *((experiment.get("profiles") or {}).values())]
    for section in sections:
        for part in ("fixed", "grid", "zip"):
            for key, value in (section.get(part) or {}).items():
                *path, leaf = str(key).split(".")
                if path and path[0] in out:
                    node = out
                    for name in path:
                        node = node.setdefault(name, {}) if isinstance(node.get(name), dict | None) else {}
                    node[leaf] = value if isinstance(value, dict) else node.get(leaf)
    return out


def nested(column: str, known: dict[str, Any]) -> list[str]:
    """The keys of ``column`` (a flattened config column) from the top down, split only where ``known`` nests.

    At each level the longest run of dot-separated parts that is a key of the known mapping there is one key; where
    nothing is known, every dot separates two keys.
    """
    parts, keys, node = column.split("."), [], known
    while parts:
        size = next((n for n in range(len(parts), 0, -1) if isinstance(node, dict) and ".".join(parts[:n]) in node), 1)
        keys.append(".".join(parts[:size]))
        node = node.get(keys[-1]) if isinstance(node, dict) else None
        parts = parts[size:]
    return keys


def reading(row: dict[str, str], top: tuple[str, ...], other: set[str],
            known: dict[str, Any] | None = None) -> dict[str, Any]:
    """The config ``row`` records, nested as the runner hashes it, with the cells of ``other`` read the other way.

    A column is split where the config's mappings (``known``, ``structure``) nest, so a dotted option name inside a
    mapping stays one key.
    """
    params: dict[str, Any] = {"profile": {"overrides": {}}}
    for column, text in row.items():
        if not (column in top or column == "trial" or column.split(".")[0] in GROUPS):
            continue
        if column in other and text == "":
            continue  # not a key of this row's option
        value = int(float(text)) if column in other else parse_cell(text)
        node = params
        *path, leaf = nested(column, known or {})
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    seed, trial = params["seed"], params["trial"]
    if seed and trial >= seed * BLOCK:
        params["trial"] = trial - seed * BLOCK
    return params


def unreproduced(path: Path) -> list[str]:
    """The keys of the rows of ``path`` that no reading of their recorded config gives under this code.

    The readings are tried per option pair (mechanism and data name), the last one that held first: a column is
    read the same way in every row of an option.
    """
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    config = OmegaConf.load(CONF_DIR / "config.yaml")
    top = tuple(str(k) for k in config if k not in (*RUN_KEYS, *NOT_IN_KEY, "defaults", "hydra"))
    gappy = {c for c in df.columns if (df[c] == "").any()}
    experiment = load_option(CONF_DIR, "experiment", df["experiment"].iloc[0])
    held: dict[tuple[str, str], set[str]] = {}
    known: dict[tuple[str, str], dict[str, Any]] = {}
    missing = []
    for row in df.to_dict("records"):
        fn = experiment.get("trial") or row["mechanism.trial"]
        option = (row["mechanism.name"], row["data.name"])
        if option not in known:
            known[option] = structure(experiment, row)
        cells = ambiguous_cells(row, gappy)
        choices = [held[option] & set(cells)] if option in held else []
        choices += [{c for c, pick in zip(cells, picks, strict=True) if pick}
                    for picks in itertools.product((False, True), repeat=len(cells))]
        found = next((other for other in choices if store_key(reading(row, top, other, known[option]), fn)
                      == row["key"]), None)
        if found is None:
            missing.append(row["key"])
        else:
            held[option] = found
    return missing


def keyed_tables() -> list[Path]:
    return sorted(p for p in TABLES.glob("*.csv") if pd.read_csv(p, nrows=0).columns[:2].tolist() == ["experiment",
                                                                                                     "key"])


@pytest.mark.parametrize("path", keyed_tables(), ids=lambda p: p.stem)
def test_every_committed_row_has_the_key_of_its_recorded_config(path, monkeypatch):
    """A committed table is what the store gives back: each row's key is its recorded config's under this code.

    Except the rows of ``NOT_REPRODUCED``; the tables of ``WRITTEN_UNDER`` under the row declaration they were
    written under.
    """
    if path.stem in WRITTEN_UNDER:
        assert len(unreproduced(path)) == len(pd.read_csv(path, usecols=["key"])), \
            f"{path.name} has the rows of its trial function's current declaration: drop it from WRITTEN_UNDER"
        monkeypatch.setattr(runner, "row_schema", lambda fn: WRITTEN_UNDER[path.stem])
    missing = set(unreproduced(path))
    expected = NOT_REPRODUCED.get(path.stem, frozenset())
    assert missing == expected, (
        f"{path.name}: {len(missing - expected)} row(s) whose key this code does not compute from the config they "
        f"record (the next run recomputes them): {sorted(missing - expected)[:12]}; listed but reproduced: "
        f"{sorted(expected - missing)[:12]}")


def test_a_row_whose_recorded_config_was_changed_does_not_reproduce(tmp_path):
    df = pd.read_csv(TABLES / "counters.csv", dtype=str, keep_default_na=False).head(3)
    df.loc[1, "data.skew"] = "1.2"  # a config the row was not computed under
    df.loc[2, "mechanism.speed_steps"] = "256.0"  # an int column read as a float: no gap in it, so no int reading
    df.to_csv(tmp_path / "counters.csv", index=False)
    assert unreproduced(tmp_path / "counters.csv") == [df.loc[1, "key"], df.loc[2, "key"]]


def test_a_dotted_option_name_inside_a_mapping_is_read_as_one_key():
    """fig4a's timing reference holds the literal key ``mechanism.k_tilde``: only the config's own nesting splits."""
    experiment = load_option(CONF_DIR, "experiment", "fig4a")
    row = {"mechanism.name": "lazyhh", "data.name": "caida_like", "mechanism.k_tilde": "256",
           "mechanism.timing.reference.mechanism.k_tilde": "128", "mechanism.timing.reference.memory_kb": "20",
           "data.zipf_exponent": "1.0", "seed": "0", "trial": "1"}
    params = reading(row, ("seed",), set(), structure(experiment, row))
    assert params["mechanism"]["timing"]["reference"] == {"mechanism.k_tilde": 128, "memory_kb": 20}
    assert params["mechanism"]["k_tilde"] == 256 and params["data"]["zipf_exponent"] == 1.0
    # without the structure every dot splits: the mis-nesting the known structure avoids
    assert reading(row, ("seed",), set())["mechanism"]["timing"]["reference"]["mechanism"] == {"k_tilde": 128}
