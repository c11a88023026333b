"""What a run prints on the terminal: tables that fit 100 columns and the heavy hitters a run found.

Means over trials are shown as mean ± the half-width of the 95% Student-t interval over trials; a metric constant
over the trials of a setting is shown alone, integers as integers. Precision with nothing reported is "n/a (nothing
reported)", not NaN. A single heavy-hitter run lists the items it reported with their labels (the file's words or
addresses) and estimates; when it reported none it says why: the smallest estimate it could report at these settings
and what would lower it.
"""

from __future__ import annotations

import ipaddress
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from scipy import stats

from dpstream.certified import EVALUATION_HEADING, NOT_PRIVATE, released

WIDTH = 100
UNDEFINED = {"precision": "n/a (nothing reported)", "recall": "n/a (no true heavy hitter)"}
MAX_LISTED = 20


def console() -> Console:
    """A console whose tables fit ``WIDTH`` columns, with colour only on a terminal."""
    return Console(width=WIDTH, soft_wrap=False, highlight=False)


def _number(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.0f}" if 1e3 <= abs(x) < 1e15 else f"{x:.4g}"


def mean_interval(values: pd.Series, metric: str = "") -> str:
    """``mean ± h`` (h: half-width of the 95% t interval over trials), the value alone when constant."""
    v = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)
    if v.size == 0:
        return UNDEFINED.get(metric.split("_mean_t")[0], "n/a")
    mean = float(v.mean())
    missing = f" ({values.size - v.size} of {values.size} undefined)" if v.size < values.size else ""
    if v.size < 2 or np.all(v == v[0]):
        return _number(v[0] if v.size and np.all(v == v[0]) else mean) + missing
    half = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return plus_minus(mean, half) + missing


def plus_minus(mean: float, half: float) -> str:
    """``mean ± half`` with the mean rounded to the half-width's second significant digit."""
    if 1e-6 < half < 1e5 and abs(mean) < 1e7:
        decimals = max(0, 1 - math.floor(math.log10(half)))
        return f"{mean:.{decimals}f} ± {half:.{decimals}f}"
    return f"{mean:.4g} ± {half:.2g}"


def metric_table(df: pd.DataFrame, keys: list[str], metrics: list[str], width: int = WIDTH,
                 title: bool = True) -> RenderableType:
    """Mean ± 95% interval and trials of each metric, in ``width`` columns.

    One setting (no ``keys``, or one value of them): one row per metric. Several: one row per setting (its values of
    ``keys``) and one column per metric, as many as fit; a metric with the same value in every setting is said once
    below the table, and so are the metrics left out (every one is in the run's table file). ``title``: a first line
    saying what the cells are.
    """
    groups = list(df.groupby(keys, sort=False)) if keys else [((), df)]
    heading = [Text("mean over trials ± 95% t interval")] if title else []
    if len(groups) == 1:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False)
        table.add_column("metric", overflow="fold")
        table.add_column("mean ± 95%", justify="right", overflow="fold")
        table.add_column("trials", justify="right")
        for metric in metrics:
            table.add_row(metric, mean_interval(df[metric], metric), str(len(df)))
        return Group(*heading, table)
    settings = [[str(v) for v in (values if isinstance(values, tuple) else (values,))] for values, _ in groups]
    cells = {m: [mean_interval(group[m], m) for _, group in groups] for m in metrics}
    trials = sorted({len(group) for _, group in groups})
    constant = [m for m in metrics if len(set(cells[m])) == 1]
    heads = [k.split(".")[-1] if k != "mechanism.name" else "mechanism" for k in keys]
    columns = [(h, [row[i] for row in settings]) for i, h in enumerate(heads)]
    if len(trials) > 1:
        columns.append(("trials", [str(len(group)) for _, group in groups]))
    shown, left = fitting(columns, [(m, cells[m]) for m in metrics if m not in constant], width)
    if title:
        each = "trials" if len(trials) > 1 else f"{trials[0]} trial{'s' if trials[0] > 1 else ''} each"
        heading = [Text(f"mean over trials ± 95% t interval ({each})")]
    notes = [Text(line, no_wrap=True, overflow="ellipsis") for line in
             [fitted([f"every setting: {'; '.join(f'{m}={cells[m][0]}' for m in constant)}"] if constant else [],
                     width),
              fitted([f"{len(left)} more in the table file: {', '.join(left)}"] if left else [], width)] if line]
    if not shown:
        return Group(*notes)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for head, _ in columns:
        table.add_column(head, no_wrap=True)
    for metric in shown:
        table.add_column(metric, justify="right", no_wrap=True)
    for i in range(len(groups)):
        table.add_row(*(col[i] for _, col in columns), *(cells[m][i] for m in shown))
    return Group(*heading, table, *notes)


