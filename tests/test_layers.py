"""The package's layers point one way (docs/harness.md#layers); no part imports another part's private module or name.

Every import of ``src/dpstream`` (module level or inside a function) is read with ``ast``; the allowed order is the
list in docs/harness.md, read from there, so it is written down once.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "dpstream"
DOC = ROOT / "docs" / "harness.md"
TOP_MODULES = ("cli", "watch", "__main__")  # top-level modules that are parts of their own; the others are ``core``


def layers(text: str) -> list[list[str]]:
    """The parts of the layer list in docs/harness.md, lowest layer first (the doc lists the highest first)."""
    block = re.search(r"^## Layers\n.*?```text\n(.*?)```", text, flags=re.S | re.M)
    assert block, "docs/harness.md has no '## Layers' section with a ```text block"
    return [[p.strip() for p in line.split(",")] for line in reversed(block[1].strip().splitlines())]


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part(module: str) -> str:
    """The layer part of a ``dpstream`` module: its subpackage, a top-level part, or ``core``."""
    pieces = module.split(".")
    if len(pieces) == 1:
        return "core"
    if (SRC / pieces[1]).is_dir():
        return pieces[1]
    return pieces[1] if pieces[1] in TOP_MODULES else "core"


def is_package(module: str) -> bool:
    return SRC.joinpath(*module.split(".")[1:]).is_dir()


def is_module(module: str) -> bool:
    return is_package(module) or SRC.joinpath(*module.split(".")[1:]).with_suffix(".py").exists()


def import_nodes(path: Path, text: str | None = None) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of ``path`` (or ``text`` placed there), with the absolute module a ``from`` reads."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text() if text is None else text, str(path))):
        if isinstance(node, ast.Import):
            yield node, ""
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            yield node, base


def imports(path: Path, text: str | None = None) -> Iterator[tuple[int, str]]:
    """(line, module) of every ``dpstream`` module that ``path`` (or ``text`` placed there) imports.

    ``from a import b`` gives ``a`` and, when b is a module, ``a.b``.
    """
    for node, base in import_nodes(path, text):
        if isinstance(node, ast.Import):
            found = [alias.name for alias in node.names]
        else:
            found = [base] + [f"{base}.{a.name}" for a in node.names if is_module(f"{base}.{a.name}")]
        yield from ((node.lineno, name) for name in found if name.split(".")[0] == "dpstream")


def private_names(path: Path, text: str | None = None) -> Iterator[tuple[int, str, str]]:
    """(line, module, name) of every ``_private`` name (not a module) taken by ``from dpstream... import``."""
    for node, base in import_nodes(path, text):
        if isinstance(node, ast.ImportFrom) and base.split(".")[0] == "dpstream":
            yield from ((node.lineno, base, a.name) for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__") and not is_module(f"{base}.{a.name}"))


def private_of_another_part(importer: str, imported: str) -> bool:
    """Whether ``imported`` is a ``_private`` module inside a subpackage that ``importer`` is not in."""
    pieces = imported.split(".")
    for depth in range(2, len(pieces)):
        if pieces[depth].startswith("_") and not pieces[depth].startswith("__"):
            owner = ".".join(pieces[:depth])
            return not (importer == owner or importer.startswith(owner + "."))
    return False


def sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_part_is_in_the_layer_list_once():
    order = [p for layer in layers(DOC.read_text()) for p in layer]
    found = {part(module_name(path)) for path in sources()}
    assert sorted(order) == sorted(set(order)), "a part is listed twice"
    assert found <= set(order), f"parts missing from docs/harness.md#layers: {sorted(found - set(order))}"


def test_imports_point_down_the_layers():
    rank = {p: i for i, layer in enumerate(layers(DOC.read_text())) for p in layer}
    wrong = []
    for path in sources():
        importer = module_name(path)
        for line, imported in imports(path):
            a, b = part(importer), part(imported)
            if a != b and rank[b] >= rank[a]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {importer} ({a}) imports {imported} ({b})")
    assert not wrong, "imports up or across the layers (docs/harness.md#layers):\n" + "\n".join(wrong)


def test_no_part_imports_another_parts_private_module():
    wrong = []
    for path in sources():
        importer = module_name(path)
        for line, imported in imports(path):
            if private_of_another_part(importer, imported):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {importer} imports {imported}")
    assert not wrong, "imports of another part's private module:\n" + "\n".join(wrong)


def test_no_part_imports_another_parts_private_name():
    wrong = []
    for path in sources():
        importer = module_name(path)
        for line, module, name in private_names(path):
            if part(module) != part(importer):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {importer} imports {name} from {module}")
    assert not wrong, "imports of another part's private name:\n" + "\n".join(wrong)


@pytest.mark.parametrize(("source", "bad"), [
    ("from dpstream.harness.timing import x\n", "up"),
    ("def f():\n    from dpstream.harness import config\n", "up"),
    ("from ..plots import names\n", "up"),
    ("from dpstream.heavy_hitters import LazyHH\n", None),
    ("from dpstream.svt._kernels import RELEASE_SAME\n", "private"),
    ("from dpstream.svt import _kernels\n", "private"),
    ("from dpstream.audit import _probe\n", None),
    ("from dpstream.svt.monitor import _Core\n", "private"),
    ("from dpstream.audit.probe import _helper\n", None),
])
def test_the_checks_see_a_bad_import(source, bad):
    """A module of a lower part (audit) importing upwards or a private module is caught, also inside a function."""
    rank = {p: i for i, layer in enumerate(layers(DOC.read_text())) for p in layer}
    found = [m for _, m in imports(SRC / "audit" / "probe.py", source)]
    up = [m for m in found if part(m) != "audit" and rank[part(m)] >= rank["audit"]]
    private = [m for m in found if private_of_another_part("dpstream.audit.probe", m)]
    private += [n for _, m, n in private_names(SRC / "audit" / "probe.py", source) if part(m) != "audit"]
    assert bool(up) == (bad == "up") and bool(private) == (bad == "private"), found


def exported_from(package: str, name: str) -> str | None:
    """The module whose ``name`` a package's ``__init__`` imports (followed through packages), or None."""
    for node, base in import_nodes(SRC.joinpath(*package.split(".")[1:], "__init__.py")):
        for alias in node.names if isinstance(node, ast.ImportFrom) else ():
            if (alias.asname or alias.name) == name:
                source = f"{base}.{alias.name}"
                if is_module(source) and not is_package(source):
                    return source
                return exported_from(base, alias.name) if is_package(base) else base
    return None


