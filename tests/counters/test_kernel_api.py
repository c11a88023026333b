"""Other packages reach the counters through public names only (``dpstream.counters``, ``counters.kernels``)."""

import ast
from pathlib import Path

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
