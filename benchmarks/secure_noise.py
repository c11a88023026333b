"""Exact discrete Gaussian node noise from keyed ChaCha20 (``node_noise="discrete_secure"``) against Philox normals.

Rows (``dpstream.harness.timing.interleaved_ratios``: median ratio reference time / candidate time, so < 1 means the
secure noise is slower, with its order-statistic 95% interval):
- per draw: one node value per cell through ``Counter.release`` (generator included), discrete secure vs the Philox
  normal of derived noise (target: the discrete draw costs <= 8x, i.e. ratio >= 1/8);
- LazyCMS at 24 KB (d = 3, model "actual"): the whole stream plus a release of every cell at each of 16 release times,
  discrete secure vs Philox derived (target ratio >= 0.2) and, on a short stream, vs stored nodes under
  ``noise_mode("secure")`` (OpenDP samplers; target ratio >= 100);
- LazyHH (Holland, Alg. 6; k = 128, k~ = 128, eps = 0.5, delta = 1e-3, beta = 5e-4 as in ``heavy_hitters.py``):
  ``extend`` over the whole stream (every refresh queries the candidates, drawing their nodes), discrete secure vs
  Philox derived (target >= 0.2) and, on a short stream, vs stored nodes under ``noise_mode("secure")`` (>= 100);
- accuracy: ARE of the top-15 over the 16 release times, paired per trial (same data and hashes) against the Philox
  version with the analytic calibration (the tightest Gaussian one) and with the classic one (the papers' default):
  mean of the per-trial ratios and its 95% t interval (target: within [0.9, 1.1]). The two arms' noises are
  independent, so the mean of ratios sits above the ratio of typical AREs by about half the variance of the log ratio
  (Jensen's inequality); the geometric mean with its log-scale t interval is reported beside it.

Usage:
    python benchmarks/secure_noise.py [--log2-length 16] [--trials 20] [--repeats 7] [--only draw lazycms lazyhh are]

``--only`` runs some groups and replaces their rows (by name) in the existing results file, keeping the others.
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
from dpstream.harness.timing import interleaved_ratios
from dpstream.heavy_hitters import LazyHH
from dpstream.metrics import average_relative_error
from dpstream.noise import noise_mode
from dpstream.sketches import LazyCMS

RESULTS = Path(__file__).parent / "results" / "secure_noise.json"
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
    """LazyCMS: discrete secure vs Philox derived (``length``) and vs stored OpenDP noise (``short_length``)."""
    items = _stream(length, 1)
    _run(_lazycms("discrete_secure", 1024), items[:1024])
    _run(_lazycms("derived", 1024), items[:1024])
    arms = {f"LazyCMS {noise}": (lambda n=noise: _run(_lazycms(n, length), items))
            for noise in ("derived", "discrete_secure")}
    rows = [_row(interleaved_ratios(arms, "LazyCMS derived", repeats)["LazyCMS discrete_secure"], 0.2)]
    short = items[:short_length]

    def opendp() -> None:
        with noise_mode("secure"):
            _run(_lazycms("stored", short_length), short)

    opendp()
    arms = {"LazyCMS stored, noise=secure (OpenDP)": opendp,
            "LazyCMS discrete_secure (short)": lambda: _run(_lazycms("discrete_secure", short_length), short)}
    rows.append(_row(interleaved_ratios(arms, "LazyCMS stored, noise=secure (OpenDP)", 5)[
        "LazyCMS discrete_secure (short)"], 100.0))
    return rows


def _mean_are(sketch: LazyCMS, items: np.ndarray) -> float:
    ares = []
    for end in np.linspace(0, items.size, RELEASES + 1).astype(int)[1:]:
        sketch.extend(items[sketch.t:end])
        keys, counts = np.unique(items[:end], return_counts=True)
        top = np.argsort(counts, kind="stable")[::-1][:TOP_K]
        ares.append(average_relative_error(counts[top], sketch.query_many(keys[top])))
    return float(np.mean(ares))


def accuracy(length: int, trials: int, calibration: str) -> dict:
    """Paired per-trial ratio ARE(discrete secure) / ARE(Philox derived, ``calibration``), mean and t interval."""
    ratios = []
    for trial in range(trials):
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
           "reference": "LazyCMS derived (Philox), ARE paired per trial", "ratio": float(r.mean()),
           "low": float(r.mean() - half), "high": float(r.mean() + half), "coverage": 0.95, "trials": trials,
           "repeats": trials, "length": length, "geometric_mean": float(np.exp(logs.mean())), "geometric_low": low,
           "geometric_high": high, "log_ratio_sd": float(logs.std(ddof=1)), "target": "[0.9, 1.1]",
           "met": bool(r.mean() - half >= 0.9 and r.mean() + half <= 1.1)}
    print(f"{row['name']}: mean of ratios {r.mean():.3f} [{r.mean() - half:.3f}, {r.mean() + half:.3f}], geometric "
          f"mean {row['geometric_mean']:.3f} [{low:.3f}, {high:.3f}], sd(log) {row['log_ratio_sd']:.3f} over "
          f"{trials} trials at T = {length}: met {row['met']}")
    return row


def _lazyhh(node_noise: str, length: int, seed: int = 0) -> LazyHH:
    return LazyHH(k=HH_K, k_tilde=HH_K, epsilon=HH_EPS, delta=HH_DELTA, beta=HH_BETA, horizon=length, seed=seed,
                  node_noise=node_noise)


def lazyhh_speed(length: int, short_length: int, repeats: int) -> list[dict]:
    """LazyHH ``extend``: discrete secure vs Philox derived (``length``), vs stored OpenDP noise (``short_length``)."""
    items = _stream(length, 2)
    for noise in ("derived", "discrete_secure"):
        _lazyhh(noise, 1024).extend(items[:1024])  # compile
    arms = {f"LazyHH {noise}": (lambda n=noise: _lazyhh(n, length).extend(items)) for noise in ("derived",
                                                                                                 "discrete_secure")}
    rows = [_row(interleaved_ratios(arms, "LazyHH derived", repeats)["LazyHH discrete_secure"], 0.2)]
    short = items[:short_length]

    def opendp() -> None:
        with noise_mode("secure"):
            _lazyhh("stored", short_length).extend(short)

    opendp()
    arms = {"LazyHH stored, noise=secure (OpenDP)": opendp,
            "LazyHH discrete_secure (short)": lambda: _lazyhh("discrete_secure", short_length).extend(short)}
    rows.append(_row(interleaved_ratios(arms, "LazyHH stored, noise=secure (OpenDP)", 5)[
        "LazyHH discrete_secure (short)"], 100.0))
    return rows


GROUPS = ("draw", "lazycms", "lazyhh", "are")


def _merge(rows: list[dict]) -> list[dict]:
    """``rows`` replacing the rows of the same name in the existing results file, the others kept in order."""
    old = json.loads(RESULTS.read_text())["rows"] if RESULTS.exists() else []
    new = {r["name"]: r for r in rows}
    kept = [new.pop(r["name"], r) for r in old]
    return kept + list(new.values())


def main() -> None:
    """Run every row, print them and write ``benchmarks/results/secure_noise.json``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log2-length", type=int, default=16)
    parser.add_argument("--log2-short", type=int, default=12)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--draws", type=int, default=50000)
    parser.add_argument("--log2-hh", type=int, default=14)
    parser.add_argument("--log2-hh-short", type=int, default=10)
    parser.add_argument("--only", nargs="+", choices=GROUPS, default=list(GROUPS))
    args = parser.parse_args()
    rows = []
    if "draw" in args.only:
        rows.append(per_draw(args.draws, args.repeats))
    if "lazycms" in args.only:
        rows += lazycms_speed(1 << args.log2_length, 1 << args.log2_short, args.repeats)
    if "lazyhh" in args.only:
        rows += lazyhh_speed(1 << args.log2_hh, 1 << args.log2_hh_short, args.repeats)
    if "are" in args.only:
        rows += [accuracy(1 << args.log2_length, args.trials, calibration) for calibration in ("analytic", "classic")]
    command = "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    for row in rows:
        row["command"] = command
    if set(args.only) != set(GROUPS):
        rows = _merge(rows)
    commands = list(dict.fromkeys(r.get("command", "?") for r in rows))
    out = {"title": "Exact discrete Gaussian node noise (ChaCha20) vs Philox normals and OpenDP",
           "command": "; ".join(commands),
           "machine": f"{platform.machine()} {platform.processor() or platform.platform()}", "rows": rows}
    RESULTS.write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
