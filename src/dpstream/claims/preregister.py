"""``make preregister``: regenerate ``results/preregistration.yaml`` against the current claims code, in one command.

The declared fields of every entry (kind, quote, rule family and parameters, smallest effect and its source, alpha,
pilot) are kept; what follows from the code is recomputed, claim by its declared ``id`` (``<experiment>#<index>``):

- ``budget`` and ``first_batch``: the registered budget, capped where ``CAPS`` says so and why (``budget_cap``);
- ``rule_hash``: the decision code and parameters (``registration.rule_hash``).

The file's bytes depend on nothing a trial writes: the fields measured on the committed history tables (master seed 0)
are frozen in the file and carried over verbatim, since ``make verify-registered`` replaces those tables with the
pooled fresh trials and a changed byte would turn every fresh trial into history. They are recomputed only with
``--from-tables``, a step for before the first fresh trial:

- ``claim``: the text the experiment's claims function gives at that index on the history table (display text);
- ``rule.sequential``: true when the claims function gives the claim its per-trial evidence
  (``dpstream.claims.decide``), so ``make verify-registered`` decides it at its planned looks; else it is a
  fixed-sample rule judged once, at its budget;
- ``budget_estimate``: the hours the run takes on 2 cores (``estimate``), from the budgets and the per-trial wall time
  measured in the history tables.

Usage: ``python -m dpstream.claims.preregister [--check] [--from-tables]`` (``--check`` writes nothing and exits 1
when the committed file differs from what would be written).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from dpstream.claims.registration import REGISTRATION, claims_function, rule_hash

TABLES = REGISTRATION.parent / "tables"
HEADER = ("# The pre-registration of every claim dpstream checks (dpstream.claims.registration). Committed before any "
          "trial of seeds 3+;\n# editing it changes its hash, and trials run under another hash decide nothing. "
          "Regenerate with `make preregister`.\n")
CORES = 2
"""Cores of the machine the budget estimate is for (the CI machine)."""
HOURS_CAP = 12.0
"""The wall time the whole ``make verify-registered`` may take on ``CORES`` cores (issue 35)."""
_LAZY = ("its power calculation asks {n} trials (pilot sd 0.51 of the paired ln ARE difference against the 10% that "
         "matters), and the whole run at the uncapped budgets takes ~18 h on 2 cores, above the 12 h cap")
CAPS: dict[str, tuple[int, str]] = {
    **{f"fig3b#{i}": (60, _LAZY.format(n=171) + ": capped at 60 trials (12 seeds, ~1 h), power ~0.4 at a 10% "
                      "difference and 0.8 at ln 0.17 (~19%); undecided at 60, it says the trials it needs")
       for i in range(1, 5)},
    **{f"fig3b_wordfreq#{i}": (30, _LAZY.format(n=171) + "; a robustness column (the word-frequency stream, fixed "
                               "counts), not the paper's setting: capped at 30 trials (6 seeds, ~0.4 h)")
       for i in range(1, 5)},
    **{f"fig3d#{i}": (66, _LAZY.format(n=171) + "; Fig. 3(b)'s sentence checked again on the skew panel: capped at "
                      "fig3d's own largest budget, 66 trials, so it adds no seed to the experiment")
       for i in range(2, 6)},
    **{f"svt_c#{i}": (10, "a default budget (no pilot) for a check whose every trial is already a summary over many "
                      "runs (one trial a seed, ~15 min each): 30 seeds take 3.7 h of the 12 h cap; capped at 10 "
                      "trials (10 seeds, ~1.2 h)") for i in range(5)},
}
"""Claims whose budget is capped (id -> (trials, why)), declared before any trial of seeds 3+: without the caps the run
takes ~18 h on 2 cores (``estimate``), above ``HOURS_CAP``."""


def _claims_of(experiment: str) -> list[Any]:
    """The claims function's output on the committed history table of ``experiment`` (no nulls)."""
    from dpstream.registry import CONF_DIR, import_object, load_option

    spec = load_option(CONF_DIR, "experiment", experiment)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(import_object(claims_function(experiment))(pd.read_csv(TABLES / f"{experiment}.csv"), spec))


def _history(experiment: str) -> pd.DataFrame:
    cols = {"key", "trial", "trial_wall_s"}
    return pd.read_csv(TABLES / f"{experiment}.csv", usecols=lambda c: c in cols)


