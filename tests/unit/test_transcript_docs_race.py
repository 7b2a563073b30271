"""A transcript write that lands just before the open buffer is compared with the file.

The editor layer resyncs a stale buffer from the file (read in a thread). A write that completes
before that read is in the text read, and its change is reported on the event loop afterwards,
during the read or after it: mirroring that change as well put its text into the buffer twice
(seen in CI as a "## You" block shown twice, never made good). Here the read is held until the
write is done, so the order is certain.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types
from pygls.workspace import TextDocument

from sidecar.features.conversation.api import Batch, ConversationStore, DocumentChange
from sidecar.features.conversation.lsp_documents import ConversationDocs
from sidecar.tasks import OwnedTasks
from tests.lsp.buffers import apply_lsp_edits

AGENT, SESSION = "demo", "s-1"


class HeldStore(ConversationStore):
    """A store whose next read waits, once asked to, until released."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__(state_dir, durable=False)
        self.hold = False
        self.reading = threading.Event()
        self.release = threading.Event()

    def snapshot(self, agent: str, session_id: str) -> tuple[str | None, int]:
        if self.hold:
            self.hold = False
            self.reading.set()
            self.release.wait(10)
        return super().snapshot(agent, session_id)


class Port:
    """The editor: one open buffer that takes every edit and tells its new version."""

    def __init__(self, uri: str, text: str) -> None:
        self.document = TextDocument(uri, text, version=1)
        self.workspace = SimpleNamespace(
            text_documents={uri: self.document}, position_encoding=types.PositionEncodingKind.Utf16
        )
        self.caps = SimpleNamespace(apply_edit=True, anchored_view=False, document_changes=True)
        self.stopping = False
        self.request_timeout = 5.0
        self.docs: ConversationDocs | None = None

    async def apply_workspace_edit(self, params: types.ApplyWorkspaceEditParams) -> Any:
        changes = params.edit.document_changes
        assert changes is not None
        (edit,) = changes
        assert isinstance(edit, types.TextDocumentEdit)
        if edit.text_document.version != self.document.version:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="stale version")
        edits = [e for e in edit.edits if isinstance(e, types.TextEdit)]
        text = apply_lsp_edits(self.document.source, edits, "utf-16")
        self.document = TextDocument(self.document.uri, text, version=(self.document.version or 0) + 1)
        self.workspace.text_documents[self.document.uri] = self.document
        assert self.docs is not None
        self.docs.edited(self.document.uri)
        return types.ApplyWorkspaceEditResult(applied=True)


@pytest.mark.parametrize("reported", ["during the read", "after the read"])
async def test_a_write_just_before_the_resync_read_is_not_shown_twice(tmp_path: Path, reported: str) -> None:
    store = HeldStore(tmp_path)
    store.ensure(AGENT, SESSION, "a title")
    uri = store.uri(AGENT, SESSION)
    opened = store.read(AGENT, SESSION)
    assert opened is not None
    port = Port(uri, opened)
    tasks = OwnedTasks("test")
    docs = ConversationDocs(port, tasks, lambda: store, interval=0.0)  # type: ignore[arg-type]
    port.docs = docs
    try:
        store.hold = True
        docs.opened(uri)  # stale until compared with the file: the comparison's read is held
        assert await asyncio.to_thread(store.reading.wait, 10)
        change = store.append(AGENT, SESSION, Batch(text="## You\n\n    a prompt\n\n"))
        assert isinstance(change, DocumentChange)
        expected = store.read(AGENT, SESSION)
        assert expected is not None and expected.count("a prompt") == 1
        if reported == "during the read":  # (the engine reports a change after its write)
            docs.on_change(uri, change, at_once=True)
        store.release.set()
        async with asyncio.timeout(10):
            while port.document.source != expected:
                await asyncio.sleep(0.01)
            if reported == "after the read":
                docs.on_change(uri, change, at_once=True)
            doc = docs._open[uri]
            while doc.pump is not None and not doc.pump.done():
                await asyncio.sleep(0.01)
        assert port.document.source == expected
    finally:
        store.release.set()
        await tasks.aclose()
