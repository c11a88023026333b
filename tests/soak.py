"""``make soak``: the default job in 50 fresh processes sharing one numba cache; the hundredth run is the first.

Each process runs ``tests/numba_probe.py job`` (the default job through the harness, small settings) with
``NUMBA_CACHE_DIR`` a fresh temporary directory shared by all runs. Checks: runs 2-N compile nothing (numba's
compile events), the cache holds the same files after every run from the second on, and the slowest of runs 2-N
takes at most 1.2x their median wall time (run 1 fills the cache). Prints one line per run and the summary; exits 1
when a check fails. ``python tests/soak.py [RUNS]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
SLOWEST_OVER_MEDIAN = 1.2


def one_run(cache: Path, results: Path) -> tuple[float, dict]:
    """Wall seconds and the probe's JSON line of one fresh process."""
    path = f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": path}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE / "numba_probe.py"), "job", str(results)], env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"run failed:\n{done.stderr[-3000:]}")
    return seconds, json.loads(done.stdout.strip().splitlines()[-1])


def main(runs: int = 50) -> int:
    """Run the soak; 0 when every check holds."""
    with tempfile.TemporaryDirectory(prefix="dpstream-soak-") as tmp:
        cache, results = Path(tmp) / "numba_cache", Path(tmp) / "results"
        seconds, compiles, files = [], [], []
        for i in range(1, runs + 1):
            wall, report = one_run(cache, results)
            n_files = sum(1 for p in cache.rglob("*") if p.is_file())
            seconds.append(wall)
            compiles.append(report["compiles"])
            files.append(n_files)
            print(f"run {i:3d}: {wall:6.2f} s, {report['compiles']:3d} compilations, {n_files} cache files", flush=True)
    later = seconds[1:]
    median, slowest = statistics.median(later), max(later)
    checks = {
        "runs 2-N compile nothing": not any(compiles[1:]),
        "cache file count unchanged after run 2": len(set(files[1:])) == 1,
        f"slowest <= {SLOWEST_OVER_MEDIAN}x median": slowest <= SLOWEST_OVER_MEDIAN * median,
    }
    print(f"run 1: {seconds[0]:.2f} s, {compiles[0]} compilations; runs 2-{runs}: median {median:.2f} s, "
          f"slowest {slowest:.2f} s ({slowest / median:.3f}x), compilations {sum(compiles[1:])}, "
          f"cache files {sorted(set(files[1:]))}")
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
