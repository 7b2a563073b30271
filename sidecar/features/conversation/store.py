"""Conversation documents on disk: one private Markdown file per (agent, session), shared by every
sidecar on the state dir.

Every change is one read-modify-write under an exclusive lock on the document (a
:class:`~.locked_document.LockedDocument`). An append (appending.py) writes in place: the file is
cut where the conversation ends (just above the prompt area) and the new text, the prompt area and
the user's unsent prompt are written after it, then fsynced. A torn write can only lose what it was
writing: the next writer that finds the prompt area missing repairs it. Whole rewrites (trimming
the head, a new title, repairs) go through a temp file and a rename.

The store remembers what it wrote last; when the file is still exactly that, an append reads only
the few bytes after the conversation. Otherwise (another process wrote, a crash, an edit) it reads
the whole document, repairs it if needed, and bridges to the new text (:func:`~.layout.bridge`).

All methods block (file I/O and locks): call them from a worker thread.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from sidecar.features.conversation.appending import append_batch
from sidecar.features.conversation.index import ItemIndex
from sidecar.features.conversation.layout import decode_prefix, parse_layout
from sidecar.features.conversation.locked_document import Known, LockedDocument, StoreState
from sidecar.features.conversation.model import Batch, DocumentChange
from sidecar.features.conversation.names import ConversationPaths
from sidecar.kernel.state_files import Locked, locked_file, private_dir, read_shared

__all__ = ["DEFAULT_MAX_BYTES", "ConversationStore"]

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
MIN_MAX_BYTES = 4096
# The current turn is kept whole: the bound is raised to hold it (older turns are trimmed first),
# but never past this (a hostile flood within one turn is trimmed like older turns beyond it).
CEILING_BYTES = 64 * 1024 * 1024


class ConversationStore:
    """The conversation documents under ``STATE/transcripts`` (see the module doc)."""

    def __init__(
        self,
        state_dir: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        durable: bool = True,
        ceiling: int = CEILING_BYTES,
    ) -> None:
        if max_bytes < MIN_MAX_BYTES:
            raise ValueError(f"max_bytes must be at least {MIN_MAX_BYTES}, got {max_bytes}")
        self.state_dir = Path(state_dir)
        self.root = self.state_dir / "transcripts"
        self.paths = ConversationPaths(self.root)
        self._state = StoreState(durable, max_bytes, max(ceiling, max_bytes), ItemIndex(durable))
        self._guard = threading.Lock()
        self._path_locks: dict[Path, threading.Lock] = {}
        self._titles: dict[Path, str | None] = {}
        self._serials: dict[Path, int] = {}  # this process's last change of each document

    # ------------------------------------------------------------------ names

    def path(self, agent: str, session_id: str) -> Path:
        return self.paths.document(agent, session_id)

    def uri(self, agent: str, session_id: str) -> str:
        return self.path(agent, session_id).as_uri()

    def identify(self, location: str | Path) -> tuple[str, str] | None:
        """(agent, session) when a path or file:// URI is one of our documents, else None."""
        return self.paths.identify(location)

    # ------------------------------------------------------------------ operations

    def ensure(self, agent: str, session_id: str, title: str | None = None) -> DocumentChange | None:
        """Create the document if it is missing (with `title`), repair it if it is broken."""
        return self._transaction(agent, session_id, title, lambda doc: doc.ensure())

    def append(self, agent: str, session_id: str, batch: Batch) -> DocumentChange | None:
        """Append a rendered batch just above the prompt area, in one locked operation.

        Replayed items the document already holds are dropped here, under the lock, so two
        sidecars replaying one session do not both add the same history. Returns what changed
        (None: nothing did)."""
        return self._transaction(agent, session_id, None, lambda doc: append_batch(doc, batch))

    def fork(
        self, agent: str, session_id: str, parent_agent: str, parent_id: str, title: str | None = None
    ) -> DocumentChange | None:
        """Start a fork's document with its parent's conversation, and its index with the
        parent's (a later replay of the fork's history finds those items here). A fork's document
        that already holds a conversation is kept as it is."""
        parent = self.read(parent_agent, parent_id)
        layout = parse_layout(parent, parent_agent, parent_id, None) if parent else None
        keys = self.keys(parent_agent, parent_id)
        body, closing = (layout.body, layout.closing) if layout is not None else ("", "")
        return self._transaction(agent, session_id, title, lambda doc: doc.fork(body, closing, keys))

    def set_title(self, agent: str, session_id: str, title: str | None) -> DocumentChange | None:
        """Rewrite the header's title line (None when it already says that)."""
        return self._transaction(agent, session_id, title, lambda doc: doc.retitle(title))

    def clear_prompt(self, agent: str, session_id: str) -> DocumentChange | None:
        """Empty the prompt area of the file (an editor saved a prompt into it)."""
        return self._transaction(agent, session_id, None, lambda doc: doc.clear_prompt())

    def replace_question(self, agent: str, session_id: str, ident: str, text: str) -> DocumentChange | None:
        """Put `text` (the question's outcome) where the block of question `ident` is in the
        conversation (None: the document holds no such block)."""
        return self._transaction(agent, session_id, None, lambda doc: doc.replace_question(ident, text))

    def delete(self, agent: str, session_id: str) -> bool:
        """Remove the document and its index (a deleted session); False when there was none."""
        path, keys = self.path(agent, session_id), self.paths.keys_file(agent, session_id)
        with self._lock_for(path):
            existed = True
            for target in (path, keys):
                try:
                    target.unlink()
                except FileNotFoundError:
                    existed = existed and target != path
            self._state.index.forget(keys)
            self._state.known.pop(path, None)
            self._titles.pop(path, None)
            return existed

    def read(self, agent: str, session_id: str) -> str | None:
        """The document's text as it is on disk, never half of a write (None: there is none)."""
        data = read_shared(self.path(agent, session_id))
        return None if data is None else decode_prefix(data)[0]

    def snapshot(self, agent: str, session_id: str) -> tuple[str | None, int]:
        """The document's text and the `serial` of this process's last change in it. A change
        is reported after its write, so one with a serial up to this is already in the text."""
        path = self.path(agent, session_id)
        with self._lock_for(path):
            return self.read(agent, session_id), self._serials.get(path, 0)

    def keys(self, agent: str, session_id: str) -> Counter[str]:
        """The index of items the document holds (or held before a trim), with their counts."""
        path = self.path(agent, session_id)
        with self._lock_for(path):
            return Counter(self._state.index.counts(self.paths.keys_file(agent, session_id)))

    def take_notices(self) -> list[str]:
        """Problems the store worked around (an index it moved aside or could not save) since
        the last call: for the user's log. Nothing was lost or written twice."""
        return self._state.index.take_notices()

    # ------------------------------------------------------------------ machinery

    def _lock_for(self, path: Path) -> threading.Lock:
        with self._guard:
            return self._path_locks.setdefault(path, threading.Lock())

    def _transaction(
        self,
        agent: str,
        session_id: str,
        title: str | None,
        operation: Callable[[LockedDocument], DocumentChange | None],
    ) -> DocumentChange | None:
        path = self.path(agent, session_id)
        with self._lock_for(path):
            if title is not None:
                self._titles[path] = title
            private_dir(path.parent, self.state_dir)
            with locked_file(path, self._state.durable) as locked:
                keys_path = self.paths.keys_file(agent, session_id)
                doc = LockedDocument(
                    self._state, locked, agent, session_id, self._titles.get(path), keys_path
                )
                change = operation(doc)
                self._remember(path, locked, doc)
                if change is None:
                    return None
                serial = self._serials[path] = self._serials.get(path, 0) + 1
                return replace(change, serial=serial)

    def _remember(self, path: Path, locked: Locked, doc: LockedDocument) -> None:
        if doc.known is None:
            self._state.known.pop(path, None)
            return
        info = os.fstat(locked.fd)
        self._state.known[path] = Known(
            info.st_ino,
            info.st_dev,
            info.st_size,
            info.st_mtime_ns,
            doc.known.body_end,
            doc.known.tail,
            doc.known.context,
            doc.known.sep,
            doc.known.headings,
            doc.known.body_chars,
        )