def module_graph() -> dict[str, set[str]]:
    """Module -> the ``dpstream`` modules it imports anywhere (at module level, in a function, for type checking).

    A name taken from a package counts as an import of the module its ``__init__`` takes the name from; the package
    itself is left out (its ``__init__`` imports its submodules by design).
    """
    graph: dict[str, set[str]] = {}
    for path in sources():
        if path.name == "__init__.py":
            continue
        importer = module_name(path)
        found = {m for _, m in imports(path)}
        for node, base in import_nodes(path):
            if isinstance(node, ast.ImportFrom) and base.split(".")[0] == "dpstream" and is_package(base):
                found |= {exported_from(base, a.name) or base for a in node.names if not is_module(f"{base}.{a.name}")}
        graph[importer] = {m for m in found if m != importer and not is_package(m)}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every node a path of one edge or more leads to from ``start``."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one node: nodes that reach each other."""
    reach = {node: reachable(graph, node) for node in graph}
    return {frozenset({node} | {m for m in reach[node] if node in reach.get(m, ())})
            for node in graph if any(node in reach.get(m, ()) for m in reach[node] if m != node)}


def test_cycles_finds_every_loop_and_only_loops():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}) == {
        frozenset("abc"), frozenset("ef")}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == set()


def test_no_import_cycle():
    """Between any two modules, also through imports inside functions and for type checking only."""
    found = cycles(module_graph())
    assert found == set(), f"import cycles: {[sorted(c) for c in found]}"


def test_the_graph_sees_imports_for_type_checking_and_names_taken_from_a_package():
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dpstream.counters.binary import BinaryTree\n"
    assert "dpstream.counters.binary" in {m for _, m in imports(SRC / "counters" / "tree_noise.py", text)}
    assert exported_from("dpstream.counters", "LaplaceTree") == "dpstream.counters.laplace_tree"
    assert "dpstream.counters.registry" in module_graph()["dpstream.sketches.lazy"]
