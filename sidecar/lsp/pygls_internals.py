"""Every use of pygls' internals (underscored names, internal modules), and only here.

pygls is pinned to one minor version (pyproject.toml); `INTERNALS` lists each internal name
this module relies on, and `missing_internals()` (run by tests/unit/test_pygls_internals.py)
names every one a pygls release removed or changed. The rest of the sidecar uses only the
public names these classes give them:

- `HookedProtocol`: `send_raw`, `send_response`, `handle_error_response`, `shutting_down`,
  `converter`; the hooks `accepts_change` (a didChange pygls may apply) and `make_workspace`
  (the workspace that keeps the open documents). Requests the sidecar sends and requests the
  editor sends live in separate tables: an editor's `$/cancelRequest` cancels only the
  editor's own requests, and a response settles only a request the sidecar sent (pygls keeps
  both in one table, keyed by id alone).
- `HookedWorkspace`: `new_document`, the one place open documents are made.
- `JSON_RPC_LOGGER`; `set_writer` takes any object with `write(bytes)` and `close()` (output.py).
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Callable, Generator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.workspace import TextDocument, Workspace

__all__ = [
    "INTERNALS",
    "JSON_RPC_LOGGER",
    "HookedProtocol",
    "HookedWorkspace",
    "missing_internals",
]

log = logging.getLogger(__name__)

# pygls' JSON-RPC module logs every error answer with a traceback (cli.py quiets it).
JSON_RPC_LOGGER = "pygls.protocol.json_rpc"


class HookedWorkspace(Workspace):
    """pygls' workspace, whose open documents are made by `new_document`."""

    def new_document(
        self, uri: str, source: str | None, version: int | None, language_id: str | None
    ) -> TextDocument:
        raise NotImplementedError

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return self.new_document(doc_uri, source, version, language_id)


class HookedProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The sidecar's own requests to the editor, by id; pygls' `_request_futures` then holds
        # only what the editor asked (and pygls' own handler bookkeeping).
        self._outgoing: dict[Any, Future[Any]] = {}
        self._adopted: Workspace | None = None

    # ------------------------------------------------------------------ public names
    @property
    def shutting_down(self) -> bool:
        """True once the editor sent `shutdown`."""
        return bool(self._shutdown)

    @property
    def converter(self) -> Any:
        """The cattrs converter pygls structures messages with."""
        return self._converter

    def send_raw(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC message as is (same writer and framing as pygls' own)."""
        self._send_data(message)

    def send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        self._send_response(msg_id, result, error)

    def handle_error_response(self, msg_id: Any, error: Any) -> None:
        """An error response from the editor (to a request of the sidecar's)."""
        self._handle_response(msg_id, None, error)

    # ------------------------------------------------------------------ hooks
    def accepts_change(self, params: types.DidChangeTextDocumentParams) -> bool:
        """Whether pygls may apply this didChange to the workspace."""
        return True

    def make_workspace(self, made: Workspace) -> Workspace:
        """The workspace to keep, given the one pygls made at `initialize`."""
        return made

    # ------------------------------------------------------------------ builtin handlers
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        # pygls makes the workspace before its first step (the user's initialize handler).
        result: types.InitializeResult = yield from _each_step(
            super().lsp_initialize(params), self._adopt_workspace
        )
        self._adopt_workspace()
        return result

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        yield from super().lsp_shutdown(*args)
        # pygls cancels what is still pending in its table; the sidecar's requests are here.
        for future in list(self._outgoing.values()):
            future.cancel()

    def _adopt_workspace(self) -> None:
        made = self._workspace
        if made is not None and made is not self._adopted:
            self._adopted = self._workspace = self.make_workspace(made)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if self.accepts_change(params):
            yield from super().lsp_text_document__did_change(params)

    # ------------------------------------------------------------------ request tables
    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: Any | None = None,
    ) -> Future[Any]:
        if msg_id is None:
            msg_id = str(uuid.uuid4())
        # An editor request that happens to have this id stays the editor's.
        theirs = self._request_futures.pop(msg_id, None)
        future = super().send_request(method, params, callback, msg_id)
        self._request_futures.pop(msg_id, None)
        if theirs is not None:
            self._request_futures[msg_id] = theirs
        self._outgoing[msg_id] = future
        return future

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        future = self._outgoing.pop(msg_id, None)
        if future is None:
            # Not a request of ours (perhaps the id of one the editor sent): nothing to settle.
            log.warning("ignored a response to id %.100r: the sidecar sent no request with that id", msg_id)
            return
        if future.done():
            # We stopped waiting (a dialog answered elsewhere, applyEdit past its timeout).
            log.info("the editor answered request %r after the sidecar stopped waiting", msg_id)
            return
        if error is not None:
            future.set_exception(JsonRpcException.from_error(error))
        else:
            future.set_result(result)


def _each_step(steps: Generator[Any, Any, Any], before_step: Callable[[], None]) -> Generator[Any, Any, Any]:
    """Run a pygls builtin handler's steps, calling `before_step` before each one is handed on."""
    sent: Any = None
    while True:
        try:
            step = steps.send(sent)
        except StopIteration as stop:
            return stop.value
        before_step()
        sent = yield step


# ---------------------------------------------------------------------- what a release may break
@dataclass(frozen=True)
class Internal:
    """One internal name: where it lives, what it must be, and what uses it."""

    owner: str  # "module" or "module:Class" or "instance:<attribute of a LanguageServer()>"
    name: str
    kind: str  # "method(params...)", "attribute <type>", "class", "function", "module"
    used_by: str


INTERNALS: tuple[Internal, ...] = (
    Internal("pygls.protocol.language_server", "lsp_method", "function", "overriding builtin handlers"),
    Internal("pygls.protocol", "json_rpc", "module", "JSON_RPC_LOGGER (cli quiets its log)"),
    Internal("pygls.protocol:LanguageServerProtocol", "lsp_initialize", "method(params)", "make_workspace"),
    Internal("pygls.protocol:LanguageServerProtocol", "lsp_shutdown", "method(args)", "cancels our requests"),
    Internal(
        "pygls.protocol:LanguageServerProtocol",
        "lsp_text_document__did_change",
        "method(params)",
        "accepts_change",
    ),
    Internal("pygls.protocol:JsonRPCProtocol", "_send_data", "method(data)", "send_raw"),
    Internal(
        "pygls.protocol:JsonRPCProtocol", "_send_response", "method(msg_id, result, error)", "send_response"
    ),
    Internal(
        "pygls.protocol:JsonRPCProtocol",
        "_handle_response",
        "method(msg_id, result, error)",
        "responses settle only the sidecar's requests",
    ),
    Internal(
        "pygls.protocol:JsonRPCProtocol",
        "send_request",
        "method(method, params, callback, msg_id)",
        "the sidecar's own request table",
    ),
    Internal(
        "pygls.protocol:JsonRPCProtocol",
        "_handle_cancel_notification",
        "method(msg_id)",
        "$/cancelRequest looks only in _request_futures",
    ),
    Internal(
        "pygls.workspace:Workspace",
        "_create_text_document",
        "method(doc_uri, source, version, language_id)",
        "HookedWorkspace.new_document",
    ),
    Internal("instance:protocol", "_request_futures", "attribute dict", "the editor's request table"),
    Internal("instance:protocol", "_shutdown", "attribute bool", "shutting_down"),
    Internal("instance:protocol", "_converter", "attribute object", "converter"),
    Internal("instance:protocol", "_workspace", "attribute NoneType", "make_workspace"),
)


def _owner(spec: str) -> Any:
    import importlib

    if spec.startswith("instance:"):
        server = LanguageServer("probe", "0")
        return getattr(server, spec.split(":", 1)[1])
    module_name, _, class_name = spec.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, class_name) if class_name else module


def _problem(internal: Internal) -> str | None:
    try:
        owner = _owner(internal.owner)
    except (ImportError, AttributeError) as exc:
        return f"{internal.owner} is gone ({exc})"
    where = f"{internal.owner}.{internal.name}"
    if not hasattr(owner, internal.name):
        return f"{where} is gone (used for {internal.used_by})"
    found = getattr(owner, internal.name)
    if internal.kind.startswith("method("):
        if not callable(found):
            return f"{where} is no longer a method"
        wanted = [p.strip() for p in internal.kind[len("method(") : -1].split(",") if p.strip()]
        names = [p for p in inspect.signature(found).parameters if p != "self"]
        if names[: len(wanted)] != wanted:
            return f"{where} takes ({', '.join(names)}), the sidecar relies on ({', '.join(wanted)})"
        return None
    kind, _, detail = internal.kind.partition(" ")
    if kind == "module" and not inspect.ismodule(found):
        return f"{where} is no longer a module"
    if kind == "class" and not inspect.isclass(found):
        return f"{where} is no longer a class"
    if kind == "function" and not callable(found):
        return f"{where} is no longer callable"
    if kind == "attribute" and detail not in ("", "object") and type(found).__name__ != detail:
        return f"{where} is a {type(found).__name__}, the sidecar relies on a {detail}"
    return None


def missing_internals() -> list[str]:
    """One sentence per internal name that this pygls no longer has as the sidecar uses it."""
    return [problem for internal in INTERNALS if (problem := _problem(internal)) is not None]
