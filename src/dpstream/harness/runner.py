"""Run the trials an experiment stands for, store each as it finishes, then write its table and figure.

Every trial's randomness is ``SeedSequence(seed, spawn_key=(trial,))`` (``dpstream.noise.trial_seed``),
so results do not depend on ``n_jobs`` or the backend. Finished trials are skipped on a rerun.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import joblib
import pandas as pd
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from dpstream.certified import uncertified as has_uncertified
from dpstream.certified import with_privacy
from dpstream.claims import Claim
from dpstream.claims.registration import PROVENANCE, provenance
from dpstream.errors import ConfigError
from dpstream.files import write_atomically
from dpstream.harness import console, ledger
from dpstream.harness.config import (
    RUN_KEYS,
    SHARED_KEYS,
    as_mapping,
    command_line_overrides,
    declared_uses,
    expand,
    flatten,
    typed_experiment_keys,
)
from dpstream.harness.environment import ENV_COLUMNS, environment
from dpstream.harness.experiments import claims_table, experiments_to_run
from dpstream.harness.layout import check_path_name, check_reproduction, inside, panel_title, run_folder
from dpstream.harness.lifeline import die_with
from dpstream.harness.natural import check_panel_data
from dpstream.harness.report import verdict_summary, write_report
from dpstream.harness.store import NOT_IN_KEY, ResultsStore, trial_key
from dpstream.noise import NOISE_MODES, check_noise_mode, noise_mode, trial_seed
from dpstream.privacy.statement import STATED
from dpstream.registry import CONF_DIR, ConfDirs, import_object, load_option
from dpstream.trials import row_schema, undeclared, within_budget
from dpstream.validation import MAX_SIZE, check_choice, check_delta, check_epsilon, check_positive_int

BACKENDS = ("loky", "threading", "sequential", "dask")
TIMING_SUFFIXES = ("_s", "_per_s", "seconds", "us_per_update")
STORE_NAME = "trials.jsonl"
TRIAL_WALL = "trial_wall_s"
"""Column the runner adds to every computed row: the wall seconds of the whole trial (data, mechanism, metrics)."""
FIGURE_FORMATS = ("png", "pdf", "svg")
CONFIG_FILE = "config.yaml"
"""A run folder's record of the configs it ran (``describe``); the terminal shows the keys that differ from the
defaults."""


def is_timing(column: str) -> bool:
    """Timing columns and the time a trial ran differ between identical runs: left out of reproducibility checks."""
    return column.endswith(TIMING_SUFFIXES) or column == "run_time"


def execute_trial(trial_fn: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one trial (in a worker): seed from (params.seed, params.trial), return its metrics."""
    return stated_trial(trial_fn, params)[0]


def stated_trial(trial_fn: str, params: dict[str, Any]) -> tuple[dict[str, Any], tuple[float, float] | None]:
    """``execute_trial``'s metrics and the (epsilon, delta) its mechanism stated (``privacy.statement.stated``).

    The statement is what the privacy ledger books; it is not a row column. None: no statement (not private, not
    certified, or a trial that returns none).
    """
    fn = import_object(trial_fn)
    started = time.perf_counter()
    with noise_mode(params.get("noise", "numpy")):
        metrics = fn(params, trial_seed(params["seed"], params["trial"]))
    if not isinstance(metrics, dict):
        raise TypeError(f"trial function {trial_fn} returned {type(metrics).__name__}, expected a dict")
    statement = metrics.pop(STATED, None)
    extra = undeclared(fn, metrics)
    if extra:
        raise ValueError(f"trial function {trial_fn} returned undeclared column(s) {', '.join(extra)}: add them to "
                         "its @row_columns(...) (which recomputes its stored rows)")
    # the whole trial's wall time, added by the runner (not part of the store key): the report's cost per experiment
    return {**metrics, TRIAL_WALL: time.perf_counter() - started}, statement


