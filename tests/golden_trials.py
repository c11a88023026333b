"""Trial rows of tiny configs of every family on fixed seeds: the refactor guard of the harness (issue 12).

Each case is a list of command-line overrides, expanded by the harness as ``dpstream`` would (``runner.plan``), whose
first trial runs through ``runner.execute_trial``; its row less timing columns (``runner.is_timing``) is compared with
``tests/data/golden_trials.json``, written by ``python tests/golden_trials.py`` BEFORE the Hydra-native construction
refactor (commit 7ae5ddb). A refactor may change the overrides that reach a case (a key moved to another group) but
never the recorded row: integers, strings and booleans exactly, floats to a relative 1e-9 (``tolerance.same``: rounding
drifts by an ulp between CPUs and libm builds). The heavy-hitter cases' rows are those of a trial that draws its stream
from its own data seed (``trials.heavy_hitters.run_trial``, column ``trace_xxh3``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "data" / "golden_trials.json"

_ATOMS = ["data=svt_atoms", "data.c=10", "data.k_star=2", "data.n_near=10", "data.n_far=10", "mechanism.runs=5"]
_SHIFT = ["data=svt_shifting_hh", "data.m=40", "data.groups=5", "data.size_min=10", "data.size_max=1.0e+5",
          "mechanism.runs=5"]
_STREAM = ["data=zipf", "data.length=3000", "data.universe=500"]
_QR = ["data=qr_mixture", "data.d=6", "data.n=200", "epsilon=10.0", "delta=1.0e-6"]

CASES: dict[str, list[str]] = {
    "sketch_lazycms_width": ["mechanism=lazycms", *_STREAM, "width=20"],
    "sketch_cms_memory": ["mechanism=cms", *_STREAM, "memory_kb=2"],
    "sketch_lazycms_derived_memory": ["mechanism=lazycms_derived", *_STREAM, "memory_kb=2"],
    "sketch_punctualcs": ["mechanism=punctualcs", *_STREAM, "width=16"],
    "hh_lazyhh": ["mechanism=lazyhh", *_STREAM, "mechanism.k=8", "mechanism.k_tilde=16"],
    "hh_cms_heap": ["mechanism=cms_heap", *_STREAM, "mechanism.k=8", "memory_kb=2"],
    "hh_punctual": ["mechanism=punctual_hh", *_STREAM, "mechanism.k=4", "width=32"],
    "svt_tm": ["mechanism=svt_tm", *_ATOMS],
    "svt_sparse": ["mechanism=svt_sparse", *_ATOMS],
    "svt_sparse_short": ["mechanism=svt_sparse_short", *_ATOMS],
    "svt_above_threshold": ["mechanism=svt_above_threshold", *_ATOMS, "data.order=heavy_first"],
    "svt_tm_kappa": ["mechanism=svt_tm", *_ATOMS, "mechanism.kappa=0.5", "mechanism.cap_ratio=2.0"],
    "shifting_tme": ["mechanism=svt_hh_tme", *_SHIFT],
    "shifting_histogram": ["mechanism=svt_hh_histogram", *_SHIFT],
    "shifting_sparse_histogram": ["mechanism=svt_hh_sparse_histogram", *_SHIFT, "data.k_star=2"],
    "svt_theory": ["mechanism=svt_theory", "data=none", "mechanism.c=100"],
    "qr_laplace": ["mechanism=qr_laplace", *_QR],
    "qr_pmw": ["mechanism=qr_pmw", *_QR, "mechanism.rounds=10"],
    "qr_mwem": ["mechanism=qr_mwem", *_QR, "mechanism.rounds=5"],
    "qr_hru_private": ["mechanism=qr_hru_private", *_QR],
    "qr_median": ["mechanism=qr_median", "data=qr_toy", "epsilon=10.0", "delta=1.0e-6"],
}
BASE = ["trials=1", "seed=3"]


def params_of(overrides: list[str], results_dir: str) -> tuple[str, dict[str, Any]]:
    """The trial function and params of the first trial the harness makes of ``overrides``."""
    from hydra import compose, initialize_config_dir

    from dpstream.harness.runner import plan, trial_function
    from dpstream.registry import CONF_DIR

    typed = [*BASE, *overrides, f"results_dir={results_dir}"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=typed)
    spec, trials = plan(cfg, CONF_DIR, typed).experiments[0]
    return trial_function(trials[0], spec), trials[0]


def row_of(overrides: list[str], results_dir: str) -> dict[str, Any]:
    """The metric row (timing and environment columns left out) of the first trial of ``overrides``."""
    from dpstream.harness.environment import ENV_COLUMNS
    from dpstream.harness.runner import execute_trial, is_timing

    fn, params = params_of(overrides, results_dir)
    return {k: v for k, v in execute_trial(fn, params).items() if not is_timing(k) and k not in ENV_COLUMNS}


def rows(results_dir: str) -> dict[str, dict[str, Any]]:
    return {name: row_of(overrides, results_dir) for name, overrides in CASES.items()}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = json.loads(json.dumps(rows(tmp), default=float))  # numpy scalars -> Python
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {GOLDEN}\n")
