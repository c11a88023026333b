"""Figure 3 and 4 claim rules, each on tables where it holds, fails and cannot decide.

Every claim function on a synthetic table where its claims hold and one where they fail (every verdict flips; a rule
that is inconclusive by design stays so), a mixed table whose trials disagree (the intervals straddle: inconclusive),
and 2 trials (every verdict inconclusive); never a NaN verdict.

Tables: 5 trials per grid point, multiplicative noise N(1, 0.01^2) from a fixed seed; the effects built in
(factors of 2 or more, trends over the whole grid) are many noise standard deviations wide, so the rules'
95% intervals and p < 0.05 tests decide them for any seed.
"""

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT

from dpstream.claims import MIN_TRIALS, VERDICTS, heavy_hitters, sketch

SKETCHES = ("cms", "cs", "lazycms", "lazycs", "punctualcms", "punctualcs")
KB = [8, 24, 48, 96, 192, 320]
EPS3 = [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0]
SKEW = [1.1, 1.3, 1.5, 1.7, 1.9, 2.1]
K = 128
KT = [128, 256, 384, 512, 640, 768]
EPS4 = [0.1, 0.2, 0.32, 0.5, 0.75, 1.0]


def table(mechs: tuple[str, ...], x: str, grid: list[float], cols: Callable[[str, float], dict[str, Any]],
          trials: int = 5, noisy: tuple[str, ...] = ("are_top15", "are_top15_mean_t", "seconds", "are",
                                                      "us_per_update")) -> pd.DataFrame:
    """Rows (mechanism, x, trial) with ``cols(mechanism, x)``; ``noisy`` columns get seeded N(1, 0.01) factors."""
    rng = np.random.default_rng(np.random.SeedSequence(2024))
    rows = []
    for m in mechs:
        for v in grid:
            for t in range(trials):
                row = {"mechanism.name": m, x: v, "trial": t, **cols(m, v)}
                rows.append({k: val * (1 + 0.01 * rng.standard_normal()) if k in noisy else val
                             for k, val in row.items()})
    return pd.DataFrame(rows)


def verdicts(claims: list) -> list[str]:
    out = [c.verdict for c in claims]
    assert all(v in VERDICTS for v in out) and all(c.rule and c.claim for c in claims)
    return out


def by_design(claim) -> bool:
    """A rule that cannot decide by construction (e.g. the paper does not give the compared quantity)."""
    return claim.rule.startswith("inconclusive by design")


def check_flips(fn: Callable, holds: pd.DataFrame, fails: pd.DataFrame) -> list:
    good, bad = fn(holds, {}), fn(fails, {})
    assert verdicts(good) == ["inconclusive" if by_design(c) else "confirmed" for c in good]
    assert verdicts(bad) == ["inconclusive" if by_design(c) else "not confirmed" for c in bad]
    assert [c.claim for c in good] == [c.claim for c in bad]
    assert set(verdicts(fn(holds[holds["trial"] < 2], {}))) == {"inconclusive"}
    return good


def mixed(holds: pd.DataFrame, fails: pd.DataFrame) -> pd.DataFrame:
    """Trials 0, 2, 4 from the table where the claims hold, 1 and 3 from the one where they fail.

    The effect flips sign between trials, so a t interval over the 5 trials straddles and Page's test cannot decide.
    """
    return pd.concat([holds[holds["trial"] % 2 == 0], fails[fails["trial"] % 2 == 1]], ignore_index=True)


def every_trial(claim) -> bool:
    """Rules on every trial (precision / recall 1): one failing trial refutes them, so a mix is not straddling."""
    return "every trial" in claim.rule and "has" in claim.rule


# ---------------------------------------------------------------- Figure 3

def _are(m: str, lazy_factor: float) -> float:
    """Base ARE per sketch: Lazy at ``lazy_factor`` x its Punctual counterpart."""
    return {"cms": 0.01, "cs": 0.02, "punctualcms": 1.0, "punctualcs": 0.8,
            "lazycms": lazy_factor * 1.0, "lazycs": lazy_factor * 0.8}[m]


def check_mixed(fn: Callable, holds: pd.DataFrame, fails: pd.DataFrame) -> list[str]:
    """On the mixed table every rule over trial means is inconclusive; rules on every trial are refuted."""
    claims = fn(mixed(holds, fails), {})
    assert verdicts(claims) == ["not confirmed" if every_trial(c) else "inconclusive" for c in claims]
    return verdicts(claims)


