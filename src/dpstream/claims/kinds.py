"""What each checked claim is: a claim of a paper, a hypothesis of ours, or a check of the implementation (data).

A claim that follows from the construction (a rule that re-derives the noise calibration, a bound recomputed from the
paper's own formula, an auditor's self-test, a feasibility computation) checks the implementation; it is reported in
its own section and never counted in the paper tally. ``KINDS`` lists, per experiment, the claim texts (prefixes) that
are not paper claims, with the reason; everything else of a paper experiment is a paper claim. The headline counts each
paper sentence once (``headline``): the same sentence checked in several experiments is combined like the points of
one rule (any ``not confirmed`` refutes, any ``inconclusive`` leaves it undecided); a sentence is a claim's quoted
passage (``sentence``), so the checks of one sentence on several mechanisms or metric variants count once.
"""

from __future__ import annotations

import re

import pandas as pd

PAPER, OURS, IMPLEMENTATION = "paper claim", "own hypothesis", "implementation check"
KIND_WORDS = (PAPER, OURS, IMPLEMENTATION)

CALIBRATION = ("the rule re-derives the noise calibration (the noise scale was chosen from this formula), so it checks "
               "the code against its own design, not the paper")
THEORY = "a bound recomputed from the paper's own formula, no measurement"
AUDITOR = "a self-test of the privacy auditor (known-correct or known-broken mechanism), not a sentence of a paper"
UNCERTIFIED = "decided on NOT privacy-certified rows (scaled constants): says nothing about the certified algorithm"

_SVT_IMPL = {
    "ThresholdMonitor's error is flat in c": CALIBRATION + " (TM's noise does not involve c)",
    "Sparse's error grows ~ sqrt(c) log c": CALIBRATION + " (Sparse's noise scale is sqrt(c) ln(1/delta) / eps)",
    "AboveThreshold and Sparse with cutoff < c halt": "holds by construction (the cutoff stops the run)",
    "(alpha, beta)-accuracy": CALIBRATION + " (the noise is set so that theory_alpha holds)",
    "ThresholdMonitor's error grows with k*": CALIBRATION + " (TM's noise scale grows with k*)",
    "ThresholdMonitor's error follows alpha_TM(k*)": CALIBRATION,
    "Sparse's error does not depend on k*": "holds by construction (Sparse's noise does not involve k*)",
    "k < k* prunes heavy records": "holds by construction (the cap stops TM after k records)",
    "k > k* costs noise": CALIBRATION + " (TM's noise scale grows with the cap k)",
    "The accuracy guarantees hold for any (adaptive) query order": "holds by construction (iid noise)",
    "svt_kappa is NOT privacy-certified": "a label check of the rows",
    "[kappa": UNCERTIFIED + "; and " + CALIBRATION,
    "Sparse becomes worse than ThresholdMonitor(k*=": THEORY,
}
KINDS: dict[str, dict[str, tuple[str, str]]] = {
    **{e: {p: (IMPLEMENTATION, r) for p, r in _SVT_IMPL.items()}
       for e in ("svt_theory", "svt_c", "svt_kappa", "svt_kstar", "svt_kcap", "svt_order")},
    "shifting_hh": {
        "Thm 4.7": (IMPLEMENTATION, CALIBRATION + " (tau is the threshold the noise was calibrated for)"),
        "TME's error tau(k*) does not grow with m": (IMPLEMENTATION, CALIBRATION),
        "TME's error tau(k*) depends on k*": (IMPLEMENTATION, CALIBRATION),
        "Baseline (b)": (IMPLEMENTATION, CALIBRATION),
        "TME (k*=": (IMPLEMENTATION, THEORY),
    },
    "audit_svt": {"": (IMPLEMENTATION, AUDITOR)},
    "audit_power": {"": (IMPLEMENTATION, AUDITOR)},
    "qr_analyst_audit": {"": (IMPLEMENTATION, "an audit can refute privacy, never show it; the accounting is the "
                                              "paper's own formula")},
    "qr_theory": {"": (IMPLEMENTATION, THEORY)},
    "qr_crossover": {"": (IMPLEMENTATION, THEORY + "; the second is the feasibility of a run on this machine")},
    "qr_alg5": {
        "with the paper's constants": (IMPLEMENTATION, "cannot fail: with tau ~ 1.5e7 every answer comes from H_0 "
                                                       "whatever the data"),
        "Thm 5.7/5.8": (IMPLEMENTATION, "the accounting recomputes the paper's own formulas"),
        "Claim 5.3": (IMPLEMENTATION, "cannot fail on certified rows (their bound is vacuous, >= 1); decided on "
                                      "scaled rows only: " + UNCERTIFIED),
        "Claim 5.4": (IMPLEMENTATION, "cannot fail: with the paper's constants no round is bad, so Alg 5 never halts "
                                      "early"),
    },
    "qr_alg4": {"Alg 4 is (eps, 4 delta / 3)-DP": (IMPLEMENTATION, "the accounting recomputes the paper's formula")},
    "fig4d": {'"only the heaviest items are reported': (
        OURS, "the paper's explanation, read as the opposite direction of its literal sentence on the same rows: "
              "whenever the data decide, one of the two is confirmed and the other refuted, so it is not independent "
              "support of the paper (the literal sentence is the paper claim)")},
    "qr_error_vs_queries": {
        "independent Laplace error grows like sqrt(|Q|) log|Q|": (
            IMPLEMENTATION, CALIBRATION + " (the Laplace scale is laplace_answer_scale(n, eps, delta, |Q|), which "
                            "grows like sqrt(|Q|) log|Q| by construction; the rule tests the direction only)")},
    "beyond_hh": {"": (IMPLEMENTATION, "cannot fail: the threshold decides the output in both arms (an "
                                       "equivalence of the two arms' reports by design)")},
    **{e: {"": (OURS, "dpstream's own hypothesis, not a paper's sentence")} for e in ("beyond_memory", "beyond_eps")},
}


