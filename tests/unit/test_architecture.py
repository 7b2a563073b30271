"""The rules of docs/architecture.md ("Import rules"), read from the source.

The kernel imports no feature; no feature imports another; only the LSP shell (`sidecar/lsp/`)
and a feature's LSP modules (`lsp_*.py`) import pygls or lsprotocol; the LSP shell imports no
feature; no import circle, type-only imports included; no module over 500 lines.

What the re-layout of issue 40 has not untangled yet is listed in `STILL_TO_UNTANGLE`, exactly:
a new crossing fails, and so does a listed one that is gone (the list only shrinks).

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
    assert "sidecar.composition" in edges and "sidecar.kernel.kernel" in edges["sidecar.composition"]
    assert "sidecar.acp" in edges["sidecar.kernel.agent_supervisor"]
    assert "sidecar.kernel.errors" in edges["sidecar.features.titles.titling"]
    # A relative `from . import errors` is the module sidecar.kernel.errors.
    assert "sidecar.kernel.errors" in edges["sidecar.kernel.sessions"]


def test_cycle_detection_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]


def test_no_run_time_import_circle() -> None:
    edges = {m: {t for t in ts if checked(t)} for m, ts in graph().items() if checked(m)}
    assert cycles(edges) == []


def test_kernel_parts_never_reach_back_into_the_composition_root() -> None:
    """Not even for typing: a helper gets a narrow interface of what it needs."""
    run_time, typing_only = graph(), graph(type_checking=True)
    for module in run_time:
        if module.startswith("sidecar.kernel."):
            uses = run_time[module] | typing_only[module]
            assert "sidecar.composition" not in uses, f"{module} imports the composition root"


@pytest.mark.parametrize("layer", ["sidecar.acp", "sidecar.kernel"])
def test_lower_layers_never_import_the_lsp_layer(layer: str) -> None:
    run_time, typing_only = graph(), graph(type_checking=True)
    for module in run_time:
        if module == layer or module.startswith(layer + "."):
            uses = run_time[module] | typing_only[module]
            assert not any(u.startswith("sidecar.lsp") for u in uses), f"{module} imports the LSP layer"


# ---------------------------------------------------------------- the rules of docs/architecture.md

MAX_MODULE_LINES = 500
LSP_LIBRARIES = ("pygls", "lsprotocol")

# Crossings the re-layout of issue 40 moved into the new folders but has not untangled yet, as
# (importer, what it reaches: a feature, `engine` (the composition root) or `lsp`).
STILL_TO_UNTANGLE: dict[str, set[tuple[str, str]]] = {
    "kernel imports a feature": set(),
    "a feature imports another": set(),
    "the LSP shell imports a feature": set(),
    "a module is over 500 lines": set(),
    "an import circle through type-only imports": set(),
}


def every_import() -> dict[str, set[str]]:
    """What each module imports, run-time and type-only together."""
    run_time, typing_only = graph(), graph(type_checking=True)
    return {module: run_time[module] | typing_only[module] for module in run_time}


def feature_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "features" else None


def reached(target: str) -> str | None:
    """What an import reaches, as the rules name it: a feature, the composition root, the LSP shell."""
    if target == "sidecar.composition":
        return "engine"
    if target == "sidecar.lsp" or target.startswith("sidecar.lsp."):
        return "lsp"
    return feature_of(target)


def crossings(rule: str) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for module, targets in every_import().items():
        for target in targets:
            where = reached(target)
            if where is None:
                continue
            if rule == "kernel imports a feature":
                broken = module.startswith("sidecar.kernel")
            elif rule == "a feature imports another":
                own = feature_of(module)
                leaf = module.rpartition(".")[2]
                # A feature's LSP modules may use the LSP shell; nothing else of a feature may.
                broken = own is not None and where != own and (where != "lsp" or not leaf.startswith("lsp_"))
            elif rule == "the LSP shell imports a feature":
                broken = module.startswith("sidecar.lsp") and where != "lsp"
            else:
                raise AssertionError(rule)
            if broken:
                found.add((module, where))
    return found


@pytest.mark.parametrize(
    "rule", ["kernel imports a feature", "a feature imports another", "the LSP shell imports a feature"]
)
def test_the_import_rules_hold_but_for_what_is_still_to_untangle(rule: str) -> None:
    found = crossings(rule)
    assert found - STILL_TO_UNTANGLE[rule] == set(), f"new: {rule}"
    assert STILL_TO_UNTANGLE[rule] - found == set(), (
        f"untangled: take these out of STILL_TO_UNTANGLE[{rule!r}]"
    )


def test_the_kernel_and_the_acp_client_import_nothing_of_lsp() -> None:
    for module, targets in every_import().items():
        if module.startswith(("sidecar.kernel", "sidecar.acp")):
            assert reached_lsp(targets) == set(), module


def reached_lsp(targets: set[str]) -> set[str]:
    return {t for t in targets if t == "sidecar.lsp" or t.startswith("sidecar.lsp.")}


def imports_of_libraries(path: Path) -> set[str]:
    """The top-level names of every library a module imports (run-time and type-only)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def may_use_lsp_libraries(module: str) -> bool:
    if module == "sidecar.lsp" or module.startswith("sidecar.lsp."):
        return True
    return feature_of(module) is not None and module.rpartition(".")[2].startswith("lsp_")


