"""Bring the registered run's final experiments into the committed results: ``make adopt-registered``.

For every experiment whose registered claims are all final in ``<store>/<profile>/looks.csv``
(``registered.status``), the looks are replayed from the committed trial stores of the new master seeds alone: each
seed's table is read from its store (``stored_seed``: a trial missing from a store is an error, nothing is computed)
and ``verify.registered_experiment`` decides every look again under the registration. The replayed records must equal
the committed ones (look, id, verdict, pooled trials, final, measured), else nothing of the replay is written for
that experiment, its claims already in ``<out>/tables`` lose their registered provenance (``demote``: shown as not
decided by a registered look) and the command fails naming the difference. Then the pooled table goes to
``<out>/tables/<id>.csv``, its claims (one row per registered claim, each with its final look's verdict and its
``provenance``: look, pooled trials, seeds, registration hash; ``without_look``) to ``<id>.claims.csv``, its figure is
drawn from the pooled table, and the report and the pages' verdict blocks (``make readme``'s pages) are rewritten
from ``<out>/tables``, where every other experiment keeps its history table.

Usage: ``python -m dpstream.harness.adopt [--out results] [--profile paper] [--nulls 200] [--experiment ID ...]
[--since REF]`` (the report's changelog against the claims committed at REF, default HEAD).
The nulls must be the registered run's (``verify.NULLS``): a fixed-sample rule's verdict depends on them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from dpstream.claims.registration import REGISTRATION, load, registration_hash
from dpstream.errors import InputError, one_line
from dpstream.harness import registered
from dpstream.harness.experiments import composed_config
from dpstream.harness.report import write_report
from dpstream.harness.rule_notes import write_seed_verdicts
from dpstream.harness.runner import (
    STORE_NAME,
    config_columns,
    experiments_to_run,
    figure_formats,
    plan,
    store_key,
    stored_row,
    table,
    table_row,
    trial_function,
    write_csv,
)
from dpstream.harness.store import ResultsStore
from dpstream.harness.verify import NULLS, registered_experiment, seed_config, seed_dir, verify_store
from dpstream.registry import CONF_DIR, import_object

COMPARED = ("look", "id", "verdict", "trials", "final", "measured")


class Mismatch(InputError):
    """Re-judging the stores does not give the committed ``looks.csv``: nothing of that experiment is adopted."""


def stored_seed(store: Path, profile: str, seed: int, experiment: str, n_jobs: int | None = None) -> Path:
    """Write ``experiment``'s table at master seed ``seed`` from its committed store alone; return the seed folder.

    Built as the runner builds a table (stored row plus the config columns of the plan), but no trial is run: a key
    missing from the store raises ``InputError`` naming the seed and the count missing.
    """
    folder = seed_dir(store, profile, seed)
    path = folder / "store" / STORE_NAME
    if not path.exists():
        raise InputError(f"{path}: no trial store for master seed {seed}; copy the registered run's stores first")
    trials = ResultsStore(path)
    for spec, all_params in plan(seed_config(store, profile, seed, experiment), CONF_DIR, []).experiments:
        keys = [store_key(p, trial_function(p, spec)) for p in all_params]
        missing = sum(k not in trials for k in keys)
        if missing:
            raise InputError(f"{path}: {missing} of {len(keys)} trials of {spec['id']} are not stored; adopting runs "
                             "no trial (finish the registered run first)")
        rows = [table_row({**stored_row(trials, k), **config_columns(p)}) for k, p in zip(keys, all_params,
                                                                                           strict=True)]
        (folder / "tables").mkdir(parents=True, exist_ok=True)
        write_csv(table(rows, spec["id"]), folder / "tables" / f"{spec['id']}.csv")
    return folder


def replay(spec: dict[str, Any], store: Path, profile: str = "paper", nulls: int = NULLS,
           path: Path = REGISTRATION) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """Every look of ``spec`` decided again from the stores: (final claims table, the looks' records)."""
    done: set[tuple[int, str]] = set()

    def once(store_: Path, profile_: str, seed: int, experiment: str, n_jobs: int | None = None) -> Path:
        if (seed, experiment) not in done:  # a look pools every earlier seed again: read each store once
            stored_seed(store_, profile_, seed, experiment, n_jobs)
            done.add((seed, experiment))
        return seed_dir(store_, profile_, seed)

    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        claims = registered_experiment(spec, store, profile, records, Path(tmp) / "looks.csv", nulls, None, path,
                                       seed_run=once)
    return claims, pd.DataFrame(records, columns=list(COMPARED))


def differences(replayed: pd.DataFrame, committed: pd.DataFrame) -> list[str]:
    """Where the replayed records differ from the committed ones (same experiment), one line each; empty if equal."""
    def keyed(frame: pd.DataFrame) -> dict[tuple[int, str], dict[str, str]]:
        return {(int(r["look"]), str(r["id"])): {c: str(r[c]) for c in COMPARED}
                for r in frame.to_dict("records")}

    new, old = keyed(replayed), keyed(committed)
    out = [f"look {k[0]} {k[1]}: only in looks.csv" for k in sorted(old.keys() - new.keys())]
    out += [f"look {k[0]} {k[1]}: only in the replay" for k in sorted(new.keys() - old.keys())]
    for k in sorted(old.keys() & new.keys()):
        out += [f"look {k[0]} {k[1]} {c}: looks.csv {old[k][c]!r}, replay {new[k][c]!r}"[:400]
                for c in COMPARED if old[k][c] != new[k][c]]
    return out


def without_look(claims: pd.DataFrame, exp: str, path: Path = REGISTRATION) -> list[str]:
    """The registered ids of ``exp`` that do not have exactly one row of ``claims`` with a registered ``provenance``.

    Only registered ids need a look: a row without one (``registration.claim_ids``) is not a registered claim.
    """
    ids = [str(e["id"]) for e in load(path)["claims"] if e["experiment"] == exp]
    shown = [str(i) for i, p in zip(claims["id"], claims["provenance"], strict=True) if registered.REGISTERED.match(p)]
    return [i for i in ids if shown.count(i) != 1]


def draw(spec: dict[str, Any], df: pd.DataFrame, out: Path, profile: str) -> None:
    """The experiment's figure from its pooled table into ``<out>/figures`` (as the runner draws it)."""
    if not spec.get("plot"):
        return
    from dpstream.harness.layout import panel_title

    cfg = composed_config(out, spec["id"], profile)
    all_params = plan(cfg, CONF_DIR, []).experiments[0][1]
    (out / "figures").mkdir(parents=True, exist_ok=True)
    shown = {**spec, "title": panel_title(spec, all_params), "formats": figure_formats(cfg)}
    import_object(spec["plot"])(df, shown, out / "figures" / f"{spec['id']}.png")


def demote(out: Path, exp: str, why: str) -> None:
    """Relabel the claims of a refused experiment in ``<out>/tables``: their ``provenance`` no longer names a look.

    ``registered.labels`` then shows them as registered rows not decided by a registered look (or history), and
    ``make claims`` re-judges them through the gate: a report rendered after a refusal shows none of them as
    registered.
    """
    path = out / "tables" / f"{exp}.claims.csv"
    if path.exists():
        claims = pd.read_csv(path, keep_default_na=False)
        write_csv(claims.assign(provenance=f"{registered.REFUSED}: {why}"[:300]), path)


def rerender(out: Path, profile: str = "paper", regenerated_by: str = "make adopt-registered",
             changelog_ref: str = "HEAD") -> Path:
    """The report over every table of ``<out>/tables`` (adopted and history) and the pages' verdict blocks.

    The report's changelog lists the verdicts that differ from the claims tables committed at ``changelog_ref``.
    """
    from dpstream.harness.readme import PAGES, sync

    cfg = composed_config(out, "all", profile)
    specs = [s for s in experiments_to_run(cfg, CONF_DIR) if (out / "tables" / f"{s['id']}.csv").exists()]
    frames = [pd.read_csv(out / "tables" / f"{s['id']}.csv", low_memory=False) for s in specs]
    write_seed_verdicts(out / "tables")  # the rule notes' per-seed verdicts, judged once here, read by every render
    report = write_report(specs, frames, {**cfg, "regenerated_by": regenerated_by, "changelog_ref": changelog_ref})
    root = out.resolve().parent
    for page in PAGES:
        if (root / page).exists():
            text, _ = sync(root / page, out / "tables")
            (root / page).write_text(text)
    return report


def adopt(out: Path = Path("results"), profile: str = "paper", nulls: int = NULLS, store: Path | None = None,
          experiments: list[str] | None = None, path: Path = REGISTRATION, pages: bool = True,
          changelog_ref: str = "HEAD") -> dict[str, str]:
    """Adopt every final experiment (or those of ``experiments``): replay, check, write; return id -> outcome.

    An experiment whose replay differs from ``looks.csv`` gets nothing of the replay, its claims in ``<out>/tables``
    are relabelled (``demote``) and it is named on stderr; the others are adopted and the pages rewritten (a refused
    experiment shown as not registered), then ``Mismatch`` names every one refused.
    """
    store = store or verify_store(out)
    looks = registered.read_looks(store / profile / "looks.csv")
    state = registered.status(looks, path)
    final = [e for e in state.loc[state["state"] == "final", "experiment"] if not experiments or e in experiments]
    unknown = sorted(set(experiments or ()) - set(final))
    if unknown:
        raise InputError(f"not final in {store / profile / 'looks.csv'}: {', '.join(unknown)} (final: "
                         f"{', '.join(final) or 'none'})")
    specs = {s["id"]: s for s in experiments_to_run(composed_config(out, "all", profile), CONF_DIR)}
    (out / "tables").mkdir(parents=True, exist_ok=True)
    outcome, refused = {}, []
    for exp in final:
        claims, records = replay(specs[exp], store, profile, nulls, path)
        diff = differences(records, looks[looks["experiment"] == exp])
        if claims is None or diff:
            refused.append(f"{exp}: re-judging the stores does not give looks.csv ({len(diff)} differences; first: "
                           f"{diff[0] if diff else 'no claims'}): nothing adopted for it")
            print(refused[-1], file=sys.stderr, flush=True)
            demote(out, exp, refused[-1])
            continue
        rows = claims.attrs["table"]
        missing = without_look(claims, exp, path)
        if missing:
            refused.append(f"{exp}: registered claims without one row decided by a final look in the replay "
                           f"({', '.join(missing)}): nothing adopted for it")
            print(refused[-1], file=sys.stderr, flush=True)
            demote(out, exp, refused[-1])
            continue
        write_csv(rows, out / "tables" / f"{exp}.csv")
        write_csv(claims, out / "tables" / f"{exp}.claims.csv")
        draw(specs[exp], rows, out, profile)
        outcome[exp] = ", ".join(f"{n} {v}" for v, n in claims["verdict"].value_counts().items())
        print(f"adopted {exp}: {rows['trial'].nunique()} pooled trials; {outcome[exp]}", flush=True)
    if pages:
        rerender(out, profile, changelog_ref=changelog_ref)
    if refused:
        raise Mismatch(f"{len(refused)} of {len(final)} final experiments not adopted: " + "; ".join(refused))
    return outcome


def main(argv: list[str] | None = None) -> None:
    """The command line of ``make adopt-registered``."""
    parser = argparse.ArgumentParser(prog="python -m dpstream.harness.adopt", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results"))
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--nulls", type=int, default=NULLS)
    parser.add_argument("--experiment", nargs="*", default=None, help="only these final experiments")
    parser.add_argument("--since", default="HEAD", help="the report's changelog is against this commit's claims")
    args = parser.parse_args(argv)
    try:
        done = adopt(args.out, args.profile, args.nulls, experiments=args.experiment, changelog_ref=args.since)
    except InputError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    print(f"{len(done)} experiments adopted from the registered run (looks.csv reproduced from the stores); report "
          f"and pages rewritten in {args.out}; registration {registration_hash()} ({len(load()['claims'])} claims)")


if __name__ == "__main__":
    main()
