"""pygls' internals the sidecar relies on, all named in `sidecar.lsp.pygls_internals`: a pygls
release that renames or reshapes one fails here, naming it, before anything breaks at run time."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from pygls.protocol import JsonRPCProtocol
from pygls.workspace import Workspace

import sidecar
from sidecar.lsp import pygls_internals
from sidecar.lsp.pygls_internals import INTERNALS, missing_internals

SIDECAR = Path(sidecar.__file__).parent
PYPROJECT = SIDECAR.parent / "pyproject.toml"


def test_every_internal_name_the_sidecar_uses_is_there() -> None:
    assert missing_internals() == []


@pytest.mark.parametrize(
    ("owner", "name", "named"),
    [
        (JsonRPCProtocol, "_send_data", "pygls.protocol:JsonRPCProtocol._send_data is gone"),
        (JsonRPCProtocol, "_handle_response", "pygls.protocol:JsonRPCProtocol._handle_response is gone"),
        (Workspace, "_create_text_document", "pygls.workspace:Workspace._create_text_document is gone"),
    ],
)
def test_a_missing_name_is_named(monkeypatch: pytest.MonkeyPatch, owner: type, name: str, named: str) -> None:
    monkeypatch.delattr(owner, name)
    problems = missing_internals()
    assert any(p.startswith(named) for p in problems), problems


def test_a_changed_signature_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def changed(self: object, message_id: object, payload: object = None) -> None: ...

    monkeypatch.setattr(JsonRPCProtocol, "_send_response", changed)
    problems = missing_internals()
    assert problems == [
        "pygls.protocol:JsonRPCProtocol._send_response takes (message_id, payload), "
        "the sidecar relies on (msg_id, result, error)"
    ]


def test_a_missing_instance_attribute_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    original = JsonRPCProtocol.__init__

    def without_shutdown(self: JsonRPCProtocol, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        del self._shutdown

    monkeypatch.setattr(JsonRPCProtocol, "__init__", without_shutdown)
    assert [p for p in missing_internals() if "_shutdown" in p] == [
        "instance:protocol._shutdown is gone (used for shutting_down)"
    ]


def _private_uses(path: Path) -> list[str]:
    """Underscored attributes read from objects that are not `self`/`cls`, and pygls imports of
    modules or names with an underscore: what would tie the file to pygls' internals."""
    tree = ast.parse(path.read_text())
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pygls"):
            names = [node.module or "", *(alias.name for alias in node.names)]
            if (
                any(re.search(r"(^|\.)_|_$", n) for n in names)
                or node.module == "pygls.protocol.language_server"
            ):
                found.append(f"{path.name}:{node.lineno} from {node.module} import ...")
        if (
            isinstance(node, ast.Attribute)
            and re.fullmatch(r"_[a-z]\w*", node.attr)
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            and re.search(r"protocol|workspace|server|\bls\b", ast.unparse(node.value))
        ):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        if isinstance(node, ast.ClassDef) and {ast.unparse(b) for b in node.bases} & PYGLS_BASES:
            found.extend(
                f"{path.name}:{line} {name} (inherited from pygls)" for line, name in _inherited(node)
            )
    return found


# Classes that subclass these inherit pygls' private state: they may use only their own.
PYGLS_BASES = {
    "LanguageServer",
    "LanguageServerProtocol",
    "JsonRPCProtocol",
    "Workspace",
    "TextDocument",
    "HookedProtocol",
    "HookedWorkspace",
}


def _inherited(cls: ast.ClassDef) -> list[tuple[int, str]]:
    """`self._x` used in `cls` where `_x` is neither assigned nor defined by `cls` itself."""
    own = {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    used: list[tuple[int, str]] = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            if isinstance(node.ctx, ast.Store) or isinstance(getattr(node, "parent", None), ast.AnnAssign):
                own.add(node.attr)
            elif node.attr.startswith("_") and not node.attr.startswith("__"):
                used.append((node.lineno, f"self.{node.attr}"))
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
            own.add(node.target.attr)
    return [(line, name) for line, name in used if name.removeprefix("self.") not in own]


def test_no_other_module_reaches_into_pygls() -> None:
    uses = [
        use
        for path in sorted(SIDECAR.rglob("*.py"))
        if path.name != "pygls_internals.py"
        for use in _private_uses(path)
    ]
    assert uses == []
    text = (SIDECAR / "cli.py").read_text()
    assert "pygls.protocol" not in text, "the logger name lives in pygls_internals"


def test_pygls_is_pinned_to_the_minor_version_the_internals_were_checked_on() -> None:
    from importlib.metadata import version

    installed = version("pygls")
    major, minor = (int(part) for part in installed.split(".")[:2])
    pin = re.search(r'"pygls([^"]*)"', PYPROJECT.read_text())
    assert pin is not None
    assert pin.group(1) == f">={major}.{minor},<{major}.{minor + 1}", pin.group(1)
    assert pygls_internals.__doc__ is not None and "pinned" in pygls_internals.__doc__
    assert len(INTERNALS) == len({(i.owner, i.name) for i in INTERNALS})
