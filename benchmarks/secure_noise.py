"""Exact discrete Gaussian node noise from keyed ChaCha20 (``node_noise="discrete_secure"``) against Philox normals.

Rows (``dpstream.timing.interleaved_ratios``: median ratio reference time / candidate time, so < 1 means the
secure noise is slower, with its order-statistic 95% interval):
- per draw: one node value per cell through ``Counter.release`` (generator included), discrete secure vs the Philox
  normal of derived noise (target: the discrete draw costs <= 8x, i.e. ratio >= 1/8);
- per draw, constant time: the same with ``node_noise="discrete_secure_ct"`` (target: <= 40x the cost, ratio >= 1/40);
  the row also gives its budget (keystream words and table entries per draw) and the delta it costs
  (``sampler_delta``) at the row's parameters and for LazyCMS at 24 KB, T = 2^20;
- LazyCMS at 24 KB (d = 3, model "actual"): the whole stream plus a release of every cell at each of 16 release times,
  discrete secure vs Philox derived (target ratio >= 0.2) and vs stored nodes under ``noise_mode("secure")``
  (OpenDP samplers; target ratio >= 100), on a short stream and on the same stream as the Philox rows;
- the same LazyCMS rows at the paper's stream length (``lazycms_paper``, T = 2^20, ``--log2-paper``), where the
  stream's updates weigh as much as in the paper's runs beside the 16 releases (target ratio >= 0.2);
- timing levels on the same LazyCMS work: level 1 (blocks of 2^k steps, always on) vs the same sketch drawing only the
  nodes each release uses (k = 0; target: at most 1.25x the cost, ratio >= 0.8), and level 2 (constant time) vs
  Philox derived (for reference beside the exact sampler's row, target ratio >= 0.2);
- Honaker's estimates over stored exact discrete Gaussian nodes (``counter="honaker",
  node_noise="discrete_secure_stored"``) in LazyCMS, the same stream and releases at the same width (that of the
  Honaker sketch at 24 KB), vs Honaker over numpy's Gaussian and vs the Philox derived binary tree (target: the
  LazyCMS bar above, ratio >= 0.2);
- LazyHH (Holland, Alg. 6; k = 128, k~ = 128, eps = 0.5, delta = 1e-3, beta = 5e-4 as in ``heavy_hitters.py``):
  ``extend`` over the whole stream (every refresh queries the candidates, drawing their nodes), discrete secure vs
  Philox derived (target >= 0.2) and, on a short stream, vs stored nodes under ``noise_mode("secure")`` (>= 100);
- accuracy: ARE of the top-15 over the 16 release times, paired per trial (same data and hashes) against the Philox
  version with the analytic calibration (the tightest Gaussian one) and with the classic one (the papers' default):
  mean of the per-trial ratios and its 95% t interval (target: within [0.9, 1.1]). The two arms' noises are
  independent, so the mean of ratios sits above the ratio of typical AREs by about half the variance of the log ratio
  (Jensen's inequality); the geometric mean with its log-scale t interval is reported beside it.
- the sparse vector family with ``svt_noise="discrete_secure"`` (exact discrete Laplace, rational scale) against the
  same mechanism with numpy Laplace noise, same work: one draw, Sparse over integer queries, ThresholdMonitor (target:
  the per-draw bar of the discrete Gaussian, <= 8x the cost, i.e. ratio >= 1/8), and Sparse against Sparse with
  OpenDP's Laplace under ``noise_mode("secure")`` (target: not slower).

Usage:
    python benchmarks/secure_noise.py [--log2-length 16] [--log2-paper 20] [--trials 20] [--repeats 7]
                                      [--only draw lazycms lazycms_paper levels honaker lazyhh are svt]

``--only`` runs some groups and replaces their rows (by name and reference) in the existing results file, keeping
the others; each row records the command that measured it.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from dpstream.counters import counter_class
from dpstream.heavy_hitters import LazyHH
from dpstream.metrics import average_relative_error
from dpstream.noise import noise_mode
from dpstream.secure import cdt
from dpstream.secure.laplace import KeyedLaplace, laplace_grid
from dpstream.sketches import LazyCMS
from dpstream.svt import Sparse, ThresholdMonitor
from dpstream.timing import interleaved_ratios

RESULTS = Path(__file__).parent / "results" / "secure_noise.json"
SECURE = ("discrete_secure", "discrete_secure_ct")
"""The exact (rejection) and the constant-time discrete Gaussian node noises, timed side by side."""
HH_SECURE = (*SECURE, "discrete_secure_ahead")
"""LazyHH's rows add the block kept ahead (its width is k~, not a budget: the kept nodes only add memory)."""
KB, DEPTH, EPS, DELTA, TOP_K, RELEASES = 24, 3, 1.0, 1e-6, 15, 16
HH_K, HH_EPS, HH_DELTA, HH_BETA = 128, 0.5, 1e-3, 5e-4