def store_key(params: dict[str, Any], trial_fn: str) -> str:
    """The results-store key of a trial: its config and the row columns its trial function declares.

    A trial function with a ``key_inputs(params)`` attribute (a dict of strings) also keys its rows by what that adds:
    the versions of inputs it reads outside its config (``trials.counters.board_key_inputs``). Without one, or where it
    adds nothing, the key is the config's alone.
    """
    fn = import_object(trial_fn)
    inputs = getattr(fn, "key_inputs", None)
    return trial_key({**params, **inputs(params)} if inputs is not None else params, row_schema(fn))


def _preflight(cfg: dict[str, Any]) -> None:
    check_epsilon(cfg["epsilon"])
    check_delta(cfg["delta"])
    for key in ("width", "depth"):
        if cfg.get(key) is not None:
            check_positive_int(cfg[key], key)
    memory_kb = cfg.get("memory_kb")
    if memory_kb is not None and (isinstance(memory_kb, bool) or not isinstance(memory_kb, int | float)
                                  or not 0 < memory_kb < MAX_SIZE):
        raise ValueError(f"memory_kb must be a number > 0 and < {MAX_SIZE}, got {memory_kb!r}")
    check_positive_int(cfg["trials"], "trials")
    check_positive_int(cfg["seed"], "seed", minimum=0, maximum=None)
    if cfg["n_jobs"] == 0 or not isinstance(cfg["n_jobs"], int):
        raise ValueError(f"n_jobs must be a non-zero integer (-1 = all cores), got {cfg['n_jobs']!r}")
    check_choice(cfg["backend"], "backend", BACKENDS)
    check_choice(cfg["noise"], "noise", NOISE_MODES)
    check_noise_mode(cfg["noise"])  # noise=secure without its library: one line naming the extra to install
    figure_formats(cfg)


@contextlib.contextmanager
def parallel_backend(backend: str, n_jobs: int, scheduler_address: str | None) -> Iterator[tuple[str, int]]:
    """Yield (joblib backend name, n_jobs); for ``dask`` connect to (or start) a dask.distributed cluster."""
    if backend != "dask":
        yield backend, n_jobs
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:
        raise ConfigError("backend", "dask", "needs dask.distributed, not installed: pip install 'dpstream[dask]'") \
            from exc

    if scheduler_address:
        with Client(scheduler_address) as client:
            yield "dask", len(client.scheduler_info()["workers"]) or 1
        return
    workers = n_jobs if n_jobs > 0 else (os.cpu_count() or 1)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        yield "dask", workers


def run_trials(trials: list[tuple[str, str, dict[str, Any]]], store: ResultsStore, cfg: dict[str, Any],
               label: str) -> int:
    """Compute the (key, trial function, params) whose keys are not in ``store``.

    Append each row the moment it finishes.
    """
    done = store.written_now if cfg["rerun"] else store
    todo = [job for job in trials if job[0] not in done]
    if not todo:
        return 0
    with parallel_backend(cfg["backend"], cfg["n_jobs"], cfg.get("scheduler_address")) as (backend, n_jobs), \
            workers_die_with_the_run(backend):
        # a progress bar on a terminal only (disable=None), erased when done or stopped (leave=False)
        with tqdm(total=len(todo), desc=label, unit="trial", mininterval=1.0, file=sys.stderr, disable=None,
                  leave=False) as bar, joblib.parallel_config(backend=backend, n_jobs=n_jobs):
            parallel = joblib.Parallel(return_as="generator_unordered")  # (parallel_config registers dask too)
            parent = os.getpid() if backend == "loky" else None  # a loky worker dies with this process
            jobs = (joblib.delayed(_keyed)(key, fn, p, parent) for key, fn, p in todo)
            log = console.ProgressLog(len(todo), label)  # a line every 5% when stderr is not a terminal
            try:
                for key, params, metrics, statement in parallel(jobs):
                    row = make_row(key, params, metrics)
                    # a trial on the user's own file is a release of it: spent before its row is stored, so a
                    # stop between the two counts it twice at worst, never zero times
                    ledger.spend(cfg.get("ledger_dir", cfg["results_dir"]), params, row, statement)
                    store.append(row, replace=cfg["rerun"])
                    bar.update()
                    log.update()
            finally:
                store.sync()  # the rows of this sweep on disk, also when it stops early
    return len(todo)


