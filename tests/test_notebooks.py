"""Every notebook (jupytext .py) executes against smoke-profile results and shows each of its experiments."""

import os
import re
import subprocess
import sys

import jupytext
import pytest
from conftest import CONF_DIR, ROOT

from dpstream.harness.runner import run

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_in_smoke_mode(notebook, compose_cfg, smoke_results):
    cells = jupytext.read(notebook).cells
    assert cells and cells[0].cell_type == "markdown"
    listed = re.search(r"show_experiments\(\[(.*?)\]", notebook.read_text(), re.S)
    assert listed, "a notebook shows its experiments with show_experiments([...])"
    ids = re.findall(r'"([\w-]+)"', listed.group(1))
    available = [i for i in ids if (CONF_DIR / "experiment" / f"{i}.yaml").exists()]
    assert available, f"{notebook.name} lists no existing experiment"
    for exp_id in available:
        cfg = compose_cfg([f"experiment={exp_id}", "profile=smoke", f"results_dir={smoke_results}",
                           f"data_dir={ROOT / 'data'}", "n_jobs=2"])
        run(cfg, CONF_DIR)
    env = {**os.environ, "DPSTREAM_RESULTS": str(smoke_results), "MPLBACKEND": "Agg"}
    out = subprocess.run([sys.executable, str(notebook)], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    for exp_id in available:
        assert f"{exp_id}: " in out.stdout and "trial rows" in out.stdout
