"""The contract of every public mechanism: ``dpstream.testing.check_mechanism`` over every registered one.

Registration: ``dpstream.testing.shipped`` and the ``check`` of every descriptor (``dpstream.descriptor``). This file
checks that it is complete (every public seeded class of the mechanism packages is registered; every private one has
its noise checked against its formula, by the spec or by a listed test, and a sensitivity case) and runs the contract
over each. The suite's own ability to fail is tested in ``test_testing.py``. Counters (``dpstream.counters.Counter``
subclasses) are checked as the cells of the ``GaussBM`` and sketch specs (their sensitivity cases cover every counter).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

from dpstream.counters import Counter
from dpstream.testing import check_mechanism, registered

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("dpstream.svt", "dpstream.query_release", "dpstream.heavy_hitters", "dpstream.sketches",
            "dpstream.counters")
NOT_MECHANISMS = {"SketchCore": "the base class of the sketches (each public sketch is registered)",
                  "MonitorCore": "the base class of the threshold monitors (each public monitor is registered)",
                  "WatchConfig": "the configuration of dpstream watch, whose epochs are LazyHH instances (registered); "
                                 "its epoch accounting is tested in tests/test_watch.py"}
SPECS = registered()


def _private(spec) -> bool:
    return spec.privacy is not None


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_registered_mechanism_meets_the_contract(name: str) -> None:
    report = check_mechanism(SPECS[name])  # raises MechanismCheckError naming every failed check
    assert {"arguments", "privacy", "reproducibility"} <= set(report.passed)


def test_every_public_seeded_class_is_registered() -> None:
    found = set()
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        for info in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{package}.{info.name}")
            for name, obj in vars(module).items():
                if (inspect.isclass(obj) and obj.__module__ == module.__name__ and not name.startswith("_")
                        and not issubclass(obj, (Counter, BaseException))  # errors: no mechanism, maybe no signature
                        and "seed" in inspect.signature(obj).parameters):
                    found.add(name)
    registered_classes = {getattr(s.factory, "__name__", s.name) for s in SPECS.values()} | set(NOT_MECHANISMS)
    assert found - registered_classes == set(), "register these mechanisms in dpstream.testing.shipped"
    assert {"Sparse", "ThresholdMonitor", "LazyHH", "PrivateEquilibriumRelease", "GaussBM"} <= found  # it can fail


def test_every_private_mechanism_has_its_noise_and_sensitivity_checked() -> None:
    no_noise = [n for n, s in SPECS.items() if _private(s) and s.noise is None and not s.noise_tests
                and "noise" not in s.notes]
    assert no_noise == [], "give these specs noise draws (or list the test that checks their noise)"
    no_probe = [n for n, s in SPECS.items() if _private(s) and not s.sensitivity]
    assert no_probe == [], "give these specs a sensitivity case (dpstream.audit.sensitivity)"


@pytest.mark.parametrize("ref", sorted({r for s in SPECS.values() for r in s.noise_tests}))
def test_listed_noise_tests_exist(ref: str) -> None:
    path, name = ref.split("::")
    assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.MULTILINE), ref
