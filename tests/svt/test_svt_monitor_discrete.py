"""ThresholdMonitor with ``svt_noise="discrete_secure"``: the discrete Thm 3.2 constants, the noise drawn, flags, state.

The privacy accounting here is written out again from docs/secure-noise.md ("ThresholdMonitor with discrete noise"),
not imported from ``privacy.svt``, so a calibration that drifts from the derivation fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import sparse, stats

from dpstream.privacy.statement import Privacy, Relation
from dpstream.secure.laplace import laplace_grid
from dpstream.svt import ThresholdMonitor, ThresholdMonitorEvolving, calibrate_monitor

DS = "discrete_secure"
RHO = 1.0 + 2.0**-31  # laplace_grid rounds a scale b >= 1/2 up to at most b (1 + 2^-31) (secure.laplace docstring)


def _tail_bound(b: float) -> float:
    """The docs' bound on P(v >= floor(b ln b) + 1) for v discrete Laplace at a scale in [b, RHO b]."""
    return b ** (-1.0 / RHO) / (1.0 + math.exp(-1.0 / b))


def _xi_discrete(eps: float, delta: float, k: float) -> float:
    """Thm 3.2 for discrete noise: (30 (k+1) + 10 L)(2 tau + eps/L) + (15 (k+1) + 5 L) eps/L, L = ln(1/delta)."""
    log_inv = math.log(1.0 / delta)
    unit = eps / log_inv
    return (30 * (k + 1) + 10 * log_inv) * (2 * _tail_bound(log_inv / eps) + unit) + (15 * (k + 1) + 5 * log_inv) * unit


def _spent(option: str, eps: float, delta: float, k: int, delta_total: float) -> tuple[float, float]:
    """(epsilon, delta) the discrete theorem gives to noise parameters (eps, delta): Thm 3.2 (A) or Thm 3.8 (B)."""
    if option == "A":
        return _xi_discrete(eps, delta, k), 3 * delta
    log_inv = math.log(1.0 / delta)
    epochs, delta_hat = math.ceil(k / log_inv), delta_total / 2
    xi = _xi_discrete(eps, delta, log_inv)  # one epoch: Thm 3.2 at cap ln(1/delta)
    return (math.sqrt(2 * epochs * math.log(1 / delta_hat)) * xi + epochs * xi * math.expm1(xi),
            3 * epochs * delta + delta_hat)


def _cdf(b: float, k: np.ndarray) -> np.ndarray:
    """P(v <= k) for v discrete Laplace of scale b: 1 - q^(k+1)/(1+q) for k >= 0, q^(-k)/(1+q) for k < 0."""
    q = math.exp(-1.0 / b)
    k = np.asarray(k, dtype=float)
    return np.where(k >= 0, 1 - np.exp(-(k + 1) / b) / (1 + q), np.exp(k / b) / (1 + q))


def _binned_chi_square_p(draws: np.ndarray, b: float, n_bins: int = 40) -> float:
    """Chi-square p-value of integer draws against the discrete Laplace of scale b, bins of about equal mass."""
    p = np.linspace(0, 1, n_bins + 1)[1:-1]
    inner = np.unique(np.round(np.where(p < 0.5, b * np.log(2 * p), -b * np.log(2 - 2 * p))).astype(np.int64))
    lows = np.concatenate(([draws.min()], inner))  # bin j holds the integers lows[j] .. lows[j + 1] - 1
    expected = np.diff(np.concatenate(([0.0], _cdf(b, inner - 1), [1.0]))) * draws.size
    observed = np.bincount(np.searchsorted(inner, draws, side="right"), minlength=lows.size)
    return float(stats.chisquare(observed, expected).pvalue)


# (epsilon_total, delta_total, k): the spec's budget at several caps (options A and B), other budgets, and 242 where
# v's scale is about 2.34 and its cap floor(1.99) = 1, so P(v > cap) is 0.258 against the continuous 0.213
BUDGETS = [(1.0, 1e-6, 1), (1.0, 1e-6, 3), (1.0, 1e-6, 100), (1.0, 1e-6, 700), (1.0, 1e-6, 5000), (0.3, 1e-9, 5),
           (8.0, 1e-3, 2), (242.0, 1e-6, 1)]