def fig3a_table(ok: bool) -> pd.DataFrame:
    def f(m: str, kb: float) -> dict[str, float]:
        lazy = 0.07
        punct = lazy * 12 * kb if ok else lazy * 100 / kb  # 288x at 24 KB vs. falling with width
        flat = {"cms": 0.012, "cs": 0.016, "lazycms": lazy, "lazycs": lazy}
        secs = punct if m.startswith("punctual") else flat[m] * (1 if ok else kb / 8)
        return {"seconds": secs, "sketch_width": kb * 1.4}
    return table(SKETCHES, "memory_kb", KB, f)


def test_fig3a_flat_and_linear_flip_and_250x_is_inconclusive_and_described_by_interleaved_timing():
    claims = check_flips(sketch.fig3a_claims, fig3a_table(True), fig3a_table(False))
    check_mixed(sketch.fig3a_claims, fig3a_table(True), fig3a_table(False))
    speedup = claims[-1]
    assert by_design(speedup) and "does not state the memory" in speedup.rule
    assert "interleaved A/B timing" in speedup.rule and "fig3a_speedup" in speedup.measured
    assert sketch.fig3a_claims(fig3a_table(False), {})[-1].measured == speedup.measured  # seconds describe nothing
    assert "Page's L" in claims[1].measured


def test_fig3a_linear_measured_carries_the_time_ratio_with_its_interval():
    falling = sketch.fig3a_claims(fig3a_table(False), {})[1]  # Punctual time 100 / kb: falls 40x over 8..320 KB
    assert "the wall-clock rule alone would say 'not confirmed'" in falling.measured
    # seconds(320 KB) / seconds(8 KB) = 8 / 320 = 0.025 per trial (x the 1% noise), widths 11.2 -> 448: x40
    found = re.search(r"seconds change from x = 11\.2 to 448: x(0\.02\d*) \[(0\.02\d*), (0\.02\d*)\] "
                      r"\(per-trial ratio, log-scale interval\) against the width ratio x40", falling.measured)
    assert found is not None, falling.measured
    mean, lo, hi = (float(v) for v in found.groups())
    assert lo < mean < hi


def fig3b_table(ok: bool) -> pd.DataFrame:
    def cols(m: str, kb: float) -> dict[str, float]:
        are = _are(m, 0.5 if ok else 2.0) * (8 / kb if ok else kb / 8)
        return {"are_top15": are, "are_top15_mean_t": are}
    return table(SKETCHES, "memory_kb", KB, cols)


def test_fig3b_trend_and_lazy_below_punctual_flip_with_and_without_mean_t():
    claims = check_flips(sketch.fig3b_claims, fig3b_table(True), fig3b_table(False))
    check_mixed(sketch.fig3b_claims, fig3b_table(True), fig3b_table(False))
    assert sum("are_top15_mean_t" in c.claim for c in claims) == 2
    without = sketch.fig3b_claims(fig3b_table(True).drop(columns="are_top15_mean_t"), {})
    assert len(without) == 3 and not any("mean_t" in c.claim for c in without)
    assert all("bootstrap" not in c.rule for c in claims)


def fig3c_table(ok: bool) -> pd.DataFrame:
    def f(m: str, depth: float) -> dict[str, float]:
        power = {True: -2.0, False: 1.0}[ok] if m in ("cms", "cs") else {True: -0.5, False: 0.2}[ok]
        return {"are_top15": _are(m, 0.5) * depth ** power, "memory_kb": 8 * depth}
    return table(SKETCHES, "depth", [1, 2, 3, 4, 5, 6], f)


def test_fig3c_depth_helps_non_private_more_flips():
    check_flips(sketch.fig3c_claims, fig3c_table(True), fig3c_table(False))
    check_mixed(sketch.fig3c_claims, fig3c_table(True), fig3c_table(False))


