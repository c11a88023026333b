"""Helpers shared by the claim tests: every verdict in the vocabulary, every claim with a rule and a measurement."""

from dpstream.claims import VERDICTS


def verdicts(claims) -> dict[str, str]:
    assert all(c.verdict in VERDICTS for c in claims)  # never NaN, never a word outside the vocabulary
    assert all(c.rule and c.measured for c in claims)
    return {c.claim: c.verdict for c in claims}


def only(claims, start: str) -> str:
    hits = [c.verdict for c in claims if c.claim.startswith(start)]
    assert len(hits) == 1, start
    return hits[0]
