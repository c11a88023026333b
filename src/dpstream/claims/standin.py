"""Where Figure 4's sentences hold on the synthetic stand-in: a map over stand-in profiles (Holland, Sec. 6.5, Fig. 4).

The paper's trace (CAIDA 2019) is not public, so Fig. 4 runs on a synthetic stand-in whose shape is assumed: Zipf
sources with exponent 1.0. Two properties of that shape decide several sentences: the exponent, and how many sources
have a count just above the threshold t/k (in [t/k, 1.5 t/k)), where recall at k~ = k is won or lost. The sensitivity
experiments (``experiment=fig4_sensitivity``, ``fig4_sensitivity_eps``, ``fig4_sensitivity_full``) run each
profile (``dpstream.data.caida_like.standin_profile``) and judge it with the panels' own rules
(``dpstream.claims.heavy_hitters``); each sentence then says for which profiles it is confirmed, not confirmed or
inconclusive. The map describes the stand-in, never CAIDA: its rows are ``inconclusive`` about the paper
(``PROFILE_RULE``), and a user holding the trace gets the panels' verdicts on it from ``make fig4-caida TRACE=...``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from dpstream.claims.core import Claim
from dpstream.claims.heavy_hitters import (
    fig4a_claims,
    fig4b_claims,
    fig4c_claims,
    fig4d_claims,
    fig4e_claims,
    fig4f_claims,
)

PROFILE = ("data.zipf_exponent", "data.near_threshold")
"""The columns that name a stand-in profile."""
PROFILE_RULE = ("a map of the synthetic stand-in, not a verdict about the paper's trace: the rule of {panel}#{index} "
                "judged separately on every stand-in profile (Zipf exponent x sources in [t/k, 1.5 t/k)) at {length} "
                "packets; the row itself is inconclusive about CAIDA")
Panel = Callable[[pd.DataFrame, dict[str, Any]], list[Claim]]


def _name(profile: tuple[Any, ...]) -> str:
    exponent, near = profile
    planted = "as drawn" if pd.isna(near) else f"{int(near)}"
    return f"Zipf {float(exponent):g} / {planted} near t/k"


def profile_map(df: pd.DataFrame, experiment: dict[str, Any], panels: dict[str, Panel]) -> list[Claim]:
    """One row per sentence of ``panels``: the profiles where its rule confirms, refutes or cannot decide."""
    keys = list(PROFILE)
    frame = df.assign(**{k: df[k].astype(object).where(df[k].notna(), None) for k in keys})
    verdicts: dict[tuple[str, int], tuple[str, dict[str, list[str]]]] = {}
    for profile, rows in frame.groupby(keys, dropna=False, sort=True):
        for panel, fn in panels.items():
            for i, claim in enumerate(fn(rows, experiment)):
                _, by = verdicts.setdefault((panel, i), (claim.claim, {}))
                by.setdefault(claim.verdict, []).append(_name(profile))
    length = ", ".join(f"{int(n):,}" for n in sorted(df["data.length"].unique())) if "data.length" in df else "?"
    out = []
    for (panel, i), (text, by) in verdicts.items():
        measured = "; ".join(f"{verdict} for {', '.join(names)}" for verdict, names in
                             sorted(by.items(), key=lambda kv: ("confirmed", "not confirmed", "inconclusive",
                                                                 "n/a").index(kv[0])))
        holds = ", ".join(by.get("confirmed", [])) or "no profile of the grid"
        out.append(Claim(f"{panel}#{i} {text}", PROFILE_RULE.format(panel=panel, index=i, length=length),
                         f"holds for {holds}. By verdict: {measured}", "inconclusive"))
    return out


def fig4_memory_profiles(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """Fig. 4(a-c)'s sentences over the memory axis, per stand-in profile."""
    return profile_map(df, experiment, {"fig4a": fig4a_claims, "fig4b": fig4b_claims, "fig4c": fig4c_claims})


def fig4_eps_profiles(df: pd.DataFrame, experiment: dict[str, Any]) -> list[Claim]:
    """Fig. 4(d-f)'s sentences over eps at k~ = 4k, per stand-in profile."""
    return profile_map(df, experiment, {"fig4d": fig4d_claims, "fig4e": fig4e_claims, "fig4f": fig4f_claims})