def fig3d_table(ok: bool, private_rate: float = 0.0) -> pd.DataFrame:
    rate = {"cms": 12.0, "cs": 8.0, "lazycms": 2.0, "lazycs": 2.0, "punctualcms": 2.0, "punctualcs": 2.0}

    def f(m: str, s: float) -> dict[str, float]:
        r = -rate[m] if ok else (2.0 if m in ("cms", "cs") else private_rate)
        are = _are(m, 0.5 if ok else 2.0) * np.exp(r * (s - 1.1))
        return {"are_top15": are, "are_top15_mean_t": are}
    df = table(SKETCHES, "data.skew", SKEW, f)
    if not ok and private_rate == 0:  # the private sketches' ARE exactly constant in skew: no influence at all
        private = df["mechanism.name"].isin(sketch.PRIVATE)
        df.loc[private, "are_top15"] = [_are(m, 2.0) for m in df.loc[private, "mechanism.name"]]
    return df


def test_fig3d_skew_effect_order_observable_and_lazy_below_flip():
    check_flips(sketch.fig3d_claims, fig3d_table(True), fig3d_table(False))
    # mixed: private ARE falls with skew in trials 0, 2, 4 and rises in 1, 3 (constant trials would not contradict)
    check_mixed(sketch.fig3d_claims, fig3d_table(True), fig3d_table(False, private_rate=2.0))


def test_fig3d_skew_observable_is_two_sided():
    rising = fig3d_table(True)
    private = rising["mechanism.name"].isin(sketch.PRIVATE)
    rising.loc[private, "are_top15"] = rising.loc[private, "are_top15"] * np.exp(4 * (rising.loc[private, "data.skew"]
                                                                                      - 1.1))
    observable = sketch.fig3d_claims(rising, {})[1]
    assert "either direction" in observable.claim and observable.verdict == "confirmed"


def fig3e_table(ok: bool) -> pd.DataFrame:
    def f(m: str, eps: float) -> dict[str, float]:
        return {"are_top15": _are(m, 0.5) * ((1 + 0.05 * np.log(eps / 0.05)) if ok else 1 / eps)}
    return table(SKETCHES, "epsilon", EPS3, f)


def test_fig3e_limited_eps_effect_and_small_eps_dip_flip():
    claims = check_flips(sketch.fig3e_claims, fig3e_table(True), fig3e_table(False))
    check_mixed(sketch.fig3e_claims, fig3e_table(True), fig3e_table(False))
    assert "40x" in claims[0].rule and "cut fixed before the run" in claims[0].rule


def fig3f_table(ok: bool) -> pd.DataFrame:
    return table(SKETCHES, "epsilon", EPS3,
                 lambda m, eps: {"are_top15": _are(m, 0.5) * ((1 + 0.1 / eps) if ok else eps)})


def test_fig3f_falls_with_eps_and_the_noise_dominated_ratio_flip():
    claims = check_flips(sketch.fig3f_claims, fig3f_table(True), fig3f_table(False))
    check_mixed(sketch.fig3f_claims, fig3f_table(True), fig3f_table(False))
    assert sum("1/eps" in c.claim for c in claims) == 4
    flat = table(SKETCHES, "epsilon", EPS3, lambda m, eps: {"are_top15": 0.113}, noisy=())
    assert set(verdicts(sketch.fig3f_claims(flat, {}))) == {"not confirmed"}  # PunctualCMS at 0.113 everywhere


def test_fig3f_a_ratio_of_1_18_is_neither_clear_nor_noise_dominated():
    """ARE(0.05) / ARE(2) ~ 1.18 (PunctualCMS measured about that): a significant decrease, not a clear one.

    It is within fig3e's "limited effect" (2x), so not "clear", and not the 1/eps regime.
    """
    mild = table(SKETCHES, "epsilon", EPS3, lambda m, eps: {"are_top15": 0.1 * (1 + 0.18 * (2 - eps) / 1.95)})
    claims = sketch.fig3f_claims(mild, {})
    assert verdicts(claims) == ["not confirmed"] * 8
    assert "p " in claims[0].measured and "ARE(eps=0.05) / ARE(eps=2): 1.1" in claims[0].measured
    assert claims[-1].measured.startswith("ARE(eps=0.05) / ARE(eps=2): 1.1")
    steep = table(SKETCHES, "epsilon", EPS3, lambda m, eps: {"are_top15": 0.1 * (1 + 2.0 * (2 - eps) / 1.95)})
    assert verdicts(sketch.fig3f_claims(steep, {}))[:4] == ["confirmed"] * 4  # a 3x fall is clear


# ---------------------------------------------------------------- Figure 4

