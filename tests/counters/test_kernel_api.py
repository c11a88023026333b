"""Other packages reach the counters through public names only (``dpstream.counters``, ``counters.kernels``)."""

import ast
from pathlib import Path

import pytest

import dpstream
from dpstream.counters import kernels

SRC = Path(dpstream.__file__).parent


def _private_counter_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [n for n in names if n.startswith("dpstream.counters.") and
                  any(part.startswith("_") for part in n.split(".")[2:])]
    return found


def test_no_package_outside_counters_imports_a_private_counters_module():
    bad = {str(p.relative_to(SRC)): hits for p in SRC.rglob("*.py")
           if p.parent.name != "counters" and (hits := _private_counter_imports(p))}
    assert not bad, f"import these from dpstream.counters or dpstream.counters.kernels instead: {bad}"


def test_the_check_sees_a_private_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from dpstream.counters._kernels import cell_push\nfrom dpstream.counters import _derived\n")
    hits = _private_counter_imports(module)
    assert "dpstream.counters._kernels" in hits and "dpstream.counters._derived" in hits


def test_the_kernel_api_names_the_loops_need():
    assert set(kernels.__all__) >= {"DERIVED", "EXTERNAL", "KINDS", "cell_push", "specialise", "release_wanted_cached"}


def test_every_counter_kind_has_one_registered_push_and_a_kind_is_taken_once():
    from dpstream.counters import COUNTERS, _kernels

    assert {cls.kind for cls in COUNTERS.values()} <= set(kernels.KINDS)
    assert len(set(map(id, _kernels.PUSHES.values()))) == len(_kernels.PUSHES)  # one push a kind
    with pytest.raises(ValueError, match="taken"):
        _kernels.register_push(kernels.DERIVED, _kernels.PUSHES[_kernels.STORED])
    with pytest.raises(ValueError, match="allowed: an int >= 0"):
        _kernels.register_push(kernels.EXTERNAL, _kernels.PUSHES[_kernels.STORED])
    assert _kernels.register_push(kernels.DERIVED, _kernels.PUSHES[kernels.DERIVED]) == kernels.DERIVED
