"""``mechanism.counter=`` / ``mechanism.node_noise=`` on the command line, for every sketch that takes a counter.

``lazycms``, ``lazycs``, ``punctualcms`` and ``lazyhh`` carry ``counter: binary`` and ``node_noise: stored`` keys, so
any registered counter (``dpstream.counters.COUNTERS``) is one override away; a combination the counter or the
mechanism does not admit is one line and exit status 2. Runs go in-process through ``dpstream.cli.main`` (what the
console script calls) on tiny streams: this checks the wiring, not accuracy. Four fast cases (a new counter in LazyCMS
and in LazyHH, and the Laplace tree over exact discrete Laplace nodes in both) and the refusals run by default; every
counter in every sketch is a long test.
"""

from __future__ import annotations

import pandas as pd
import pytest
from test_bad_input import run_cli

from dpstream.counters import COUNTERS

SKETCHES = ("lazycms", "lazycs", "punctualcms", "lazyhh")
TINY = {"lazyhh": ["data.length=4096"], "lazycms": ["data.length=4096", "width=8"],
        "lazycs": ["data.length=4096", "width=8"], "punctualcms": ["data.length=2048", "width=8"]}
"""Per sketch: a stream short enough for a wiring check, and a width (a counter with O(T) state, such as the square
root with stored noise, fits no small memory budget)."""
BUDGET = ["memory_kb=24"]
"""A 24 KB budget (not for LazyHH, sized by k~): the actual memory model whenever the cells are not the paper's
stored tree."""
REFUSED: dict[tuple[str, str], str] = {}
"""(mechanism, counter) pairs the mechanism refuses whatever the noise, and a phrase of the line."""


def run_counter(mechanism: str, counter: str, noise: str, tmp_path, capsys, *more: str) -> tuple[int, str]:
    """Run one trial of ``mechanism`` with ``counter`` / ``noise`` at smoke scale into ``tmp_path``."""
    args = [f"mechanism={mechanism}", f"mechanism.counter={counter}", f"mechanism.node_noise={noise}",
            "profile=smoke", "trials=1", "n_jobs=1", f"results_dir={tmp_path}", *TINY[mechanism], *more]
    return run_cli(args, capsys)


def stored_rows(tmp_path) -> pd.DataFrame:
    """Every row of the results store under ``tmp_path``."""
    return pd.read_json(tmp_path / "store" / "trials.jsonl", lines=True)


def check_ran(status: int, err: str, tmp_path, mechanism: str, counter: str, noise: str) -> None:
    """The run finished and its row records the counter and the noise it ran with."""
    assert status == 0, err[-2000:]
    row = stored_rows(tmp_path).iloc[-1]
    assert (row["mechanism.name"], row["mechanism.counter"], row["mechanism.node_noise"]) == (mechanism, counter, noise)


@pytest.mark.parametrize(("mechanism", "counter", "noise"), [("lazycms", "smooth", "derived"),
                                                             ("lazyhh", "smooth", "stored"),
                                                             ("lazycms", "laplace", "discrete_secure_stored"),
                                                             ("lazyhh", "laplace", "discrete_secure_stored")])
def test_a_new_counter_runs_from_the_command_line(mechanism, counter, noise, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, err = run_counter(mechanism, counter, noise, tmp_path, capsys, *(BUDGET if mechanism == "lazycms" else []))
    check_ran(status, err, tmp_path, mechanism, counter, noise)
    if (mechanism, counter) == ("lazycms", "smooth"):  # the actual model: the derived smooth tree, 4-byte cells
        assert stored_rows(tmp_path)["sketch_width"].iloc[-1] > 55


@pytest.mark.parametrize(("mechanism", "counter", "noise", "says"), [
    ("lazycms", "sqrt", "stored", "memory kilobytes=24 is too small for one column of a depth-3 LazyCMS"),
    ("lazycms", "blt", "discrete_secure", "node_noise='discrete_secure' is not available with counter='blt'"),
    ("lazycs", "sqrt", "discrete_secure", "node_noise='discrete_secure' is not available with counter='sqrt'"),
    ("punctualcms", "nosuch", "stored", "unknown counter 'nosuch'; allowed: "),
])
def test_a_combination_not_admitted_is_one_line_and_exit_2(mechanism, counter, noise, says, tmp_path, monkeypatch,
                                                           capsys):
    monkeypatch.chdir(tmp_path)
    status, err = run_counter(mechanism, counter, noise, tmp_path, capsys, *(BUDGET if mechanism != "lazyhh" else []))
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], err


@pytest.mark.long
@pytest.mark.parametrize("mechanism", SKETCHES)
@pytest.mark.parametrize(("counter", "noise"), sorted(COUNTERS))
def test_every_counter_runs_in_every_sketch_or_is_refused_in_one_line(mechanism, counter, noise, tmp_path,
                                                                      monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, err = run_counter(mechanism, counter, noise, tmp_path, capsys)
    if (mechanism, counter) in REFUSED:
        lines = [line for line in err.splitlines() if line.strip()]
        assert status == 2 and len(lines) == 1 and REFUSED[mechanism, counter] in lines[0], err
    else:
        check_ran(status, err, tmp_path, mechanism, counter, noise)