def hh_table(cols: Callable[[str, float], dict[str, Any]], x: str = "mechanism.k_tilde",
             grid: list[float] = KT, mechs: tuple[str, ...] = ("lazyhh", "cms_heap")) -> pd.DataFrame:
    def full(m: str, v: float) -> dict[str, Any]:
        kt = v if x == "mechanism.k_tilde" else 512
        base = {"mechanism.k": K, "mechanism.k_tilde": kt, "epsilon": 0.5, "memory_kb": 20 * kt / K,
                "sketch_width": kt if m == "lazyhh" else int(kt * 13), "memory_bytes": 160 * kt,
                "n_reported": 7, "precision": 1.0, "recall": 1.0, "are": 0.04, "us_per_update": 1.3,
                "data.name": "caida_like_synthetic", "data.synthetic": True, "n_true": 9}
        return {**{k: val for k, val in base.items() if k != x}, **cols(m, v)}
    return table(mechs, x, grid, full)


def check_fig4(fn: Callable, holds: pd.DataFrame, fails: pd.DataFrame) -> list:
    """``check_flips`` and ``check_mixed``, and every claim names the synthetic trace it was measured on."""
    claims = check_flips(fn, holds, fails)
    check_mixed(fn, holds, fails)
    assert all("synthetic caida_like trace (data.name caida_like_synthetic, n_true 9)" in c.measured for c in claims)
    return claims


def fig4a_table(ok: bool) -> pd.DataFrame:
    def f(m: str, kt: float) -> dict[str, float]:
        lazy = 0.05 * 512 / kt if ok else 0.2 * kt / 512
        return {"are": lazy if m == "lazyhh" else lazy * (0.5 if ok else 2.0)}
    return hh_table(f)


def test_fig4a_are_trend_level_and_equal_memory_flip():
    check_fig4(heavy_hitters.fig4a_claims, fig4a_table(True), fig4a_table(False))
    real = fig4a_table(True).assign(memory_bytes=lambda d: np.where(d["mechanism.name"] == "lazyhh",
                                                                    8700 * d["mechanism.k_tilde"],
                                                                    160 * d["mechanism.k_tilde"]))
    equal = heavy_hitters.fig4a_claims(real, {})[-1]
    assert equal.verdict == "inconclusive" and "no equal-memory point" in equal.measured


def test_fig4a_equal_memory_measured_carries_the_deciding_effect_with_its_interval():
    fails = heavy_hitters.fig4a_claims(fig4a_table(False), {})[-1]  # CMS + heap 2x LazyHH's ARE at equal bytes
    assert fails.verdict == "not confirmed"
    effect = re.search(r"effect at the deciding point \(k~ \d+, width \d+\): mean paired difference "
                       r"(\+[\d.e-]+) \[(\+[\d.e-]+), (\+[\d.e-]+)\]", fails.measured)
    assert effect is not None, fails.measured
    mean, lo, hi = (float(v) for v in effect.groups())
    assert 0 < lo < mean < hi  # a positive difference (CMS + heap worse) with a non-zero-width interval
    real = fig4a_table(True).assign(memory_bytes=lambda d: np.where(d["mechanism.name"] == "lazyhh",
                                                                    8700 * d["mechanism.k_tilde"],
                                                                    160 * d["mechanism.k_tilde"]))
    nearest = heavy_hitters.fig4a_claims(real, {})[-1].measured
    assert "effect: none decides" in nearest and "nearest pair (k~ 128, width 9984" in nearest
    assert re.search(r"not deciding\): mean paired ARE\(CMS \+ heap\) - ARE\(LazyHH\) -[\d.e-]+ \[", nearest)


def test_fig4a_are_level_straddling_the_factor_2_band_is_inconclusive():
    at4k = hh_table(lambda m, kt: {"are": 0.1})  # the band's upper end, +- 1% noise
    assert heavy_hitters.fig4a_claims(at4k, {})[1].verdict == "inconclusive"


def fig4b_table(ok: bool) -> pd.DataFrame:
    return hh_table(lambda m, kt: {"us_per_update": 1.3 if ok else 10 * kt / K})


def test_fig4b_flat_time_flips_and_the_absolute_14us_is_inconclusive_with_both_numbers():
    claims = check_fig4(heavy_hitters.fig4b_claims, fig4b_table(True), fig4b_table(False))
    absolute = claims[-1]
    assert by_design(absolute) and "paper 14 us" in absolute.measured and "512: 1.3" in absolute.measured


