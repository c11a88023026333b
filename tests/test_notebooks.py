"""Every notebook (jupytext .py) executes against smoke-profile results and shows each of its experiments."""

import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest
from conftest import CONF_DIR, ROOT

from dpstream.harness.runner import run

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))


def listed(notebook):
    """The experiment ids a notebook shows (its ``show_experiments([...])`` call)."""
    call = re.search(r"show_experiments\(\[(.*?)\]", notebook.read_text(), re.S)
    assert call, "a notebook shows its experiments with show_experiments([...])"
    return re.findall(r'"([\w-]+)"', call.group(1))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_in_smoke_mode(notebook, compose_cfg, smoke_results):
    cells = jupytext.read(notebook).cells
    assert cells and cells[0].cell_type == "markdown"
    ids = listed(notebook)
    available = [i for i in ids if (CONF_DIR / "experiment" / f"{i}.yaml").exists()]
    assert available, f"{notebook.name} lists no existing experiment"
    for exp_id in available:
        cfg = compose_cfg([f"experiment={exp_id}", "profile=smoke", f"results_dir={smoke_results}", "reproduction=true",
                           f"data_dir={ROOT / 'data'}", "n_jobs=2"])
        run(cfg, CONF_DIR)
    env = {**os.environ, "DPSTREAM_RESULTS": str(smoke_results), "MPLBACKEND": "Agg"}
    out = subprocess.run([sys.executable, str(notebook)], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    for exp_id in available:
        assert f"{exp_id}: " in out.stdout and "trial rows" in out.stdout
    assert "Verdicts: " in out.stdout


def test_every_experiment_of_all_is_shown_by_exactly_one_notebook():
    from test_report import leaves

    shown = [exp_id for notebook in NOTEBOOKS for exp_id in listed(notebook)]
    assert sorted(shown) == sorted(leaves("all"))


@pytest.mark.slow
def test_notebook_renders_its_figures_in_a_jupyter_kernel(tmp_path):
    """`make notebooks` path: jupytext executes the notebook in a kernel (committed tables, ~10 s).

    Each experiment's figure is an image output, so figure modules must leave the kernel's inline backend alone.
    """
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import nbformat

    notebook = ROOT / "notebooks" / "sparse_vector.py"
    out = tmp_path / "sparse_vector.ipynb"
    import dpstream

    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "DPSTREAM_RESULTS")}
    env["DPSTREAM_RESULTS"] = str(ROOT / "results")  # as `make notebooks`: the kernel's cwd is notebooks/
    # the kernel runs in notebooks/: the dpstream under test by absolute path (a relative PYTHONPATH would not hold)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(dpstream.__file__).parents[1]), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "jupytext", "--to", "notebook", "--execute", str(notebook), "-o",
                           str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    outputs = [o for cell in nbformat.read(out, 4).cells if cell.cell_type == "code" for o in cell.outputs]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == len(listed(notebook))
    assert any("Verdicts: " in o.get("text", "") for o in outputs)
