"""The conversation feature's engine side on the kernel: each session's conversation document.

It fills the kernel's `document_uri` port (the status's `transcriptUri`), finds or creates a
session's document for `acp.session.transcript`, writes a parent's document out before a fork,
and removes a deleted session's document; what it does on the kernel's other events (an update,
a prompt, a turn's end, a feature's piece) is subscribed in the one table of `sidecar/composition.py`.
"""

from __future__ import annotations

from typing import Any

from sidecar.features.conversation.conversations import Conversations
from sidecar.features.conversation.operations import ConversationEvents
from sidecar.kernel import errors
from sidecar.kernel.bus import SessionDeleted, SessionForking
from sidecar.kernel.kernel import Kernel

JsonObj = dict[str, Any]


class Documents:
    def __init__(self, kernel: Kernel, events: ConversationEvents) -> None:
        self._kernel = kernel
        # Rendered and written off the event loop (conversations.py).
        self.conversations = Conversations(kernel.ctx, kernel.catalog.title_of, events)
        kernel.document_uri = self.conversations.uri
        kernel.on_closing(self.conversations.stop_flushing)
        kernel.after_agents_stop("writing the conversation documents", self.conversations.aclose)

    async def of_session(self, session_id: str | None) -> JsonObj:
        """`{sessionId, uri}` of a session's conversation document, created when missing: a
        session of this process (the active one by default), or any session the catalogue knows."""
        registry = self._kernel.registry
        if session_id is None or session_id in registry.by_id:
            session = await registry.resolve(session_id)
            uri = await self.conversations.document(session.session_id)
            return {"sessionId": session.session_id, "uri": uri}
        if await registry.catalog.find(session_id) is None:
            raise errors.unknown_session(session_id)
        return {"sessionId": session_id, "uri": await self.conversations.document(session_id)}

    async def forking(self, event: SessionForking) -> None:
        """The parent's document, written out: the fork's starts as a copy of it."""
        await self.conversations.document(event.parent.session_id)

    async def deleted(self, event: SessionDeleted) -> None:
        await self.conversations.delete(event.session_id)
