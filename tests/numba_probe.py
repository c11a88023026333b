"""One fresh process of the numba cache checks (``tests/test_numba_cache.py``, ``tests/soak.py``).

``python tests/numba_probe.py job RESULTS_DIR`` runs the default job (LazyCMS, small settings) through the harness;
``families`` adds a small run of every mechanism family (sketches with every counter, heavy hitters, SVT, query
release) and ``GaussBM`` with every counter; ``watch`` runs ``dpstream watch -`` in this process on a pcap and a pcapng
capture fed through a real pipe on stdin (the default, deployable noise), and once more with ``--host-cap``
(``RESULTS_DIR`` holds their state files). It prints one JSON line: the numba compilations of this process
(``numba:compile`` events: a function loaded from the on-disk cache raises none) and the functions compiled.
Run it with ``NUMBA_CACHE_DIR`` set to share a cache between processes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
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


WATCH = ["--k", "8", "--k-tilde", "128", "--flush-every", "4", "--every", "4096", "--horizon", "16384", "--epsilon",
         "4", "--rate", "1000"]
"""Small watcher options (three releases of 4096 packets in the 12,288-packet captures); the noise is the default."""


def captures() -> dict[str, bytes]:
    """A pcap and a pcapng capture of the same 12,288 packets: three hosts send half of them."""
    import numpy as np
    from capture_files import pcapng_of

    from dpstream.data.synthetic_capture import pcap_bytes

    rng = np.random.default_rng(0)
    n = 3 * 4096
    hosts = np.where(rng.random(n) < 0.5, 0x0A000001 + rng.integers(0, 3, n),
                     0x0B000000 + rng.integers(0, 5000, n)).astype(np.uint32)
    return {"pcap": pcap_bytes(hosts), "pcapng": pcapng_of(hosts)}


def watch_on_stdin(data: bytes, argv: list[str]) -> None:
    """``dpstream watch - argv`` in this process, ``data`` written into a pipe on its stdin; its lines dropped."""
    from dpstream import watch

    def write_all(fd: int) -> None:
        with contextlib.suppress(BrokenPipeError), open(fd, "wb") as pipe:  # a watcher that stops reading closes it
            pipe.write(data)

    read, write = os.pipe()
    saved = os.dup(0)
    writer = threading.Thread(target=write_all, args=(write,))  # a pipe holds 64 KiB: written while it is read
    os.dup2(read, 0)
    os.close(read)
    try:
        writer.start()
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            code = watch.main(["-", *argv])
    finally:
        os.dup2(saved, 0)  # closes the pipe's read end: a writer still blocked on it gets a broken pipe
        os.close(saved)
        writer.join()
    if code != 0 or not out.getvalue():  # a run without a release would not reach the refresh kernels
        raise SystemExit(f"dpstream watch {' '.join(argv)} exited {code} after {out.getvalue().count(chr(10))} "
                         f"release(s): {err.getvalue()[-2000:]}")


def watch_runs(results_dir: str) -> None:
    """``dpstream watch -`` on stdin: pcap and pcapng at the default noise, then pcap with ``--host-cap 2``."""
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = captures()
    for name, extra in (("pcap", []), ("pcapng", []), ("pcap", ["--host-cap", "2"])):
        state = out / f"watch-{name}-{len(extra)}-{os.getpid()}.json"  # stdin never restarts a state
        watch_on_stdin(data[name], [*WATCH, *extra, "--state", str(state)])


def main(mode: str, results_dir: str) -> None:
    """Run the jobs of ``mode`` with a recorder of numba compilations; print the JSON line."""
    from hydra import compose, initialize_config_dir

    from dpstream.harness.runner import run

    with event.install_recorder("numba:compile") as recorder:
        if mode == "watch":
            watch_runs(results_dir)
        else:
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
