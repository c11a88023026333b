"""Memory budgets hold: ``from_memory`` gives the widest sketch that fits, and absurd sizes fail before allocating."""


import numpy as np
import pytest

from dpstream.counters import COUNTERS
from dpstream.counters.gauss_bm import GaussBM
from dpstream.hashing import HASH_FAMILIES
from dpstream.heavy_hitters import CMSHeap
from dpstream.sketches import CMS, CS, LazyCMS, LazyCS, PunctualCMS, PunctualCS
from dpstream.sketches.memory import sketch_bytes
from dpstream.validation import physical_memory

PRIVATE = (LazyCMS, LazyCS, PunctualCMS, PunctualCS)
GRID = [(cls, counter, node_noise, calibration, family)
        for cls in PRIVATE for (counter, node_noise) in COUNTERS
        for calibration in ("classic", "analytic") for family in HASH_FAMILIES]
GRID += [(cls, "binary", "stored", "classic", family) for cls in (CMS, CS) for family in HASH_FAMILIES]


def case_id(case):
    cls, counter, node_noise, calibration, family = case
    return f"{cls.__name__}-{counter}-{node_noise}-{calibration}-{family}"


@pytest.mark.parametrize("case", GRID, ids=case_id)
@pytest.mark.parametrize(("kilobytes", "horizon"), [(2, 2**16), (24, 2**20), (7.5, 10**5)])
def test_actual_bytes_fit_the_budget_and_one_more_column_would_not(case, kilobytes, horizon):
    cls, counter, node_noise, calibration, family = case
    options = {"counter": counter, "node_noise": node_noise, "calibration": calibration, "hash_family": family}
    private = {"epsilon": 1.0, "delta": 1e-6} if cls in PRIVATE else {}
    cells = COUNTERS[counter, node_noise] if cls in PRIVATE else COUNTERS["binary", "stored"]
    one = sketch_bytes(cls._schedule.kind, np.array([1]), 3, horizon, "actual", cells, family)[0]
    if one > kilobytes * 1000:  # a counter with O(T) state (the square root): not one column fits, and it says so
        with pytest.raises(ValueError, match=f"too small for one column.*the minimum is {one / 1000} KB"):
            cls.from_memory(kilobytes=kilobytes, depth=3, horizon=horizon, seed=1, model="actual", **private, **options)
        return
    sketch = cls.from_memory(kilobytes=kilobytes, depth=3, horizon=horizon, seed=1, model="actual", **private,
                             **options)
    budget = kilobytes * 1000
    assert sketch.memory_bytes <= budget
    built = sketch._state.counters if cls in PRIVATE else None  # the model of the counter the sketch holds
    cells = COUNTERS[built.name, built.node_noise] if built is not None else COUNTERS["binary", "stored"]
    model = sketch_bytes(cls._schedule.kind, np.array([sketch.width, sketch.width + 1]), 3, horizon, "actual", cells,
                         family)
    assert model[0] == sketch.memory_bytes, "the model is the bytes held"
    assert model[1] > budget, "one more column would exceed the budget"
    wider = cls(width=sketch.width + 1, depth=3, horizon=horizon, seed=1, **private, **options)
    assert wider.memory_bytes > budget


def test_the_reported_lazycms_case_fits():
    sketch = LazyCMS.from_memory(kilobytes=24, depth=3, epsilon=1.0, delta=1e-6, horizon=10**6, seed=1,
                                 node_noise="derived", hash_family="multiply_shift", model="actual")
    assert sketch.memory_bytes <= 24000 < LazyCMS(width=sketch.width + 1, depth=3, epsilon=1.0, delta=1e-6,
                                                  horizon=10**6, node_noise="derived",
                                                  hash_family="multiply_shift").memory_bytes


@pytest.mark.parametrize("cls", [LazyCMS, PunctualCMS, CMS])
def test_the_paper_model_keeps_its_own_accounting_and_its_widths(cls):
    # model="paper" reproduces the paper's widths 2000 / 55 / 33 (24 KB, d = 3, T = 2^20): its bytes fit, one more
    # column's would not; the bytes held are more (hash parameters, step counts, pending P), as sketches.memory says
    private = {} if cls is CMS else {"epsilon": 1.0, "delta": 1e-6}
    sketch = cls.from_memory(kilobytes=24, depth=3, horizon=2**20, seed=1, **private)
    assert sketch.width == {CMS: 2000, LazyCMS: 55, PunctualCMS: 33}[cls]
    paper = sketch_bytes(cls._schedule.kind, np.array([sketch.width, sketch.width + 1]), 3, 2**20, "paper")
    assert paper[0] <= 24000 < paper[1]


@pytest.mark.parametrize("make", [
    lambda: CMS(width=10**12, depth=3, horizon=100),
    lambda: LazyCS(width=10**12, depth=3, epsilon=1.0, delta=1e-6, horizon=2**20),
    lambda: PunctualCMS(width=10, depth=10**11, epsilon=1.0, delta=1e-6, horizon=2**20),
    lambda: LazyCMS.from_memory(kilobytes=1e12, depth=3, epsilon=1.0, delta=1e-6, horizon=2**20),
    lambda: CMSHeap(k=5, width=10**12, depth=3, horizon=3000),
    lambda: GaussBM(n=10**12, horizon=100, epsilon=0.5, delta=1e-3),
], ids=["cms", "lazycs", "punctual-depth", "from-memory", "cms-heap", "gaussbm"])
def test_absurd_sizes_fail_before_allocating_naming_the_memory(make):
    with pytest.raises(ValueError, match=r"would need [0-9.]+ [kMGTP]?B of memory, more than this machine's") as err:
        make()
    assert "\n" not in str(err.value)


def test_a_size_that_fits_the_machine_is_not_refused():
    assert physical_memory() > 10**8
    assert CMS(width=10**6, depth=3, horizon=100).memory_bytes > 10**7


def test_grid_covers_every_option():
    seen = {(c.__name__, n, nn, cal, f) for c, n, nn, cal, f in GRID}
    assert len(seen) == len(GRID) == len(PRIVATE) * len(COUNTERS) * 2 * len(HASH_FAMILIES) + 2 * len(HASH_FAMILIES)
