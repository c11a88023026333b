"""``make verify``: every experiment at 3 master seeds, verdicts that must agree across them, and the report.

Each seed's trials go into its own results folder under the verify store (``DPSTREAM_VERIFY_STORE``, default
``<out>/verify``, i.e. ``results/verify`` in the clone): ``<store>/<profile>/seed_<s>/`` with its results store, so an
interrupted run resumes where it stopped (stored trials are not recomputed) and the whole can be completed over
several runs. The seeds' trial stores (``store/trials.jsonl``, a few MB a seed) are committed with the report they
produce (their tables and figures are not: ``.gitignore``), so the run can be completed on another machine than the
one that started it, and anyone can re-judge the committed report from the very trials behind it. ``--status``
prints what is stored and what remains, computing nothing.

Every seed's claims are judged with ``nulls`` permutation nulls per comparative rule (``dpstream.claims.nulls``); a
verdict that is not the same at every seed becomes ``inconclusive (unstable across seeds)`` with the seeds' outcomes
in ``measured``. The combined claims, the first seed's trial tables and figures and the report are written to ``out``
(default ``results``).

Usage: ``python -m dpstream.harness.verify [--seeds 0 1 2] [--profile paper] [--experiment all] [--nulls 200]
[--out results] [--status]``. At paper scale one seed of everything takes hours on 2 cores.

``--registered`` is the run under the pre-registration (``dpstream.claims.registration``): batches of new master
seeds from ``FIRST_NEW_SEED`` up, each look adding enough seeds for the registered first batch of trials, up to the
registered looks; the trials of all the new seeds so far are pooled into one table per experiment (trial ``t`` of
seed ``s`` becomes block ``s * 1000 + t``: independent draws, each still pairing its arms) and judged once per look,
and every verdict passes ``registration.gate`` (registered hash, clean commit, seeds >= 3, unchanged rule). A claim
decided by a rule registered as sequential (``rule.sequential: true``, decided through ``dpstream.claims.sequential``
with the looks made so far) is frozen at its stopping look; any other rule is a fixed-sample rule and is judged only
at the last look, on the whole budget. ``<store>/<profile>/looks.csv`` keeps every look's verdicts, so a resumed run
knows what was decided; an experiment whose claims are all frozen gets no further batches.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from dpstream.claims.core import VERDICTS
from dpstream.claims.registration import FIRST_NEW_SEED, gate, load
from dpstream.harness.rejudge import composed_config, judge, rejudge
from dpstream.harness.report import write_report
from dpstream.harness.runner import STORE_NAME, experiments_to_run, plan, run, store_key, trial_function, write_csv
from dpstream.harness.store import ResultsStore
from dpstream.registry import CONF_DIR

SEEDS = (0, 1, 2)
DECIDED = ("confirmed", "not confirmed")
BLOCK = 1000
"""Pooled tables number trial t of master seed s as block s * BLOCK + t."""
NULLS = 200
UNSTABLE = "unstable across seeds"


def verify_store(out: Path = Path("results")) -> Path:
    """The verify store: ``$DPSTREAM_VERIFY_STORE`` or ``<out>/verify`` (committed beside the report it produces)."""
    return Path(os.environ.get("DPSTREAM_VERIFY_STORE") or out / "verify")


def seed_dir(store: Path, profile: str, seed: int) -> Path:
    """The results folder of one master seed."""
    return store / profile / f"seed_{seed}"


def seed_config(store: Path, profile: str, seed: int, experiment: str, n_jobs: int | None = None) -> DictConfig:
    """The composed config of ``experiment`` at master seed ``seed``, results in the seed's folder of ``store``."""
    from hydra import compose, initialize_config_dir

    overrides = [f"experiment={experiment}", f"profile={profile}", f"seed={seed}",
                 f"results_dir={seed_dir(store, profile, seed)}", "reproduction=true",
                 *([f"n_jobs={n_jobs}"] if n_jobs else [])]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def run_seed(store: Path, profile: str, seed: int, experiment: str, n_jobs: int | None = None) -> Path:
    """Run (or resume) every trial of ``experiment`` at master seed ``seed``; return its results folder."""
    run(seed_config(store, profile, seed, experiment, n_jobs), CONF_DIR, [])
    return seed_dir(store, profile, seed)


