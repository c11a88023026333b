"""A tiny trial family for harness tests: seeded draws, optionally slow, optionally uncertified."""

import time

import numpy as np

from dpstream.trials import row_columns


def run_trial(params, seed):
    rng = np.random.default_rng(seed)
    time.sleep(params["mechanism"].get("sleep", 0.0))
    out = {"value": float(rng.normal()) + params["epsilon"], "elapsed_s": 0.0}
    # the labels a mechanism gives its rows (``privacy.labels``): a fake private mechanism, uncertified on request
    return {**out, "private": True, "certified": not params["mechanism"].get("uncertified")}


def read_trial(params, seed):
    """Reports the content of the file input ``data.path`` (to test that a replaced file is recomputed)."""
    with open(params["data"]["path"]) as fh:
        return {"content": fh.read()}


def claims(df, spec):
    """A claim decided by a rule on the rows (for the aggregate-summary test): the mean value is finite."""
    verdict = "confirmed" if df["value"].notna().all() else "not confirmed"
    return [{"claim": "values are finite", "rule": "all rows have a value", "measured": str(len(df)),
             "verdict": verdict}]


@row_columns("value", "elapsed_s", "private", "certified")
def declared_trial(params, seed):
    """``run_trial`` with its row columns declared (tests of the row schema in the store key)."""
    return run_trial(params, seed)


def stopped_while_aborting(params, seed):
    """Ctrl-C whose unwinding raises a second error, as aborting a worker pool can."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        raise RuntimeError("the pool broke while aborting")  # noqa: B904 (the stop stays in __context__)


def sequential_claims(df, spec):
    """Four claims on pooled arms A, B, C, D (``test_sequential_verify``), three with per-trial evidence.

    0: A below B (a large effect); 1: C below B (no effect: refuted against its smallest effect); 2: a fixed-sample
    rule without evidence; 3: D below B, an effect of a quarter of the smallest that matters (cannot decide).
    """
    from dpstream.claims.core import Claim
    from dpstream.claims.decide import Evidence

    arms = df.pivot_table(index="trial", columns="arm", values="value")
    finite = bool(df["value"].notna().all())
    return [Claim("A is below B", "paired", "", "inconclusive", Evidence.of("location", {"A-B": arms.A - arms.B})),
            Claim("C is below B", "paired", "", "inconclusive", Evidence.of("location", {"C-B": arms.C - arms.B})),
            Claim("values are finite", "all rows", str(len(df)), "confirmed" if finite else "not confirmed"),
            Claim("D is below B", "paired", "", "inconclusive",
                  Evidence.of("location", {"D-B": arms.D - arms.B}))]
