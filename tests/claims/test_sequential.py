"""The sequential rules keep their error rate over all looks, at the least-favourable point of every rule family used.

Each family (location, trend, order-statistic, "at every point" with Holm) is simulated over its registered design: 3
looks, a budget of 30 trials (batches of 10), alpha 0.05 per side. At the smallest effect that matters (the claim true
with the least effect) a wrong ``not confirmed`` must happen in at most alpha + 3 Monte Carlo standard errors of the
runs; at no effect a wrong ``confirmed`` likewise; and the power calculation's budget must confirm the smallest effect
in at least 80% - 3 SE of the runs.
"""

from collections.abc import Callable

import numpy as np
import pytest

from dpstream.claims.sequential import (
    ALPHA,
    POWER,
    decide_every_point,
    decide_location,
    decide_quantile,
    decide_trend,
    obrien_fleming_spent,
    plan_budget,
    sign_boundaries,
    z_boundaries,
)

RUNS = 1500
SE = np.sqrt(ALPHA * (1 - ALPHA) / RUNS)
LIMIT = ALPHA + 3 * SE
DELTA = 0.5
BATCH, BUDGET = plan_budget(1.0, DELTA)
X = np.array([8.0, 24.0, 48.0, 96.0, 192.0, 320.0])  # a memory grid of Fig. 3 (KB)


def sequential(draw: Callable[[np.random.Generator, int], np.ndarray], decide: Callable[..., str],
               seed: int) -> dict[str, float]:
    """Share of runs ending in each verdict: trials drawn in batches, decided at each look on all trials so far."""
    rng = np.random.default_rng(seed)
    counts = {"confirmed": 0, "not confirmed": 0, "inconclusive": 0}
    for _ in range(RUNS):
        data = draw(rng, BUDGET)
        looks: list[int] = []
        verdict = "inconclusive"
        for n in range(BATCH, BUDGET + 1, BATCH):
            verdict = decide(data[:n], looks)
            if verdict != "inconclusive":
                break
            looks.append(n)
        counts[verdict] += 1
    return {k: v / RUNS for k, v in counts.items()}


def test_boundaries_are_the_published_obrien_fleming_values():
    # Lan-DeMets O'Brien-Fleming, one-sided 0.025: Jennison & Turnbull, Group Sequential Methods, Table 2.3 / gsDesign
    assert z_boundaries((1 / 3, 2 / 3, 1.0), 0.025) == pytest.approx((3.710, 2.511, 1.993), abs=2e-3)
    assert z_boundaries((0.2, 0.4, 0.6, 0.8, 1.0), 0.025) == pytest.approx((4.877, 3.357, 2.680, 2.290, 2.031),
                                                                            abs=2e-3)
    assert z_boundaries((1.0,), 0.05)[0] == pytest.approx(1.6449, abs=1e-4)
    assert obrien_fleming_spent(1.0, 0.05) == pytest.approx(0.05)


def test_sign_boundaries_spend_no_more_than_alpha():
    from scipy.stats import binom

    ns = (10, 20, 30)
    b = sign_boundaries(ns, ALPHA, 30)
    assert all(0 < x <= n + 1 for x, n in zip(b, ns, strict=True))  # n + 1: no count can cross at that look
    assert b[-1] <= 30
    rng = np.random.default_rng(1)  # the exact spend is checked against a simulation of the count path
    paths = np.cumsum(rng.integers(0, 2, size=(200_000, 30)), axis=1)[:, [9, 19, 29]]
    crossed = (paths >= np.array(b)).any(axis=1).mean()
    assert crossed <= ALPHA + 3 * np.sqrt(ALPHA / 200_000)
    assert binom.sf(b[-1] - 1, 30, 0.5) < ALPHA  # the last boundary alone is a valid level-alpha test


@pytest.mark.parametrize(("mu", "wrong"), [(-DELTA, "not confirmed"), (0.0, "confirmed")])
def test_location_rule_keeps_alpha_at_the_least_favourable_point(mu, wrong):
    rates = sequential(lambda rng, n: mu + rng.standard_normal(n),
                       lambda d, looks: decide_location(d, DELTA, BUDGET, ALPHA, looks).verdict, seed=11)
    assert rates[wrong] <= LIMIT


def test_the_power_calculation_sets_a_budget_that_decides_the_smallest_effect():
    rates = sequential(lambda rng, n: -DELTA + rng.standard_normal(n),
                       lambda d, looks: decide_location(d, DELTA, BUDGET, ALPHA, looks).verdict, seed=12)
    assert rates["confirmed"] >= POWER - 3 * np.sqrt(POWER * (1 - POWER) / RUNS)
    rates = sequential(lambda rng, n: 0.0 + rng.standard_normal(n),
                       lambda d, looks: decide_location(d, DELTA, BUDGET, ALPHA, looks).verdict, seed=13)
    assert rates["not confirmed"] >= POWER - 3 * np.sqrt(POWER * (1 - POWER) / RUNS)


def _trend(slope: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    """Trials x points: a trial effect shared by its points, the trend in log x, noise of sd 1 on the slope's scale."""
    lx = np.log(X) - np.log(X).mean()

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        sd_point = np.sqrt(lx @ lx)  # the per-trial least-squares slope then has sd 1
        return (3.0 * rng.standard_normal((n, 1)) + slope * lx[None, :]
                + sd_point * rng.standard_normal((n, X.size)))
    return draw


@pytest.mark.parametrize(("slope", "wrong"), [(-DELTA, "not confirmed"), (0.0, "confirmed")])
def test_trend_rule_keeps_alpha_at_the_least_favourable_point(slope, wrong):
    rates = sequential(_trend(slope), lambda y, looks: decide_trend(X, y, DELTA, BUDGET, ALPHA, looks).verdict,
                       seed=21)
    assert rates[wrong] <= LIMIT


@pytest.mark.parametrize(("median", "wrong"), [(-DELTA, "not confirmed"), (0.0, "confirmed")])
def test_order_statistic_rule_keeps_alpha_on_heavy_tails(median, wrong):
    rates = sequential(lambda rng, n: median + rng.standard_t(1, n),  # Cauchy: no mean, a median
                       lambda d, looks: decide_quantile(d, DELTA, BUDGET, ALPHA, looks).verdict, seed=31)
    assert rates[wrong] <= LIMIT


def test_every_point_rule_with_holm_keeps_alpha_when_every_point_is_least_favourable():
    m = 4
    rates = sequential(lambda rng, n: -DELTA + rng.standard_normal((n, m)),
                       lambda d, looks: decide_every_point(list(d.T), DELTA, BUDGET, ALPHA, looks)[0], seed=41)
    assert rates["not confirmed"] <= LIMIT


def test_every_point_rule_needs_every_point_to_confirm():
    shifts = np.array([0.0, -3 * DELTA, -3 * DELTA, -3 * DELTA])  # one point without the effect
    rates = sequential(lambda rng, n: shifts + rng.standard_normal((n, shifts.size)),
                       lambda d, looks: decide_every_point(list(d.T), DELTA, BUDGET, ALPHA, looks)[0], seed=42)
    assert rates["confirmed"] <= LIMIT


def test_an_inconclusive_verdict_says_how_many_trials_it_would_need():
    rng = np.random.default_rng(5)
    d = -0.25 + 2.0 * rng.standard_normal(BATCH)
    decision = decide_location(d, DELTA, BUDGET)
    assert decision.verdict == "inconclusive"
    assert decision.needed > BUDGET  # sd 2 instead of the planned 1: about four times the budget
    assert f"about {decision.needed} trials" in decision.text()
