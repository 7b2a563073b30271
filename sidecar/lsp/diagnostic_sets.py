"""The sidecar's diagnostics per document, from several owners, published as one list.

`publishDiagnostics` replaces every diagnostic the server has on a document: the status
diagnostic and the agent's changes would wipe each other out if each published alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsprotocol import types

    from sidecar.lsp.ports import DiagnosticsPort


class DiagnosticSets:
    def __init__(self, server: DiagnosticsPort) -> None:
        self.server = server
        self._sets: dict[str, dict[str, list[types.Diagnostic]]] = {}

    def publish(self, uri: str, owner: str, diagnostics: list[types.Diagnostic]) -> None:
        """`owner`'s diagnostics on `uri` are now `diagnostics`; the document's whole list goes out."""
        owners = self._sets.setdefault(uri, {})
        if not diagnostics and owner not in owners:
            return
        if diagnostics:
            owners[owner] = diagnostics
        else:
            owners.pop(owner, None)
        if not owners:
            del self._sets[uri]
        if self.server.stopping:
            return
        self.server.publish_diagnostics(uri, [d for found in owners.values() for d in found])