def fitting(fixed: list[tuple[str, list[str]]], columns: list[tuple[str, list[str]]],
            width: int) -> tuple[list[str], list[str]]:
    """The (header, cells) ``columns`` that fit in ``width`` beside the ``fixed`` ones, in order; and the others."""
    used = sum(max(len(h), *map(len, cells)) + 3 for h, cells in fixed) - 1  # padding 2 and a divider per column
    for n, (head, cells) in enumerate(columns):
        used += max(len(head), *map(len, cells)) + 3
        if used > width:
            return [h for h, _ in columns[:n]], [h for h, _ in columns[n:]]
    return [h for h, _ in columns], []


def fitted(parts: list[str], width: int = WIDTH) -> str | None:
    """``parts`` joined by ``; `` and cut to ``width`` characters (``…`` marks the cut); None when empty."""
    text = "; ".join(parts)
    if not text:
        return None
    return text if len(text) <= width else text[:width - 1] + "…"


def config_line(values: dict[str, Any], where: str, width: int = WIDTH) -> str:
    """``config: k=v, ...`` of ``values`` in ``width`` columns: as many as fit, then how many more are in ``where``."""
    items = [f"{k}={v}" for k, v in values.items()]
    if not items:
        return f"config: the defaults (every key: {where})"
    for n in range(len(items), -1, -1):
        more = f", +{len(items) - n} more" if n < len(items) else ""
        line = f"config: {', '.join(items[:n])}{more} (every key: {where})"
        if len(line) <= width or n == 0:
            return line
    raise AssertionError("unreachable")


def print_run(df: pd.DataFrame, run_id: str, params: dict[str, Any], keys: list[str], metrics: list[str],
              verbose: bool = True, release_only: bool = False) -> None:
    """Print ``metric_table`` (fits 100 columns) and, for a single heavy-hitter run, what it found.

    What the mechanism released (``certified.RELEASED``) is one table, under its privacy label; what was computed
    from the raw data to evaluate it is another, headed NOT private; ``release_only`` leaves the latter out.
    """
    if not verbose:
        return
    shown = released(metrics)
    evaluation = [m for m in metrics if m not in shown]
    labels = sorted(df["privacy"].astype(str).unique()) if "privacy" in df.columns else [NOT_PRIVATE]
    if shown and len(labels) > 1:  # mechanisms of several labels: each setting shows its own
        print("released by the mechanisms (privacy: per setting):")
        console().print(metric_table(df, [*keys, "privacy"], shown))
    elif shown:
        print(f"released by the mechanism (privacy: {labels[0]}):")
        console().print(metric_table(df, keys, shown))
    if evaluation and not release_only:
        print(f"{EVALUATION_HEADING}:")
        console().print(metric_table(df, keys, evaluation, title=not shown))
    if run_id.startswith("run-"):
        for line in heavy_hitter_lines(df, params):
            console().print(line, soft_wrap=False, markup=False)


# ---- heavy hitters ------------------------------------------------------------------------------------------------


def _labelled(item: int, labels: dict[int, str] | None, data: dict[str, Any]) -> str:
    if labels and item in labels:
        return labels[item]
    if str(data.get("name", "")).startswith("caida") and 0 <= item < 2**32:
        return str(ipaddress.IPv4Address(item))
    return str(item)


def replay_reported(params: dict[str, Any]) -> tuple[list[tuple[str, float]], int, tuple[float, float] | None]:
    """The (label, estimate) pairs trial ``params`` reports at its last output step, that step, and its guarantee.

    The guarantee is the (epsilon, delta) the tracker states (``privacy.statement.stated``; None: it states none).

    The trial is replayed from its seed: the stream from its data seed and the tracker from its mechanism seed, as
    ``trials.heavy_hitters.run_trial`` does, so this is the trial's own output. A trace is fed block by block.
    """
    from hydra.utils import get_method

    from dpstream.data.cache import FINGERPRINT_SUFFIX
    from dpstream.data.stream import CONFIG_ONLY, FileStream
    from dpstream.noise import children, trial_seed
    from dpstream.privacy.statement import STATED, stated
    from dpstream.trials.heavy_hitters import FEED_BLOCK, make_tracker

    data = params["data"]
    data_seed, mech_seed = children(trial_seed(params["seed"], params["trial"]), 2)
    kwargs = {k: v for k, v in data.items() if k not in CONFIG_ONLY and not k.endswith(FINGERPRINT_SUFFIX)}
    out = get_method(data["_target_"])(**kwargs, seed=data_seed, cache_dir=params.get("data_dir"))
    labels = out.labels if isinstance(out, FileStream) else None
    stream = out.items if isinstance(out, FileStream) else out
    tracker = make_tracker(params, len(stream), mech_seed)
    for start in range(0, len(stream), FEED_BLOCK):
        tracker.extend(np.asarray(stream[start:start + FEED_BLOCK], dtype=np.int64))
    reported = tracker.estimate()
    return ([(_labelled(item, labels, data), est) for item, est in reported.pairs()], int(reported.time),
            stated(tracker)[STATED])


