"""Property-based fuzz of command-line overrides: every one is accepted, or refused in one line with exit status 2.

Each example is a few overrides (``key=value``, ``+key=value``, ``++key=value``, ``~key``) drawn from the config's
keys, unknown keys, and values good and bad (huge numbers, text where numbers belong, special files, Hydra grammar
errors). They run in this process through ``dpstream.cli.main`` with ``--cfg job``: the checks before Hydra, Hydra's
compose API, then the plan of every trial (the sizes of ``trials`` included), without running a trial. A results
store beside the runs must come out byte for byte as it went in. Fixed seed (``derandomize``); the ``long`` variant
draws more examples.
"""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dpstream.cli import main

NUMBER_KEYS = ("epsilon", "delta", "width", "depth", "memory_kb", "release_times", "trials", "seed", "n_jobs",
               "data.length", "data.universe", "data.skew", "mechanism.width", "experiment.trials")
OTHER_KEYS = ("noise", "backend", "fmt", "rerun", "scheduler_address", "results_dir", "data_dir", "mechanism.counter",
              "mechanism.node_noise", "mechanism.private", "mechanism.name", "data.path", "data.format")
GROUPS = {"mechanism": ("lazycms", "cms", "punctualcms_derived", "lazyhh", "svt_above_threshold", "qr_mwem", "nope"),
          "data": ("zipf", "none", "items", "caida_like", "svt_atoms", "nope"),
          "profile": ("smoke", "paper", "nope"),
          "experiment": ("fig3a", "fig3b", "null", "nope")}
UNKNOWN_KEYS = ("foo", "mechanism.foo", "data.foo", "profile.foo", "hydra.foo", "epsilon.x", "Epsilon", "")
BAD_VALUES = ("abc", "-1", "0", "1e10", "1e400", "99999999999999999999", "-99999999999999999999", "2**63", "nan",
              "inf", "-inf", "null", "", "[1,", "[1,2]", "{a: 1}", "${foo}", "${oc.env:DPSTREAM_NO_SUCH_VAR}",
              "/dev/null", "/proc/self", "/dev/null/x", "true", "0.3,1", "glob(*)", "'quoted'", "é", "a=b", "%",
              "../../x", "0x10", "1_000", "10000000000", "1000000000", "100000000")
FINDING_15 = (["width=99999999999999999999"], ["memory_kb=abc"], ["~epsilon"], ["results_dir=/dev/null"],
              ["results_dir=/proc/self"], ["data_dir=/dev/null"], ["trials=100000000"], ["++foo=1"])
"""The command-line bad inputs of issue 33, finding 15: tried first in every run of the fuzz."""
FOUND = (["hydra.foo=abc"], ["epsilon=0.5", "results_dir=-1"], ["epsilon=0.5", "fmt=-1"])
"""What the fuzz found (tracebacks before the fix): tried first as well."""
GOOD_VALUES = ("0.5", "1", "3", "64", "1000", "0.001", "2", "numpy", "loky", "sequential", "png", "false", "binary",
               "derived", "stored")


@st.composite
def overrides(draw: st.DrawFn, store_dir: str) -> str:
    """One command-line override."""
    edit = draw(st.sampled_from(("", "", "", "", "+", "++", "~")))
    kind = draw(st.sampled_from(("number", "other", "group", "unknown")))
    if kind == "group":
        key = draw(st.sampled_from(sorted(GROUPS)))
        value = draw(st.sampled_from(GROUPS[key]))
    else:
        key = draw(st.sampled_from({"number": NUMBER_KEYS, "other": OTHER_KEYS, "unknown": UNKNOWN_KEYS}[kind]))
        value = draw(st.one_of(st.sampled_from(BAD_VALUES), st.sampled_from(GOOD_VALUES), st.just(store_dir),
                               st.integers(-2**70, 2**70).map(str), st.floats().map(str),
                               st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)))
    if edit == "~" and draw(st.booleans()):
        return f"~{key}"
    return f"{edit}{key}={value}"


def run(args: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of ``dpstream args --cfg job`` in this process; any other exception propagates."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main([*args, "--cfg", "job"])
    except SystemExit as stop:
        return (stop.code if isinstance(stop.code, int) else 1), err.getvalue()
    return 0, err.getvalue()


def fuzz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, examples: int) -> Counter:
    """Run ``examples`` fuzzed command lines; the tally of what happened."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "kept" / "store" / "trials.jsonl"
    store.parent.mkdir(parents=True)
    (store.parent / "trials.format").write_text("2\n")
    store.write_text('{"key": "finished", "value": 1.0}\n')
    kept = store.read_bytes()
    tally: Counter = Counter()

    @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(st.lists(overrides(str(tmp_path / "kept")), min_size=1, max_size=5))
    def one(args: list[str]) -> None:
        status, err = run(args)
        tally["overrides"] += len(args)
        tally["command lines"] += 1
        if status == 0:
            assert "error" not in err and "Traceback" not in err, (args, err)
            tally["accepted"] += 1
            return
        lines = [line for line in err.splitlines() if line.strip()]
        assert status == 2 and len(lines) == 1 and lines[0].startswith("error: "), (args, status, err)
        assert "Traceback" not in err, (args, err)
        tally["one-line errors"] += 1

    for args in FINDING_15 + FOUND:
        one = example(args)(one)
    one()
    tally["data lost"] = int(store.read_bytes() != kept)
    return tally


def test_fuzzed_overrides_are_accepted_or_one_line_with_status_2(tmp_path, monkeypatch):
    tally = fuzz(tmp_path, monkeypatch, 50)
    print(dict(tally))
    assert tally["one-line errors"] > tally["command lines"] // 2 and tally["accepted"] > 0
    assert tally["overrides"] >= 150 and tally["data lost"] == 0


@pytest.mark.long
def test_many_fuzzed_overrides_are_accepted_or_one_line_with_status_2(tmp_path, monkeypatch):
    tally = fuzz(tmp_path, monkeypatch, 600)
    print(dict(tally))
    assert tally["one-line errors"] > 0 and tally["accepted"] > 0 and tally["data lost"] == 0
