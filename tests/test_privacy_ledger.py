"""The privacy ledger of one's own file books the (epsilon, delta) each mechanism states, not the configured pair.

Review 4, finding 3: a LazyHH trial was booked at the run's (epsilon, delta), while LazyHH is (epsilon, delta~)-DP with
delta~ = 2 delta (3/2 + e^epsilon + delta), 112 delta at epsilon = 4: the running total understated delta 112-fold.
The new-user note of the same review: the list of reported heavy hitters named its privacy without numbers.
"""

import json

import numpy as np
import pytest
from conftest import CONF_DIR

from dpstream.harness import ledger
from dpstream.harness.runner import plan, run, store_key, trial_function
from dpstream.heavy_hitters import LazyHH
from dpstream.noise import children, trial_seed
from dpstream.privacy.heavy_hitters import final_delta
from dpstream.privacy.statement import STATED, stated
from dpstream.registry import load_option, options
from dpstream.sketches import LazyCMS

OWN = {"data": {"synthetic": False, "path": "f", "path_xxh3": "abc"}, "epsilon": 4.0, "delta": 1e-3, "seed": 0,
       "trial": 0, "mechanism": {"name": "m"}}


@pytest.fixture
def own_file(tmp_path):
    """8,000 integer items, item 7 about half of them (a heavy hitter LazyHH reports at epsilon = 4)."""
    rng = np.random.default_rng(1)
    items = np.where(rng.random(8000) < 0.5, 7, rng.integers(0, 1000, 8000))
    path = tmp_path / "items.txt"
    path.write_text("\n".join(map(str, items)) + "\n")
    return path


def booked(results_dir) -> list[dict]:
    return [json.loads(line) for line in ledger.ledger_path(results_dir).read_text().splitlines()]


def test_a_lazyhh_run_on_ones_own_file_books_its_delta_tilde(own_file, compose_cfg, tmp_path, capsys):
    over = ["mechanism=lazyhh", "data=items", f"data.path={own_file}", "epsilon=4", "delta=1e-3", "trials=2",
            "n_jobs=1", f"results_dir={tmp_path / 'r'}"]
    run(compose_cfg(over), CONF_DIR, over)
    tilde = final_delta(4.0, 1e-3)
    assert tilde == pytest.approx(2e-3 * (1.5 + np.exp(4.0) + 1e-3), rel=1e-12) and tilde > 100 * 1e-3
    entries = booked(tmp_path / "r")
    assert [(e["epsilon"], e["delta"]) for e in entries] == [(4.0, pytest.approx(tilde, rel=1e-9))] * 2
    out = capsys.readouterr().out
    assert f"2 release(s); basic composition (epsilon, delta) = (8, {2 * tilde:.3g})" in out  # was (8, 0.002)
    # the reported list names the guarantee's numbers, the delta~ that holds (it said "certified" with none)
    words = " ".join(out.split())  # the console wraps long lines at the terminal's width
    assert f"privacy: (epsilon, delta)-DP, certified at (epsilon, delta~) = (4, {tilde:.4g})): 7: " in words


