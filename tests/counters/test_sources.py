"""Noise sources (``counters.sources``): counters state their source's facts, answer its protocol; draw variances."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from test_factorisation import OldStyle

from dpstream import serial
from dpstream.counters import COUNTERS, NODE_NOISES, banded_sqrt, counter_class, node_noise_version, sources
from dpstream.counters.base import FACTS
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
    # a push skips asking for draws when the source derives its noise at release: it must then draw none
    drawn = sum(counter.noise_count(np.full(3, s, dtype=np.int64)) for s in range(1, 41))
    assert (drawn == 0) == counter.sparse_pushes, (drawn, counter.sparse_pushes)


def pushed(counter, steps: range) -> None:
    """``counter``'s cells 0, 1, 2 take ``steps`` in turn with increments 1, 2, 3."""
    for s in steps:
        counter.push(np.arange(3), np.full(3, s, dtype=np.int64), np.arange(1, 4, dtype=np.int64))


@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))],
                         ids=["copy", "deepcopy", "pickle"])
@pytest.mark.parametrize(("name", "noise"), list(COUNTERS))
def test_a_copied_counter_releases_its_own_sums(name, noise, duplicate):
    # what a counter keeps to speed up its releases (the stored trees' read-only release view) follows the copy:
    # pushed on, a deep copy or an unpickled one releases what an untouched counter of the same seed releases
    def at(s: int) -> np.ndarray:
        return np.full(3, s, dtype=np.int64)

    def build():
        return COUNTERS[name, noise](n=3, horizon=16, epsilon=1.0, delta=1e-6, seed=4)

    original, reference = build(), build()
    pushed(original, range(1, 4))
    pushed(reference, range(1, 6))
    before = np.array(original.release_all(at(3)))  # makes the stored trees' view
    twin = duplicate(original)
    if duplicate is copy.copy:  # a shallow copy shares the state: its pushes are the original's
        pushed(twin, range(4, 6))
        np.testing.assert_array_equal(original.release_all(at(5)), reference.release_all(at(5)))
        return
    pushed(twin, range(4, 6))
    np.testing.assert_array_equal(twin.release_all(at(5)), reference.release_all(at(5)))
    np.testing.assert_array_equal(twin.release_wanted(at(5), np.ones(3, dtype=bool)), reference.release_all(at(5)))
    np.testing.assert_array_equal(original.release_all(at(3)), before)


PROTOCOL_CLASSES = list(dict.fromkeys(d.cls for d in COUNTERS.values()))


@pytest.mark.parametrize("cls", [*PROTOCOL_CLASSES, OldStyle], ids=lambda c: c.__name__)
def test_every_counter_class_answers_the_source_protocol(cls):
    # NOISES, noise_of and noise_facts on every class, whatever its family (a class with one source included): the
    # registry asks them and nothing else
    assert cls.NOISES and all(nodes.source.name == name for name, nodes in cls.NOISES.items())
    assert cls.noise_of(None) is next(iter(cls.NOISES.values())) and cls.source is cls.noise_of(None).source
    with pytest.raises(ValueError, match=f"node_noise='nowhere' is not available with counter={cls.name!r}; allowed"):
        cls.noise_of("nowhere")
    for name, nodes in cls.NOISES.items():
        facts = cls.noise_facts(nodes)
        assert tuple(facts) == FACTS and facts["source"] is nodes.source and facts["node_noise"] == name
        counter = cls(node_noise=name, n=2, horizon=16, epsilon=1.0, delta=1e-6, seed=1)
        assert {attr: getattr(counter, attr) for attr in FACTS} == facts
        args = counter._serial_args()
        assert args.get("node_noise", name) == name and ("node_noise" in args) == cls.names_noise()
    assert cls.names_noise() or len(cls.NOISES) == 1  # a state of a class taking several says which


def test_every_counter_class_takes_the_noises_its_descriptors_offer_and_no_other():
    # the registry is the one place that says which (counter, node noise) pairs exist and are checked: a class that
    # built a pair the registry does not list (BandedSqrt4 with derived noise) would run an unchecked counter
    for cls in PROTOCOL_CLASSES:
        assert set(cls.NOISES) == {noise for (name, noise) in COUNTERS if name == cls.name}, cls.__name__


@pytest.mark.parametrize("bands", [4, 7, 64])
def test_a_band_count_without_derived_noise_refuses_it_in_one_line(bands):
    cls = banded_sqrt(bands)
    refusal = f"^node_noise='derived' is not available with counter='banded{bands}'; allowed: stored$"
    with pytest.raises(ValueError, match=refusal):
        cls(node_noise="derived", n=2, horizon=16, epsilon=1.0, delta=1e-6, seed=1)
    # nor from bytes: a banded16 state with derived noise, relabelled as this band count, is refused the same way
    data = banded_sqrt(16)(node_noise="derived", n=2, horizon=16, epsilon=1.0, delta=1e-6, seed=1).to_bytes()
    header, arrays = serial.unpack(data)
    with pytest.raises(ValueError, match=refusal[1:-1]):
        cls.from_bytes(serial.pack(cls.__name__, header["args"], header["state"], arrays))
    stored = cls(n=2, horizon=16, epsilon=1.0, delta=1e-6, seed=1)  # its stored noise, named in its states
    assert serial.unpack(stored.to_bytes())[0]["args"]["node_noise"] == "stored"


def test_one_class_per_factorisation():
    # no counter x noise classes: every counter name is one class, and the class-per-noise names of formats 1 and 2
    # are read by the factorisation's class (``serial.RENAMED``), never registered as classes of their own
    for name in {c for c, _ in COUNTERS}:
        assert len({d.cls for (c, _), d in COUNTERS.items() if c == name}) == 1, name
    old = {tag for renamed in serial.RENAMED.values() for tag, (new, _) in renamed.items() if tag != new}
    assert {"DerivedBLT", "DiscreteLaplaceTree", "DerivedSqrtFactorisation", "DerivedBinary"} <= old
    assert not old & set(serial.REGISTRY)


def test_a_counter_named_by_module_path_runs_and_records_the_node_noise_asked():
    blt = "dpstream.counters.blt:BLTCounter"
    derived = counter_class(blt, "derived")(n=2, horizon=16, epsilon=1.0, delta=1e-6, seed=1)
    assert (derived.node_noise, derived.notion) == ("derived", "computational")
    assert node_noise_version({"counter": blt, "node_noise": "derived"}) == {"node_normal": NODE_NORMAL} == \
        node_noise_version({"counter": "blt", "node_noise": "derived"})
    with pytest.raises(ValueError, match=r"node_noise='discrete_secure' is not available with counter='blt'; "
                                         r"allowed: stored, derived"):
        counter_class(blt, "discrete_secure")


def test_only_derived_blt_counts_the_generation_tables_in_its_working_memory():
    from dpstream.counters.blt import BUFFERS
    from dpstream.counters.blt_tree import tree_bytes

    calibration = 16 * (BUFFERS + 2) * 1024
    assert counter_class("blt", "stored").working_bytes(1024) == calibration
    assert counter_class("blt", "derived").working_bytes(1024) == calibration + tree_bytes(BUFFERS, 11)
