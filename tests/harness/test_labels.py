"""Labels you can trust (issue 33, findings 1-5 and 12): a row is private only if its mechanism says so.

Each test reproduces a finding and shows it fixed: a noiseless CMS configured ``private: true`` (1), numbers computed
from the raw data shown apart from the release and a ledger of what one's own file spent (2, item 3), a forged
``deployable`` in a state's bytes (3), ``privacy`` of an uncertified mechanism (4), the fork attack on a restored
state that the docs explain (5), and a CSV cell that named code to import (12).
"""

import json
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import CONF_DIR, ROOT
from omegaconf import open_dict

from dpstream import serial
from dpstream.certified import CERTIFIED, EVALUATION_HEADING, NOT_PRIVATE, UNCERTIFIED, main, rewrite_table
from dpstream.counters.gauss_bm import GaussBM
from dpstream.harness import ledger
from dpstream.harness.runner import make_row, run
from dpstream.heavy_hitters import LazyHH
from dpstream.privacy.statement import labels
from dpstream.sketches import CMS, LazyCMS

STREAM = ["data=zipf", "data.length=2000", "data.universe=300", "width=16", "trials=2", "n_jobs=1"]
DS = {"width": 8, "depth": 2, "epsilon": 1.0, "delta": 1e-6, "horizon": 64, "node_noise": "discrete_secure"}


def _run(compose_cfg, overrides):
    return run(compose_cfg(overrides), CONF_DIR, overrides)[0]


# -- finding 1: privacy from the mechanism, never from the config ---------------------------------------------------

def test_a_noiseless_cms_configured_private_is_not_private(compose_cfg, tmp_path, capsys):
    over = ["mechanism=cms", "mechanism.private=true", *STREAM, f"results_dir={tmp_path}"]
    df = _run(compose_cfg, over)
    assert (df["privacy"] == NOT_PRIVATE).all() and not df["certified"].any() and not df["deployable"].any()
    assert not df["private"].any()  # the CMS object's own label, whatever mechanism.private says
    assert "WARNING: mechanism.private=true names a mechanism that is not private" in capsys.readouterr().out
    private = ["mechanism=lazycms", *STREAM, f"results_dir={tmp_path}"]
    df = _run(compose_cfg, private)
    assert "mechanism.private=true names" not in capsys.readouterr().out
    assert (df["privacy"] == CERTIFIED).all() and df["certified"].all() and not df["deployable"].any()  # seeded
    own = ["mechanism=cms", *STREAM, f"results_dir={tmp_path}"]  # one's own mechanism YAML without `private:`
    cfg = compose_cfg(own)
    with open_dict(cfg):
        del cfg.mechanism["private"]
    df = run(cfg, CONF_DIR, own)[0]
    assert (df["privacy"] == NOT_PRIVATE).all() and not df["certified"].any()  # a missing `private` was taken as true


def test_a_row_without_labels_is_not_certified():
    params = {"epsilon": 1.0, "delta": 1e-6, "seed": 0, "trial": 0, "mechanism": {"private": True}}
    assert make_row("k", params, {"are": 0.1})["certified"] is False  # the default was True
    assert make_row("k", params, {"are": 0.1, **labels(LazyCMS(width=4, depth=1, epsilon=1.0, delta=1e-6,
                                                                  horizon=8, seed=0))})["certified"] is True
    assert labels(CMS(width=4, depth=1, seed=0)) == {"private": False, "certified": False, "deployable": False}
    assert labels(object()) == {"private": False, "certified": False, "deployable": False}


# -- finding 4: privacy is None whenever certified is False ----------------------------------------------------------

def test_an_uncertified_mechanism_states_no_privacy():
    sketch = LazyCMS._uncertified_noiseless(width=8, depth=2, epsilon=0.3, delta=1e-3, horizon=64, seed=0)
    assert not sketch.certified and sketch.privacy is None  # was (0.3, 1e-3)
    tree = GaussBM._uncertified_noiseless(n=4, horizon=16, epsilon=0.3, delta=1e-3, seed=0)
    assert not tree.certified and tree.privacy is None
    hh = LazyHH(k=4, k_tilde=16, epsilon=1.0, delta=1e-2, beta=1e-3, horizon=64, seed=0)
    assert hh.certified and hh.privacy is not None and hh.privacy.epsilon == 1.0


