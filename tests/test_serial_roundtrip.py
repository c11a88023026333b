"""Every streaming object round-trips under every combination of its options (``serial_cases``).

After part of the stream the object is written and read back; both copies then take the rest of the stream and
must release the same values after every chunk: integers exactly and floats BITWISE (``assert_array_equal``), since
both copies run the same code on the same state in the same process, so even the rounding is the same.
"""

import inspect

import numpy as np
import pytest
from serial_cases import CASES, CHUNKS, NOT_STATE, SPLIT, Case, constructor_parameters, option_grid

from dpstream import serial

BASES = {"Serialisable", "SketchCore", "BlockTracker", "MonitorCore"}  # shared cores of the public classes
GRID = [(case, options) for case in CASES for options in option_grid(case)]


def _id(case: Case, options: dict) -> str:
    return "-".join([case.name, *map(str, options.values())])


def _concrete_serialisables() -> set[type]:
    found, todo = set(), [serial.Serialisable]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        # the auditor's negative controls are broken on purpose, not objects a user saves
        shipped = cls.__module__.startswith("dpstream.") and cls.__module__ != "dpstream.audit.negative_controls"
        if shipped and not inspect.isabstract(cls) and cls.__name__ not in BASES:
            found.add(cls)
    return found


def test_every_serialisable_class_has_a_case():
    missing = {c.__name__ for c in _concrete_serialisables()} - {case.name for case in CASES}
    assert not missing, f"no round-trip case in serial_cases.CASES for {sorted(missing)}"


def _assert_same(a: tuple, b: tuple) -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)  # exact, floats bit for bit (see the module docstring)


@pytest.mark.parametrize(("case", "options"), GRID, ids=[_id(*g) for g in GRID])
def test_restored_then_continued_equals_original_continued(case, options):
    original = case.build(**options)
    case.feed(original, 0, SPLIT)
    data = original.to_bytes()
    restored = type(original).from_bytes(data)
    assert type(restored) is type(original)
    given = {**case.base, **options}
    written = restored._serial_args()
    for name in constructor_parameters(case.cls):  # every constructor argument is written back
        if name in given and name not in NOT_STATE:
            assert name in written, f"{case.name}._serial_args omits {name!r}"
            assert written[name] == serial.json_value(given[name]), name
    _assert_same(case.releases(original, SPLIT), case.releases(restored, SPLIT))
    for lo, hi in CHUNKS:
        a, b = case.feed(original, lo, hi), case.feed(restored, lo, hi)
        _assert_same(a or (), b or ())
        _assert_same(case.releases(original, hi), case.releases(restored, hi))
    assert restored.to_bytes() == original.to_bytes()
