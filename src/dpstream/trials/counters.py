"""One cell of the continual-counting leaderboard (``experiment=counters``): a registered counter at horizon T.

Every column is measured against the binary tree at the same (epsilon, delta, m = 1, classic calibration):

- ``var_mean_ratio`` / ``var_max_ratio``: the mean / max over steps 1..T of the counter's own variance formula
  (``Counter.variance``), over the stored tree's (popcount(s) sigma^2);
- ``lower_bound_mean_ratio``: the factorisation lower bound on the mean variance, gamma_F(A)^2 kappa^2 with
  gamma_F(A) >= 0.701 + ln(T) / pi (Henzinger, Kalinin, Upadhyay 2025, arXiv 2509.14334; asymptotic, up to o(1)) and
  kappa = sigma / sensitivity, over the tree's mean: about 0.125 at 2^20;
- ``bytes_per_counter``: the counter's state model with 4-byte counts (``Counter.bytes_per_counter``);
- ``update_ratio`` / ``release_ratio``: process CPU time (``time.process_time``) of the dense pushes of a counter
  and of one whole-table release after them, over the binary tree's with Philox nodes (``node_noise="derived"``): in
  each of ``SPEED_ROUNDS`` interleaved rounds, in an order rotated from round to round, a fresh counter of each arm is
  built (untimed), fed and released, and the round's ratio is counter / tree; a column is the median of the rounds'
  ratios (``dpstream.timing.median_interval``), > 1 = costlier than the derived tree. On min(T, ``speed_steps``)
  steps of ``speed_counters`` counters (fewer when their state would pass ``SPEED_BYTES``, NaN below ``SPEED_MIN``); a
  push of the square root costs O(min(s, b)), so over the first steps it is measured below its cost late in the stream;
- ``are_top15`` / ``are_top15_mean_t`` / ``sketch_width``: a LazyCMS of ``memory_kb`` KB (actual memory model) with
  this counter, on the configured stream (``trials.sketch.run_trial``); NaN when not one column fits;
- ``empirical_*``: with ``empirical_counters`` > 0 (and T <= ``empirical_max_horizon``), that many independent
  counters fed zeros, their releases' sample variance over the formula at ``EMPIRICAL_STEPS``; the verdict
  ``empirical_ok`` is fixed before the run: every |z| < ``Z_1E6`` (z = (ratio - 1) / sqrt(2 / n)), NaN when skipped.

Variance columns come from the counters' formulas (no noise drawn) and the ARE from the raw stream: none of them is
private output.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

from dpstream.counters import Counter, CounterDescriptor, counter_class, normalised_rows
from dpstream.counters.factorisation import MissingRowNorms
from dpstream.counters.root_rows import ROW_TABLE_LIMIT
from dpstream.errors import ConfigError
from dpstream.noise import children
from dpstream.timing import median_interval, round_order
from dpstream.trials import row_columns
from dpstream.trials import sketch as sketch_trial

COUNT_BYTES = 4
"""Bytes of one exact count in a sketch (int32)."""
SPEED_BYTES = 2**26
"""Most bytes of counter state the speed measurement allocates."""
SPEED_MIN = 256
"""Fewest counters timed: a counter whose state leaves fewer in ``SPEED_BYTES`` (the plain square root from T = 2^16)
is not timed (NaN)."""
SPEED_ROUNDS = 5
"""Interleaved rounds of the speed columns: each round times one fresh counter of each arm (the counter and the derived
tree), and a column is the median of the rounds' ratios (an odd count: the median is one round's ratio)."""
LB_CONSTANT = 0.701
"""gamma_F(A) >= 0.701 + ln(T) / pi + o(1) (arXiv 2509.14334), the mean-variance lower bound of factorisations."""
EMPIRICAL_STEPS = (1, 7, 0.5, 1.0)
"""Steps of the empirical check: 1, 7, T/2 and T (fractions of T)."""
EMPIRICAL_WORK = 2**40
"""Most pushes x state bytes touched a push (bytes a counter at horizon min(T, ``EMPIRICAL_BANDS``)) the empirical
check spends on one cell; a counter past it (the plain square root, O(T) work a push) is skipped, NaN."""
EMPIRICAL_BANDS = 2**12
EMPIRICAL_BYTES = 2**31
"""Most bytes of counter state the empirical check allocates."""
Z_1E6 = float(stats.norm.isf(0.5e-6))
"""Two-sided p = 1e-6 per step: the empirical verdict's threshold on |z|."""


def build(cls: CounterDescriptor, n: int, horizon: int, params: dict[str, Any], seed: Any = 0) -> Counter:
    """``cls`` with n counters over ``horizon`` at the configured (epsilon, delta), m = 1, classic calibration."""
    return cls(n=n, horizon=horizon, epsilon=params["epsilon"], delta=params["delta"], seed=seed)