def _row(estimate: object, target: float) -> dict:
    row = {**estimate.as_dict(), "target": target}  # type: ignore[attr-defined]
    row["met"] = estimate.decide(target)  # type: ignore[attr-defined]
    print(f"{estimate}  target >= {target:g}: {row['met']}")
    return row


def per_draw(n: int, repeats: int) -> dict:
    """One node value for each of ``n`` cells (step 1: one node), discrete secure vs Philox normal."""
    arms = {}
    for noise in ("derived", "discrete_secure"):
        counter = counter_class("binary", noise)(n=n, horizon=1 << 20, epsilon=EPS, delta=DELTA, m=2 * DEPTH, seed=0)
        cells, steps = np.arange(n), np.ones(n, dtype=np.int64)
        counter.release(cells[:8], steps[:8])  # compile
        arms[f"{noise} draw"] = (lambda c=counter, x=cells, s=steps: c.release(x, s))
    return _row(interleaved_ratios(arms, "derived draw", repeats)["discrete_secure draw"], 1 / 8)


def constant_time_per_draw(n: int, repeats: int) -> dict:
    """One node value for each of ``n`` cells, constant-time discrete secure vs Philox normal; with its budget."""
    arms, counters = {}, {}
    for noise in ("derived", "discrete_secure_ct"):
        counter = counter_class("binary", noise)(n=n, horizon=1 << 20, epsilon=EPS, delta=DELTA, m=2 * DEPTH, seed=0)
        cells, steps = np.arange(n), np.ones(n, dtype=np.int64)
        counter.release(cells[:8], steps[:8])  # compile
        arms[f"{noise} draw"] = (lambda c=counter, x=cells, s=steps: c.release(x, s))
        counters[noise] = counter
    row = _row(interleaved_ratios(arms, "derived draw", repeats)["discrete_secure_ct draw"], 1 / 40)
    ct = counters["discrete_secure_ct"]
    sketch = LazyCMS.from_memory(kilobytes=KB, depth=DEPTH, epsilon=EPS, delta=DELTA, horizon=1 << 20, seed=0,
                                 model="actual", node_noise="discrete_secure_ct")
    cells = sketch._state.counters
    row |= {"words_per_draw": cdt.CT_WORDS, "table_size": ct.table_size, "sigma2": float(ct.sigma2),
            "sampler_delta": ct.sampler_delta, "draws_bound": ct.draws_bound,
            "lazycms_24kb_T2^20": {"width": sketch.width, "table_size": cells.table_size,
                                   "sigma2": float(cells.sigma2), "sampler_delta": cells.sampler_delta,
                                   "draws_bound": cells.draws_bound, "table_bytes": cells.table_bytes}}
    print(f"  budget: {cdt.CT_WORDS} words and {ct.table_size} table entries per draw (sigma^2 = "
          f"{float(ct.sigma2):.1f}), sampler delta {ct.sampler_delta:.3g} over {ct.draws_bound} draws; "
          f"LazyCMS 24 KB T = 2^20: K = "
          f"{cells.table_size}, sampler delta {cells.sampler_delta:.3g} of delta = {DELTA:g}")
    return row


def _stream(length: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).zipf(1.3, length).astype(np.int64)


def _lazycms(node_noise: str, length: int, seed: int = 0, calibration: str = "classic") -> LazyCMS:
    return LazyCMS.from_memory(kilobytes=KB, depth=DEPTH, epsilon=EPS, delta=DELTA, horizon=length, seed=seed,
                               model="actual", node_noise=node_noise, calibration=calibration)


