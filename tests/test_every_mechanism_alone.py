"""Every registered mechanism runs as ``dpstream mechanism=NAME`` alone, on its natural default data.

A mechanism that cannot read the default data (a Zipf stream) picks data of a kind it reads
(``dpstream.harness.natural``); here each runs one smoke-scale trial in-process (the command line adds exactly the
overrides ``natural_data`` returns, checked once as a process below).
"""

import subprocess
import sys

import pytest
from conftest import CONF_DIR

from dpstream.harness.natural import natural_data
from dpstream.harness.runner import run
from dpstream.registry import load_option, options

MECHANISMS = options(CONF_DIR, "mechanism")
TINY = {"data.length": 4096}  # stream data shrunk further than profile=smoke: this checks wiring, not accuracy
FEWER_RUNS = {"qr_audit": ["mechanism.audit_runs=40", "mechanism.pilot_runs=16"],  # as its experiment's smoke profile
              "qr_hru": ["+mechanism.rounds=40"]}  # the paper's T = n L is 3,470 rounds even at n = 250


@pytest.mark.slow
@pytest.mark.parametrize("name", MECHANISMS)
def test_mechanism_runs_alone_on_its_natural_data(name, compose_cfg, tmp_path):
    args = [f"mechanism={name}", "profile=smoke", "trials=1", "n_jobs=1", f"results_dir={tmp_path}"]
    natural = natural_data(args)
    overrides = [*args, *natural]
    data = dict(o.split("=", 1) for o in overrides).get("data", "zipf")
    tiny = [f"{k}={v}" for k, v in TINY.items() if k.split(".")[1] in load_option(CONF_DIR, "data", data)
            and not any(o.startswith(f"{k}=") for o in overrides)]
    overrides += [*tiny, *FEWER_RUNS.get(name, [])]
    frames = run(compose_cfg(overrides), CONF_DIR, overrides)
    assert len(frames) == 1 and len(frames[0]) >= 1


def test_natural_data_leaves_a_named_data_option_and_experiments_alone():
    assert natural_data(["mechanism=svt_tm"]) == ["data=svt_atoms"]
    assert natural_data(["mechanism=lazycms"]) == []  # the default data fits
    assert natural_data(["mechanism=svt_tm", "data=svt_atoms"]) == []
    assert natural_data(["experiment=fig3a", "mechanism=svt_tm"]) == []
    assert natural_data(["-m", "mechanism=svt_tm"]) == []
    assert natural_data(["mechanism=punctual_hh", "data.universe=512"]) == ["data.length=16384"]


def test_the_command_prints_which_data_it_chose(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dpstream", "mechanism=svt_tm", "profile=smoke", "trials=1",
                          "--cfg", "job"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "note: mechanism=svt_tm runs on data=svt_atoms" in out.stderr


def test_a_paper_panel_runs_on_your_data_or_says_which_panels_do(compose_cfg, tmp_path):
    from dpstream.errors import ConfigError
    from dpstream.harness.runner import plan

    words = tmp_path / "words.txt"
    words.write_text("a\nb\na\n")
    fits = ["experiment=fig3b", "data=items", f"data.path={words}", "profile=smoke"]
    planned = plan(compose_cfg(fits), CONF_DIR, fits)
    data = planned.experiments[0][1][0]["data"]
    assert data["name"] == "items" and "skew" not in data  # fig3b's fixed skew describes its own Zipf data
    swept = ["experiment=fig3d", "data=items", f"data.path={words}", "profile=smoke"]
    with pytest.raises(ConfigError, match=r"fig3d sweeps data\.skew.*accept data=items: .*fig3b, "):
        plan(compose_cfg(swept), CONF_DIR, swept)
