"""No import circles among sidecar's modules at run time, and the layers import one way.

The graph is read from the source with `ast`: every import a module runs (at its
top or inside a function) is an edge; imports under `if TYPE_CHECKING:` are not,
they never run. Importing `a.b.c` also runs the packages `a.b` and `a`, so those
are edges too, except the importer's own packages (they are already loading when it
runs, so `from . import x` inside a package is no circle).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

import sidecar

ROOT = Path(sidecar.__file__).resolve().parent

# Packages left out of the check (none: every package of sidecar is checked).
NOT_CHECKED_YET: tuple[str, ...] = ()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, skipping `if TYPE_CHECKING:` bodies."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _run_time_imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _run_time_imports(node)


def _type_checking_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                for inner in ast.walk(child):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        yield inner


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    """The sidecar modules an import statement loads."""
    names: set[str] = set()
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
    else:
        if node.level:
            package = module if is_package else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{node.module}" if node.module else package
        else:
            base = node.module or ""
        names.add(base)
        # `from package import name` loads the submodule `name` when there is one.
        names.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known)
    loaded: set[str] = set()
    own_ancestors = {module.rsplit(".", i)[0] for i in range(module.count(".") + 1)}
    for name in names:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if prefix in known and prefix not in own_ancestors:
                loaded.add(prefix)
    loaded.discard(module)
    return loaded


@functools.cache
def graph(type_checking: bool = False) -> dict[str, set[str]]:
    modules = all_modules()
    known = set(modules)
    edges: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        imports = _type_checking_imports(tree) if type_checking else _run_time_imports(tree)
        is_package = path.name == "__init__.py"
        edges[module] = set().union(*(_targets(module, is_package, node, known) for node in imports))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def checked(module: str) -> bool:
    return not any(module == p or module.startswith(p + ".") for p in NOT_CHECKED_YET)


def test_the_graph_sees_the_modules_and_their_imports() -> None:
    edges = graph()
    assert "sidecar.core.engine" in edges and "sidecar.core.turn_queue" in edges["sidecar.core.engine"]
    assert "sidecar.acp" in edges["sidecar.core.agent_supervisor"]
    assert "sidecar.titles" in edges["sidecar.core.titling"]
    # A relative `from . import errors` is the module sidecar.core.errors.
    assert "sidecar.core.errors" in edges["sidecar.core.sessions"]


def test_cycle_detection_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]


def test_no_run_time_import_circle() -> None:
    edges = {m: {t for t in ts if checked(t)} for m, ts in graph().items() if checked(m)}
    assert cycles(edges) == []


def test_core_helpers_never_reach_back_into_the_engine_facade() -> None:
    """Not even for typing: a helper gets a narrow interface of what it needs."""
    run_time, typing_only = graph(), graph(type_checking=True)
    for module in run_time:
        if module.startswith("sidecar.core.") and module != "sidecar.core.engine":
            uses = run_time[module] | typing_only[module]
            assert "sidecar.core.engine" not in uses, f"{module} imports the engine facade"


@pytest.mark.parametrize("layer", ["sidecar.acp", "sidecar.core", "sidecar.titles"])
def test_lower_layers_never_import_the_lsp_layer(layer: str) -> None:
    run_time, typing_only = graph(), graph(type_checking=True)
    for module in run_time:
        if module == layer or module.startswith(layer + "."):
            uses = run_time[module] | typing_only[module]
            assert not any(u.startswith("sidecar.lsp") for u in uses), f"{module} imports the LSP layer"
