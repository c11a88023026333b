"""One fresh process of the numba cache checks (``tests/test_numba_cache.py``, ``tests/soak.py``).

``python tests/numba_probe.py job RESULTS_DIR`` runs the default job (LazyCMS, small settings) through the harness;
``families`` adds a small run of every mechanism family (sketches with every counter, heavy hitters, SVT, query
release) and ``GaussBM`` with every counter. It prints one JSON line: the numba compilations of this process
(``numba:compile`` events: a function loaded from the on-disk cache raises none) and the functions compiled.
Run it with ``NUMBA_CACHE_DIR`` set to share a cache between processes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from numba.core import event

ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = ROOT / "src" / "dpstream" / "conf"
SMALL = ["data.length=4096", "trials=1", "release_times=4", "rerun=true"]
STREAM = ["lazycms_derived", "lazycms_honaker", "lazycms_blt", "lazycs", "punctualcms", "punctualcms_derived",
          "punctualcs", "cms", "cs", "cms_ms", "lazyhh", "lazyhh_derived", "cms_heap"]
SVT = ["svt_sparse", "svt_above_threshold", "svt_tm"]
QR = ["qr_pmw", "qr_mwem", "qr_alg5"]


def jobs(mode: str) -> list[list[str]]:
    """The harness overrides of each job: the default job, then (``families``) one per mechanism family."""
    out = [SMALL]
    if mode == "families":
        out += [[f"mechanism={m}", *SMALL] for m in STREAM]
        atoms = ["data=svt_atoms", "data.c=200", "data.n_near=50", "data.n_far=50", "mechanism.runs=5"]
        out += [[f"mechanism={m}", *atoms, "trials=1", "rerun=true"] for m in SVT]
        out += [[f"mechanism={m}", "data=qr_mixture", "data.n=200", "data.d=6", "trials=1", "rerun=true"] for m in QR]
    return out


def gauss_bm() -> None:
    """GaussBM with every counter of ``dpstream.counters``: one batch of pushes and a release each."""
    import numpy as np

    from dpstream.counters import COUNTERS
    from dpstream.counters.gauss_bm import GaussBM

    for counter, node_noise in COUNTERS:
        bm = GaussBM(n=8, horizon=64, epsilon=1.0, delta=1e-3, seed=0, counter=counter, node_noise=node_noise)
        bm.extend(np.arange(8), np.ones(8, dtype=np.int64))
        bm.query_all()


def main(mode: str, results_dir: str) -> None:
    """Run the jobs of ``mode`` with a recorder of numba compilations; print the JSON line."""
    from hydra import compose, initialize_config_dir

    from dpstream.harness.runner import run

    with event.install_recorder("numba:compile") as recorder:
        for overrides in jobs(mode):
            args = [*overrides, f"results_dir={results_dir}", f"data_dir={results_dir}/data"]
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
                run(compose(config_name="config", overrides=args), CONF_DIR, args)
        if mode == "families":
            gauss_bm()
    compiled = [ev.data["dispatcher"].py_func.__qualname__ for _, ev in recorder.buffer if ev.is_start]
    print(json.dumps({"compiles": len(compiled), "compiled": sorted(set(compiled))}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