def why_nothing(row: pd.Series, epsilon: float) -> str:
    """Why a LazyHH run reported nothing: its threshold against the stream, and what would lower it."""
    t, tau, gamma = float(row["output_time"]), row.get("tau_final"), row.get("gamma")
    if tau is None or pd.isna(tau) or t <= 0:
        return ("nothing reported: the tracker reported no item at its last output step; a larger epsilon or a "
                "longer stream lowers the count an item needs")
    return (f"nothing reported: at t = {int(t)} an item is reported only when its noisy estimate exceeds "
            f"tau = {tau:.0f}, i.e. {tau / t:.1%} of the stream. The noise term gamma = {gamma:.0f} "
            f"(at epsilon = {epsilon:g}) enters tau three times. What lowers it: a larger epsilon (gamma scales as "
            f"1/epsilon), a longer stream (tau / t falls as t grows), a larger k~ (mechanism.k_tilde: tau holds "
            f"5 t / k~), or a smaller k. An item needs about {tau / t:.1%} of a stream this long to be reported.")


def guarantee_text(statement: tuple[float, float], tilde: bool) -> str:
    """``(epsilon, delta) = (4, 0.1122)``: a stated guarantee; ``delta~`` where the delta that holds is LazyHH's."""
    epsilon, delta = statement
    return f"(epsilon, delta{'~' if tilde else ''}) = ({epsilon:.4g}, {delta:.4g})"


def heavy_hitter_lines(df: pd.DataFrame, params: dict[str, Any]) -> list[str]:
    """For a single heavy-hitter run: what its first trial reported (labels, estimates) or why it reported nothing."""
    if "n_reported" not in df.columns or df.empty:
        return []
    first = df.iloc[0]
    if int(first["n_reported"]) == 0:
        return [why_nothing(first, float(params.get("epsilon", float("nan"))))]
    pairs, t, statement = replay_reported(params)
    label = str(first["privacy"]) if "privacy" in df.columns else NOT_PRIVATE  # a baseline's counts are not private
    if statement is not None and label != NOT_PRIVATE:  # the numbers of the guarantee, as the ledger books them
        label += f" at {guarantee_text(statement, 'delta_tilde' in df.columns)}"
    lines = [f"heavy hitters reported by trial 0 at t = {t} (item: estimated count; privacy: {label}):"]
    lines += [f"  {label}: {est:.0f}" for label, est in pairs[:MAX_LISTED]]
    if len(pairs) > MAX_LISTED:
        lines.append(f"  ... and {len(pairs) - MAX_LISTED} more (n_reported in the table)")
    return lines


SMOKE_BANNER = "reduced scale, not a reproduction"


def typed_command(argv: list[str] | None = None) -> str:
    """The command as typed: ``dpstream``, ``python -m dpstream`` or ``python run.py``, with its arguments."""
    import sys

    argv = sys.argv if argv is None else argv
    program = Path(argv[0]).name if argv else "dpstream"
    name = {"run.py": "python run.py", "__main__.py": "python -m dpstream"}.get(program, "dpstream")
    return " ".join([name, *argv[1:]])


def print_claims(claims: pd.DataFrame, smoke: bool, verbose: bool = True, file: str = "the claims file") -> None:
    """The paper claims of the run with their verdicts, one line each; ``file`` holds each one's rule and measurement.

    At smoke scale the heading says every verdict is ``SMOKE_BANNER``.
    """
    if not verbose:
        return
    print(f"paper claims ({SMOKE_BANNER + '; ' if smoke else ''}rules and measurements: {file}):")
    for row in claims.itertuples():
        console().print(fitted([f"  {row.verdict!s:<14} {' '.join(str(row.claim).split())}"]) or "", markup=False)


class ProgressLog:
    """Progress when stderr is not a terminal (a log file, CI): one line every ``step`` of the trials.

    On a terminal the tqdm bar shows progress and this prints nothing.
    """

    def __init__(self, total: int, label: str, step: float = 0.05, stream: Any = None) -> None:
        """Count ``total`` trials of ``label``; print when the done fraction crosses a multiple of ``step``."""
        import sys

        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.total, self.label, self.step, self.done, self.shown = total, label, step, 0, 0

    def update(self) -> None:
        """One more trial finished."""
        self.done += 1
        level = int(self.done / self.total / self.step + 1e-9) if self.total else 0
        if self.enabled and (level > self.shown or self.done == self.total):
            self.shown = level
            print(f"{self.label}: {self.done}/{self.total} trials ({self.done / self.total:.0%})", file=self.stream,
                  flush=True)
