"""The features' LSP sides as the shell sees them (docs/architecture.md, "The LSP shell").

Each feature's LSP side is one `LspFeature`, added once by the composition root (`host.py`), in
order, and found by its class (`LspFeatures.get`). The shell tells every one what happens to the
editor's documents and to the engine, and asks every one for code actions, through hooks that do
nothing unless a feature overrides them: the shell imports no feature.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lsprotocol import types

if TYPE_CHECKING:
    from sidecar.kernel.kernel import Kernel
    from sidecar.kernel.session import PermissionRequest
    from sidecar.kernel.updates import Routed

JsonObj = dict[str, Any]
F = TypeVar("F", bound="LspFeature")


class Place(IntEnum):
    """Where a code action goes in the list the editor shows: the actions of every feature are
    sorted by place, each feature's in the order the features were added."""

    AT_CURSOR = 0  # what the cursor is on: a question's block, an agent change's hunk
    DOCUMENT = 1  # the document's own: send, cancel, fork, ask about a selection, apply an edit
    REQUESTS = 2  # the agent's pending requests, offered in every document


@dataclass(frozen=True)
class ActionContext:
    """A code action request, with what the shell found out about its document once."""

    params: types.CodeActionParams
    conversation: tuple[str, str] | None  # (agent, session id) when it is a conversation document
    buffer: str | None  # that conversation document's text as the editor has it


Actions = list[tuple[Place, types.CodeAction]]


class SessionDocuments(Protocol):
    """The conversation documents, as the shell and the other features use them (the
    conversation feature fills this port when it is added)."""

    def identity(self, uri: str) -> tuple[str, str] | None:
        """(agent, session id) of an open conversation document, known without a lookup."""
        ...

    async def identify(self, uri: str) -> tuple[str, str] | None:
        """(agent, session id) of a conversation document, open or not."""
        ...

    def show(self, session_id: str, unless_open: bool = False) -> None:
        """Open the session's conversation document in the editor (where it can show one)."""
        ...

    async def saved_text(self, identity: tuple[str, str]) -> str | None:
        """The conversation document's text as saved (None: there is none)."""
        ...

    async def prompt(
        self, identity: tuple[str, str], text: str | None, default_cwd: str | None, buffer: str | None
    ) -> JsonObj:
        """`acp.prompt` for a conversation document: its prompt area, or `text`, to its session."""
        ...


class LspFeature:
    """One feature's LSP side. Every hook is optional: the default does nothing."""

    def started(self, kernel: Kernel) -> None:
        """The engine is composed (at `initialized`): the feature's engine side is
        `kernel.feature(ItsClass)`."""

    # ------------------------------------------------------------------ the editor's documents
    def opened(self, uri: str) -> None: ...
    def changed(self, params: types.DidChangeTextDocumentParams, conversation: bool) -> None:
        """A document changed; `conversation`: it is a conversation document."""

    def closed(self, uri: str) -> None: ...

    async def code_actions(self, context: ActionContext) -> Actions:
        return []

    # ------------------------------------------------------------------ the engine's events
    def update_fields(self, session_id: str, replay: bool, update: JsonObj) -> JsonObj | None:
        """Fields added to the `acp/sessionUpdate` of an update other than a text chunk."""
        return None

    def update_sent(self, routed: Routed) -> None:
        """An update other than a text chunk went to the editor."""

    def permission(self, request: PermissionRequest) -> None: ...
    def elicitation(self, elicitation: Any, state: str, answer: JsonObj | None) -> None: ...
    def document_changed(self, uri: str, change: Any, at_once: bool) -> None: ...

    def close(self) -> None:
        """The server stops: nothing more is sent to the editor."""


class LspFeatures:
    """The features' LSP sides, in the order they were added."""

    def __init__(self) -> None:
        self.all: list[LspFeature] = []
        self._by_class: dict[type[LspFeature], LspFeature] = {}
        self.documents: SessionDocuments | None = None

    def add(self, feature: F) -> F:
        if type(feature) in self._by_class:
            raise ValueError(f"{type(feature).__name__} is added already")
        self._by_class[type(feature)] = feature
        self.all.append(feature)
        return feature

    # The conversation documents, or none when no feature fills the port.
    def identity(self, uri: str) -> tuple[str, str] | None:
        return self.documents.identity(uri) if self.documents is not None else None

    async def identify(self, uri: str) -> tuple[str, str] | None:
        return await self.documents.identify(uri) if self.documents is not None else None

    def show(self, session_id: str, unless_open: bool = False) -> None:
        if self.documents is not None:
            self.documents.show(session_id, unless_open)

    def get(self, kind: type[F]) -> F:
        found = self._by_class.get(kind)
        if found is None:
            raise LookupError(f"{kind.__name__} is not added")
        assert isinstance(found, kind)
        return found