class Terminated(SystemExit):
    """SIGTERM of the main process, raised where it is waiting for trials (exit status 128 + 15)."""


def stop_status(exc: BaseException) -> int | None:
    """Exit status of the stop behind ``exc`` (Ctrl-C: 130, SIGTERM: 143), or None for an ordinary error.

    Aborting the worker pool while a stop unwinds can raise a second exception; the stop is then in that
    exception's chain (``__cause__`` / ``__context__``) and the run still ends as stopped, not as failed.
    """
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, Terminated):
            return 143
        if isinstance(link, KeyboardInterrupt):
            return 130
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None


@contextlib.contextmanager
def workers_die_with_the_run(backend: str) -> Iterator[None]:
    """Turn SIGTERM into an exception in the main thread, as SIGINT already is (``KeyboardInterrupt``).

    It unwinds through joblib, which aborts the run and kills the loky workers, so stopping a parallel run leaves no
    orphan worker computing trials nobody will store (finished trials are already in the store).
    """
    if backend != "loky":
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (e.g. a Hydra launcher thread): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _keyed(key: str, trial_fn: str, params: dict[str, Any],
           parent: int | None = None) -> tuple[str, dict[str, Any], dict[str, Any], tuple[float, float] | None]:
    if parent is not None:
        die_with(parent)  # a worker process ends with the run that started it (``harness.lifeline``)
    return key, params, *stated_trial(trial_fn, params)


def config_columns(params: dict[str, Any]) -> dict[str, Any]:
    """The flattened config a row records (its key hashes the same config, less record-only fields)."""
    return flatten({k: v for k, v in params.items() if k not in NOT_IN_KEY})


def stored_row(store: ResultsStore, key: str) -> dict[str, Any]:
    """The row ``store`` holds for ``key`` (just computed or found): a missing one is an error naming the key."""
    row = store.get(key)
    if row is None:
        raise RuntimeError(f"trial {key} is not in the results store after its run")
    return row