def _run(sketch: LazyCMS, items: np.ndarray) -> None:
    """The stream in 16 chunks, releasing every cell after each."""
    for chunk in np.array_split(items, RELEASES):
        sketch.extend(chunk)
        sketch._state.cells()


def lazycms_speed(length: int, short_length: int, repeats: int) -> list[dict]:
    """LazyCMS with exact and with constant-time discrete secure noise.

    Against Philox derived noise over ``length`` items, and against stored OpenDP noise over ``short_length`` items
    and over ``length`` (the Philox rows' work; fewer repetitions, OpenDP takes seconds).
    """
    items = _stream(length, 1)
    arms = {f"LazyCMS {noise}": (lambda n=noise: _run(_lazycms(n, length), items)) for noise in ("derived", *SECURE)}
    estimates = interleaved_ratios(_warmed(arms), "LazyCMS derived", repeats)
    rows = [_row(estimates[f"LazyCMS {noise}"], 0.2) for noise in SECURE]
    return (rows + _against_opendp(items[:short_length], " (short)", repeats)
            + _against_opendp(items, f", T = 2^{length.bit_length() - 1}", 5))


def _warmed(arms: dict) -> dict:
    """``arms`` after one untimed call of each (compiles its kernels, builds its sampler's table for this horizon)."""
    for arm in arms.values():
        arm()
    return arms


def _against_opendp(items: np.ndarray, label: str, repeats: int) -> list[dict]:
    """LazyCMS over ``items`` with discrete secure noise vs stored nodes under ``noise_mode("secure")`` (OpenDP)."""
    length = items.size

    def opendp() -> None:
        with noise_mode("secure"):
            _run(_lazycms("stored", length), items)

    reference = "LazyCMS stored, noise=secure (OpenDP)" + ("" if label == " (short)" else label)
    arms = {reference: opendp,
            **{f"LazyCMS {noise}{label}": (lambda n=noise: _run(_lazycms(n, length), items)) for noise in SECURE}}
    estimates = interleaved_ratios(_warmed(arms), reference, repeats)
    return [_row(estimates[f"LazyCMS {noise}{label}"], 100.0) for noise in SECURE]


def lazycms_paper_speed(log2_length: int, repeats: int) -> list[dict]:
    """The LazyCMS same-work rows at the paper's stream length (T = 2^20 by default): exact and constant time."""
    length, label = 1 << log2_length, f", T = 2^{log2_length}"
    items = _stream(length, 1)
    arms = {f"LazyCMS {noise}{label}": (lambda n=noise: _run(_lazycms(n, length), items))
            for noise in ("derived", *SECURE)}
    estimates = interleaved_ratios(_warmed(arms), f"LazyCMS derived{label}", repeats)
    return [_row(estimates[f"LazyCMS {noise}{label}"], 0.2) for noise in SECURE]


def timing_levels_speed(length: int, repeats: int) -> list[dict]:
    """LazyCMS stream + 16 full releases: blocks vs no blocks (exact sampler), constant time vs Philox derived."""
    items = _stream(length, 1)

    def exact(block_levels: int) -> None:
        sketch = _lazycms("discrete_secure", length)
        sketch._state.counters.block_levels = block_levels  # the instance's own: no other sketch sees it
        _run(sketch, items)

    k = counter_class("binary", "discrete_secure").block_levels
    exact(0)
    arms = {"LazyCMS discrete_secure, no blocks": lambda: exact(0),
            f"LazyCMS discrete_secure, blocks of 2^{k}": lambda: exact(k)}
    rows = [_row(interleaved_ratios(arms, "LazyCMS discrete_secure, no blocks", repeats)[
        f"LazyCMS discrete_secure, blocks of 2^{k}"], 0.8)]
    _run(_lazycms("discrete_secure_ct", 1024), items[:1024])
    arms = {f"LazyCMS {noise}": (lambda n=noise: _run(_lazycms(n, length), items))
            for noise in ("derived", "discrete_secure_ct")}
    rows.append(_row(interleaved_ratios(arms, "LazyCMS derived", repeats)["LazyCMS discrete_secure_ct"], 0.2))
    return rows