# -- finding 3: deployable is never read from bytes ------------------------------------------------------------------

def test_a_forged_deployable_flag_is_refused_and_restores_are_never_deployable():
    seeded = LazyCMS(**DS, seed=5)
    seeded.extend(np.arange(20))
    assert seeded.certified and not seeded.deployable
    header, arrays = serial.unpack(seeded.to_bytes(), "LazyCMS")
    assert "deployable" not in json.dumps(header)  # not written: recomputed on restore
    header["args"]["deployable"] = True  # the forgery of finding 3, with a valid checksum
    forged = serial.pack("LazyCMS", header["args"], header["state"], arrays)
    with pytest.raises(serial.SerialError, match="deployable=True read back as None"):
        LazyCMS.from_bytes(forged)
    unseeded = LazyCMS(**DS)
    assert unseeded.deployable
    # the bytes cannot show that a key came from OS entropy, nor that they were never restored before: unverifiable
    assert not LazyCMS.from_bytes(unseeded.to_bytes()).deployable
    hh = LazyHH(k=4, k_tilde=16, epsilon=1.0, delta=1e-2, beta=1e-3, horizon=64, node_noise="discrete_secure")
    assert hh.deployable and not LazyHH.from_bytes(hh.to_bytes()).deployable


# -- finding 5: the fork attack, and the docs that explain it --------------------------------------------------------

def test_restoring_one_state_twice_cancels_the_noise_as_the_docs_say():
    sketch = LazyCMS(**DS)  # deployable: OS-entropy key
    sketch.extend(np.zeros(8, dtype=np.int64))
    saved = sketch.to_bytes()
    left, right = LazyCMS.from_bytes(saved), LazyCMS.from_bytes(saved)
    left.extend(np.full(56, 1, dtype=np.int64))  # neighbouring continuations: item 1 replaced by item 2 once
    right.extend(np.concatenate([[2], np.full(55, 1)]).astype(np.int64))
    diff = left.row_estimates_many(np.array([1])) - right.row_estimates_many(np.array([1]))
    assert np.all(np.abs(diff) <= 1.0)  # the shared noise cancels: the difference is the data's, not noise
    text = (ROOT / "docs" / "secure-noise.md").read_text()
    assert "## Forks" in text and "never restore" in text.lower() and "watch" in text


# -- finding 12: a received CSV runs no code ---------------------------------------------------------------------------