def estimate(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Hours of ``make verify-registered`` on ``CORES`` cores, from the budgets and the committed history tables.

    An experiment needs the master seeds for its largest budget (the trials a seed adds are those of its history
    seed); a seed costs the wall time of its history seed's trials. A trial two experiments share (one store key,
    e.g. the panels of Fig. 4) is computed once, for the experiment needing the most seeds.
    """
    budget: dict[str, int] = {}
    for e in entries:
        budget[e["experiment"]] = max(budget.get(e["experiment"], 0), int(e["budget"]))
    seeds, tables, rows = {}, {}, {}
    for exp, b in budget.items():
        tables[exp] = _history(exp)
        per_seed = max(int(tables[exp]["trial"].nunique()), 1)
        seeds[exp] = math.ceil(b / per_seed)
    cost: dict[str, tuple[int, float, str]] = {}  # store key -> (seeds, seconds a seed, experiment)
    for exp, df in tables.items():
        for key, wall in zip(df["key"], df["trial_wall_s"], strict=True):
            if key not in cost or seeds[exp] > cost[key][0]:
                cost[key] = (seeds[exp], float(wall), exp)
    for exp in sorted(budget):
        mine = [(n, w) for n, w, e in cost.values() if e == exp]
        rows[exp] = {"budget": budget[exp], "seeds": seeds[exp],
                     "hours": round(sum(n * w for n, w in mine) / CORES / 3600, 3)}
    total = round(sum(r["hours"] for r in rows.values()), 2)
    return {"hours_on_2_cores": total, "cap_hours": HOURS_CAP, "within_cap": total <= HOURS_CAP,
            "source": "per experiment: the master seeds its largest registered budget needs x the wall time of the "
                      "trials of its committed history seed (master seed 0, measured on the shared 2-core machine), "
                      "a trial shared by experiments counted once, over 2 cores; an upper bound where claims stop "
                      "early", "per_experiment": rows}


def regenerate(path: Path = REGISTRATION, from_tables: bool = False) -> dict[str, Any]:
    """The registration with every code-derived field recomputed (see the module docstring).

    The fields measured on the history tables (claim texts, sequential flags, the budget estimate) are carried over
    from ``path`` verbatim unless ``from_tables``.
    """
    from dpstream.claims.core import Claim

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    found: dict[str, list[Any]] = {}
    for entry in data["claims"]:
        exp, index = entry["experiment"], int(entry["id"].rsplit("#", 1)[1])
        if from_tables:
            if exp not in found:
                found[exp] = _claims_of(exp)
            claim = found[exp][index] if index < len(found[exp]) else None
            if claim is not None:
                entry["claim"] = claim.claim if isinstance(claim, Claim) else str(claim["claim"])
            entry["rule"] = {**entry["rule"], "sequential": isinstance(claim, Claim) and claim.evidence is not None}
        if entry["id"] in CAPS:
            cap, why = CAPS[entry["id"]]
            uncapped = int((entry.get("budget_cap") or {}).get("uncapped", entry["budget"]))
            entry["budget_cap"] = {"cap": cap, "uncapped": uncapped, "reason": why}
            entry["budget"], entry["first_batch"] = cap, cap // int(data.get("looks", 3))
        entry["rule_hash"] = rule_hash(claims_function(exp), entry)
    if from_tables or "budget_estimate" not in data:
        data["budget_estimate"] = estimate(data["claims"])
    stale = _stale_estimate(data)
    if stale:
        raise ValueError(f"{path}: the frozen budget estimate is for other budgets ({stale}); re-measure it with "
                         "--from-tables, which turns every trial run under the old file into history")
    return data


def _stale_estimate(data: dict[str, Any]) -> str:
    """Experiments whose largest registered budget is not the one the frozen estimate was computed for."""
    budget: dict[str, int] = {}
    for e in data["claims"]:
        budget[e["experiment"]] = max(budget.get(e["experiment"], 0), int(e["budget"]))
    rows = data["budget_estimate"]["per_experiment"]
    return ", ".join(f"{exp}: {b} registered, {rows.get(exp, {}).get('budget')} estimated"
                     for exp, b in sorted(budget.items()) if rows.get(exp, {}).get("budget") != b)


def dump(data: dict[str, Any]) -> str:
    """The file's text: the header comment and the YAML."""
    return HEADER + yaml.safe_dump(data, sort_keys=False, width=120, allow_unicode=True)


def main(argv: list[str] | None = None) -> None:
    """The command line of ``make preregister``."""
    parser = argparse.ArgumentParser(prog="python -m dpstream.claims.preregister", description=__doc__.split("\n")[0])
    parser.add_argument("--path", type=Path, default=REGISTRATION)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is not up to date")
    parser.add_argument("--from-tables", action="store_true",
                        help="re-measure claim texts, sequential flags and the budget estimate on the history tables "
                             "(before the first fresh trial only: it changes the file's hash)")
    args = parser.parse_args(argv)
    text = dump(regenerate(args.path, args.from_tables))
    est = yaml.safe_load(text)["budget_estimate"]
    if args.check:
        same = args.path.read_text(encoding="utf-8") == text
        print(f"{args.path}: {'up to date' if same else 'stale: run make preregister'}")
        sys.exit(0 if same else 1)
    args.path.write_text(text, encoding="utf-8")
    print(f"{args.path}: {len(yaml.safe_load(text)['claims'])} claims; make verify-registered takes about "
          f"{est['hours_on_2_cores']} h on 2 cores (cap {est['cap_hours']} h)")


if __name__ == "__main__":
    main()