def unit_kappa2(counter: Counter) -> float:
    """kappa^2 = (sigma / sensitivity)^2: the calibration factor all classic-calibrated counters share."""
    return (counter.sigma / counter.l2_sensitivity(counter.horizon, counter.m)) ** 2


def max_mean_variance(counter: Counter) -> tuple[float, float]:
    """The largest and the mean release variance over steps 1..T: the row-norm summary times the draw variance.

    ``Factorisation.row_norms_summary``: for ``nsqrt`` above 2^16 the committed one (``counters.normalised_rows``).
    """
    largest, mean = counter.factorisation().row_norms_summary()
    return largest * counter.draw_variance, mean * counter.draw_variance


def formula_cells(cls: CounterDescriptor, horizon: int, params: dict[str, Any]) -> dict[str, float]:
    """Mean and max variance over the tree's, the lower bound over the tree's mean, and the state bytes.

    The variance ratios are NaN where the counter's summary is not computed (``MissingRowNorms``: ``nsqrt`` above
    2^16 at a horizon ``make counters-nsqrt`` did not reach); a summary that fails its checks stops the run.
    """
    mine, tree = build(cls, 1, horizon, params), build(counter_class("binary", "stored"), 1, horizon, params)
    ref_max, ref_mean = max_mean_variance(tree)
    try:
        var_max, var_mean = max_mean_variance(mine)
    except MissingRowNorms:
        var_max = var_mean = math.nan
    bound = (LB_CONSTANT + math.log(horizon) / math.pi) ** 2 * unit_kappa2(tree)
    return {"var_mean_ratio": var_mean / ref_mean, "var_max_ratio": var_max / ref_max,
            "lower_bound_mean_ratio": bound / ref_mean,
            "bytes_per_counter": cls.bytes_per_counter(horizon, COUNT_BYTES)}


def _seconds(cls: CounterDescriptor, n: int, horizon: int, steps: int, params: dict[str, Any],
             clock: Callable[[], float]) -> tuple[float, float]:
    """One run on a fresh counter (built untimed): ``clock`` time of ``steps`` pushes, and of one release after them.

    The pushes are dense (every one of the n counters each step); the release is of the whole table.
    """
    counter = build(cls, n, horizon, params)
    cells, zeros = np.arange(n, dtype=np.int64), np.ones(n, dtype=np.int64)
    start = clock()
    for s in range(1, steps + 1):
        counter.push(cells, np.full(n, s, dtype=np.int64), zeros)
    push = clock() - start
    start = clock()
    counter.release_all(np.full(n, steps, dtype=np.int64))
    return push, clock() - start


def interleaved_seconds(arms: dict[str, CounterDescriptor], n: int, horizon: int, steps: int, params: dict[str, Any],
                        rounds: int = SPEED_ROUNDS,
                        clock: Callable[[], float] = time.process_time) -> dict[str, np.ndarray]:
    """Push and release times of every arm over ``rounds`` interleaved rounds: for each arm an array (rounds, 2).

    Each round is one run (``_seconds``) of every arm, in an order rotated from round to round
    (``timing.round_order``); row r of an arm's array is from round r.
    """
    names = list(arms)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for r in range(rounds):
        for name in round_order(names, r):
            times[name].append(_seconds(arms[name], n, horizon, steps, params, clock))
    return {name: np.asarray(times[name], dtype=float) for name in names}