def honaker_speed(length: int, repeats: int) -> list[dict]:
    """LazyCMS with Honaker over stored discrete secure nodes vs Honaker over numpy noise and vs Philox derived."""
    items = _stream(length, 2)
    width = LazyCMS.from_memory(kilobytes=KB, depth=DEPTH, epsilon=EPS, delta=DELTA, horizon=length, seed=0,
                                model="actual", counter="honaker").width
    variants = {
        "LazyCMS honaker discrete_secure_stored": {"counter": "honaker", "node_noise": "discrete_secure_stored"},
        "LazyCMS honaker stored (numpy)": {"counter": "honaker", "node_noise": "stored"},
        "LazyCMS derived (same width)": {"node_noise": "derived"},
    }

    def make(variant: dict, n: int) -> LazyCMS:
        return LazyCMS(width=width, depth=DEPTH, epsilon=EPS, delta=DELTA, horizon=n, seed=0, **variant)

    for variant in variants.values():
        _run(make(variant, 1024), items[:1024])  # compile
    arms = {name: (lambda v=variant: _run(make(v, length), items)) for name, variant in variants.items()}
    rows = []
    for reference in ("LazyCMS honaker stored (numpy)", "LazyCMS derived (same width)"):
        pair = {k: arms[k] for k in ("LazyCMS honaker discrete_secure_stored", reference)}
        rows.append(_row(interleaved_ratios(pair, reference, repeats)["LazyCMS honaker discrete_secure_stored"], 0.2))
    return rows


def _mean_are(sketch: LazyCMS, items: np.ndarray) -> float:
    ares = []
    for end in np.linspace(0, items.size, RELEASES + 1).astype(int)[1:]:
        sketch.extend(items[sketch.t:end])
        keys, counts = np.unique(items[:end], return_counts=True)
        top = np.argsort(counts, kind="stable")[::-1][:TOP_K]
        ares.append(average_relative_error(counts[top], sketch.query_many(keys[top])))
    return float(np.mean(ares))


def accuracy(length: int, trials: int, calibration: str, first_trial: int = 0) -> dict:
    """Paired per-trial ratio ARE(discrete secure) / ARE(Philox derived, ``calibration``).

    Over trials ``first_trial`` .. ``first_trial + trials - 1``: the geometric mean and its 95% t interval on the log
    scale (the target's test), the mean of ratios and its t interval beside it.
    """
    ratios = []
    for trial in range(first_trial, first_trial + trials):
        items = _stream(length, 100 + trial)
        secure = _mean_are(_lazycms("discrete_secure", length, seed=trial), items)
        philox = _mean_are(_lazycms("derived", length, seed=trial, calibration=calibration), items)
        ratios.append(secure / philox)
    r = np.asarray(ratios)
    t975 = stats.t.ppf(0.975, r.size - 1)
    logs = np.log(r)
    log_half = t975 * logs.std(ddof=1) / np.sqrt(r.size)
    half = t975 * r.std(ddof=1) / np.sqrt(r.size)
    low, high = float(np.exp(logs.mean() - log_half)), float(np.exp(logs.mean() + log_half))
    row = {"name": f"ARE ratio discrete_secure / derived ({calibration})",
           "reference": "LazyCMS derived (Philox), ARE paired per trial", "ratio": float(np.exp(logs.mean())),
           "low": low, "high": high, "coverage": 0.95, "trials": trials, "first_trial": first_trial,
           "repeats": trials, "length": length, "mean_of_ratios": float(r.mean()),
           "mean_low": float(r.mean() - half), "mean_high": float(r.mean() + half),
           "log_ratio_sd": float(logs.std(ddof=1)), "target": "[0.9, 1.1]", "met": bool(low >= 0.9 and high <= 1.1)}
    print(f"{row['name']}: mean of ratios {r.mean():.3f} [{r.mean() - half:.3f}, {r.mean() + half:.3f}], geometric "
          f"mean {row['ratio']:.3f} [{low:.3f}, {high:.3f}], sd(log) {row['log_ratio_sd']:.3f} over "
          f"{trials} trials at T = {length}: met {row['met']}")
    return row


def _lazyhh(node_noise: str, length: int, seed: int = 0) -> LazyHH:
    return LazyHH(k=HH_K, k_tilde=HH_K, epsilon=HH_EPS, delta=HH_DELTA, beta=HH_BETA, horizon=length, seed=seed,
                  node_noise=node_noise)


