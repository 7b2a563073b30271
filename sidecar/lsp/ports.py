"""What each LSP helper uses of the server, and nothing more.

The helpers (notifier, permission prompts, progress, status diagnostic, editor
files, code actions) depend on these small protocols instead of the server
class: they import no server module, so there is no import circle, and each
can be driven by a stand-in in a unit test. `AcpLanguageServer` implements
all of them.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.progress import Progress
    from pygls.workspace import Workspace

    from sidecar.lsp.options import Options


class ClientCaps(NamedTuple):
    """What the editor said it supports, read once at `initialize`."""

    apply_edit: bool = False
    document_changes: bool = False
    create_files: bool = False
    progress: bool = False
    message_request: bool = False
    code_action_literals: bool = False
    show_document: bool = False
    # The editor keeps a view's top as a character that edits map backwards (Helix): text added
    # above the cursor never scrolls it, so edits of a conversation document are written to move it along.
    anchored_view: bool = False


class Stopping(Protocol):
    @property
    def stopping(self) -> bool:
        """True once shutdown began: nothing more is sent to the editor."""
        ...


class Cleaning(Protocol):
    def clean(self, text: str, max_length: int) -> str:
        """`text` made safe to show: no control characters, at most `max_length` characters."""
        ...


class Messages(Stopping, Protocol):
    """Plain messages to the editor."""

    def notify(self, method: str, params: Any) -> None: ...
    def show_message(self, kind: types.MessageType, message: str) -> None: ...
    def log_message(self, kind: types.MessageType, message: str) -> None: ...


class Configured(Protocol):
    @property
    def options(self) -> Options: ...
    @property
    def caps(self) -> ClientCaps: ...


class ProgressPort(Stopping, Cleaning, Protocol):
    @property
    def work_done_progress(self) -> Progress: ...


class DiagnosticsPort(Stopping, Configured, Protocol):
    def publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic]) -> None: ...


class EditorPort(Configured, Protocol):
    """Buffers and edits: for the agent's file access and the edit code actions."""

    @property
    def workspace(self) -> Workspace: ...
    @property
    def request_timeout(self) -> float: ...
    def apply_workspace_edit(
        self, params: types.ApplyWorkspaceEditParams
    ) -> Awaitable[types.ApplyWorkspaceEditResult | None]: ...


class CodeActionPort(Cleaning, Configured, Protocol): ...


class FollowPort(Configured, Protocol):
    def show_document_params(
        self, params: types.ShowDocumentParams
    ) -> Awaitable[types.ShowDocumentResult | None]:
        """`window/showDocument` as given (only when `caps.show_document`)."""
        ...


class ChangesPort(DiagnosticsPort, Cleaning, Protocol):
    """The agent's changes as diagnostics: the buffers, titles for the messages."""

    @property
    def workspace(self) -> Workspace: ...
    def session_title(self, session_id: str) -> str: ...


class ConversationPort(EditorPort, Stopping, Protocol):
    """Open conversation documents: their buffers, edits to them, showing one."""

    def show_document(self, uri: str) -> Awaitable[types.ShowDocumentResult | None]:
        """`window/showDocument` with `takeFocus` (only when `caps.show_document`)."""
        ...


class PermissionPort(Messages, Configured, Cleaning, Protocol):
    def show_message_request(
        self, params: types.ShowMessageRequestParams
    ) -> Awaitable[types.MessageActionItem | None]: ...


class ElicitationPort(Messages, Configured, Cleaning, Protocol):
    def show_message_request(
        self, params: types.ShowMessageRequestParams
    ) -> Awaitable[types.MessageActionItem | None]: ...
    def open_external(self, url: str) -> Awaitable[types.ShowDocumentResult | None]:
        """`window/showDocument` with `external: true` (only when `caps.show_document`)."""
        ...


class NotifierPort(Messages, Configured, ProgressPort, Protocol):
    def session_title(self, session_id: str) -> str:
        """The session's title for progress, or a generic one."""
        ...

    @property
    def active_session_id(self) -> str | None:
        """The session commands act on by default (None before any)."""
        ...
