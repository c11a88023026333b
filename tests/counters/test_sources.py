"""Noise sources (``counters.sources``): every counter's switches are its source's, and the draw variances."""

from __future__ import annotations

import numpy as np
import pytest

from dpstream.counters import COUNTERS, NODE_NOISES, node_noise_version, sources
from dpstream.counters.philox import NODE_NORMAL
from dpstream.secure.samplers import EXACT_SAMPLER, LAPLACE_SAMPLER


@pytest.mark.parametrize(("name", "noise"), list(COUNTERS))
def test_every_counter_states_what_its_source_states(name, noise):
    cls = COUNTERS[name, noise]
    source = cls.source
    assert source.name == cls.node_noise == noise
    assert cls.notion == source.notion and cls.sparse_pushes == source.sparse_pushes
    assert cls.fixed_bytes == source.key_bytes
    assert (cls.draws_per_push > 0) == source.draws_at_push


def test_node_noises_and_store_versions_come_from_the_sources():
    assert NODE_NOISES == ("stored", "derived", "discrete_secure", "discrete_secure_ahead", "discrete_secure_ct",
                           "discrete_secure_stored")
    assert node_noise_version({"node_noise": "derived"}) == {"node_normal": NODE_NORMAL}
    for noise in ("discrete_secure", "discrete_secure_ahead", "discrete_secure_stored"):
        assert node_noise_version({"node_noise": noise}) == {"exact_sampler": EXACT_SAMPLER}
    assert node_noise_version({"node_noise": "discrete_secure_ct"}) == {}
    assert node_noise_version({"node_noise": "stored"}) == node_noise_version({}) == {}


@pytest.mark.parametrize(("name", "noise"), list(COUNTERS))
def test_every_counter_is_keyed_by_its_own_sources_version(name, noise):
    # by the (counter, node_noise) pair: sources of one name (discrete_secure_stored) draw from different samplers
    assert node_noise_version({"counter": name, "node_noise": noise}) == COUNTERS[name, noise].source.version()


def test_the_exact_discrete_laplace_tree_is_keyed_by_the_laplace_sampler():
    assert node_noise_version({"counter": "laplace", "node_noise": "discrete_secure_stored"}) == {
        "laplace_sampler": LAPLACE_SAMPLER}
    assert node_noise_version({"counter": "binary", "node_noise": "discrete_secure_stored"}) == {
        "exact_sampler": EXACT_SAMPLER}


def test_draw_variance_is_the_distributions():
    # Laplace(b) has variance 2 b^2: checked on draws (SE of the sample variance of 200k Laplace draws ~ 1.1%)
    b = 1.5
    draws = np.random.default_rng(2).laplace(0.0, b, 200_000)
    assert sources.STORED_LAPLACE.draw_variance(b) == pytest.approx(draws.var(), rel=0.05)
    assert sources.STORED.draw_variance(b) == sources.DERIVED.draw_variance(b) == b**2
    tree = COUNTERS["laplace", "stored"](n=1, horizon=8, epsilon=1.0, delta=1e-6, seed=1)
    assert tree.draw_variance == pytest.approx(2.0 * tree.scale**2)


@pytest.mark.parametrize(("name", "noise"), list(COUNTERS))
def test_a_built_counter_states_what_its_descriptor_states(name, noise):
    # what callers read before building (memory model, kernel, draws) is the pair's, and the counter built agrees
    spec = COUNTERS[name, noise]
    counter = spec(n=3, horizon=40, epsilon=1.0, delta=1e-6, seed=2)
    assert (counter.name, counter.node_noise, counter.source) == (name, noise, spec.source)
    for attr in ("kind", "tracks_steps", "draws_per_push", "partial_release", "sparse_pushes", "fixed_bytes",
                 "notion"):
        assert getattr(counter, attr) == getattr(spec, attr), attr
    assert spec.bytes_per_counter(40, 8) * 3 + spec.fixed_bytes == type(counter)._allocation_bytes(
        {**counter._serial_args(), "n": 3})