def lazyhh_speed(length: int, short_length: int, repeats: int) -> list[dict]:
    """LazyHH ``extend`` with exact (block kept ahead or not) and with constant-time discrete secure noise.

    Against Philox derived noise over ``length`` items, and against stored OpenDP noise over ``short_length``.
    """
    items = _stream(length, 2)
    arms = {f"LazyHH {noise}": (lambda n=noise: _lazyhh(n, length).extend(items)) for noise in ("derived", *HH_SECURE)}
    estimates = interleaved_ratios(_warmed(arms), "LazyHH derived", repeats)
    rows = [_row(estimates[f"LazyHH {noise}"], 0.2) for noise in HH_SECURE]
    short = items[:short_length]

    def opendp() -> None:
        with noise_mode("secure"):
            _lazyhh("stored", short_length).extend(short)

    arms = {"LazyHH stored, noise=secure (OpenDP)": opendp,
            **{f"LazyHH {noise} (short)": (lambda n=noise: _lazyhh(n, short_length).extend(short))
               for noise in HH_SECURE}}
    estimates = interleaved_ratios(_warmed(arms), "LazyHH stored, noise=secure (OpenDP)", 5)
    return rows + [_row(estimates[f"LazyHH {noise} (short)"], 100.0) for noise in HH_SECURE]


SVT_PREFIX = "SVT "


def _svt_arms(make, work) -> dict:
    """Continuous (numpy Laplace) and discrete secure arms of the same SVT work, each compiled once first."""
    arms = {}
    for noise in ("continuous", "discrete_secure"):
        work(make(noise))
        arms[f"{SVT_PREFIX}{noise}"] = (lambda n=noise: work(make(n)))
    return arms


