"""What each checked claim is, as declared in the pre-registration (``dpstream.claims.registration``), and the tallies.

A claim's kind is a declared field of ``results/preregistration.yaml``: a paper claim (a verbatim sentence of Holland's
paper), an own hypothesis, a theory check (a paraphrase of a document without experiments: Kaplan-Mansour-Stemmer,
Hsu-Roth-Ullman, the two sets of notes) or an implementation check. A claim missing from the registration is
``unregistered`` and decides nothing. The paper tally (``headline``) counts each registered sentence once, in the
setting the paper describes: the checks and clauses of one sentence are combined like the points of one rule (any
``not confirmed`` refutes, any ``inconclusive`` leaves it undecided, so a sentence is confirmed only if every clause
is). Rows in a robustness setting are shown beside it, and a verdict on the synthetic stand-in of Figure 4 counts in
its own tally, never for or against the sentence about CAIDA.
"""

from __future__ import annotations

import pandas as pd

from dpstream.claims.registration import IMPLEMENTATION, KIND_WORDS, OURS, PAPER, REGISTRATION, THEORY, by_id, claim_ids

UNREGISTERED = "unregistered"
"""The kind of a claim the pre-registration does not list: it can neither confirm nor refute (``registration.gate``)."""
PAPER_SETTING = "paper"
STAND_IN = "synthetic stand-in"

__all__ = ["IMPLEMENTATION", "KIND_WORDS", "OURS", "PAPER", "STAND_IN", "THEORY", "UNREGISTERED", "classify",
           "combine", "headline", "kind_of", "stand_in"]


def kind_of(claim_id: str) -> tuple[str, str]:
    """(kind, reason) of the claim registered as ``claim_id`` (``<experiment>#<index>``), else (unregistered, why)."""
    entry = by_id(REGISTRATION).get(claim_id)
    if entry is None:
        return UNREGISTERED, f"not in {REGISTRATION.name}: decides nothing until registered before its trials"
    return entry["kind"], str(entry.get("kind_reason", ""))


def classify(exp_id: str, claims: pd.DataFrame) -> pd.DataFrame:
    """``claims`` with their ``id`` and the registered ``kind``, ``kind_reason``, ``sentence``, ``setting``, ``data``.

    A row is found by its registered id (``registration.claim_ids``: the ``id`` column, else its position where the
    registration lists it); an empty id is an unregistered claim.
    """
    registered = by_id(REGISTRATION)
    ids = claim_ids(exp_id, claims)
    entries = [registered.get(i, {}) for i in ids]
    kinds = [kind_of(i) for i in ids]
    return claims.assign(id=ids, kind=[k for k, _ in kinds], kind_reason=[r for _, r in kinds],
                         sentence=[str(e.get("sentence", "")) for e in entries],
                         setting=[str(e.get("setting", "")) for e in entries],
                         data=[STAND_IN if "stand-in" in str(e.get("data", "")) else "" for e in entries])


def combine(verdicts: list[str]) -> str:
    """One verdict for one sentence checked several times (clauses, mechanisms): like the grid points of one rule."""
    decided = [v for v in verdicts if v != "n/a"]
    if not decided:
        return "n/a"
    if "not confirmed" in decided:
        return "not confirmed"
    return "inconclusive" if "inconclusive" in decided else "confirmed"


def _sentences(rows: pd.DataFrame) -> pd.DataFrame:
    out = [{"sentence": sid, "claim": str(g["claim"].iloc[0]), "experiments": ", ".join(dict.fromkeys(g["experiment"])),
            "verdict": combine(list(g["verdict"]))} for sid, g in rows.groupby("sentence", sort=False)]
    return pd.DataFrame(out, columns=["sentence", "claim", "experiments", "verdict"])


def headline(claims: pd.DataFrame) -> pd.DataFrame:
    """The paper tally: registered paper sentences once each, from their rows in the paper's setting on real data.

    Columns: ``sentence`` (the registered id), ``claim`` (the first row's text), ``experiments``, ``verdict``.
    """
    rows = claims[(claims["kind"] == PAPER) & (claims["setting"] == PAPER_SETTING) & (claims["data"] != STAND_IN)]
    return _sentences(rows)


def stand_in(claims: pd.DataFrame) -> pd.DataFrame:
    """The synthetic stand-in tally: Figure 4's sentences judged on the synthetic stand-in, each sentence once."""
    rows = claims[(claims["kind"] == PAPER) & (claims["setting"] == PAPER_SETTING) & (claims["data"] == STAND_IN)]
    return _sentences(rows)