def speed_cells(cls: CounterDescriptor, horizon: int, params: dict[str, Any],
                clock: Callable[[], float] = time.process_time) -> dict[str, float]:
    """Update and release cost over the derived tree's, same counters and steps, interleaved in one process.

    Each column is the median over ``SPEED_ROUNDS`` rounds of the round's ratio (counter time / tree time, on
    ``clock``: process CPU time).
    """
    mech = params["mechanism"]
    n = min(int(mech.get("speed_counters", 4096)), SPEED_BYTES // max(1, cls.bytes_per_counter(horizon, 8)))
    if n < min(SPEED_MIN, int(mech.get("speed_counters", 4096))):  # per-call overhead would be timed, not the counter
        return {"update_ratio": math.nan, "release_ratio": math.nan}
    steps = min(horizon, int(mech.get("speed_steps", 256)))
    arms = {"counter": cls, "tree": counter_class("binary", "derived")}
    interleaved_seconds(arms, 2, horizon, 2, params, rounds=1, clock=clock)  # compile outside the timed rounds
    seconds = interleaved_seconds(arms, n, horizon, steps, params, clock=clock)
    ratios = seconds["counter"] / seconds["tree"]
    return {"update_ratio": median_interval(ratios[:, 0])[0], "release_ratio": median_interval(ratios[:, 1])[0]}


def are_cells(params: dict[str, Any], seed: np.random.SeedSequence) -> dict[str, float]:
    """ARE of the top 15 at T and over the release times in a ``memory_kb`` LazyCMS with this counter."""
    mech = params["mechanism"]
    lazy = {"_target_": "dpstream.sketches.LazyCMS", "counter": mech["counter"], "node_noise": mech["node_noise"],
            "memory_model": "actual", "uses": ["epsilon", "delta", "depth", "width", "memory_kb"]}
    try:
        row = sketch_trial.run_trial({**params, "mechanism": lazy}, seed)
    except ValueError as err:
        if "too small for one column" not in str(err):
            raise
        return {"are_top15": math.nan, "are_top15_mean_t": math.nan, "sketch_width": 0}
    return {"are_top15": row["are_top15"], "are_top15_mean_t": row["are_top15_mean_t"],
            "sketch_width": row["sketch_width"]}


def empirical_cells(cls: CounterDescriptor, horizon: int, params: dict[str, Any],
                    seed: np.random.SeedSequence) -> dict[str, float]:
    """Sample variance of n counters' releases over the formula at ``EMPIRICAL_STEPS``: max |z| and the verdict."""
    mech = params["mechanism"]
    n = int(mech.get("empirical_counters", 0))
    work = n * horizon * cls.bytes_per_counter(min(horizon, EMPIRICAL_BANDS), 8)
    if (n <= 0 or horizon > int(mech.get("empirical_max_horizon", 2**16)) or work > EMPIRICAL_WORK
            or n * cls.bytes_per_counter(horizon, 8) > EMPIRICAL_BYTES):
        return {"empirical_counters": 0, "empirical_max_z": math.nan, "empirical_max_dev": math.nan,
                "empirical_ok": math.nan}
    wanted = sorted({max(1, int(f * horizon)) if isinstance(f, float) else f for f in EMPIRICAL_STEPS} & set(
        range(1, horizon + 1)))
    counter = build(cls, n, horizon, params, seed)
    cells, zeros = np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    ratios = []
    for s in range(1, horizon + 1):
        counter.push(cells, np.full(n, s, dtype=np.int64), zeros)
        if s in wanted:
            released = counter.release_all(np.full(n, s, dtype=np.int64))
            ratios.append(float(np.var(released) / counter.variance(s)))
    z = (np.array(ratios) - 1) / math.sqrt(2 / n)
    return {"empirical_counters": n, "empirical_max_z": float(np.abs(z).max()),
            "empirical_max_dev": float(np.abs(np.array(ratios) - 1).max()),
            "empirical_ok": float(np.abs(z).max() < Z_1E6)}


@row_columns("log2_horizon", "var_mean_ratio", "var_max_ratio", "lower_bound_mean_ratio", "bytes_per_counter",
             "notion", "update_ratio", "release_ratio", "are_top15", "are_top15_mean_t", "sketch_width",
             "empirical_counters", "empirical_max_z", "empirical_max_dev", "empirical_ok")
def board_trial(params: dict[str, Any], seed: np.random.SeedSequence) -> dict[str, Any]:
    """One leaderboard cell: ``mechanism.counter`` with ``mechanism.node_noise`` at T = ``data.length``."""
    mech = params["mechanism"]
    cls = counter_class(mech["counter"], mech["node_noise"])
    if "length" not in params["data"]:
        raise ConfigError("data", params["data"].get("name"), "counter_board runs at T = data.length: a generated "
                          "stream that declares its length (data=zipf, data=wordfreq); a file declares none")
    horizon = int(params["data"]["length"])
    are_seed, empirical_seed = children(seed, 2)
    return {"log2_horizon": math.log2(horizon), "notion": cls.notion, **formula_cells(cls, horizon, params),
            **speed_cells(cls, horizon, params), **are_cells(params, are_seed),
            **empirical_cells(cls, horizon, params, empirical_seed)}


def board_key_inputs(params: dict[str, Any]) -> dict[str, str]:
    """What a cell reads outside its config, for its store key (``harness.runner.store_key``).

    ``nsqrt`` above ``ROW_TABLE_LIMIT`` reads its variance cells from ``normalised_rows.TABLE``: its key names the
    row's digest there (``normalised_rows.row_digest``, "none" without the file or the row), so a regenerated or new
    row recomputes the cell. Every other cell adds nothing: its key is the config's, as before.
    """
    horizon = params.get("data", {}).get("length")
    if params["mechanism"].get("counter") != "nsqrt" or horizon is None or int(horizon) <= ROW_TABLE_LIMIT:
        return {}
    return {"nsqrt_row_digest": normalised_rows.row_digest(int(horizon))}


board_trial.key_inputs = board_key_inputs  # type: ignore[attr-defined]
