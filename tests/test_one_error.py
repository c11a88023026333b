"""One error per mistake: each misuse is either the behaviour a user expects or a one-line error naming it."""

import importlib.util

import numpy as np
import pytest

from dpstream.errors import ConfigError
from dpstream.hashing import canonical_key
from dpstream.heavy_hitters import CMSHeap, LazyHH
from dpstream.noise import NoiseSource, check_noise_mode, noise_mode
from dpstream.sketches import CMS, CS, LazyCMS, PunctualCS
from dpstream.svt import AboveThreshold, Sparse


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("make", [lambda: Sparse(epsilon=1.0, threshold=0.0, c=2, seed=1),
                                  lambda: AboveThreshold(epsilon=1.0, threshold=0.0, seed=1)])
def test_a_second_positional_argument_to_run_many_on_plain_answers_is_an_error(make):
    answers = np.zeros(5)
    with pytest.raises(ValueError, match=r"counts is only for linear queries") as err:
        make().run(answers, 500000)
    assert "pass n_runs=500000" in one_line(err)
    assert make().run(answers, n_runs=3).outcomes.shape == (3, 5)


@pytest.mark.parametrize("cls", [CMS, CS])
def test_non_private_sketches_need_no_horizon(cls):
    sketch = cls(width=16, depth=3, seed=1)
    stream = np.arange(10_000) % 7
    sketch.extend(stream)
    assert sketch.t == 10_000 and (cls is CS or sketch.query(3) >= 1429)  # Count-Min never underestimates
    assert cls.from_memory(kilobytes=2, depth=3).width > 0


def test_private_sketches_still_need_a_horizon():
    with pytest.raises(ValueError, match=r"LazyCMS needs horizon \(the stream length its noise is calibrated for\)"):
        LazyCMS(width=8, depth=3, epsilon=1.0, delta=1e-6)


@pytest.mark.parametrize("make", [lambda: CMS(width=8, depth=2), lambda: PunctualCS(
    width=8, depth=2, epsilon=1.0, delta=1e-6, horizon=100), lambda: LazyHH(
    k=2, k_tilde=4, epsilon=1.0, delta=0.01, beta=0.005, horizon=100), lambda: CMSHeap(k=2, width=8, horizon=100)])
def test_extend_refuses_a_2d_array_in_one_line(make):
    with pytest.raises(ValueError, match=r"1-D array.*got shape \(3, 4\)") as err:
        make().extend(np.zeros((3, 4), dtype=np.int64))
    one_line(err)


def test_trackers_accept_the_strings_the_sketches_accept():
    words = np.array(["to"] * 60 + ["be"] * 30 + ["or"] * 10)
    np.random.default_rng(0).shuffle(words)
    kw = {"k": 2, "k_tilde": 4, "epsilon": 50.0, "delta": 0.01, "beta": 0.005, "horizon": 100, "seed": 5}
    by_word, by_key = LazyHH(**kw), LazyHH(**kw)
    by_word.extend(words)
    by_key.extend(np.array([canonical_key(w) for w in words], dtype=np.int64))
    np.testing.assert_array_equal(by_word.candidates, by_key.candidates)  # strings are keyed as the sketches key them
    assert canonical_key("to") in by_word.candidates.tolist()
    sketch = LazyCMS(width=4, depth=3, epsilon=1.0, delta=1e-6, horizon=100, seed=1)
    sketch.extend(words)  # the same input LazyHH now takes
    heap = CMSHeap(k=2, width=8, horizon=100)
    heap.update("to")
    assert heap.sketch.query("to") == 1


def test_noise_secure_without_opendp_names_the_extra_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "opendp" else real(name, *a))
    with pytest.raises(ConfigError, match=r"pip install 'dpstream\[secure\]'") as err:
        check_noise_mode("secure")
    one_line(err)
    with pytest.raises(ConfigError, match="opendp"), noise_mode("secure"):
        NoiseSource(1)
    assert check_noise_mode("numpy") == "numpy"