@pytest.mark.parametrize(("eps_total", "delta_total", "k"), BUDGETS)
def test_discrete_calibration_spends_at_most_the_budget_by_the_discrete_theorem(eps_total, delta_total, k):
    cal = calibrate_monitor(eps_total, delta_total, k, svt_noise=DS)
    assert cal.svt_noise == DS and cal.epsilon == max(cal.epsilon_a, cal.epsilon_b)
    eps_spent, delta_spent = _spent(cal.option, cal.epsilon, cal.delta, k, delta_total)
    assert eps_spent <= eps_total  # exactly, in floating point: the calibration bisects from below
    assert eps_spent >= eps_total * (1 - 1e-9)  # and spends it: no noise beyond what the theorem needs
    assert delta_spent <= delta_total * (1 + 1e-12)


@pytest.mark.parametrize(("eps_total", "delta_total", "k"), BUDGETS)
def test_continuous_constants_overspend_with_discrete_noise(eps_total, delta_total, k):
    # the paper's calibration (continuous Laplace) applied to discrete noise: the discrete theorem charges more than
    # the budget for its parameters, so a discrete calibration that reused the continuous constants would fail the
    # test above
    cont = calibrate_monitor(eps_total, delta_total, k)
    disc = calibrate_monitor(eps_total, delta_total, k, svt_noise=DS)
    assert cont.option == disc.option and disc.epsilon < cont.epsilon
    assert _spent(cont.option, cont.epsilon, cont.delta, k, delta_total)[0] > eps_total