def make_row(key: str, params: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    """A results row: key, config columns, metrics and the environment (not in the key).

    ``certified`` is the mechanism's own (``privacy.labels``; a row without it is not certified) and the budget kept.
    The environment includes the commit, time and pre-registration hash the trial ran under (``provenance``).
    """
    row = {"key": key, **config_columns(params), **metrics}
    row["certified"] = bool(metrics.get("certified", False)) and within_budget(params, metrics)
    return {**row, **environment(), **provenance()}


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row as its table shows it: ``certified`` as its mechanism says (never for a baseline) and ``privacy``."""
    return with_privacy(row)


def trial_function(params: dict[str, Any], spec: dict[str, Any]) -> str:
    """The ``package.module:function`` that runs a trial: the experiment's ``trial``, else the mechanism's."""
    fn = spec.get("trial") or params["mechanism"].get("trial")
    if not fn:
        raise ValueError(f"mechanism {params['mechanism'].get('name')!r} names no trial function ('trial: ...')")
    return fn


def table(rows: list[dict[str, Any]], experiment_id: str) -> pd.DataFrame:
    """The experiment's rows as a DataFrame with the experiment id as its first column."""
    df = pd.DataFrame(rows)
    df.insert(0, "experiment", experiment_id)
    return df


def write_csv(df: pd.DataFrame, path: Path) -> None:
    """Write ``df`` to ``path`` whole or not at all (``files.write_atomically``)."""
    write_atomically(path, lambda handle: df.to_csv(handle, index=False))


def summary(df: pd.DataFrame, params_cols: list[str], varying: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-trial and mean tables restricted to what varies and what was measured."""
    skip = ("key", "experiment", *ENV_COLUMNS, *PROVENANCE)
    metric_cols = [c for c in df.columns if c not in params_cols and c not in skip]
    shown = [c for c in varying if c in df.columns] + ["trial"] + metric_cols
    per_trial = df[shown]
    numeric = [c for c in metric_cols if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    keys = [c for c in varying if c in df.columns]
    means = df.groupby(keys, sort=False)[numeric].mean().reset_index() if keys else df[numeric].mean().to_frame().T
    return per_trial, means


def _fixed_by_name(df: pd.DataFrame, column: str) -> bool:
    """Whether a ``mechanism.*`` / ``data.*`` column only changes with the option's name (its class, its flags).

    Such columns are not swept values, so summaries do not group by them.
    """
    group, _, rest = column.partition(".")
    name = f"{group}.name"
    if group not in ("mechanism", "data") or rest == "name" or name not in df.columns:
        return False
    return bool((df.groupby(name)[column].agg(lambda s: s.astype(str).nunique()) <= 1).all())


@dataclass
class Outcome:
    """What running one experiment produced."""

    df: pd.DataFrame
    claims: pd.DataFrame | None
    computed: int
    elapsed: float
    table: Path


def run_experiment(spec: dict[str, Any], all_params: list[dict[str, Any]], cfg: dict[str, Any],
                   store: ResultsStore, verbose: bool = True, swept: tuple[str, ...] = ()) -> Outcome:
    """Run one experiment's trials (``all_params``, from ``plan``), write its table and figure.

    Print its tables if ``verbose``.
    """
    exp_id = spec["id"]
    functions = [trial_function(p, spec) for p in all_params]
    keys = [store_key(p, fn) for p, fn in zip(all_params, functions, strict=True)]
    jobs = list(zip(keys, functions, all_params, strict=True))
    results_dir = Path(cfg["results_dir"])
    ledger_dir = Path(cfg.get("ledger_dir", results_dir))
    started = time.perf_counter()
    computed = run_trials(jobs, store, cfg, exp_id)
    elapsed = time.perf_counter() - started
    # a stored row gets the config columns of this run: same key, so same config, and record-only fields
    # added to configs since the row was written (e.g. ``mechanism.uses``) are filled in
    rows = [table_row({**stored_row(store, key), **config_columns(p)}) for key, p in zip(keys, all_params, strict=True)]
    df = table(rows, exp_id)
    table_path = inside(results_dir / "tables" / f"{exp_id}.csv", results_dir)
    write_csv(df, table_path)
    params_cols = [c for c in flatten(all_params[0]) if c not in NOT_IN_KEY]
    varying = [c for c in params_cols if c != "trial" and df[c].astype(str).nunique() > 1
               and not _fixed_by_name(df, c)]
    if "mechanism.name" in df.columns and "mechanism.name" not in varying:
        varying.insert(0, "mechanism.name")
    _per_trial, means = summary(df, params_cols, varying)
    say = print if verbose else _quiet
    with pd.option_context("display.max_columns", 30, "display.width", 200, "display.max_rows", 60):
        say(f"\n== {exp_id}: {panel_title(spec, all_params)} ==")
        say(f"{len(df)} trials ({computed} computed in {elapsed:.1f} s, {len(df) - computed} from the store)")
        say(console.config_line(changed_config(df, params_cols, varying, all_params),
                                CONFIG_FILE if not cfg.get("reproduction") else "dpstream --cfg job"))
    configured = df["mechanism.private"].astype(bool) if "mechanism.private" in df.columns else False
    if "private" in df.columns and bool((configured & ~df["private"].astype(bool)).any()):
        say("WARNING: mechanism.private=true names a mechanism that is not private: its rows say "
            "'none (not private)' (labels come from the mechanism, never from the config)")
    files = {source for p in all_params if (source := ledger.own_file(p)) is not None}
    for path, _ in sorted(files):
        say(f"data: your own file {path}. Every trial on it is a release of it (privacy ledger "
            f"{ledger.ledger_path(ledger_dir)}); its rows' errors, recall and true counts are NOT private.")
    if files:
        say(f"WARNING: seeded run (seed={cfg['seed']}): this noise is known to anyone with the seed, so it can be "
            "removed. A deployable release is the API without a seed, node_noise=discrete_secure_ct "
            "(docs/secure-noise.md); these trials are never deployable.")
    keys = [c for c in varying if c in df.columns]  # per-trial rows are in the table file; the terminal gets means
    release_only = bool(cfg.get("release_only"))
    plotted = [(spec.get("plot_args") or {}).get("y")]  # the figure's metric first: the terminal may not fit all
    metrics = sorted((c for c in means.columns if c not in keys), key=lambda c: c not in plotted)
    console.print_run(df, spec["id"], all_params[0], keys, metrics, verbose, release_only)
    for path, digest in sorted(files):
        say(ledger.totals(ledger_dir, digest).line(path))
    uncertified = has_uncertified(df)  # rows that claim privacy without being certified (not the baselines)
    if uncertified:
        say("WARNING: some rows are NOT privacy-certified (scaled constants or debug mode)")
    if spec.get("plot"):
        figure = inside(results_dir / "figures" / f"{exp_id}.png", results_dir)
        shown = {**spec, "title": panel_title(spec, all_params), "formats": figure_formats(cfg)}
        import_object(spec["plot"])(df, shown, figure)
        say(f"figure: {figure}")
    claims = None
    if spec.get("claims"):
        claims = claims_table(judge(spec, df, swept), exp_id, registered=not swept)
        write_csv(claims, results_dir / "tables" / f"{exp_id}.claims.csv")
        # verdicts are decided on evaluation numbers (errors against the raw data): not shown in a release-only run
        console.print_claims(claims, smoke=cfg["profile"]["name"] == "smoke", verbose=verbose and not release_only,
                             file=f"{exp_id}.claims.csv")
    say(f"table: {table_path}")
    outcome = Outcome(df, claims, computed, elapsed, table_path)
    if not verbose:
        verdicts = f"; claims: {verdict_summary(claims)}" if claims is not None else ""
        flag = "; NOT privacy-certified rows" if uncertified else ""
        print(f"{exp_id}: {len(df)} trials ({computed} computed in {elapsed:.1f} s){verdicts}{flag}", flush=True)
    return outcome


def changed_config(df: pd.DataFrame, params_cols: list[str], varying: list[str],
                   all_params: list[dict[str, Any]]) -> dict[str, Any]:
    """The keys of a run that every trial shares and that differ from their defaults (``default_values``)."""
    used = {k for p in all_params for k in declared_uses(p["mechanism"])}  # unused shared keys are not shown
    constant = {c: df[c].iloc[0] for c in params_cols if c not in varying and c != "trial"
                and not (c in SHARED_KEYS and c not in used)
                and not c.startswith(("profile.", "mechanism.trial", "mechanism._target_", "mechanism.uses",
                                      "data._target_"))}
    defaults = default_values(all_params[0])
    return {k: v for k, v in constant.items() if k not in defaults or str(defaults[k]) != str(v)}


def default_values(params: dict[str, Any]) -> dict[str, Any]:
    """The defaults a trial's keys are compared with: ``conf/config.yaml`` and its mechanism's and data's own files.

    Flattened to dotted keys; a mechanism or data option found under another name has no defaults here.
    """
    top = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"), resolve=False)
    out = {k: v for k, v in as_mapping(top, "conf/config.yaml").items() if k not in ("defaults", "hydra")}
    for group in ("mechanism", "data"):
        try:
            out[group] = load_option(CONF_DIR, group, str(params[group].get("name")))
        except ConfigError:
            out[group] = {}
    return flatten(out)


def figure_formats(cfg: dict[str, Any]) -> list[str]:
    """The figure formats ``fmt`` asks for (png, pdf, svg; a name or a list): PNG is always among them."""
    raw = cfg.get("fmt") or "png"
    formats = list(raw) if isinstance(raw, list | tuple) else [str(raw)]
    for ext in formats:
        check_choice(ext, "fmt", FIGURE_FORMATS)
    return ["png", *(f for f in formats if f != "png")]


def _quiet(*args: Any, **kwargs: Any) -> None:
    """Stands in for ``print`` when an aggregate run prints one line per experiment."""


def judge(spec: dict[str, Any], df: pd.DataFrame, swept: tuple[str, ...] = ()) -> list[Claim]:
    """The claims of experiment ``spec`` on its rows ``df``: once, or once per value of the keys ``-m`` added.

    A claim's rule covers the experiment's own grid, so a key added to it (``-m experiment=fig3a seed=1,2``) gets
    its claims judged at each of its values, each claim naming the value (``[seed=1] ...``).
    """
    decide = import_object(str(spec["claims"]))
    columns = [f"{k}.name" if k in ("mechanism", "data") else k for k in swept]
    if not columns:
        return [c if isinstance(c, Claim) else Claim(**c) for c in decide(df, spec)]
    out = []
    for values, rows in df.groupby(columns, sort=False):
        where = ", ".join(f"{k}={v}" for k, v in zip(swept, values, strict=True))
        out += [replace(c, claim=f"[{where}] {c.claim}") for c in judge(spec, rows.reset_index(drop=True))]
    return out


@dataclass
class Plan:
    """What a config asks for, checked and expanded before any trial runs."""

    cfg: dict[str, Any]                                          # the plain config, paths made absolute
    experiments: list[tuple[dict[str, Any], list[dict[str, Any]]]]  # (spec, the params of each of its trials)
    out: Path                                     # where its tables, figures and report go (``harness.layout``)
    swept: tuple[str, ...] = ()                   # the keys ``-m`` added to the experiments' grids


def plan(cfg: DictConfig | dict[str, Any], conf_dir: ConfDirs, overrides: list[str] | None = None,
         sweep: dict[str, list[Any]] | None = None) -> Plan:
    """Check the config and expand every experiment it asks for into trial params (grid x trials).

    ``sweep``: the keys ``-m`` sweeps, with their values (``cli.split_sweep``), added to the grid; the command line
    holds each at its first value, which the sweep replaces. A bad key, value or mechanism/data pair anywhere in an
    aggregate or a sweep fails before the first trial.
    """
    plain = as_mapping(OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg),
                       "the config")
    _preflight(plain)
    plain["results_dir"] = str(Path(str(plain["results_dir"])).resolve())  # a folder may be named 2024 (an int)
    plain["data_dir"] = str(Path(str(plain["data_dir"])).resolve())
    base = {k: v for k, v in plain.items() if k not in RUN_KEYS}
    profile_overrides = plain["profile"].get("overrides") or {}
    cli = [(k, v) for k, v in command_line_overrides(overrides or [], plain) if k not in (sweep or {})]
    sweep = dict(sweep or {})
    if "experiment" in sweep:  # experiment=a,b: both, one after the other, as the parts of one run
        names = [str(n) for n in sweep.pop("experiment")]
        plain["experiment"] = {"id": "+".join(names), "parts": names}
    experiments = []
    typed = typed_experiment_keys(overrides or [], plain)
    for spec in experiments_to_run(plain, conf_dir, sweep, typed):
        trials = int(spec.get("trials") or plain["trials"])
        expanded = expand(spec, base, conf_dir, trials, profile_overrides, cli)
        for point in {(p["epsilon"], p["delta"]) for p in expanded}:  # a swept value too, before the first trial
            check_epsilon(point[0])
            check_delta(point[1])
        check_path_name(spec["id"], "experiment.id")  # it names the table and figure files
        check_panel_data(spec, expanded, conf_dir, plain["profile"]["name"])  # your data in a paper panel
        check_reproduction(plain, expanded)
        experiments.append((spec, expanded))
    return Plan(plain, experiments, output_dir(plain, experiments), tuple(sweep) if plain.get("experiment") else ())


def output_dir(plain: dict[str, Any], experiments: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> Path:
    """``results_dir`` itself with ``reproduction=true``, else the run's own folder under ``results_dir/runs``."""
    results_dir = Path(plain["results_dir"])
    if plain.get("reproduction"):
        return results_dir
    label = plain["experiment"]["id"] if plain.get("experiment") else \
        "sweep" if experiments and experiments[0][0].get("grid") else f"run-{plain['mechanism']['name']}"
    data = experiments[0][1][0]["data"] if experiments and experiments[0][1] else plain["data"]
    return run_folder(results_dir, label, data, [config_key(p) for _, params in experiments for p in params])


def describe(planned: Plan) -> str:
    """The configs that will run (``dpstream --cfg job``).

    Per experiment, its size, its sweep and the full config of its first trial, with the profile's overrides applied.
    """
    out = []
    for spec, all_params in planned.experiments:
        points = {config_key(p) for p in all_params}
        out.append(f"# {spec['id']}: {len(points)} configurations x {len(all_params) // max(len(points), 1)} "
                   f"trials (profile {planned.cfg['profile']['name']}, results in {planned.out})")
        sweeps = {**(spec.get("grid") or {}), **(spec.get("zip") or {})}
        if sweeps:
            out.append("# swept: " + "; ".join(f"{k}: {v}" for k, v in sweeps.items()))
        first = {k: v for k, v in all_params[0].items() if k != "trial"}
        out.append(OmegaConf.to_yaml(OmegaConf.create(first)))
    return "\n".join(out)


def config_key(params: dict[str, Any]) -> str:
    """Store key of a config without its trial function name."""
    return trial_key({k: v for k, v in params.items() if k != "trial"})


def run(cfg: DictConfig | dict[str, Any], conf_dir: ConfDirs, overrides: list[str] | None = None,
        sweep: dict[str, list[Any]] | None = None) -> list[pd.DataFrame]:
    """Entry point behind the ``dpstream`` command: run the configured experiment (or a single run) end to end.

    ``overrides`` are the command-line ``key=value`` strings; inside an experiment they beat its ``fixed`` values.
    ``sweep``: the keys ``dpstream -m`` sweeps, with their values (``plan``).
    """
    planned = plan(cfg, conf_dir, overrides, sweep)
    store = ResultsStore(Path(planned.cfg["results_dir"]) / "store" / STORE_NAME)
    # tables, figures and report go to the run's folder; the privacy ledger stays in results_dir, shared by all runs
    plain = {**planned.cfg, "results_dir": str(planned.out), "ledger_dir": planned.cfg["results_dir"]}
    if not planned.cfg.get("reproduction"):  # the committed reproduction's folder holds tables and figures only
        planned.out.mkdir(parents=True, exist_ok=True)
        (planned.out / CONFIG_FILE).write_text(describe(planned))
    verbose = len(planned.experiments) == 1  # an aggregate prints one line per experiment and a summary
    started = time.perf_counter()
    outcomes = []
    for number, (spec, all_params) in enumerate(planned.experiments, start=1):
        if not verbose:
            print(f"[{number}/{len(planned.experiments)}] ", end="", flush=True)
        outcomes.append(run_experiment(spec, all_params, plain, store, verbose, planned.swept))
    specs = [spec for spec, _ in planned.experiments]
    frames = [o.df for o in outcomes]
    report = write_report(specs, frames, plain) if (plain.get("experiment") or {}).get("report") else None
    if not verbose:
        print(aggregate_summary(outcomes, time.perf_counter() - started, Path(plain["results_dir"]), report))
    elif report:
        print(f"report: {report}")
    return frames


def aggregate_summary(outcomes: list[Outcome], elapsed: float, results_dir: Path, report: Path | None) -> str:
    """The closing lines of a multi-experiment run: trials, verdict counts over every claim, where things are."""
    trials = sum(len(o.df) for o in outcomes)
    computed = sum(o.computed for o in outcomes)
    claims = [o.claims for o in outcomes if o.claims is not None]
    lines = [f"\n{len(outcomes)} experiments, {trials} trials ({computed} computed) in {elapsed:.1f} s"]
    if claims:
        lines.append(f"verdicts: {verdict_summary(pd.concat(claims, ignore_index=True))}")
    lines.append(f"tables: {results_dir / 'tables'}")
    if report:
        lines.append(f"report: {report}")
    return "\n".join(lines)
