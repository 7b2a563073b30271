"""The conversation feature's LSP side, added to the server by `host.py`: its documents open in
the editor (`lsp_documents.py`), the shell's `SessionDocuments` port, the document's own code
actions (send, cancel, fork), and completion and navigation in it (`lsp_completion.py`,
`lsp_navigation.py`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types

from sidecar.features.conversation import lsp_navigation as navigation
from sidecar.features.conversation.lsp_completion import TRIGGERS, PromptCompletion
from sidecar.features.conversation.lsp_documents import ConversationDocs
from sidecar.lsp.features import ActionContext, Actions, LspFeature, Place

if TYPE_CHECKING:
    from sidecar.features.conversation.api import ConversationStore
    from sidecar.kernel.kernel import Kernel
    from sidecar.lsp.server import AcpLanguageServer

JsonObj = dict[str, Any]
T = TypeVar("T")
log = logging.getLogger(__name__)


class ConversationLsp(LspFeature):
    def __init__(self, server: AcpLanguageServer) -> None:
        self._kernel: Kernel | None = None
        self.docs = ConversationDocs(server, server.tasks, self._store, server.launch.conversation_interval)
        server.features.documents = self
        _register_navigation(server)

    def started(self, kernel: Kernel) -> None:
        self._kernel = kernel

    def _store(self) -> ConversationStore | None:
        if self._kernel is None:
            return None
        from sidecar.features.conversation.feature import Documents

        return self._kernel.feature(Documents).conversations.store

    # ------------------------------------------------------------------ SessionDocuments
    def identity(self, uri: str) -> tuple[str, str] | None:
        return self.docs.identity(uri)

    async def identify(self, uri: str) -> tuple[str, str] | None:
        return await self.docs.identify(uri)

    def show(self, session_id: str, unless_open: bool = False) -> None:
        if self._kernel is not None:
            self.docs.show(self._kernel, session_id, unless_open)

    async def saved_text(self, identity: tuple[str, str]) -> str | None:
        store = self._store()
        return await asyncio.to_thread(store.read, *identity) if store is not None else None

    async def prompt(
        self, identity: tuple[str, str], text: str | None, default_cwd: str | None, buffer: str | None
    ) -> JsonObj:
        assert self._kernel is not None  # a command waits for the engine first
        return await self.docs.prompt(self._kernel, identity, text, default_cwd, buffer)

    # ------------------------------------------------------------------ the editor's documents
    def opened(self, uri: str) -> None:
        self.docs.opened(uri)

    def changed(self, params: types.DidChangeTextDocumentParams, conversation: bool) -> None:
        self.docs.edited(params.text_document.uri)

    def closed(self, uri: str) -> None:
        self.docs.closed(uri)

    def document_changed(self, uri: str, change: Any, at_once: bool) -> None:
        self.docs.on_change(uri, change, at_once)

    async def code_actions(self, context: ActionContext) -> Actions:
        kernel = self._kernel
        if context.conversation is None or kernel is None:
            return []
        uri, session_id = context.params.text_document.uri, context.conversation[1]
        send = types.Command(title="Send to agent", command="acp.prompt", arguments=[{"uri": uri}])
        actions = [types.CodeAction(title="Send to agent", kind=types.CodeActionKind.Empty, command=send)]
        session = kernel.registry.by_id.get(session_id)
        if session is not None and (session.current is not None or session.queue):
            title = "Cancel the running turn"
            cancel = types.Command(title=title, command="acp.cancel", arguments=[{"sessionId": session_id}])
            actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.Empty, command=cancel))
        if kernel.actions.can_fork(session_id):
            title = "Fork this session"
            target = [{"sessionId": session_id, "show": True}]  # shown: Helix has no other view of it
            fork = types.Command(title=title, command="acp.session.fork", arguments=target)
            actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.Empty, command=fork))
        return [(Place.DOCUMENT, action) for action in actions]


def _register_navigation(server: AcpLanguageServer) -> None:
    """Completion in the prompt area, outline, folds and links of conversation documents, sessions
    as workspace symbols (docs/protocol.md, "Composing and navigating")."""
    completion = PromptCompletion(server)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=TRIGGERS))
    async def complete(ls: AcpLanguageServer, params: types.CompletionParams) -> types.CompletionList | None:
        try:
            return await completion.complete(params)
        except Exception:
            log.exception("completion failed")
            return None

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(
        ls: AcpLanguageServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol] | None:
        return await _guarded(navigation.document_symbols, ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    async def folding_range(
        ls: AcpLanguageServer, params: types.FoldingRangeParams
    ) -> list[types.FoldingRange] | None:
        return await _guarded(navigation.folding_ranges, ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK)
    async def document_link(
        ls: AcpLanguageServer, params: types.DocumentLinkParams
    ) -> list[types.DocumentLink] | None:
        return await _guarded(navigation.document_links, ls, params.text_document.uri)

    @server.feature(types.WORKSPACE_SYMBOL)
    async def workspace_symbol(
        ls: AcpLanguageServer, params: types.WorkspaceSymbolParams
    ) -> list[types.SymbolInformation] | None:
        try:
            return await navigation.session_symbols(ls, params.query)
        except Exception:
            log.exception("workspace symbols failed")
            return None


async def _guarded(
    feature: Callable[[AcpLanguageServer, str], Awaitable[T | None]], ls: AcpLanguageServer, uri: str
) -> T | None:
    try:
        return await feature(ls, uri)
    except Exception:
        log.exception("%s failed for %s", feature.__name__, uri)
        return None