@pytest.mark.parametrize(("eps_total", "delta_total", "k"), BUDGETS)
def test_the_derivations_conditions_hold_at_the_monitors_scales(eps_total, delta_total, k):
    tm = ThresholdMonitor(epsilon=eps_total, delta=delta_total, threshold=0, k=k, seed=1, svt_noise=DS)
    cal = tm.calibration
    b, delta_cap, cap = cal.v_scale, cal.cap, tm.int_cap
    b_v, big_b = (t / s for t, s in (tm.grids["v"], tm.grids["w"]))
    assert b <= b_v <= RHO * b and big_b >= 10 * delta_cap and cap == math.floor(delta_cap) >= 1
    q_w = math.exp(-1 / big_b)
    tau = math.exp(-(cap + 1) / b_v) / (1 + math.exp(-1 / b_v))  # P(v >= D + 1), exactly
    assert tau <= _tail_bound(b) and 2 * _tail_bound(b) <= 1  # the bound the calibration charges; x <= 1 in Step 3
    n = 3 * cap  # Claim A.3: w in [c - 2D, c + D - 1], at most the centred window's mass
    window = -math.expm1(-(n // 2) / big_b) if n % 2 == 0 else 1 - 2 * q_w ** (n // 2 + 1) / (1 + q_w)
    assert tau + window <= 0.5  # p_i <= 1/2
    assert (1 - tau) >= 0.5 and q_w ** (3 * cap) >= 0.5  # q_i >= p_i / 4


def test_drawn_noise_is_discrete_laplace_at_the_calibrated_scales():
    # eps_total = 242 gives small scales (v about 2.34, w about 19.9), where discrete and continuous differ most;
    # 400 000 draws per role, fixed seed; a correct sampler fails a check only when p < 1e-6 (or beyond 5 sd)
    tm = ThresholdMonitor(epsilon=242.0, delta=1e-6, threshold=0, k=1, seed=11, svt_noise=DS)
    noise = tm.draw_noise(1000, 400)
    for role, scale in (("w", tm.calibration.w_scale), ("v", tm.calibration.v_scale)):
        t, s = tm.grids[role]
        assert t / s >= scale and (t - 1) / s < scale  # the calibrated scale, rounded up by one grid step at most
        draws = noise[role].ravel()
        assert draws.dtype == np.int64
        assert _binned_chi_square_p(draws, t / s) > 1e-6
    # the tail beyond the cap is the discrete one the proof charges, not the continuous 1/(2b) (nor the paper's 1/4)
    t, s = tm.grids["v"]
    tau = math.exp(-(tm.int_cap + 1) * s / t) / (1 + math.exp(-s / t))
    rate, sd = float((noise["v"] > tm.int_cap).mean()), math.sqrt(tau * (1 - tau) / noise["v"].size)
    assert abs(rate - tau) <= 5 * sd
    assert rate - 1 / (2 * tm.calibration.v_scale) > 5 * sd and rate - 0.25 > 5 * sd


def test_pmf_chi_square_rejects_a_wrong_scale():
    # the check above has power: draws at the v scale fail against 1.1 times it
    tm = ThresholdMonitor(epsilon=242.0, delta=1e-6, threshold=0, k=1, seed=11, svt_noise=DS)
    t, s = tm.grids["v"]
    assert _binned_chi_square_p(tm.draw_noise(1000, 400)["v"].ravel(), 1.1 * t / s) < 1e-6


def test_privacy_statements_and_flags():
    seeded = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=50, k=3, seed=4, svt_noise=DS)
    assert seeded.certified and not seeded.deployable
    assert seeded.privacy == Privacy(1.0, 1e-6, Relation.ADD_REMOVE_RECORD, "computational")
    keyed = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=50, k=3, svt_noise=DS)  # key from OS entropy
    assert keyed.certified and keyed.deployable
    run = keyed.run(sparse.csr_matrix(np.eye(3)), np.array([60, 10, 49]), n_runs=2)
    assert run.deployable and not seeded.run(sparse.csr_matrix(np.eye(3)), np.array([60, 10, 49])).deployable
    evolving = ThresholdMonitorEvolving(epsilon=1.0, delta=1e-6, threshold=50, k=3, svt_noise=DS)
    assert evolving.certified and evolving.deployable
    assert evolving.privacy == Privacy(1.0, 1e-6, Relation.REPLACE_ONE_USER, "computational")
    assert evolving.calibration == calibrate_monitor(0.5, 1e-6 / (1 + math.exp(0.5)), 3, svt_noise=DS)  # group privacy
    scaled = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=50, k=3, kappa=0.5, svt_noise=DS)
    assert not scaled.certified and not scaled.deployable and scaled.privacy is None
    continuous = ThresholdMonitor(epsilon=1.0, delta=1e-6, threshold=50, k=3)
    assert continuous.privacy == Privacy(1.0, 1e-6, Relation.ADD_REMOVE_RECORD)  # approximate, as before
    assert continuous.calibration == calibrate_monitor(1.0, 1e-6, 3) and not continuous.deployable


@pytest.mark.parametrize("seed", [None, 5])
@pytest.mark.parametrize("cls", [ThresholdMonitor, ThresholdMonitorEvolving])
def test_state_round_trip_keeps_certified_and_is_never_deployable(cls, seed):
    mech = cls(epsilon=1.0, delta=1e-6, threshold=50, k=3, seed=seed, svt_noise=DS)
    mech.run(sparse.csr_matrix(np.eye(4)), np.array([60, 10, 0, 49]), n_runs=2)
    restored = cls.from_bytes(mech.to_bytes())
    # the bytes cannot show that the key came from OS entropy (nor that they were not restored before): unverifiable
    assert mech.deployable == (seed is None) and restored.certified and not restored.deployable
    assert restored.privacy == mech.privacy and restored.calibration == mech.calibration
    np.testing.assert_array_equal(restored.draw_noise(4, 2)["v"], mech.draw_noise(4, 2)["v"])


def test_calibration_rejects_an_unknown_noise_in_one_line():
    with pytest.raises(ValueError, match="unknown svt_noise 'discrete'; allowed") as info:
        calibrate_monitor(1.0, 1e-6, 3, svt_noise="discrete")
    assert "\n" not in str(info.value)


def test_laplace_grid_bound_used_by_the_tail():
    # the calibration's tail bound relies on laplace_grid's relative rounding <= 2^-31 at scales >= 2
    for b in (2.0, 2.342280445846773, 521.7, 3.1e7, 2.0**33 + 0.7):
        t, s = laplace_grid(b)
        assert b <= t / s <= RHO * b