def fig4c_table(ok: bool) -> pd.DataFrame:
    def cols(m: str, kt: float) -> dict[str, float]:
        recall = min(1.0, kt / 512) if ok else 0.9 - 0.1 * kt / 768
        precision = 1.0 if ok or kt < 768 else 0.9
        return {"recall": recall, "recall_mean_t": recall, "precision": precision, "precision_mean_t": precision}
    return hh_table(cols)


def test_fig4c_recall_and_precision_flip_with_mean_t():
    claims = check_fig4(heavy_hitters.fig4c_claims, fig4c_table(True), fig4c_table(False))
    assert sum("_mean_t" in c.claim for c in claims) == 2
    assert all("STRONGER than the paper" in c.claim for c in claims if "_mean_t" in c.claim)
    assert "deterministic on this one trace" in claims[2].measured  # recall identical in every trial


def test_fig4c_deterministic_series_print_their_effect_without_a_zero_width_interval():
    falls = heavy_hitters.fig4c_claims(fig4c_table(False), {})  # recall 0.9 - 0.1 k~/768 in every trial: falls
    trend = falls[1]
    assert trend.verdict == "not confirmed"
    # 0.8 / (0.9 - 0.1 * 128 / 768) = 0.906, the same in every trial
    assert ("effect: recall at mechanism.k_tilde 768 / at 128 x0.906 (zero spread over trials: one deterministic "
            "series, no interval)") in trend.measured
    # recall at k~ = 4k = 512: 0.9 - 0.1 * 512 / 768 = 0.833 in every trial
    assert ("effect at the lowest point (mechanism.k_tilde 512): mean recall 0.833 (zero spread over trials"
            in falls[2].measured) and falls[2].verdict == "not confirmed"
    precision = heavy_hitters.fig4c_claims(fig4c_table(True), {})[3]  # precision 1 in every trial
    assert "mean precision 1 (zero spread over trials" in precision.measured and "[1, 1]" not in precision.measured


def test_fig4c_precision_covers_the_cms_baseline_too():
    cms_fp = fig4c_table(True).assign(precision=lambda d: np.where(
        (d["mechanism.name"] == "cms_heap") & (d["trial"] == 3) & (d["mechanism.k_tilde"] == 256), 0.9, 1.0))
    claim = heavy_hitters.fig4c_claims(cms_fp, {})[3]
    assert "both LazyHH and the CMS baseline" in claim.claim and claim.verdict == "not confirmed"
    assert f"{heavy_hitters.NAMES['cms_heap']} 128: min 1" in claim.measured


def test_identical_trials_are_one_series_not_five_blocks():
    """Recall ranks [2, 4, 1, 5, 3, 6] copied into 5 trials.

    Page's test over the copies would give p ~ 0.001; one series of 6 points (Spearman rho 0.6, p ~ 0.12) cannot decide.
    """
    series = dict(zip(KT, [0.4, 0.6, 0.2, 0.8, 0.5, 1.0], strict=True))
    copies = hh_table(lambda m, kt: {"recall": series[kt]})
    trend = heavy_hitters.fig4c_claims(copies, {})[1]
    assert trend.verdict == "inconclusive" and "Spearman" in trend.rule and "deterministic" in trend.measured


def test_precision_with_nothing_reported_is_outside_the_domain():
    some = fig4c_table(True).assign(n_reported=lambda d: np.where(d["mechanism.k_tilde"] == 128, 0, 7),
                                    precision=lambda d: np.where(d["mechanism.k_tilde"] == 128, 0.0, 1.0))
    claim = heavy_hitters.precision_claim(some, "c", "mechanism.k_tilde")
    assert claim.verdict == "confirmed" and "nothing reported (n/a) at mechanism.k_tilde 128" in claim.measured
    none = some.assign(n_reported=0)
    assert heavy_hitters.precision_claim(none, "c", "mechanism.k_tilde").verdict == "inconclusive"
    one_false_positive = some.assign(precision=lambda d: np.where(d["trial"] == 0, 0.9, d["precision"]))
    assert heavy_hitters.precision_claim(one_false_positive.query("trial < 2"), "c",
                                         "mechanism.k_tilde").verdict == "not confirmed"


