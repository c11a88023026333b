"""The one construction path (``dpstream.trials.build``).

Instantiate of ``_target_``, strict configured keys, runtime arguments passed where the target takes them.
"""

import functools

import pytest

from dpstream.trials import build


def target(*, a, b=2, seed=None):
    return (a, b, seed)


def loose(**kwargs):
    return kwargs


CONFIG = {"name": "t", "trial": "m:f", "private": True, "uses": ["epsilon"], "_target_": "test_build.target", "a": 1}


def test_factory_binds_the_constructor_keys_only():
    make = build.factory({**CONFIG, "runs": 5, "path_xxh3": "abc"}, own=("runs",))
    assert isinstance(make, functools.partial) and make.func is target and make.keywords == {"a": 1}


def test_a_key_the_target_does_not_take_is_an_error_unless_a_sibling_takes_it():
    with pytest.raises(ValueError, match=r"'t': test_build.target takes no k_tilde; its arguments: a, b, seed"):
        build.factory({**CONFIG, "k_tilde": 3})

    def sibling(*, k_tilde):
        return k_tilde

    assert build.factory({**CONFIG, "k_tilde": 3}, siblings=(sibling,)).keywords == {"a": 1}


def test_call_passes_the_runtime_arguments_the_target_takes_and_config_wins():
    make = build.factory(CONFIG)
    assert build.call(make, a=9, seed=4, horizon=10) == (1, 2, 4)  # a is configured; horizon is not an argument
    assert build.call(build.factory({**CONFIG, "_target_": "test_build.loose"}), horizon=10) == {"a": 1, "horizon": 10}


def test_shared_keys_follow_uses():
    params = {"mechanism": {"uses": ["epsilon", "width", "release_times"]}, "epsilon": 0.5, "width": None, "delta": 0.1}
    assert build.shared(params) == {"epsilon": 0.5}  # width is unset, delta not used, release_times no argument