def svt_speed(repeats: int, draws: int = 200_000, m: int = 4096, runs: int = 256) -> list[dict]:
    """SVT rows: one draw, Sparse (eps 1, c 8) on m integer queries x runs, ThresholdMonitor (delta 1e-6, k 4)."""
    rows = []
    keyed, grid, rng = KeyedLaplace(0), laplace_grid(8.0), np.random.default_rng(0)
    keyed.draw("query", grid, 0, 1, 0, 8)
    arms = {f"{SVT_PREFIX}numpy Laplace draw": lambda: rng.laplace(0.0, 8.0, draws),
            f"{SVT_PREFIX}discrete_secure Laplace draw": lambda: keyed.draw("query", grid, 0, 1, 0, draws)}
    rows.append(_row(interleaved_ratios(arms, f"{SVT_PREFIX}numpy Laplace draw", repeats)[
        f"{SVT_PREFIX}discrete_secure Laplace draw"], 1 / 8))
    answers = np.random.default_rng(1).integers(0, 120, m)

    def sparse_work(mech: Sparse) -> None:
        mech.run(answers, n_runs=runs, noise=mech.draw_noise(m, runs))

    arms = _svt_arms(lambda n: Sparse(epsilon=EPS, threshold=100, c=8, seed=0, svt_noise=n), sparse_work)
    estimate = interleaved_ratios(arms, f"{SVT_PREFIX}continuous", repeats)[f"{SVT_PREFIX}discrete_secure"]
    rows.append(_row(estimate, 1 / 8) | {"name": f"{SVT_PREFIX}Sparse discrete_secure ({m} queries x {runs} runs)"})
    short = answers[: m // 8]

    def opendp() -> None:
        with noise_mode("secure"):
            mech = Sparse(epsilon=EPS, threshold=100, c=8, seed=0)
            mech.run(short, n_runs=runs // 8, noise=mech.draw_noise(short.size, runs // 8))

    def discrete() -> None:
        mech = Sparse(epsilon=EPS, threshold=100, c=8, seed=0, svt_noise="discrete_secure")
        mech.run(short, n_runs=runs // 8, noise=mech.draw_noise(short.size, runs // 8))

    opendp()
    arms = {f"{SVT_PREFIX}Sparse continuous, noise=secure (OpenDP)": opendp, f"{SVT_PREFIX}Sparse discrete": discrete}
    estimate = interleaved_ratios(arms, f"{SVT_PREFIX}Sparse continuous, noise=secure (OpenDP)", 5)[
        f"{SVT_PREFIX}Sparse discrete"]
    rows.append(_row(estimate, 1.0) | {"name": f"{SVT_PREFIX}Sparse discrete_secure ({m // 8} queries x {runs // 8} "
                                               "runs)"})
    atoms = np.random.default_rng(2).integers(0, 400, 64)
    queries = (np.random.default_rng(3).random((m // 4, 64)) < 0.1).astype(float)

    def monitor_work(mech: ThresholdMonitor) -> None:
        mech.run(queries, atoms, n_runs=runs)

    arms = _svt_arms(lambda n: ThresholdMonitor(epsilon=EPS, delta=DELTA, threshold=1500, k=4, seed=0, svt_noise=n),
                     monitor_work)
    estimate = interleaved_ratios(arms, f"{SVT_PREFIX}continuous", repeats)[f"{SVT_PREFIX}discrete_secure"]
    rows.append(_row(estimate, 1 / 8) | {"name": f"{SVT_PREFIX}ThresholdMonitor discrete_secure ({m // 4} queries x "
                                                 f"{runs} runs)"})
    return rows


GROUPS = ("draw", "lazycms", "lazycms_paper", "levels", "honaker", "lazyhh", "are", "svt")


def _write(rows: list[dict], partial: bool) -> None:
    """Write the results file; when ``partial``, ``rows`` replace the rows of the same name and the others stay."""
    command = "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    for row in rows:
        row["command"] = command
    if partial and RESULTS.exists():
        old = json.loads(RESULTS.read_text())
        new = {(r["name"], r["reference"]): r for r in rows}
        rows = [new.pop((r["name"], r["reference"]), r) for r in old["rows"]] + list(new.values())
    commands = list(dict.fromkeys(r.get("command", "?") for r in rows))
    out = {"title": "Exact discrete Gaussian node noise (ChaCha20) vs Philox normals and OpenDP",
           "command": " ; ".join(commands),
           "machine": f"{platform.machine()} {platform.processor() or platform.platform()}", "rows": rows}
    RESULTS.write_text(json.dumps(out, indent=1))
    print(f"wrote {RESULTS}")


def main() -> None:
    """Run every row, print them and write ``benchmarks/results/secure_noise.json``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log2-length", type=int, default=16)
    parser.add_argument("--log2-short", type=int, default=12)
    parser.add_argument("--log2-paper", type=int, default=20, help="stream length of the lazycms_paper rows")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--first-trial", type=int, default=1000,
                        help="the accuracy rows' first trial (1000..1039: trials no estimator or calibration was "
                             "chosen on; trials 0..39 were seen while the calibration was developed)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--draws", type=int, default=50000)
    parser.add_argument("--log2-hh", type=int, default=14)
    parser.add_argument("--log2-hh-short", type=int, default=10)
    parser.add_argument("--only", nargs="+", choices=GROUPS, default=list(GROUPS),
                        help="run only these row groups (their rows replaced in the file)")
    args = parser.parse_args()
    rows = []
    if "draw" in args.only:
        rows += [per_draw(args.draws, args.repeats), constant_time_per_draw(args.draws, args.repeats)]
    if "lazycms" in args.only:
        rows += lazycms_speed(1 << args.log2_length, 1 << args.log2_short, args.repeats)
    if "lazycms_paper" in args.only:
        rows += lazycms_paper_speed(args.log2_paper, args.repeats)
    if "levels" in args.only:
        rows += timing_levels_speed(1 << args.log2_length, args.repeats)
    if "honaker" in args.only:
        rows += honaker_speed(1 << args.log2_length, args.repeats)
    if "lazyhh" in args.only:
        rows += lazyhh_speed(1 << args.log2_hh, 1 << args.log2_hh_short, args.repeats)
    if "are" in args.only:
        rows += [accuracy(1 << args.log2_length, args.trials, calibration, args.first_trial)
                 for calibration in ("analytic", "classic")]
    if "svt" in args.only:
        rows += svt_speed(args.repeats)
    _write(rows, partial=set(args.only) != set(GROUPS))


if __name__ == "__main__":
    main()