def fig4d_table(ok: bool) -> pd.DataFrame:
    def f(m: str, eps: float) -> dict[str, float]:
        if ok:  # the paper's explanation: only the heaviest (low-error) items reported while recall < 1
            return {"are": 0.04 - 0.01 * (eps < 0.32), "recall": 1.0 if eps >= 0.32 else 0.7}
        return {"are": 0.02 / eps, "recall": 1.0}
    return hh_table(f, "epsilon", EPS4, ("lazyhh",))


def test_fig4d_explained_direction_and_flat_once_recall_is_one_flip_literal_sentence_contradicted():
    def rest(df: pd.DataFrame, exp: dict) -> list:
        return heavy_hitters.fig4d_claims(df, exp)[1:]

    check_fig4(rest, fig4d_table(True), fig4d_table(False))
    literal = heavy_hitters.fig4d_claims(fig4d_table(True), {})[0]
    # where the paper's explanation holds (ARE rises with eps), the literal sentence (ARE falls) is contradicted
    assert literal.verdict == "not confirmed" and "contradicts the paper's own explanation" in literal.rule
    assert "p(ARE falls with eps)" in literal.measured and "p(ARE rises with eps)" in literal.measured
    assert heavy_hitters.fig4d_claims(fig4d_table(False), {})[0].verdict == "confirmed"  # ARE ~ 1/eps falls
    never = hh_table(lambda m, eps: {"are": 0.04 / eps, "recall": 0.7}, "epsilon", EPS4, ("lazyhh",))
    assert heavy_hitters.fig4d_claims(never, {})[-1].verdict == "inconclusive"
    unknown = fig4d_table(True).assign(recall=np.nan)  # recall missing: the premise "recall is 1" is not assumed
    assert "at 0 eps" in heavy_hitters.fig4d_claims(unknown, {})[-1].measured
    assert "effect: none (the rule's domain" in heavy_hitters.fig4d_claims(unknown, {})[-1].measured


def fig4e_table(ok: bool) -> pd.DataFrame:
    return hh_table(lambda m, eps: {"precision": 1.0 if ok or eps < 1 else 0.9,
                                    "precision_mean_t": 1.0 if ok or eps < 1 else 0.95}, "epsilon", EPS4, ("lazyhh",))


def test_fig4e_precision_at_every_eps_flips():
    check_fig4(heavy_hitters.fig4e_claims, fig4e_table(True), fig4e_table(False))


def fig4f_table(ok: bool) -> pd.DataFrame:
    def f(m: str, eps: float) -> dict[str, float]:
        recall = {0.1: 0.5, 0.2: 0.8}.get(eps, 1.0) if ok else 0.9 - 0.2 * eps
        return {"recall": recall, "recall_mean_t": recall}
    return hh_table(f, "epsilon", EPS4, ("lazyhh",))


def test_fig4f_recall_rises_and_is_one_from_032_flips():
    check_fig4(heavy_hitters.fig4f_claims, fig4f_table(True), fig4f_table(False))


def test_fig4_trace_is_named_when_real():
    real = fig4e_table(True).assign(**{"data.name": "caida2019", "data.synthetic": False})
    assert "on the trace caida2019 (data.name caida2019, n_true 9)" in heavy_hitters.fig4e_claims(real, {})[0].measured


@pytest.mark.parametrize("panel", ["fig3a", "fig3b", "fig3c", "fig3d", "fig3e", "fig3f"])
def test_experiments_point_at_the_claim_rules(panel):
    spec = yaml.safe_load((ROOT / "experiments" / f"{panel}.yaml").read_text())
    assert spec["claims"] == f"dpstream.claims.sketch:{panel}_claims"
    spec4 = yaml.safe_load((ROOT / "experiments" / f"fig4{panel[-1]}.yaml").read_text())
    assert spec4["claims"] == f"dpstream.claims.heavy_hitters:fig4{panel[-1]}_claims" and spec4["trials"] >= MIN_TRIALS


def test_removed_fraction_keeps_trials_exact_at_both_ends_and_reports_the_log_ratio():
    exact = fig3c_table(True)
    exact.loc[(exact["mechanism.name"] == "cms") & (exact["trial"] == 0), "are_top15"] = 0.0  # exact CMS, trial 0
    assert sketch._removed_fraction(exact, "cms", "depth").loc[0] == 0.0  # 0 / 0: nothing removed, not dropped
    assert np.isfinite(sketch._log_ratio(exact, "cms", "depth")).all()
    claim = sketch.fig3c_claims(exact, {})[1]
    assert "sensitivity, same test on ln(ARE_first / ARE_last)" in claim.measured


