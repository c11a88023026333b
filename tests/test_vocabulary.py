"""One vocabulary for every streaming object, a ``repr`` with parameters, and post-processing that costs no privacy.

The post-processing: counts clipped to [0, t], query-release answers to [0, 1], SVT answers to their range.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from dpstream.counters import COUNTERS, BinaryTree, counter_class
from dpstream.counters.gauss_bm import GaussBM
from dpstream.heavy_hitters import CMSHeap, LazyHH, PunctualHH
from dpstream.query_release import Conjunctions, LaplaceRelease, histogram, product_mixture
from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS
from dpstream.svt import NumericSparse
from dpstream.testing import registered

SKETCHES = (CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS)
STREAMING = (*SKETCHES, GaussBM, LazyHH, CMSHeap, PunctualHH)
VERBS = ("update", "extend", "query", "query_many", "to_bytes", "from_bytes", "merge")
"""Add one, add many, estimate, estimate many, save, restore, merge (refused with the reason where not allowed)."""
INTERVALS = ("query_interval", "query_interval_many")


@pytest.mark.parametrize("cls", STREAMING, ids=lambda c: c.__name__)
def test_every_streaming_object_answers_the_same_verbs(cls) -> None:
    missing = [verb for verb in (*VERBS, *INTERVALS) if not callable(getattr(cls, verb, None))]
    assert missing == []


def _top_level_names(text: str) -> list[str]:
    """The names of the outer call's arguments in ``Class(a=1, b=Inner(c=2))``: a, b."""
    depth, top = 0, []
    for char in text[text.index("(") + 1:-1]:
        depth += (char in "([{") - (char in ")]}")
        top.append(char if depth == 0 and char not in ")]}" else "")
    return [part.split("=")[0].strip() for part in "".join(top).split(",") if "=" in part]


@pytest.mark.parametrize("name", sorted(registered()))
def test_every_registered_mechanism_has_a_repr_with_its_parameters(name: str) -> None:
    mechanism = registered()[name].build(seed=0)
    text = repr(mechanism)
    assert text.startswith(f"{type(mechanism).__name__}(") and text.endswith(")"), text
    assert " object at 0x" not in text, text  # every parameter value has a repr of its own
    shown = set(_top_level_names(text))
    parameters = inspect.signature(type(mechanism)).parameters
    assert shown <= set(parameters), text
    required = {n for n, p in parameters.items() if p.default is p.empty and n != "seed"}
    assert required <= shown, f"{text} leaves out {sorted(required - shown)}"


def test_repr_shows_what_was_chosen_and_can_rebuild_it() -> None:
    sketch = LazyCMS(width=55, depth=3, epsilon=0.3, delta=1e-3, horizon=2**20, seed=1, hash_family="multiply_shift")
    assert repr(sketch) == ("LazyCMS(width=55, depth=3, epsilon=0.3, delta=0.001, horizon=1048576, "
                            "hash_family='multiply_shift')")
    assert repr(eval(repr(sketch), {"LazyCMS": LazyCMS})) == repr(sketch)  # the seed is never shown
    hh = LazyHH(k=8, k_tilde=64, epsilon=4.0, delta=1e-3, beta=5e-4, horizon=4096, node_noise="derived")
    assert repr(hh) == ("LazyHH(k=8, k_tilde=64, epsilon=4.0, delta=0.001, beta=0.0005, horizon=4096, "
                        "node_noise='derived')")
    assert repr(GaussBM(n=4, horizon=16, epsilon=1.0, delta=1e-6, counter="blt")) == (
        "GaussBM(n=4, horizon=16, epsilon=1.0, delta=1e-06, counter='blt')")
    for spec in COUNTERS.values():
        text = repr(spec(n=4, horizon=16, epsilon=1.0, delta=1e-6, m=2))
        assert text.startswith(f"{spec.cls.__name__}(") and "n=4, horizon=16, epsilon=1.0, delta=1e-06, m=2" in text
    derived = counter_class("binary", "derived")(n=4, horizon=16, epsilon=1.0, delta=1e-6)
    assert "node_noise='derived'" in repr(derived)  # the node noise chosen shows (not the default), and rebuilds
    assert "node_noise" not in repr(counter_class("binary", "stored")(n=4, horizon=16, epsilon=1.0, delta=1e-6))
    assert eval(repr(derived), {"BinaryTree": BinaryTree}).node_noise == "derived"


