"""The golden comparison rule: exact for integers, strings and booleans, a relative tolerance for floats."""

import math

from tolerance import REL_TOL, differences, same


def test_one_ulp_of_a_float_is_the_same_value():
    # the reported case: one unit in the last place between two CPUs
    assert same(0.2139154496653619, 0.2139154496653618)
    assert same(math.nextafter(1e300, math.inf), 1e300) and same(float("nan"), float("nan"))


def test_a_float_change_beyond_the_tolerance_differs():
    assert not same(1.0, 1.0 + 10 * REL_TOL)
    assert not same(0.0, 1e-300), "no absolute slack: a zero stays zero"
    assert not same(float("nan"), 0.0) and not same(0.0, float("nan"))


def test_integers_strings_and_booleans_compare_exactly():
    assert not same(10**12, 10**12 + 1) and not same("confirmed", "Confirmed")
    assert not same(True, 1) and not same(1, 1.0), "a type change is a change"
    assert same([1, 2.0, "a"], [1, 2.0 * (1 + REL_TOL / 10), "a"]) and not same([1, 2], [1, 2, 3])


def test_differences_go_column_by_column_and_skip_ignored_ones():
    recorded = {"n": 3, "x": 0.5, "word": "refuted", "numpy_version": "2.0"}
    now = {"n": 3, "x": 0.5 * (1 + 1e-12), "word": "confirmed", "numpy_version": "2.1", "extra": 1}
    assert differences(recorded, now, ignore=["numpy_version"]) == {"word": ("refuted", "confirmed"),
                                                                     "extra": (None, 1)}
