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

``--registered`` is the run under the pre-registration (``dpstream.claims.registration``), experiment by experiment
(``registered_experiment``), cheapest first by the registration's frozen budget estimate (``cheapest_first``: a run
stopped part-way has finished whole experiments): each look adds new master seeds from ``FIRST_NEW_SEED`` up (enough
for the smallest registered first batch of the experiment's claims); the trials of all its new seeds so far are
pooled into one table (trial ``t`` of seed ``s`` becomes block ``s * 1000 + t``: independent draws, each still
pairing its arms). A claim
registered as sequential (``rule.sequential: true``) whose claims function gives its per-trial evidence
(``dpstream.claims.decide``) is decided at its planned looks (k x its first batch) with Lan-DeMets spending, and frozen
at its own stopping look while its experiment keeps running for other claims; any other rule is a fixed-sample rule,
judged once at its budget. Every verdict passes ``registration.gate`` (registered hash, clean commit, seeds >= 3,
unchanged rule). ``<store>/<profile>/looks.csv`` records every examined claim at every look, so a resumed run starts
at the first unrecorded look; an experiment whose claims are all final gets no further batches. Every record carries
the hash of the registration it was written under (``prereg_hash``); a run under another registration refuses the
file (``_read_records``: one line naming both hashes, exit 2), since its looks were decided by other rules.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from dpstream.claims.core import VERDICTS, Claim
from dpstream.claims.decide import Evidence, decide
from dpstream.claims.registration import (
    FIRST_NEW_SEED,
    REGISTRATION,
    gate,
    load,
    position_ids,
    registration_hash,
    statistics_registered,
)
from dpstream.claims.sequential import MIN_BATCH
from dpstream.errors import InputError, one_line
from dpstream.harness.experiments import composed_config, experiments_to_run, judge
from dpstream.harness.rejudge import rejudge
from dpstream.harness.report import write_report
from dpstream.harness.runner import STORE_NAME, plan, run, store_key, trial_function, write_csv
from dpstream.harness.store import ResultsStore
from dpstream.registry import CONF_DIR, import_object

SEEDS = (0, 1, 2)
DECIDED = ("confirmed", "not confirmed")
BLOCK = 1000
"""Pooled tables number trial t of master seed s as block s * BLOCK + t."""
NULLS = 200
UNSTABLE = "unstable across seeds"
SeedRun = Callable[[Path, str, int, str, int | None], Path]
"""Writes the table of one experiment at one master seed into its seed folder (``run_seed``); returns the folder."""
RECORD = ("look", "id", "verdict", "trials", "final", "measured", "prereg_hash")
"""Columns of ``looks.csv``: one row per claim examined at a look of the pre-registered run, and the hash of the
registration it was examined under."""


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


def seed_span(look: int, per_look: int, path: Path = REGISTRATION) -> str:
    """A claim's seeds in its provenance: those pooled at its own look (``look_seeds``), and the registration hash."""
    seeds = look_seeds(look, per_look)
    return f"seeds {seeds[0]}-{seeds[-1]}, registration {registration_hash(path)}"


def seeds_per_look(entries: list[dict[str, Any]], trials_per_seed: int) -> int:
    """New seeds a look adds to an experiment: enough for the smallest registered first batch of its claims."""
    batch = min((int(c["first_batch"]) for c in entries), default=MIN_BATCH)
    return max(1, -(-batch // trials_per_seed))


def sequential(entry: dict[str, Any]) -> bool:
    """Whether the registration decides ``entry`` by its sequential rule (``rule.sequential``) at every planned look."""
    return bool((entry.get("rule") or {}).get("sequential"))


def schedule(entry: dict[str, Any], looks: int, has_evidence: bool) -> tuple[int, ...]:
    """Pooled trial counts at which a claim is examined.

    A sequential rule with its per-trial evidence: its planned looks, k x its first batch (k = 1..looks), the last at
    its budget. Any other rule is a fixed-sample rule: examined once, when the pooled trials reach its budget.
    """
    budget = int(entry["budget"])
    if not (sequential(entry) and has_evidence):
        return (budget,)
    first = int(entry["first_batch"])
    return tuple(sorted({min(k * first, budget) for k in range(1, looks + 1)} | {budget}))


def sequential_rule(entry: dict[str, Any], evidence: Evidence, looks: int) -> str:
    """The rule that decides a registered sequential claim (``decide`` on its per-trial ``evidence``), in words.

    Everything is read from the claim's registration ``entry``: the statistic (``rule.parameters``), the smallest
    effect (the margin of the refutation side), alpha, the budget and the planned looks (``schedule``); the points and
    the test (a sign test for a ``quantile`` family, else t tests) from its evidence. This, not the text a claims
    function prints for its fixed-sample rule, is what a sequential claim's verdict follows from.
    """
    params = (entry.get("rule") or {}).get("parameters") or {}
    effect = entry.get("smallest_effect") or {}
    delta, alpha = float(effect.get("value", 0.5)), float(entry["alpha"])
    if evidence.family == "trend":
        statistic = f"the least-squares slope of {params.get('y', 'y')} on ln {params.get('x', 'x')}"
    else:
        statistic = str(params.get("statistic", "the claim's statistic"))
    many = len(evidence.points) > 1
    where = f", at each of {len(evidence.points)} points ({', '.join(evidence.labels)})" if many else ""
    unit = str(effect.get("unit", "the registered unit"))
    margin = f"{delta:g} trial-to-trial standard deviations of d" if unit.startswith("standardised") else (
        f"{delta:g}, {unit}")
    if evidence.family == "quantile":
        test = ("two one-sided sign tests of the median of d (exact group-sequential boundaries)", "the median of d")
    else:
        test = ("two one-sided group-sequential t tests on the mean of d", "the mean of d")
    at = ", ".join(map(str, schedule(entry, looks, True)))
    every, some = (" at every point", " at some point, Holm over the points") if many else ("", "")
    return (f"registered sequential rule (rule hash {entry.get('rule_hash', '?')}): per trial, d = {statistic}, "
            f"signed so that the claim says d < 0{where}; over the pooled trials of the new master seeds, {test[0]}, "
            f"Lan-DeMets O'Brien-Fleming spending at alpha {alpha:g} a side: confirmed when \"{test[1]} >= 0\" is "
            f"rejected{every}; not confirmed when \"{test[1]} <= -{delta:g}\" (the smallest effect that matters: "
            f"{margin}) is rejected{some}; else inconclusive. Looks at {at} pooled trials (budget "
            f"{int(entry['budget'])}); zero spread over the trials: the value decides against -{delta:g}")


def _read_records(path: Path, registration: Path = REGISTRATION) -> list[dict[str, Any]]:
    """The records of ``looks.csv`` at ``path``, all written under ``registration`` (its ``registration_hash``).

    Raises ``InputError`` naming both hashes when a record was written under another registration: its looks were
    decided by other rules and may not be resumed (move the file away to start the run afresh). A file without the
    ``prereg_hash`` column was written before records carried it, by runs under the registration frozen then and
    still current; it is upgraded once: stamped with the current hash and rewritten, so that a later change of the
    registration finds it stamped.
    """
    if not path.exists():
        return []
    current = registration_hash(registration)
    frame = pd.read_csv(path, keep_default_na=False, dtype={"prereg_hash": str})
    if "prereg_hash" not in frame.columns:
        frame["prereg_hash"] = current
        write_csv(frame[list(RECORD)], path)
    other = sorted(set(frame["prereg_hash"]) - {current})
    if other:
        raise InputError(f"{path}: looks recorded under registration {', '.join(other)}, but "
                         f"{registration} has hash {current}: move the file away to start the registered run afresh")
    return [{"look": int(r["look"]), "id": str(r["id"]), "verdict": str(r["verdict"]), "trials": int(r["trials"]),
             "final": str(r["final"]) == "True", "measured": str(r["measured"]), "prereg_hash": current}
            for r in frame.to_dict("records")]


def _examine(spec: dict[str, Any], table: pd.DataFrame, entries: list[dict[str, Any]], past: list[dict[str, Any]],
             look: int, looks: int, nulls: int, path: Path) -> list[dict[str, Any]]:
    """Records of the claims of ``spec`` due at this look (``schedule``), decided and gated; final when decided."""
    fn = import_object(spec["claims"])
    found = list(fn(table, spec))
    evidence = [c.evidence if isinstance(c, Claim) else None for c in found]
    n = int(table["trial"].nunique())
    due = {}
    for e in entries:
        prev = [r for r in past if r["id"] == e["id"]]
        row = claim_row(found, e["id"])
        plan_ = schedule(e, looks, row is not None and evidence[row] is not None)
        if not any(r["final"] for r in prev) and sum(c <= n for c in plan_) > len(prev):
            due[e["id"]] = (e, row, tuple(r["trials"] for r in prev))
    if not due:
        return []
    fixed = any(row is not None and evidence[row] is None for _, row, _ in due.values())
    judged = judge(spec, table, nulls if fixed else 0)
    assert judged is not None
    out = []
    for claim_id, (e, row, earlier) in due.items():
        if row is None:
            out.append({"look": look, "id": claim_id, "verdict": "inconclusive", "trials": n, "final": True,
                        "measured": "registered, but the claims function no longer states it"})
            continue
        ev = evidence[row]
        if ev is not None and sequential(e):
            decided = decide(ev, e, earlier)
            verdict, measured = decided.verdict, decided.measured
            if (why := statistics_registered()) and verdict in DECIDED:
                verdict, measured = "inconclusive", f"{measured} [sequential statistics not as registered: {why}]"
        else:
            verdict, measured = str(judged["verdict"].iloc[row]), str(judged["measured"].iloc[row])
        stated = found[row].claim if isinstance(found[row], Claim) else str(found[row]["claim"])
        gated = gate(pd.DataFrame({"id": [claim_id], "claim": [stated], "verdict": [verdict]}), table, spec["id"],
                     path, spec["claims"])
        verdict, note = str(gated["verdict"].iloc[0]), str(gated["gate"].iloc[0])
        final = verdict in DECIDED or n >= int(e["budget"])
        if final and verdict == "inconclusive" and ev is None:
            measured += (f"; inconclusive at its budget of {e['budget']} pooled trials (a fixed-sample rule without "
                         "per-trial evidence: no estimate of the trials a decision needs)")
        out.append({"look": look, "id": claim_id, "verdict": verdict, "trials": n, "final": final,
                    "measured": f"{measured} [{note}]" if note else measured})
    return out


def claim_row(found: list[Any], claim_id: str) -> int | None:
    """Index of the claim registered as ``claim_id`` (``<experiment>#<index>``) in a claims function's output.

    None when the function no longer gives that many claims.
    """
    index = int(claim_id.rsplit("#", 1)[1])
    return index if index < len(found) else None


def deciding_rules(spec: dict[str, Any], table: pd.DataFrame, claims: pd.DataFrame, entries: list[dict[str, Any]],
                   final: set[str], looks: int) -> list[str]:
    """Per row of ``claims`` (registered ids), the rule that decided it: ``sequential_rule`` or its ``rule`` column.

    A claim final (in ``final``) under its sequential rule with the per-trial evidence of the claims function on
    ``table`` was decided by ``decide`` (as ``_examine`` decides); any other keeps the claims function's text, the
    fixed-sample rule that decided it.
    """
    rules = [str(r) for r in claims["rule"]]
    if not any(sequential(e) for e in entries):
        return rules
    found = list(import_object(spec["claims"])(table, spec))
    registered_entries = {str(e["id"]): e for e in entries}
    for i, claim_id in enumerate(map(str, claims["id"])):
        e, row = registered_entries[claim_id], claim_row(found, claim_id)
        ev = found[row].evidence if row is not None and isinstance(found[row], Claim) else None
        if ev is not None and sequential(e) and claim_id in final:
            rules[i] = sequential_rule(e, ev, looks)
    return rules


def registered_experiment(spec: dict[str, Any], store: Path, profile: str, records: list[dict[str, Any]],
                          record: Path, nulls: int = NULLS, n_jobs: int | None = None,
                          path: Path = REGISTRATION, seed_run: SeedRun | None = None) -> pd.DataFrame | None:
    """One experiment under the pre-registration: looks of pooled new seeds until every registered claim is final.

    A look adds ``seeds_per_look`` new master seeds (the trials a seed adds are counted on the first new seed); the
    claims due at the pooled trial count are decided
    (``_examine``) and recorded in ``record`` (``looks.csv``, rewritten after every look, so an interrupted run
    resumes at its first unrecorded look and computes no stored trial again). A decided claim is frozen at its own
    stopping look even while the experiment keeps running for its other claims; an experiment whose claims are all
    final gets no further batch. Returns the registered claims judged on the last look's pooled trials (the rows of
    the claims function's output that carry a registered id, ``registration.claim_ids``; any further row decides
    nothing and is left out), each with its final verdict and the look that gave it (``provenance``: look, pooled
    trials, seeds, registration hash; empty for a claim not final) and, where its sequential rule decided it, that rule
    in ``rule`` (``sequential_rule``; the claims function's text states its fixed-sample rule); None for an experiment
    without registered claims (not run). ``seed_run`` writes a
    seed's table (default ``run_seed``, which runs the trials missing from its store; ``dpstream.harness.adopt``
    passes one that only reads the store).
    """
    seed_run = seed_run or run_seed
    registration = load(path)
    entries = [c for c in registration["claims"] if c["experiment"] == spec["id"]]
    if not entries:
        return None  # nothing registered: its trials could decide nothing (the stand-in maps, for one)
    looks = int(registration.get("looks", 1))
    seed_run(store, profile, FIRST_NEW_SEED, spec["id"], n_jobs)
    trials_per_seed = max(int(pooled(store, profile, (FIRST_NEW_SEED,), spec["id"])["trial"].nunique()), 1)
    per_look = seeds_per_look(entries, trials_per_seed)
    mine = [r for r in records if r["id"].rsplit("#", 1)[0] == spec["id"]]
    look = 0
    while True:
        look += 1
        seeds = look_seeds(look, per_look)
        finished = bool(entries) and all(any(r["id"] == e["id"] and r["final"] for r in mine) for e in entries)
        if not any(r["look"] == look for r in mine) and not finished:
            for s in seeds:
                seed_run(store, profile, s, spec["id"], n_jobs)
            new = [{**r, "prereg_hash": registration_hash(path)}
                   for r in _examine(spec, pooled(store, profile, seeds, spec["id"]), entries, mine, look, looks, nulls,
                                     path)]
            mine += new
            records += new
            record.parent.mkdir(parents=True, exist_ok=True)
            write_csv(pd.DataFrame(records, columns=list(RECORD)), record)
        if all(any(r["id"] == e["id"] and r["final"] for r in mine) for e in entries):
            break
        if look * per_look * trials_per_seed > 2 * max(int(e["budget"]) for e in entries) + trials_per_seed:
            raise RuntimeError(f"{spec['id']}: {look} looks without reaching the registered budgets: are trials "
                               "stored per seed?")
    last = max((r["look"] for r in mine), default=1)
    seeds = look_seeds(last, per_look)
    for s in seeds:
        seed_run(store, profile, s, spec["id"], n_jobs)
    table = pooled(store, profile, seeds, spec["id"])
    claims = judge(spec, table, nulls)
    if claims is None:
        return None
    # the ids by position in this registration (``judge`` gives those of the committed one)
    claims = gate(claims.assign(id=position_ids(spec["id"], len(claims), path)), table, spec["id"], path,
                  spec["claims"])
    # a row without a registered id was examined at no look (audit_svt's claims function gives one claim per audit
    # row: on the pooled table it restates the registered claims once per further seed): it is not a registered claim
    claims = claims[claims["id"].isin({str(e["id"]) for e in entries})].reset_index(drop=True)
    finals = {r["id"]: r for r in mine if r["final"]}
    rules = deciding_rules(spec, table, claims, entries, set(finals), looks)
    verdicts, measured, provenance = [], [], []
    for claim_id, verdict, m in zip(claims["id"], claims["verdict"], claims["measured"], strict=True):
        r = finals.get(str(claim_id))
        verdicts.append(r["verdict"] if r else verdict)
        measured.append(f"look {r['look']} of the pre-registered run, {r['trials']} pooled trials: {r['measured']}"
                        if r else m)
        provenance.append(f"registered: look {r['look']}, {r['trials']} pooled trials, "
                          f"{seed_span(int(r['look']), per_look, path)}" if r else "")
    claims = claims.assign(verdict=pd.Series(verdicts, index=claims.index, dtype=object), rule=rules,
                           measured=measured, provenance=provenance)
    claims.attrs["table"] = table
    return claims


def cheapest_first(specs: list[dict[str, Any]], registration: dict[str, Any],
                   keys: dict[str, set[str]] | None = None) -> list[dict[str, Any]]:
    """``specs`` ordered by the registration's frozen estimate of their hours, cheapest first (ties by id).

    A run stopped part-way has then completed whole experiments, as many as its time allowed. The estimate counts a
    trial two experiments share (one store key, ``keys``: experiment -> its planned store keys) once, for one of
    them; an experiment sharing trials is placed by the dearest experiment it shares them with, since whichever runs
    first computes them. An experiment the estimate does not list (nothing registered) comes last.
    """
    rows = (registration.get("budget_estimate") or {}).get("per_experiment", {})
    hours = {k: float(v["hours"]) for k, v in rows.items()}
    keys = keys or {}

    def cost(exp: str) -> float:
        own = hours.get(exp, float("inf"))
        shared = [hours.get(o, float("inf")) for o in keys if o != exp and keys[o] & keys.get(exp, set())]
        return max([own, *shared])

    return sorted(specs, key=lambda s: (cost(s["id"]), hours.get(s["id"], float("inf")), s["id"]))


def planned_keys(store: Path, profile: str, experiment: str = "all") -> dict[str, set[str]]:
    """Per experiment, the store keys of its trials at the first new master seed (computing nothing)."""
    planned = plan(seed_config(store, profile, FIRST_NEW_SEED, experiment), CONF_DIR, [])
    return {spec["id"]: {store_key(p, trial_function(p, spec)) for p in all_params}
            for spec, all_params in planned.experiments}


def verify_registered(profile: str = "paper", experiment: str = "all", nulls: int = NULLS,
                      out: Path = Path("results"), store: Path | None = None, n_jobs: int | None = None,
                      path: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    """``make verify`` under the pre-registration: every experiment's looks (``registered_experiment``), the report."""
    store = store or verify_store(out)
    record = store / profile / "looks.csv"
    records = _read_records(record, path)
    cfg = composed_config(out, experiment, profile)
    specs = experiments_to_run(cfg, CONF_DIR)
    final: dict[str, pd.DataFrame] = {}
    for spec in cheapest_first(specs, load(path), planned_keys(store, profile, experiment)):
        claims = registered_experiment(spec, store, profile, records, record, nulls, n_jobs, path)
        if claims is not None:
            final[spec["id"]] = claims
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for exp_id, claims in final.items():
        write_csv(claims.attrs["table"], out / "tables" / f"{exp_id}.csv")
        write_csv(claims, out / "tables" / f"{exp_id}.claims.csv")
    if (cfg.get("experiment") or {}).get("report"):
        specs = [s for s in specs if s["id"] in final]
        frames = [pd.read_csv(out / "tables" / f"{s['id']}.csv") for s in specs]
        seeds = sorted({int(x) for c in final.values() for x in c.attrs["table"]["seed"].unique()})
        write_report(specs, frames, {**cfg, "seed": f"{seeds[0]}-{seeds[-1]}" if seeds else "none",
                                     "regenerated_by": f"make verify-registered (pooled new seeds, looks under "
                                                       f"{path.name}, {nulls} nulls per fixed-sample rule)"})
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
        try:
            final = verify_registered(args.profile, args.experiment, args.nulls, args.out, n_jobs=args.n_jobs)
        except InputError as exc:
            print(f"error: {one_line(exc)}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
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
