"""notify.statusDiagnostic: the status line as one information diagnostic.

For editors that show neither custom notifications nor progress text, the
status (title, state) appears as a diagnostic on the first line of the
document the user last opened or edited; it moves with the user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from sidecar.lsp.diagnostic_sets import DiagnosticSets
    from sidecar.lsp.ports import DiagnosticsPort

SOURCE = "acp"


class StatusDiagnostic:
    def __init__(self, server: DiagnosticsPort, sets: DiagnosticSets) -> None:
        self.server = server
        self.sets = sets
        self.uri: str | None = None
        self.text: str | None = None

    @property
    def enabled(self) -> bool:
        return self.server.options.notify.status_diagnostic

    def focus(self, uri: str) -> None:
        """The user is in `uri` now: the diagnostic follows."""
        if not self.enabled or uri == self.uri:
            return
        if self.uri is not None:
            self._publish(self.uri, [])
        self.uri = uri
        self._show()

    def closed(self, uri: str) -> None:
        if uri == self.uri:
            self._publish(uri, [])
            self.uri = None

    def status(self, status: dict[str, Any]) -> None:
        if not self.enabled:
            return
        text = status.get("text")
        self.text = text if isinstance(text, str) else None
        self._show()

    def _show(self) -> None:
        if self.uri is None or not self.text:
            return
        diagnostic = types.Diagnostic(
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            message=self.text,
            severity=types.DiagnosticSeverity.Information,
            source=SOURCE,
        )
        self._publish(self.uri, [diagnostic])

    def _publish(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self.sets.publish(uri, SOURCE, diagnostics)