def test_a_csv_cell_naming_a_module_is_not_imported(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    (tmp_path / "evilmod.py").write_text(f"open({str(marker)!r}, 'w').write('x')\ndef run_trial(p, s):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    table = tmp_path / "t.csv"
    text = "experiment,mechanism.trial,mechanism.private,certified\ne,evilmod:run_trial,True,True\n"
    table.write_text(text)
    assert main([str(tmp_path)]) == 0 and table.read_text() == text  # an older table (no labels): left alone
    assert not marker.exists() and "evilmod" not in sys.modules  # finding 12: the module a cell names is never imported
    table.write_text("experiment,mechanism.trial,private,certified\ne,evilmod:run_trial,True,False\n"
                     "e,evilmod:run_trial,False,True\n")  # rows with their mechanism's labels
    assert rewrite_table(table) and pd.read_csv(table)["privacy"].tolist() == [UNCERTIFIED, NOT_PRIVATE]
    assert pd.read_csv(table)["certified"].tolist() == [False, False] and not marker.exists()


# -- item 2 and 3: one's own data: evaluation apart, release-only mode, the ledger -----------------------------------

@pytest.fixture
def own_file(tmp_path):
    path = tmp_path / "items.txt"
    rng = np.random.default_rng(0)
    path.write_text("\n".join(map(str, rng.zipf(1.3, 2000) % 500)) + "\n")
    return path


def test_own_data_is_said_once_its_evaluation_is_apart_and_every_trial_spends(own_file, compose_cfg, tmp_path,
                                                                              capsys):
    base = ["mechanism=lazycms", "data=items", f"data.path={own_file}", "width=16", "trials=2", "n_jobs=1",
            f"results_dir={tmp_path / 'r'}"]
    _run(compose_cfg, base)
    out = capsys.readouterr().out
    assert out.count("data: your own file") == 1 and out.count("WARNING: seeded run (seed=0)") == 1
    assert "discrete_secure_ct" in out and EVALUATION_HEADING in out
    assert out.index(EVALUATION_HEADING) < out.index("are_top15") and "released by the mechanism" in out
    assert "2 release(s); basic composition (epsilon, delta) = (0.6, 0.002)" in out
    _run(compose_cfg, base)  # read back from the store: nothing new released, nothing spent
    assert "2 release(s)" in capsys.readouterr().out
    _run(compose_cfg, [*base, "seed=1", "release_only=true"])  # another seed: two more releases
    out = capsys.readouterr().out
    assert EVALUATION_HEADING not in out and "are_top15" not in out and "rows_read" not in out
    assert "4 release(s); basic composition (epsilon, delta) = (1.2, 0.004)" in out
    assert "advanced composition" in out
    entries = ledger.ledger_path(tmp_path / "r").read_text().splitlines()
    assert len(entries) == 4 and len({json.loads(e)["file_xxh3"] for e in entries}) == 1
    _run(compose_cfg, ["mechanism=cms", "data=items", f"data.path={own_file}", "width=16", "trials=1", "n_jobs=1",
                       f"results_dir={tmp_path / 'r'}"])
    assert "1 of them NOT private" in capsys.readouterr().out  # a non-private release: no bound holds any more


def test_synthetic_data_spends_nothing(compose_cfg, tmp_path):
    _run(compose_cfg, ["mechanism=lazycms", *STREAM, f"results_dir={tmp_path}"])
    assert not ledger.ledger_path(tmp_path).exists()


def test_advanced_composition_of_many_equal_releases_is_below_basic(tmp_path):
    params = {"data": {"synthetic": False, "path": "f", "path_xxh3": "abc"}, "epsilon": 0.1, "delta": 1e-6,
              "seed": 0, "trial": 0, "mechanism": {"name": "m"}}
    for trial in range(400):
        ledger.spend(tmp_path, {**params, "trial": trial}, {"certified": True, "key": str(trial)}, (0.1, 1e-6))
    total = ledger.totals(tmp_path, "abc")
    assert total.releases == 400 and total.basic == pytest.approx((40.0, 4e-4))
    advanced = np.sqrt(2 * 400 * np.log(1e6)) * 0.1 + 400 * 0.1 * np.expm1(0.1)  # Dwork-Rothblum-Vadhan
    assert total.advanced == pytest.approx((advanced, 4e-4 + 1e-6)) and total.advanced[0] < 40.0


def test_an_interrupted_spend_is_cut_off_and_a_bad_line_is_named(tmp_path, capsys):
    """A spend killed mid-line glued the next spend onto it: the ledger was unreadable and that spend was lost."""
    params = {"data": {"synthetic": False, "path": "f", "path_xxh3": "abc"}, "epsilon": 0.1, "delta": 1e-6,
              "seed": 0, "trial": 0, "mechanism": {"name": "m"}}
    ledger.spend(tmp_path, params, {"certified": True, "key": "0"}, (0.1, 1e-6))
    with ledger.ledger_path(tmp_path).open("a") as fh:
        fh.write('{"file_xxh3": "ab')  # the first bytes of a line, then the process died
    ledger.spend(tmp_path, {**params, "trial": 1}, {"certified": True, "key": "1"}, (0.1, 1e-6))
    assert "cut off a partial last line (17 bytes" in capsys.readouterr().err
    assert ledger.totals(tmp_path, "abc").releases == 2
    with ledger.ledger_path(tmp_path).open("a") as fh:
        fh.write("not json\n")
    with pytest.raises(ValueError, match=r"privacy ledger .*privacy_ledger.jsonl line 3: not a ledger entry"):
        ledger.totals(tmp_path, "abc")


def test_a_trial_spends_before_its_row_is_stored(own_file, compose_cfg, tmp_path, monkeypatch):
    """A run stopped between the two writes must not leave a stored row unspent (the rerun reads it free)."""
    from dpstream.harness.store import ResultsStore

    def stopped(self, row, replace=False):
        raise KeyboardInterrupt

    monkeypatch.setattr(ResultsStore, "append", stopped)
    with pytest.raises(KeyboardInterrupt):
        _run(compose_cfg, ["mechanism=lazycms", "data=items", f"data.path={own_file}", "width=16", "trials=1",
                           "n_jobs=1", f"results_dir={tmp_path / 'r'}"])
    assert len(ledger.ledger_path(tmp_path / "r").read_text().splitlines()) == 1
