"""The noise sources: seeded numpy draws, bulk == one-by-one, and OpenDP's secure samplers."""

import numpy as np
import pytest
from scipy import stats

from dpstream.noise import NoiseSource, as_seed_sequence, child_seed, children, noise_mode, trial_seed


def test_bulk_draws_equal_one_by_one_draws():
    a, b = NoiseSource(3), NoiseSource(3)
    bulk = a.gaussian(2.0, 50)
    single = np.concatenate([b.gaussian(2.0, 1) for _ in range(50)])
    np.testing.assert_array_equal(bulk, single)
    np.testing.assert_array_equal(a.laplace(1.5, 7), np.concatenate([b.laplace(1.5, 3), b.laplace(1.5, 4)]))


@pytest.mark.parametrize("root", [np.random.SeedSequence(5), np.random.SeedSequence(7, spawn_key=(3,)),
                                  np.random.SeedSequence(9, spawn_key=(1, 2), pool_size=8), 4])
def test_children_equal_spawn_of_a_fresh_seed_and_do_not_mutate(root):
    # the seeding refactor must reproduce the SeedSequences of the bare ``.spawn(n)`` it replaced, exactly
    fresh = as_seed_sequence(root) if isinstance(root, int) else np.random.SeedSequence(
        root.entropy, spawn_key=root.spawn_key, pool_size=root.pool_size)
    spawned = fresh.spawn(3)
    got = children(root, 3)
    assert [(c.entropy, c.spawn_key, c.pool_size) for c in got] == [
        (c.entropy, c.spawn_key, c.pool_size) for c in spawned]
    assert np.array_equal(got[2].generate_state(4), spawned[2].generate_state(4))
    assert (child_seed(root, 1).entropy, child_seed(root, 1).spawn_key) == (spawned[1].entropy, spawned[1].spawn_key)
    if not isinstance(root, int):
        assert root.n_children_spawned == 0  # non-mutating: calling twice gives the same children
        assert [c.spawn_key for c in children(root, 3)] == [c.spawn_key for c in got]


def test_child_seed_rejects_a_negative_index():
    with pytest.raises(ValueError, match="-1"):
        child_seed(0, -1)


def test_trial_seed_equals_spawned_child():
    child = np.random.SeedSequence(11).spawn(4)[2]
    assert np.array_equal(np.random.default_rng(trial_seed(11, 2)).random(3), np.random.default_rng(child).random(3))


def test_rejects_bad_seed_and_mode():
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        as_seed_sequence(-1)
    with pytest.raises(ValueError, match="unknown noise mode 'fast'; allowed: numpy, secure"):
        NoiseSource(0, mode="fast")


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_secure_mode_draws_from_the_stated_distribution(kind):
    """KS test at p = 1e-4 over 4000 OpenDP draws against N(0, 3^2) / Lap(3)."""
    with noise_mode("secure"):
        source = NoiseSource(0)
    assert source.mode == "secure"
    draws = getattr(source, kind)(3.0, 4000)
    dist = stats.norm(scale=3.0) if kind == "gaussian" else stats.laplace(scale=3.0)
    assert stats.kstest(draws, dist.cdf).pvalue > 1e-4
    assert draws.shape == (4000,)