def test_spend_books_the_statement_and_nothing_without_one(tmp_path):
    hh = LazyHH(k=2, k_tilde=8, epsilon=4.0, delta=1e-3, beta=1e-4, horizon=512, seed=0)
    statement = stated(hh)[STATED]
    assert statement == (hh.privacy.epsilon, hh.privacy.delta) == (4.0, final_delta(4.0, 1e-3))
    ledger.spend(tmp_path, OWN, {"certified": True, "key": "0"}, statement)
    ledger.spend(tmp_path, {**OWN, "trial": 1}, {"certified": True, "key": "1"}, statement)
    assert [(e["epsilon"], e["delta"]) for e in booked(tmp_path)] == [statement] * 2
    assert ledger.totals(tmp_path, "abc").basic == pytest.approx((8.0, 2 * final_delta(4.0, 1e-3)))
    noiseless = LazyCMS._uncertified_noiseless(width=8, depth=2, epsilon=4.0, delta=1e-3, horizon=64, seed=0)
    assert stated(noiseless) == {STATED: None}  # an uncertified mechanism states no guarantee
    pure = LazyCMS(width=8, depth=2, epsilon=4.0, delta=1e-3, horizon=64, seed=0, counter="laplace")
    assert stated(pure)[STATED] == (4.0, 0.0)  # Laplace nodes: pure DP, whatever delta it was given
    ledger.spend(tmp_path, {**OWN, "trial": 2}, {"certified": True, "key": "2"}, None)  # certified, states none
    ledger.spend(tmp_path, {**OWN, "trial": 3}, {"certified": False, "key": "3"}, statement)  # not certified
    assert [(e["epsilon"], e["delta"]) for e in booked(tmp_path)[2:]] == [(None, None)] * 2
    total = ledger.totals(tmp_path, "abc")
    assert total.basic is None and total.not_private == 2  # never the configured (4, 0.001)


def stream_mechanisms() -> list[str]:
    """Every shipped mechanism that reads a stream, so can run on one's own file (``data=items``).

    Less punctual_hh, which needs a universe the file does not declare (refused before any trial), and
    counter_board, a leaderboard of counters on a generated length, not a release of a file.
    """
    return [n for n in options(CONF_DIR, "mechanism") if "stream" in load_option(CONF_DIR, "mechanism", n)["data_kinds"]
            and n not in ("punctual_hh", "counter_board")]


def test_every_stream_mechanism_books_the_statement_of_its_own_object(own_file, compose_cfg, tmp_path):
    """One sweep of every shipped stream mechanism on one file: each booked pair is its rebuilt mechanism's privacy."""
    from dpstream.trials.heavy_hitters import make_tracker
    from dpstream.trials.sketch import make_sketch

    names = stream_mechanisms()
    over = [f"mechanism={names[0]}", "data=items", f"data.path={own_file}", "epsilon=1", "width=32", "trials=1",
            "n_jobs=1", f"results_dir={tmp_path / 'r'}"]
    run(compose_cfg(over), CONF_DIR, over, {"mechanism": names})
    entries = {e["key"]: e for e in booked(tmp_path / "r")}
    planned = plan(compose_cfg(over), CONF_DIR, over, {"mechanism": names})
    seen, differ = set(), set()
    for spec, all_params in planned.experiments:
        for params in all_params:
            fn = trial_function(params, spec)
            make = make_tracker if fn.endswith("heavy_hitters:run_trial") else make_sketch
            mechanism = make(params, 8000, children(trial_seed(params["seed"], params["trial"]), 2)[1])
            statement = mechanism.privacy if mechanism.certified else None
            entry = entries[store_key(params, fn)]
            name = params["mechanism"]["name"]
            expected = (None, None) if statement is None else (statement.epsilon, statement.delta)
            assert (entry["epsilon"], entry["delta"]) == expected, name
            seen.add(name)
            if statement is not None and (statement.epsilon, statement.delta) != (1.0, 1e-3):
                differ.add(name)
    assert seen == set(names) and len(entries) == len(names)
    assert {"lazyhh", "lazyhh_derived", "lazyhh_discrete_secure_ahead"} <= differ  # the test can tell them apart


def test_only_stream_data_names_a_file_so_the_sweep_above_covers_every_booking():
    """The ledger books trials on a file input (``ledger.own_file``); every shipped data source with one is a stream.

    So the trials that can book are those of the stream mechanisms, each checked above; the sparse-vector and
    query-release trials read designed or shipped data and never book.
    """
    from dpstream.harness.config import FILE_KEY_SUFFIXES

    with_file = {n: load_option(CONF_DIR, "data", n) for n in options(CONF_DIR, "data")}
    with_file = {n: spec for n, spec in with_file.items() if any(k.endswith(FILE_KEY_SUFFIXES) for k in spec)}
    assert set(with_file) >= {"items", "caida"} and all(spec["kind"] == "stream" for spec in with_file.values())