def test_precision_claim_cannot_be_confirmed_by_a_mechanism_that_never_reports():
    # LazyHH reports nothing anywhere (precision undefined), the baseline is 1 everywhere: no support for the claim
    rows = [{"mechanism.name": m, "mechanism.k_tilde": kt, "trial": t, "n_reported": 0 if m == "lazyhh" else 5,
             "precision": np.nan if m == "lazyhh" else 1.0}
            for m in ("lazyhh", "cms_heap") for kt in (128, 512) for t in range(3)]
    claim = heavy_hitters.precision_claim(pd.DataFrame(rows), "precision 1", "mechanism.k_tilde",
                                          mechs=("lazyhh", "cms_heap"))
    assert claim.verdict == "inconclusive"


@pytest.mark.parametrize(("low", "high", "word"), [(0.9, 1.1, "confirmed"), (3.0, 4.0, "not confirmed"),
                                                   (1.2, 1.8, "inconclusive")])
def test_fig4b_flat_time_is_decided_by_the_interleaved_ratio_only(low, high, word):
    # wall-clock rows say "flat" in every case; only the interleaved interval against the band [1/1.5, 1.5] decides
    df = fig4b_table(True).assign(interleaved_ratio=(low * high) ** 0.5, interleaved_low=low, interleaved_high=high)
    flat = heavy_hitters.fig4b_claims(df, {})[0]
    assert flat.verdict == word and "interleaved ratios" in flat.measured


def test_timing_without_an_interleaved_measurement_is_inconclusive_whatever_the_wall_clock():
    for ok in (True, False):
        flat = heavy_hitters.fig4b_claims(fig4b_table(ok), {})[0]
        assert flat.verdict == "inconclusive" and "inconclusive (no interleaved measurement)" in flat.measured
    linear = sketch.fig3a_claims(fig3a_table(True), {})[1]
    assert linear.verdict == "inconclusive" and "would say 'confirmed'" in linear.measured


def test_the_descriptive_speedup_comes_from_interleaved_timing_not_trial_wall_clock():
    from dpstream.claims.sketch import fig3a_speedup_claims, speedups

    df = pd.DataFrame({"mechanism.name": ["punctualcms"] * 3 + ["punctualcs"], "memory_kb": [8, 8, 24, 8],
                       "interleaved_ratio": [0.1, 0.05, 0.02, np.nan], "interleaved_low": [0.08, 0.04, 0.01, np.nan],
                       "interleaved_high": [0.125, 0.0625, 0.04, np.nan], "seconds": [1e3, 1e-3, 5.0, 1.0]})
    text = speedups(df, "punctualcms")
    assert text.startswith("8 KB: 15x (trials 10-20; widest per-trial 95% interval [8, 25], 2 trials); 24 KB: 50x")
    assert speedups(df, "punctualcs") == "no interleaved measurement"
    slower = df.assign(seconds=df["seconds"] * 1e3)  # wall-clock moves; the description does not
    assert fig3a_speedup_claims(df, {})[0].measured == fig3a_speedup_claims(slower, {})[0].measured


def test_near_copy_traces_are_one_block_not_several():
    """Four trials with one series and a fifth differing at one point: 2 distinct series, too few blocks for Page.

    Over the 5 trials as blocks Page's test would give p ~ 1e-4 from the copies; with distinct noisy series it decides.
    """
    series = dict(zip(KT, [0.2, 0.3, 0.5, 0.7, 0.9, 1.0], strict=True))
    copies = hh_table(lambda m, kt: {"recall": series[kt]})
    copies.loc[(copies["trial"] == 3) & (copies["mechanism.k_tilde"] == 640), "recall"] = 0.8
    trend = heavy_hitters.fig4c_claims(copies, {})[1]
    assert trend.verdict == "inconclusive" and "2 distinct series of 5 trials" in trend.measured
    rng = np.random.default_rng(7)
    distinct = copies.assign(recall=lambda d: d["recall"] + rng.uniform(-0.05, 0.05, len(d)))
    assert heavy_hitters.fig4c_claims(distinct, {})[1].verdict == "confirmed"
    kept = heavy_hitters.distinct_blocks(heavy_hitters._lazy(copies), "mechanism.k_tilde", "recall")
    assert sorted(kept["trial"].unique()) == [0, 3]