def test_gauss_bm_estimates_many_as_one_by_one() -> None:
    bm = GaussBM(n=6, horizon=8, epsilon=1.0, delta=1e-6, seed=3)
    bm.extend(np.array([0, 1, 1, 5]), np.array([2, 1, 1, 4]))
    js = np.array([5, 1, 0, 5])
    assert np.array_equal(bm.query_many(js), [bm.query(int(j)) for j in js])
    assert np.array_equal(bm.query_many(np.arange(6)), bm.query_all())
    interval = bm.query_interval_many(js)
    assert np.array_equal(interval.estimate, bm.query_many(js))
    with pytest.raises(ValueError, match=r"js must be .* in \[0, 6\)"):
        bm.query_many(np.array([6]))


def test_counts_clipped_to_their_range_and_raw_kept() -> None:
    stream = np.arange(400) % 20
    sketch = LazyCMS(width=8, depth=3, epsilon=0.5, delta=1e-6, horizon=stream.size, seed=2)
    sketch.extend(stream)
    unseen = np.arange(1000, 1200)
    raw = sketch.query_many(unseen)
    assert raw.min() < 0  # the noise makes counts negative: clipping has something to do
    clipped = sketch.query_many(unseen, clip=True)
    assert np.array_equal(clipped, np.clip(raw, 0, stream.size)) and clipped.min() >= 0
    assert sketch.query(1000, clip=True) == max(0.0, min(raw[0], 400.0))
    interval = sketch.query_interval_many(unseen, clip=True)
    assert np.all((interval.lower >= 0) & (interval.upper <= stream.size))
    assert np.array_equal(sketch.query_many(unseen), raw)  # the raw estimate is unchanged


def test_tracker_answers_from_its_output() -> None:
    stream = np.random.default_rng(0).permutation(np.concatenate([np.full(3000, 7), np.arange(1000) % 50 + 100]))
    hh = LazyHH(k=2, k_tilde=16, epsilon=4.0, delta=1e-3, beta=5e-4, horizon=stream.size + 5, seed=0)
    hh.extend(stream)
    out = hh.estimate()
    assert 7 in out.items.tolist()
    answers = hh.query_many(np.concatenate([out.items, [123456]]))
    assert np.array_equal(answers[:-1], out.estimates) and np.isnan(answers[-1])
    assert hh.query(7) == out.estimates[out.items.tolist().index(7)]
    at_output = hh.query_interval(7)
    assert at_output == hh.sketch.query_interval(7)  # t is an output step: the sketch's own interval
    hh.extend(np.full(5, 7))  # the output is held until the next output step, its interval too
    assert hh.query_interval(7) == at_output and hh.sketch.query_interval(7) != at_output
    assert np.isnan(hh.query_interval(123456).lower)


def test_query_release_answers_clipped_to_their_range() -> None:
    work = Conjunctions(3)
    true = work.answers(histogram(product_mixture(20, 3, seed=0), 3))
    release = LaplaceRelease(epsilon=0.5, delta=0.0, n=20, seed=0).run(true)
    assert release.answers.min() < 0 or release.answers.max() > 1  # Laplace answers leave [0, 1]
    assert np.array_equal(release.clipped(), np.clip(release.answers, 0.0, 1.0))
    assert np.all(np.abs(release.clipped() - true) <= np.abs(release.answers - true))  # never further from the truth


def test_svt_released_answers_clipped_to_the_given_range() -> None:
    run = NumericSparse(epsilon=0.2, threshold=5.0, c=3, seed=0).run(np.full(40, 8.0), n_runs=5)
    released = run.released
    assert released is not None
    clipped = run.clipped(0.0, 10.0)
    assert np.array_equal(np.isnan(clipped), np.isnan(released))
    assert np.nanmin(clipped) >= 0.0 and np.nanmax(clipped) <= 10.0
    assert np.nanmax(released) > 10.0 or np.nanmin(released) < 0.0  # eps = 0.2: the noise leaves the range


def test_intervals_refuse_what_they_do_not_cover() -> None:
    exact = CMS(width=16, depth=3, seed=0)
    exact.extend(np.arange(100) % 7)
    assert exact.query_interval(3) == (exact.query(3), exact.query(3), exact.query(3))  # no noise: no width
    trimmed = LazyCMS(width=8, depth=3, epsilon=1.0, delta=1e-6, horizon=100, seed=0, estimator="trimmed_mean")
    with pytest.raises(ValueError, match="estimator='alg4'"):
        trimmed.query_interval(3)
    with pytest.raises(ValueError, match=r"confidence must be a number in \(0, 1\), got 1.5"):
        exact.query_interval(3, confidence=1.5)