def test_only_the_lsp_shell_and_the_features_lsp_modules_import_pygls() -> None:
    for module, path in all_modules().items():
        if not may_use_lsp_libraries(module):
            assert imports_of_libraries(path).isdisjoint(LSP_LIBRARIES), f"{module} imports pygls/lsprotocol"


def test_no_module_over_the_line_ceiling_but_for_what_is_still_to_untangle() -> None:
    found = {
        (module, str(len(path.read_text(encoding="utf-8").splitlines())))
        for module, path in all_modules().items()
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_MODULE_LINES
    }
    listed = STILL_TO_UNTANGLE["a module is over 500 lines"]
    assert {m for m, _ in found} - {m for m, _ in listed} == set(), "new modules over the ceiling"
    grown = {(m, n) for m, n in found for lm, ln in listed if m == lm and int(n) > int(ln)}
    assert grown == set(), "a listed module grew"
    assert {m for m, _ in listed} - {m for m, _ in found} == set(), "under the ceiling now: unlist it"


def circle_edges(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The edges inside each import circle."""
    found: set[tuple[str, str]] = set()
    for component in cycles(edges):
        members = set(component)
        found.update((a, b) for a in component for b in edges[a] if b in members)
    return found


def test_no_import_circle_through_type_only_imports_but_for_what_is_still_to_untangle() -> None:
    listed = STILL_TO_UNTANGLE["an import circle through type-only imports"]
    found = circle_edges(every_import())
    # Every edge of a listed circle is listed as one pair of the circle's modules, in either order.
    found_pairs = {tuple(sorted(edge)) for edge in found}
    assert found_pairs == {tuple(sorted(edge)) for edge in listed}


def test_no_facade_between_a_command_and_its_part() -> None:
    """Issue 40, item 3: the composition root returns the kernel and defines no class of its own
    but the editor side's protocol; the kernel has no per-agent forwarder of each request."""
    import inspect

    import sidecar.composition
    import sidecar.kernel.kernel

    classes = [
        n
        for n, c in inspect.getmembers(sidecar.composition, inspect.isclass)
        if c.__module__ == "sidecar.composition"
    ]
    assert classes == ["EditorSide"]
    assert inspect.signature(sidecar.composition.compose).return_annotation in (
        "Kernel",
        sidecar.kernel.kernel.Kernel,
    )
    assert not hasattr(sidecar.kernel.kernel, "AgentSide")
    door = sidecar.kernel.kernel.AgentDoor
    assert sorted(n for n in vars(door) if not n.startswith("_")) == ["notify", "request"]


def test_the_rules_see_a_crossing() -> None:
    """The rule checks themselves: a made-up graph with each crossing is caught."""
    assert reached("sidecar.features.titles.store") == "titles"
    assert reached("sidecar.composition") == "engine"
    assert reached("sidecar.lsp.ports") == "lsp"
    assert reached("sidecar.kernel.bus") is None
    assert may_use_lsp_libraries("sidecar.features.stream.lsp_progress")
    assert not may_use_lsp_libraries("sidecar.features.stream.coalesce")
    assert circle_edges({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == {("a", "b"), ("b", "a")}
