"""The privacy tester: valid and tight on a known mechanism; passes correct SVTs, catches Lyu-Su-Li variants."""

import math

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from dpstream.audit import audit, clopper_pearson, epsilon_lower_bound
from dpstream.audit.svt_cases import svt_case, svt_cases
from dpstream.noise import NoiseSource

N_RUNS = 200_000


def laplace_sampler(epsilon):
    return lambda x, n, seed: x + NoiseSource(seed).laplace(1.0 / epsilon, n)


def test_tester_bound_is_valid_and_tight_on_the_laplace_mechanism():
    # Event {x >= 1} on inputs 1 vs 0: probability ratio exactly e^eps, so the bound lies just below eps.
    res = audit(laplace_sampler(1.0), 1.0, 0.0, lambda x: x >= 1.0, N_RUNS, claimed_epsilon=1.0, seed=3)
    assert not res.fails
    assert 0.9 < res.epsilon_lower <= 1.0


def test_tester_catches_an_understated_epsilon():
    # The same Laplace(1) mechanism claimed at eps = 0.5 is really 1-DP: the tester must say so.
    res = audit(laplace_sampler(1.0), 1.0, 0.0, lambda x: x >= 1.0, N_RUNS, claimed_epsilon=0.5, seed=4)
    assert res.fails


def test_clopper_pearson_is_the_exact_beta_interval():
    low, high = clopper_pearson(30, 1000, 0.05)
    assert low == pytest.approx(beta_dist.ppf(0.025, 30, 971))
    assert high == pytest.approx(beta_dist.ppf(0.975, 31, 970))


def test_lower_bound_subtracts_delta_from_the_larger_probability():
    eps, direction = epsilon_lower_bound(5000, 1000, 10_000, delta=0.1, alpha=0.05)
    low, _ = clopper_pearson(5000, 10_000, 0.025)
    _, high = clopper_pearson(1000, 10_000, 0.025)
    assert eps == pytest.approx(math.log((low - 0.1) / high))
    assert direction == "D1>D2"
    assert epsilon_lower_bound(10, 10, 1000)[0] == 0.0


@pytest.mark.parametrize("case", [c.name for c in svt_cases() if not c.broken and c.event is not None])
def test_correct_mechanisms_pass_the_audit(case):
    res = svt_case(case).run(N_RUNS, seed=1)
    assert not res.fails, res.row()


TRUE_EPSILON = {  # of each control with a hand-picked event, at claimed eps = 1 (negative_controls docstrings)
    "broken_no_query_noise_swap": math.inf,
    "broken_sparse_half_noise_pinning": 2.0,
    "broken_sparse_query_noise_sigma_pinning": 1.5,
    "broken_unscaled_query_noise_pinning": (1 + 6 * 3) / 4,  # Lyu et al. Thm 4 at c = 3
    "broken_no_cutoff_pinning": math.inf,
}


@pytest.mark.parametrize("case", [c.name for c in svt_cases() if c.broken and c.event is not None])
def test_negative_controls_are_caught(case):
    res = svt_case(case).run(N_RUNS, seed=1)
    assert res.fails, res.row()
    assert res.epsilon_lower <= TRUE_EPSILON[case]  # a valid lower bound never exceeds the truth


def test_at_least_three_negative_controls():
    assert sum(c.broken for c in svt_cases()) >= 3


def test_audit_rejects_bad_parameters():
    s = laplace_sampler(1.0)
    with pytest.raises(ValueError, match="n_runs must be an integer >= 1"):
        audit(s, 1.0, 0.0, lambda x: x > 0, 0, 1.0)
    with pytest.raises(ValueError, match=r"alpha must be in the open interval \(0.0, 1.0\)"):
        audit(s, 1.0, 0.0, lambda x: x > 0, 10, 1.0, alpha=1.5)
    with pytest.raises(ValueError, match="one bool per run"):
        audit(s, 1.0, 0.0, lambda x: np.array([True]), 10, 1.0)
    with pytest.raises(ValueError, match="unknown audit case"):
        svt_case("nope")