def kind_of(exp_id: str, claim: str) -> tuple[str, str]:
    """(kind, reason) of one claim of experiment ``exp_id``: the first matching prefix of ``KINDS``, else a paper claim.

    A claim of a paper experiment whose text says "(ours)" is our own hypothesis.
    """
    for prefix, (kind, why) in KINDS.get(exp_id, {}).items():
        if claim.startswith(prefix):
            return kind, why
    if "(ours)" in claim:
        return OURS, "dpstream's own hypothesis, not a paper's sentence"
    return PAPER, ""


def classify(exp_id: str, claims: pd.DataFrame) -> pd.DataFrame:
    """``claims`` with its ``kind`` and ``kind_reason`` columns filled from ``KINDS``."""
    pairs = [kind_of(exp_id, str(c)) for c in claims["claim"]]
    return claims.assign(kind=[k for k, _ in pairs], kind_reason=[r for _, r in pairs])


def combine(verdicts: list[str]) -> str:
    """One verdict for one sentence checked several times: like the grid points of one rule."""
    decided = [v for v in verdicts if v != "n/a"]
    if not decided:
        return "n/a"
    if "not confirmed" in decided:
        return "not confirmed"
    return "inconclusive" if "inconclusive" in decided else "confirmed"


def sentence(claim: str) -> str:
    """The paper's sentence a claim checks: its first double-quoted passage, else the whole claim text.

    Checks of one quoted sentence differ only in what surrounds the quote (the mechanism, the metric variant, the
    figure it is tested on), so they count as one sentence; ``headline`` also counts a quote that begins another
    (the sentence's first clause) as that sentence.
    """
    match = re.search(r'"([^"]+)"', claim)
    return match.group(1) if match else claim


def headline(claims: pd.DataFrame) -> pd.DataFrame:
    """The paper tally: paper claims only, each sentence (``sentence``) once, its verdicts combined (``combine``).

    Columns: ``claim`` (the sentence), ``experiments`` (comma-separated, each once), ``verdict``.
    """
    paper = claims[claims["kind"] == PAPER]
    keys = paper["claim"].map(sentence)
    full = {k: max((o for o in keys if o.startswith(k.rstrip(" .,;:"))), key=len) for k in set(keys)}
    rows = [{"claim": text, "experiments": ", ".join(dict.fromkeys(g["experiment"])),
             "verdict": combine(list(g["verdict"]))}
            for text, g in paper.groupby(keys.map(full), sort=False)]
    return pd.DataFrame(rows, columns=["claim", "experiments", "verdict"])