def progress(store: Path, profile: str, seeds: tuple[int, ...], experiment: str = "all") -> pd.DataFrame:
    """Per seed and experiment: trials planned and trials already in the seed's store (nothing is computed).

    The keys are those a run would compute (``runner.plan``, ``runner.store_key``); an experiment whose trials
    another one computes too (svt_kappa after svt_c) counts them under both.
    """
    rows = []
    for seed in seeds:
        planned = plan(seed_config(store, profile, seed, experiment), CONF_DIR, [])
        path = seed_dir(store, profile, seed) / "store" / STORE_NAME
        stored: ResultsStore | set[str] = ResultsStore(path) if path.exists() else set()  # not started: create nothing
        for spec, all_params in planned.experiments:
            keys = {store_key(p, trial_function(p, spec)) for p in all_params}
            rows.append({"seed": seed, "experiment": spec["id"], "trials": len(keys),
                         "stored": sum(key in stored for key in keys)})
    return pd.DataFrame(rows, columns=["seed", "experiment", "trials", "stored"])


def combine_seeds(per_seed: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """One claims table from the same experiment's claims at several seeds.

    The same verdict at every seed stands (with the first seed's measurement); otherwise ``inconclusive`` with
    ``measured`` starting "inconclusive (unstable across seeds)" and listing every seed's verdict. The ``nulls``
    column (each seed's own permutation nulls) lists every seed's outcome where they differ.
    """
    seeds = sorted(per_seed)
    first = per_seed[seeds[0]].reset_index(drop=True)
    if any(len(per_seed[s]) != len(first) for s in seeds):
        raise ValueError(f"the seeds' claims tables differ in length: {[len(per_seed[s]) for s in seeds]}")
    verdicts, measured = [], []
    for i, row in enumerate(first.to_dict("records")):
        outcomes = {s: str(per_seed[s]["verdict"].iloc[i]) for s in seeds}
        if len(set(outcomes.values())) == 1:
            verdicts.append(row["verdict"])
            measured.append(f"{row['measured']} [same verdict at seeds {', '.join(map(str, seeds))}]")
        else:
            verdicts.append("inconclusive")
            listing = "; ".join(f"seed {s}: {v}" for s, v in outcomes.items())
            measured.append(f"inconclusive ({UNSTABLE}: {listing}); seed {seeds[0]}: {row['measured']}")
    out = first.assign(verdict=verdicts, measured=measured)
    if "nulls" in first:  # each seed is judged with its own nulls: one outcome when they agree, else every seed's
        out["nulls"] = [per_seed[seeds[0]]["nulls"].iloc[i] if len({str(per_seed[s]["nulls"].iloc[i]) for s in seeds})
                        == 1 else "; ".join(f"seed {s}: {per_seed[s]['nulls'].iloc[i]}" for s in seeds)
                        for i in range(len(first))]
    assert set(out["verdict"]) <= set(VERDICTS)
    return out


def verify(seeds: tuple[int, ...] = SEEDS, profile: str = "paper", experiment: str = "all", nulls: int = NULLS,
           out: Path = Path("results"), store: Path | None = None, n_jobs: int | None = None) -> dict[str, Any]:
    """Run every seed (resuming), judge each with its nulls, combine across seeds, write ``out``'s claims and report."""
    store = store or verify_store(out)
    dirs = {s: run_seed(store, profile, s, experiment, n_jobs) for s in seeds}
    judged = {s: rejudge(d, experiment, profile, report=False, nulls=nulls) for s, d in dirs.items()}
    first = dirs[seeds[0]]
    (out / "tables").mkdir(parents=True, exist_ok=True)
    combined = {}
    for exp_id in judged[seeds[0]]:
        combined[exp_id] = combine_seeds({s: judged[s][exp_id] for s in seeds})
        write_csv(combined[exp_id], out / "tables" / f"{exp_id}.claims.csv")
    cfg = composed_config(out, experiment, profile)
    specs = experiments_to_run(cfg, CONF_DIR)
    frames = []
    for spec in specs:
        shutil.copyfile(first / "tables" / f"{spec['id']}.csv", out / "tables" / f"{spec['id']}.csv")
        frames.append(pd.read_csv(out / "tables" / f"{spec['id']}.csv"))
        figure = first / "figures" / f"{spec['id']}.png"
        if figure.exists():
            (out / "figures").mkdir(exist_ok=True)
            shutil.copyfile(figure, out / "figures" / figure.name)
    if (cfg.get("experiment") or {}).get("report"):
        listed = ", ".join(map(str, seeds))
        write_report(specs, frames, {**cfg, "seed": listed,
                                     "regenerated_by": f"make verify (seeds {listed}, {nulls} nulls per rule)"})
    return {"seeds": seeds, "store": store, "claims": combined}


def pooled(store: Path, profile: str, seeds: tuple[int, ...], exp_id: str) -> pd.DataFrame:
    """The trial rows of ``exp_id`` at every seed of ``seeds``, one table, trials renumbered seed * BLOCK + trial."""
    frames = [pd.read_csv(seed_dir(store, profile, s) / "tables" / f"{exp_id}.csv") for s in seeds]
    return pd.concat([f.assign(trial=f["seed"] * BLOCK + f["trial"]) for f in frames], ignore_index=True)


def look_seeds(look: int, per_look: int) -> tuple[int, ...]:
    """The master seeds pooled at look ``look`` (1-based): ``per_look`` new seeds a look from ``FIRST_NEW_SEED``."""
    return tuple(range(FIRST_NEW_SEED, FIRST_NEW_SEED + look * per_look))


def seeds_per_look(trials_per_seed: int) -> int:
    """New seeds a look needs for the smallest registered first batch."""
    batch = min(int(c["first_batch"]) for c in load()["claims"])
    return max(1, -(-batch // trials_per_seed))


def _sequential_ids() -> set[str]:
    return {c["id"] for c in load()["claims"] if (c.get("rule") or {}).get("sequential")}


def stopped(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The first decided look of every claim with a sequential rule, from the looks' records (claim id -> record)."""
    sequential, out = _sequential_ids(), {}
    for r in records:
        if r["id"] in sequential and r["verdict"] in DECIDED and r["id"] not in out:
            out[str(r["id"])] = r
    return out


def frozen_claims(claims: pd.DataFrame, ids: list[str], frozen: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """``claims`` with each frozen claim's verdict from its stopping look (``measured`` says which look)."""
    verdicts = [str(frozen[i]["verdict"]) if i in frozen else str(v) for i, v in zip(ids, claims["verdict"],
                                                                                      strict=True)]
    stops = [f"frozen at look {frozen[i]['look']} after {frozen[i]['trials']} trials; " if i in frozen else ""
             for i in ids]
    return claims.assign(verdict=pd.Series(verdicts, index=claims.index, dtype=object),
                         measured=[s + str(m) for s, m in zip(stops, claims["measured"], strict=True)])


def _look(specs: list[dict[str, Any]], store: Path, profile: str, seeds: tuple[int, ...], look: int, last: bool,
          frozen: dict[str, dict[str, Any]], nulls: int, n_jobs: int | None) -> tuple[list[dict[str, Any]],
                                                                                    dict[str, pd.DataFrame]]:
    """One look: run the seeds of every experiment with a claim still open, judge the pooled tables, gate them."""
    records, judged = [], {}
    for spec in specs:
        ids = [c["id"] for c in load()["claims"] if c["experiment"] == spec["id"]]
        use = seeds
        if ids and all(i in frozen for i in ids):  # every claim stopped: no further batches for this experiment
            if not last:
                continue
            use = seeds[:len(seeds) // look * max(int(frozen[i]["look"]) for i in ids)]  # its stopping look's seeds
        for s in use:
            run_seed(store, profile, s, spec["id"], n_jobs)
        table = pooled(store, profile, use, spec["id"])
        claims = judge(spec, table, nulls if last else 0)
        if claims is None:
            continue
        claims = gate(claims, table, spec["id"])
        ids = [f"{spec['id']}#{i}" for i in range(len(claims))]
        records += [{"look": look, "id": i, "verdict": v, "trials": int(table["trial"].nunique())}
                    for i, v in zip(ids, claims["verdict"], strict=True)]
        judged[spec["id"]] = frozen_claims(claims, ids, frozen)
        judged[spec["id"]].attrs["table"] = table
    return records, judged


def verify_registered(profile: str = "paper", experiment: str = "all", nulls: int = NULLS,
                      out: Path = Path("results"), store: Path | None = None, n_jobs: int | None = None,
                      trials_per_seed: int = 5) -> dict[str, pd.DataFrame]:
    """``make verify`` under the pre-registration: pooled new seeds in looks, verdicts gated, decided claims frozen."""
    store = store or verify_store(out)
    looks = int(load().get("looks", 1))
    per_look = seeds_per_look(trials_per_seed)
    record = store / profile / "looks.csv"
    records: list[dict[str, Any]] = ([{str(k): v for k, v in r.items()} for r in
                                      pd.read_csv(record, keep_default_na=False).to_dict("records")]
                                     if record.exists() else [])
    done = {int(r["look"]) for r in records}
    cfg = composed_config(out, experiment, profile)
    specs = experiments_to_run(cfg, CONF_DIR)
    final: dict[str, pd.DataFrame] = {}
    for look in range(1, looks + 1):
        last = look == looks
        if look in done and not last:
            continue  # a resumed run: this look's verdicts are recorded
        new, final = _look(specs, store, profile, look_seeds(look, per_look), look, last, stopped(records), nulls,
                           n_jobs)
        records = [r for r in records if int(r["look"]) != look] + new
        record.parent.mkdir(parents=True, exist_ok=True)
        write_csv(pd.DataFrame(records, columns=["look", "id", "verdict", "trials"]), record)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for exp_id, claims in final.items():
        write_csv(claims.attrs["table"], out / "tables" / f"{exp_id}.csv")
        write_csv(claims, out / "tables" / f"{exp_id}.claims.csv")
    if (cfg.get("experiment") or {}).get("report"):
        frames = [pd.read_csv(out / "tables" / f"{s['id']}.csv") for s in specs]
        write_report(specs, frames, {**cfg, "seed": ", ".join(map(str, look_seeds(looks, per_look))),
                                     "regenerated_by": f"make verify (pre-registered: {looks} looks, "
                                                       f"{per_look} new seeds a look, {nulls} nulls per rule)"})
    return final


def main(argv: list[str] | None = None) -> None:
    """The command line of ``make verify``."""
    parser = argparse.ArgumentParser(prog="python -m dpstream.harness.verify", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--experiment", default="all")
    parser.add_argument("--nulls", type=int, default=NULLS)
    parser.add_argument("--out", type=Path, default=Path("results"))
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--registered", action="store_true",
                        help="the run under the pre-registration: new seeds from 3 in looks, pooled, gated")
    parser.add_argument("--trials-per-seed", type=int, default=5)
    parser.add_argument("--status", action="store_true",
                        help="print the trials stored and still to run, per seed and experiment; run nothing")
    args = parser.parse_args(argv)
    if args.status:
        store = verify_store(args.out)
        table = progress(store, args.profile, tuple(args.seeds), args.experiment)
        todo = table[table["stored"] < table["trials"]]
        print(todo.to_string(index=False) if len(todo) else "every trial is stored")
        for seed in args.seeds:
            part = table[table["seed"] == seed]
            print(f"seed {seed}: {int(part['stored'].sum())} of {int(part['trials'].sum())} trials stored in "
                  f"{seed_dir(store, args.profile, seed)}; {int((part['stored'] < part['trials']).sum())} "
                  "experiments to run")
        return
    if args.registered:
        final = verify_registered(args.profile, args.experiment, args.nulls, args.out, n_jobs=args.n_jobs,
                                  trials_per_seed=args.trials_per_seed)
        claims = pd.concat(final.values(), ignore_index=True)
        print(f"verify (pre-registered): {len(final)} experiments; "
              + ", ".join(f"{n} {v}" for v, n in claims["verdict"].value_counts().items())
              + f"; claims and report in {args.out}")
        return
    result = verify(tuple(args.seeds), args.profile, args.experiment, args.nulls, args.out, n_jobs=args.n_jobs)
    claims = pd.concat(result["claims"].values(), ignore_index=True)
    unstable = int(claims["measured"].str.startswith(f"inconclusive ({UNSTABLE}").sum())
    print(f"verify: seeds {result['seeds']}, store {result['store']}: "
          + ", ".join(f"{n} {v}" for v, n in claims["verdict"].value_counts().items())
          + f"; {unstable} unstable across seeds; claims and report in {args.out}")


if __name__ == "__main__":
    main()
