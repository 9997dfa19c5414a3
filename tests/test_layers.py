"""The house's arrows, read from every module's imports (spec/architecture.md).

- reference/ imports itself and the standard library; reference/wire/ may also import kio
  (Kafka's wire vocabulary, still no IO);
- broker/ never imports conformance/;
- conformance/ imports broker/ only where it starts the project's own brokers: the embedded
  target, the cluster commands and the mutants (their launcher and their run);
- no import cycle among the project's modules, counting imports made inside functions and
  under TYPE_CHECKING (a cycle there is still two modules that each need the other).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOP = ("reference", "broker", "conformance")
BROKER_STARTERS = {
    "coordspec.conformance.suite.embedded_target",
    "coordspec.conformance.cli.cluster",
    "coordspec.conformance.mutants.launch",
    "coordspec.conformance.mutants.measure",
}


def _modules() -> dict[str, Path]:
    found = {}
    for top in TOP:
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(("coordspec", *parts))] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module ``name`` names in an import, resolved to a full dotted name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            named |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # "from package import module" names the module; "from module import name" the module.
            named |= {
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            }
    return named


IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


def _stdlib(name: str) -> bool:
    return name.partition(".")[0] in sys.stdlib_module_names


def test_every_room_is_found():
    assert {name.split(".")[1] for name in MODULES} == set(TOP)
    assert len(MODULES) > 100


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("coordspec.reference")))
def test_the_reference_imports_itself_and_the_standard_library(name):
    wire = name.startswith("coordspec.reference.wire")
    foreign = sorted(
        imported
        for imported in IMPORTS[name]
        if not (
            imported.startswith("coordspec.reference")
            or _stdlib(imported)
            or (wire and imported.partition(".")[0] == "kio")
        )
    )
    assert not foreign, f"{MODULES[name].relative_to(ROOT)} imports {foreign}"


def test_the_reference_reaches_for_no_io_clock_or_randomness():
    forbidden = {"socket", "asyncio", "threading", "subprocess", "random", "time", "os", "io"}
    offenders = {
        str(MODULES[name].relative_to(ROOT)): sorted(
            i for i in IMPORTS[name] if i.partition(".")[0] in forbidden
        )
        for name in MODULES
        if name.startswith("coordspec.reference")
    }
    assert not {path: found for path, found in offenders.items() if found}


def test_the_broker_never_imports_conformance():
    offenders = {
        str(MODULES[name].relative_to(ROOT)): sorted(
            i for i in IMPORTS[name] if i.startswith("coordspec.conformance")
        )
        for name in MODULES
        if name.startswith("coordspec.broker")
    }
    assert not {path: found for path, found in offenders.items() if found}


def test_conformance_starts_brokers_only_from_the_embedded_target_and_the_cluster_commands():
    offenders = sorted(
        str(MODULES[name].relative_to(ROOT))
        for name in MODULES
        if name.startswith("coordspec.conformance")
        and name not in BROKER_STARTERS
        and any(i.startswith("coordspec.broker") for i in IMPORTS[name])
    )
    assert not offenders


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    graph = {
        name: sorted(i for i in IMPORTS[name] if i in MODULES and i != name) for name in MODULES
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def test_no_import_cycle():
    assert not _cycles()


def test_the_cycle_finder_finds_a_cycle():
    IMPORTS["coordspec.reference.errors"].add("coordspec.reference.choices")
    IMPORTS["coordspec.reference.choices"].add("coordspec.reference.errors")
    try:
        assert ["coordspec.reference.choices", "coordspec.reference.errors"] in _cycles()
    finally:
        IMPORTS["coordspec.reference.errors"].discard("coordspec.reference.choices")
        IMPORTS["coordspec.reference.choices"].discard("coordspec.reference.errors")
