"""pygls' LSP protocol with the answers it leaves out.

Every request gets exactly one answer, also where pygls would stay silent:
requests after `shutdown` (LSP wants InvalidRequest), requests whose params do
not fit the method's type, and requests that are not JSON-RPC 2.0. A
`didChange` for a document that was never opened is logged once and ignored
(pygls would raise KeyError and show it to the user as "Error in server").
Open documents count lines as LSP does (`documents.LspWorkspace`).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.workspace import Workspace

from sidecar.lsp.documents import LspWorkspace
from sidecar.lsp.pygls_internals import HookedProtocol

log = logging.getLogger(__name__)

UNOPENED_REMEMBERED = 1_000


class Malformed:
    """A request whose params pygls could not structure: it still deserves an answer."""

    jsonrpc = "2.0"

    def __init__(self, msg_id: Any, method: str, reason: str) -> None:
        self.id = msg_id
        self.method = method
        self.reason = reason


class AcpProtocol(HookedProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unopened_seen: set[str] = set()

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" in data and "id" in data and isinstance(data.get("method"), str):
                return Malformed(data["id"], data["method"], exc.message or type(exc).__name__)
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, Malformed):
            error = JsonRpcInvalidParams(f"{message.method}: invalid params ({message.reason})")
            self.send_response(message.id, error=error.to_response_error())
            return
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        if getattr(message, "jsonrpc", None) != self.VERSION and method is not None and msg_id is not None:
            refusal = JsonRpcInvalidRequest(f"{method}: not a JSON-RPC 2.0 request (jsonrpc must be '2.0')")
            self.send_response(msg_id, error=refusal.to_response_error())
            return
        if self.shutting_down and method not in (None, types.EXIT) and msg_id is not None:
            self.send_response(
                msg_id,
                error=JsonRpcInvalidRequest(f"{method}: the server is shutting down").to_response_error(),
            )
            return
        super().handle_message(message)

    def make_workspace(self, made: Workspace) -> Workspace:
        return LspWorkspace.replacing(made)

    def accepts_change(self, params: types.DidChangeTextDocumentParams) -> bool:
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:
            if uri not in self._unopened_seen and len(self._unopened_seen) < UNOPENED_REMEMBERED:
                self._unopened_seen.add(uri)
                log.warning("didChange for a document that was never opened, ignored: %.300s", uri)
            return False
        return True
