"""Conversation documents open in the editor follow their file (docs/protocol.md, "Conversation
documents").

The engine reports every change it makes to a conversation file (`on_conversation_change`). While the
document is open (`didOpen` seen, no `didClose` yet), the same change is made to the editor's
buffer through `workspace/applyEdit`, above the prompt area, so that what the user types there is
never touched. One edit is in flight per document and edits are at least `interval` apart
(`MIN_INTERVAL` by default; a big insertion goes in pieces of `MAX_EDIT_CHARS`, one after the
other), except for a change the engine marks `at_once` (a prompt, a turn's
end, a big chunk: the engine bounds how often), which goes out as soon as the edit before it
settled and does not delay the next one;
changes that pile up meanwhile become one edit that makes the buffer equal to the file again
(`resync`). An edit is tied to the buffer version it was computed from (where the editor supports
versioned edits), so an editor that changed meanwhile refuses it and the next edit starts over
from what the editor has.

Also here: the prompt area as a prompt (`acp.prompt` with a conversation document's `uri`), and
showing a session's document (`window/showDocument`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types

from sidecar.tasks import OwnedTasks

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from sidecar.features.conversation.api import ConversationStore, DocumentChange, TextEdit
    from sidecar.kernel.kernel import Kernel
    from sidecar.lsp.ports import ConversationPort

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]

MIN_INTERVAL = 0.25  # seconds between two edits of one document: a few per second at most
# Characters one edit inserts at most: an editor applies an edit in one go (Neovim takes about
# 100 ms per MiB), so a big insertion goes in pieces, each after the editor took the one before.
MAX_EDIT_CHARS = 128 * 1024
SETTLE_TIMEOUT = 2.0  # seconds to wait for the editor's didChange after an applied edit
MAX_REFUSALS = 3  # refused edits in a row before waiting for the next change to try again
SHOW_TIMEOUT = 30.0


@dataclass(eq=False)
class _Open:
    """One conversation document open in the editor."""

    uri: str  # as the editor names it
    agent: str
    session_id: str
    # The buffer's version when it was opened: until it changes, the buffer is what the editor
    # read (from the file, perhaps during an append; or its own unsaved copy).
    opened_version: int | None = None
    changes: list[DocumentChange] = field(default_factory=list)
    stale: bool = True  # the buffer may differ from the file: compare them
    clears: list[str] = field(default_factory=list)  # prompts sent from the area, to clear
    edited: asyncio.Event = field(default_factory=asyncio.Event)  # a didChange arrived
    pump: asyncio.Task[None] | None = None
    at_once: bool = False  # a pending change should not wait for the interval
    # The rest of a big insertion (sent in pieces), with the text it must follow in the buffer.
    rest: tuple[TextEdit, str] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # an at-once change arrived
    sent_at: float = float("-inf")
    refusals: int = 0
    synced: int = 0  # the store's serial of the text the buffer was last compared with


class ConversationDocs:
    """The conversation documents open in the editor (see the module doc)."""

    def __init__(
        self,
        port: ConversationPort,
        tasks: OwnedTasks,
        store: Callable[[], ConversationStore | None],
        interval: float = MIN_INTERVAL,
    ) -> None:
        self.port = port
        self.interval = interval
        self._tasks = tasks
        self._store = store  # the engine's, once it runs
        self._open: dict[str, _Open] = {}  # by the store's URI of the document
        self._key_of: dict[str, str] = {}  # the editor's URI -> the store's
        self._tracking: set[asyncio.Task[None]] = set()  # didOpens being identified
        self.edits_sent = 0

    # ------------------------------------------------------------------ which documents
    def opened(self, uri: str) -> None:
        task = self._tasks.spawn(self._track(uri), "conversation-open")
        self._tracking.add(task)
        task.add_done_callback(self._tracking.discard)

    async def _tracked(self) -> None:
        """Until the documents opened so far are identified (what is open is known)."""
        if self._tracking:
            await asyncio.wait(list(self._tracking), timeout=SHOW_TIMEOUT)

    async def _track(self, uri: str) -> None:
        identity = await self.identify(uri)
        if identity is None or self._text_document(uri) is None:
            return  # not a conversation document, or closed meanwhile
        store = self._store()
        assert store is not None  # identify() found one
        key = store.uri(*identity)
        self._key_of[uri] = key
        doc = self._open.get(key)
        if doc is None or doc.uri != uri:
            text_doc = self._text_document(uri)
            doc = self._open[key] = _Open(uri, *identity, text_doc.version if text_doc else None)
        # The editor read the file at some moment; appends may have come after it.
        doc.stale = True
        self._kick(doc)

    def closed(self, uri: str) -> None:
        key = self._key_of.pop(uri, None)
        if key is not None:
            self._open.pop(key, None)

    def edited(self, uri: str) -> None:
        key = self._key_of.get(uri)
        doc = self._open.get(key) if key is not None else None
        if doc is not None:
            doc.edited.set()

    async def identify(self, uri: str) -> tuple[str, str] | None:
        """(agent, session) when `uri` is a conversation document, else None."""
        key = self._key_of.get(uri)
        if key is not None and key in self._open:
            doc = self._open[key]
            return doc.agent, doc.session_id
        store = self._store()
        if store is None or not uri.startswith("file:") or not uri.endswith(".md"):
            return None  # (most documents are not: no thread, no read)
        return await asyncio.to_thread(store.identify, uri)

    def identity(self, uri: str) -> tuple[str, str] | None:
        """(agent, session) of an open conversation document (no I/O), else None."""
        key = self._key_of.get(uri)
        doc = self._open.get(key) if key is not None else None
        return (doc.agent, doc.session_id) if doc is not None else None

    def is_open(self, key: str) -> bool:
        """Whether the document the store names `key` is open in the editor."""
        return key in self._open

    def _text_document(self, uri: str) -> TextDocument | None:
        found: TextDocument | None = self.port.workspace.text_documents.get(unquote(uri))
        return found

    # ------------------------------------------------------------------ following the file
    def on_change(self, key: str, change: DocumentChange, at_once: bool = False) -> None:
        doc = self._open.get(key)
        if doc is None or not self.port.caps.apply_edit:
            return  # not open: the file is all there is
        doc.changes.append(change)
        doc.refusals = 0
        if at_once:
            doc.at_once = True
            doc.wake.set()
        self._kick(doc)

    def clear_prompt(self, key: str, sent: str) -> None:
        """Empty the prompt area of the open document, if it still holds `sent`."""
        doc = self._open.get(key)
        if doc is not None and self.port.caps.apply_edit:
            doc.clears.append(sent)
            self._kick(doc)

    def _kick(self, doc: _Open) -> None:
        if doc.pump is None or doc.pump.done():
            doc.pump = self._tasks.spawn(self._pump(doc), f"conversation-edits-{doc.session_id}")

    async def _pump(self, doc: _Open) -> None:
        loop = asyncio.get_running_loop()
        while doc.changes or doc.stale or doc.clears or doc.rest:
            wait = doc.sent_at + self.interval - loop.time()
            if wait > 0 and not doc.at_once and not doc.rest:
                doc.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(doc.wake.wait(), wait)
            at_once, doc.at_once = doc.at_once, False
            text_doc = self._text_document(doc.uri)
            if (
                self.port.stopping
                or self._open.get(self._key_of.get(doc.uri, "")) is not doc
                or text_doc is None
            ):
                return  # closed (or reopened as another)
            buffer, version = text_doc.source, text_doc.version
            rest, doc.rest = doc.rest, None
            if rest is not None:  # the rest of a big insertion, if the buffer is still as we left it
                edits = [rest[0]] if buffer[: rest[0].start].endswith(rest[1]) else []
                doc.stale = doc.stale or not edits
            else:
                edits = await self._edits_for(doc, buffer, fresh=version == doc.opened_version)
            if not edits:
                continue
            if not self.port.caps.anchored_view:  # (Helix: its view follows whole edits only)
                edits, doc.rest = _first_piece(edits)
            if self.port.caps.anchored_view:
                from sidecar.features.conversation.api import follow_edits  # with the engine

                edits = follow_edits(buffer, edits)
            if not at_once:  # an edit sent at once does not delay the next (the engine bounds them)
                doc.sent_at = loop.time()
            doc.edited.clear()
            if await self._apply(doc, buffer, version, edits):
                doc.refusals = 0
                await self._settle(doc, version)
            else:
                doc.rest = None
                doc.refusals += 1
                doc.stale = doc.refusals < MAX_REFUSALS

    async def _edits_for(self, doc: _Open, buffer: str, fresh: bool) -> list[TextEdit]:
        """What makes `buffer` show the file (keeping the user's unsent prompt; a `fresh` buffer,
        untouched since the editor read it, has none), plus the prompt-area clears asked for."""
        from sidecar.features.conversation.api import (  # with the engine
            apply_edits,
            clear_prompt,
            prompt_text,
            replace_edit,
        )

        # A change reported after the text the buffer was last compared with is in that text
        # already: mirrored, its text would be shown twice.
        changes = [change for change in doc.changes if change.serial > doc.synced]
        doc.changes = []
        clears, doc.clears = doc.clears, []
        edits: list[TextEdit] | None = [] if not changes else None
        if len(changes) == 1 and not doc.stale:
            edits = changes[0].mirror(buffer)
        elif changes and not doc.stale:
            target = _mirror_all(buffer, changes)
            edits = _resync(buffer, target) if target is not None else None
        if edits is None or doc.stale:
            doc.stale = False
            store = self._store()
            text, doc.synced = (
                await asyncio.to_thread(store.snapshot, doc.agent, doc.session_id) if store else (None, 0)
            )
            if text is None:
                edits = []
            elif fresh and _torn(buffer, text):
                whole = replace_edit(buffer, text)
                edits = [whole] if whole is not None else []
            else:
                edits = _resync(buffer, text)
        for sent in clears:
            clear = clear_prompt(buffer) if prompt_text(buffer) == sent else None
            if clear is None:
                continue
            with contextlib.suppress(ValueError):  # it would overlap a whole-buffer resync: skip
                apply_edits(buffer, [*edits, clear])
                edits.append(clear)
        return edits

    async def _apply(self, doc: _Open, buffer: str, version: int | None, edits: list[TextEdit]) -> bool:
        from sidecar.features.conversation.api import lsp_positions  # loaded with the engine, not at start-up

        encoding = _encoding(self.port.workspace.position_encoding)
        # Helix's follow edit is some 150 edits near the end of a long conversation: one pass.
        positions = lsp_positions(buffer, [at for edit in edits for at in (edit.start, edit.end)], encoding)
        lsp_edits = [
            types.TextEdit(
                range=types.Range(start=_position(positions[2 * i]), end=_position(positions[2 * i + 1])),
                new_text=edit.text,
            )
            for i, edit in enumerate(edits)
        ]
        if self.port.caps.document_changes:
            workspace_edit = types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=doc.uri, version=version
                        ),
                        edits=list(lsp_edits),
                    )
                ]
            )
        else:
            workspace_edit = types.WorkspaceEdit(changes={doc.uri: list(lsp_edits)})
        self.edits_sent += 1
        try:
            result = await asyncio.wait_for(
                self.port.apply_workspace_edit(
                    types.ApplyWorkspaceEditParams(edit=workspace_edit, label="ACP conversation")
                ),
                self.port.request_timeout,
            )
        except TimeoutError:
            log.warning("the editor did not answer an edit of the conversation document %s", doc.uri)
            return False
        except Exception as exc:
            log.warning("an edit of the conversation document %s failed: %r", doc.uri, exc)
            return False
        applied = bool(result is not None and getattr(result, "applied", False))
        if not applied:
            log.info(
                "the editor refused an edit of the conversation document %s: %s",
                doc.uri,
                getattr(result, "failure_reason", None),
            )
        return applied

    async def _settle(self, doc: _Open, version: int | None) -> None:
        """Wait (briefly) until the editor told us its buffer after our edit, so the next edit is
        computed from it."""
        if version is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_TIMEOUT
        while True:
            text_doc = self._text_document(doc.uri)
            if text_doc is None or (text_doc.version or 0) > version:
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                doc.stale = True  # it applied it, but never said so: compare before the next one
                return
            doc.edited.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(doc.edited.wait(), remaining)

    # ------------------------------------------------------------------ the prompt area as a prompt
    async def prompt(
        self,
        kernel: Kernel,
        identity: tuple[str, str],
        text: str | None,
        default_cwd: str | None,
        buffer: str | None = None,
    ) -> JsonObj:
        """`acp.prompt` with a conversation document's `uri`: to that document's session; without
        `text`, what the user wrote in its prompt area (then cleared, in the editor and the file).

        `buffer`: the editor's text of the document when the command arrived (None: not open).
        It is the prompt area to send, even when the document is not identified yet (`opened`
        runs in the background): the file may hold an older prompt, saved before."""
        from sidecar.features.conversation.api import prompt_text
        from sidecar.features.conversation.feature import Documents
        from sidecar.kernel import errors  # with the engine, not at start-up

        agent, session_id = identity
        conversations = kernel.feature(Documents).conversations
        # Any configured agent's conversation continues with that agent (started when it is not).
        owner = kernel.agents.directory.name_of_key(agent)
        if owner is None:
            configured = ", ".join(kernel.agents.directory.specs)
            raise errors.invalid(
                f"this conversation belongs to the agent {agent!r}, which is not configured here "
                f"(configured: {configured}); add it to initializationOptions.agents to continue it"
            )
        store = conversations.store
        key = store.uri(agent, session_id)
        from_area = text is None or not text.strip()
        if from_area:
            doc = self._open.get(key)
            text_doc = self._text_document(doc.uri) if doc is not None else None
            if buffer is not None:
                text = prompt_text(buffer)
            elif text_doc is not None:
                text = prompt_text(text_doc.source)
            else:
                document = await asyncio.to_thread(store.read, agent, session_id)
                text = prompt_text(document) if document is not None else None
            if not text:
                raise errors.invalid(
                    "the prompt area of this conversation is empty: write your prompt below its marker "
                    'line, then run "Send to agent" again'
                )
        assert text is not None
        if session_id not in kernel.registry.by_id:
            await kernel.registry.load(session_id, None, default_cwd, owner)
        result = await kernel.actions.prompt(text, session_id)
        if from_area:
            await self._tracked()  # a document opened just now: clear its buffer too
            self.clear_prompt(key, text)
            await conversations.clear_prompt(agent, session_id)
        return result

    # ------------------------------------------------------------------ showing a document
    def show(self, kernel: Kernel, session_id: str, unless_open: bool = False) -> None:
        """Open the session's document in the editor once what is queued for it is written
        (in the background: a command's answer never waits for the editor's)."""
        if self.port.caps.show_document:
            self._tasks.spawn(self._show(kernel, session_id, unless_open), "conversation-show")

    async def _show(self, kernel: Kernel, session_id: str, unless_open: bool) -> None:
        from sidecar.features.conversation.feature import Documents

        try:
            uri = await kernel.feature(Documents).conversations.document(session_id)
            await self._tracked()
            if unless_open and self.is_open(uri):
                return
            await asyncio.wait_for(self.port.show_document(uri), SHOW_TIMEOUT)
        except Exception as exc:
            log.warning("showing the conversation document of %s: %r", session_id, exc)


def _first_piece(edits: list[TextEdit]) -> tuple[list[TextEdit], tuple[TextEdit, str] | None]:
    """`edits` with the last one cut to MAX_EDIT_CHARS (at a line end where there is one), and
    the rest of its text as an insertion into the buffer after them, with the text it follows."""
    from sidecar.features.conversation.api import TextEdit

    last = edits[-1]
    if sum(len(e.text) for e in edits) <= MAX_EDIT_CHARS or len(last.text) <= MAX_EDIT_CHARS:
        return edits, None
    if any(e.end > last.start for e in edits[:-1]):
        return edits, None  # not in order: send it whole
    cut = last.text.rfind("\n", 0, MAX_EDIT_CHARS) + 1 or MAX_EDIT_CHARS
    shift = sum(len(e.text) - (e.end - e.start) for e in edits[:-1])
    at = last.start + shift + cut
    rest = TextEdit(at, at, last.text[cut:])
    return [*edits[:-1], TextEdit(last.start, last.end, last.text[:cut])], (
        rest,
        last.text[max(0, cut - 64) : cut],
    )


def _torn(buffer: str, file_text: str) -> bool:
    """Whether what follows the buffer's prompt marker is just the end of the file: an editor that
    read the file while an append rewrote its end got the old start and the new end. (An
    unsent prompt the editor kept from before would not be the end of the file.)"""
    from sidecar.features.conversation.api import locate_prompt_area

    area = locate_prompt_area(buffer)
    return file_text.endswith(buffer[area.prompt_start :] if area is not None else buffer)


def _mirror_all(buffer: str, changes: list[DocumentChange]) -> str | None:
    """The buffer after every change in turn (None: one does not fit it)."""
    from sidecar.features.conversation.api import apply_edits

    for change in changes:
        edits = change.mirror(buffer)
        if edits is None:
            return None
        buffer = apply_edits(buffer, edits)
    return buffer


def _resync(buffer: str, target: str) -> list[TextEdit]:
    """`resync`, with a changed title line as an edit of its own: a new title and new text at the
    end are two small edits, not one that rewrites the whole document between them."""
    from sidecar.features.conversation.api import TextEdit, resync

    old_end, new_end = buffer.find("\n"), target.find("\n")
    if old_end < 0 or new_end < 0 or buffer[:old_end] == target[:new_end]:
        return resync(buffer, target)
    rest = resync(buffer[old_end:], target[new_end:])
    shifted = [TextEdit(e.start + old_end, e.end + old_end, e.text) for e in rest]
    return [TextEdit(0, old_end, target[:new_end]), *shifted]


def _encoding(kind: object) -> str:
    value = getattr(kind, "value", kind)
    return value if value in ("utf-8", "utf-16", "utf-32") else "utf-16"


def _position(line_character: tuple[int, int]) -> types.Position:
    return types.Position(line=line_character[0], character=line_character[1])
