"""Transcript documents on disk: one private Markdown file per (agent, session), shared by every
sidecar on the state dir.

Every change is one read-modify-write under an exclusive lock on the document. An append writes
in place: the file is cut where the conversation ends (just above the prompt area) and the new text,
the prompt area and the user's unsent prompt are written after it, then fsynced. A torn write can
only lose what it was writing: the next writer that finds the prompt area missing repairs it.
Whole rewrites (trimming the head, a new title, repairs) go through a temp file and a rename.

The store remembers what it wrote last; when the file is still exactly that, an append reads only
the few bytes after the conversation. Otherwise (another process wrote, a crash, an edit) it reads
the whole document, repairs it if needed, and bridges to the new text (:func:`~.layout.bridge`).

All methods block (file I/O and locks): call them from a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sidecar.features.conversation.document import (
    PROMPT_AREA,
    TRIM_NOTE,
    header_text,
    parse_identity,
    separator_for,
    title_line,
)
from sidecar.features.conversation.elements import HEADINGS
from sidecar.features.conversation.files import (
    Locked,
    locked_file,
    private_dir,
    read_all,
    read_shared,
    remove_stale_temp,
    write_all,
)
from sidecar.features.conversation.index import ItemIndex
from sidecar.features.conversation.layout import Layout, bridge, decode_prefix, parse_layout, trim_head
from sidecar.features.conversation.model import Anchor, AnchoredEdit, Batch, DocumentChange
from sidecar.features.conversation.names import TranscriptPaths
from sidecar.kernel.pieces import find_question

__all__ = ["DEFAULT_MAX_BYTES", "TranscriptStore"]

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
MIN_MAX_BYTES = 4096
# The current turn is kept whole: the bound is raised to hold it (older turns are trimmed first),
# but never past this (a hostile flood within one turn is trimmed like older turns beyond it).
CEILING_BYTES = 64 * 1024 * 1024
_TURN_START = "\n" + HEADINGS["you"] + "\n"
_TURN_START_BYTES = _TURN_START.encode("ascii")
TRIM_TO = 0.75  # a trim leaves this share of the bound, so that trims are rare
CONTEXT_CHARS = 32  # text before an insertion that an editor buffer must match to mirror it
_AREA_BYTES = PROMPT_AREA.encode()


@dataclass(frozen=True)
class _Known:
    """The document as this store last left it; valid while the file is unchanged."""

    ino: int
    dev: int
    size: int
    mtime_ns: int
    body_end: int  # bytes: where the conversation ends and new text goes
    tail: bytes  # the bytes from body_end to the end (separator, prompt area, unsent prompt)
    context: str  # the last characters of the conversation
    sep: str
    # Where our section headings between replayed items start in the conversation (characters,
    # in order; see `_batch_text`): a trim cuts at one of them without scanning the head. Kept
    # only while the file is exactly what we wrote.
    headings: tuple[int, ...] = ()
    body_chars: int = -1  # the conversation's length in characters (-1: not known)


class TranscriptStore:
    """The transcript documents under ``STATE/transcripts`` (see the module doc)."""

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
        self.paths = TranscriptPaths(self.root)
        self.max_bytes = max_bytes
        self.ceiling = max(ceiling, max_bytes)
        self._raised: dict[Path, int] = {}  # the bound raised for a current turn over max_bytes
        self.durable = durable
        self._guard = threading.Lock()
        self._path_locks: dict[Path, threading.Lock] = {}
        self._known: dict[Path, _Known] = {}
        self._titles: dict[Path, str | None] = {}
        self._serials: dict[Path, int] = {}  # this process's last change of each document
        self._index = ItemIndex(durable)

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
        return self._transaction(agent, session_id, None, lambda doc: doc.append(batch))

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
            self._index.forget(keys)
            self._known.pop(path, None)
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
            return Counter(self._index.counts(self.paths.keys_file(agent, session_id)))

    def take_notices(self) -> list[str]:
        """Problems the store worked around (an index it moved aside or could not save) since
        the last call: for the user's log. Nothing was lost or written twice."""
        return self._index.take_notices()

    # ------------------------------------------------------------------ machinery

    def _lock_for(self, path: Path) -> threading.Lock:
        with self._guard:
            return self._path_locks.setdefault(path, threading.Lock())

    def _transaction(
        self,
        agent: str,
        session_id: str,
        title: str | None,
        operation: Callable[[_Open], DocumentChange | None],
    ) -> DocumentChange | None:
        path = self.path(agent, session_id)
        with self._lock_for(path):
            if title is not None:
                self._titles[path] = title
            private_dir(path.parent, self.state_dir)
            with locked_file(path, self.durable) as locked:
                doc = _Open(self, locked, agent, session_id, self._titles.get(path))
                change = operation(doc)
                self._remember(path, locked, doc)
                if change is None:
                    return None
                serial = self._serials[path] = self._serials.get(path, 0) + 1
                return replace(change, serial=serial)

    def _remember(self, path: Path, locked: Locked, doc: _Open) -> None:
        if doc.known is None:
            self._known.pop(path, None)
            return
        info = os.fstat(locked.fd)
        self._known[path] = _Known(
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


@dataclass
class _Written:
    body_end: int
    tail: bytes
    context: str
    sep: str
    headings: tuple[int, ...] = ()
    body_chars: int = -1


class _Open:
    """One document during one locked operation."""

    def __init__(
        self, store: TranscriptStore, locked: Locked, agent: str, session_id: str, title: str | None
    ):
        self.store = store
        self.locked = locked
        self.agent = agent
        self.session_id = session_id
        self.title = title
        self.path = locked.path
        self.keys_path = store.paths.keys_file(agent, session_id)
        self.known: _Written | None = None

    # -- reading

    def _fast(self) -> _Known | None:
        """What we wrote last, if the file is still that up to the end of the prompt area's
        marker line (an editor may have saved the user's unsent prompt below it since)."""
        known = self.store._known.get(self.path)
        if known is None:
            return None
        info = os.fstat(self.locked.fd)
        if (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns) == (
            known.ino,
            known.dev,
            known.size,
            known.mtime_ns,
        ):
            tail = os.pread(self.locked.fd, known.size - known.body_end, known.body_end)
            if tail == known.tail:
                return known
        return self._still_ours(known, info)

    def _still_ours(self, known: _Known, info: os.stat_result) -> _Known | None:
        """The file changed since we wrote it, but our conversation still ends where we left it:
        its last characters, then our separator and prompt area, are right there. (A change
        anywhere above would move them; another writer's text would stand in their place.)"""
        context = known.context.encode("utf-8", "surrogatepass")
        fixed = known.sep.encode("utf-8", "surrogatepass") + _AREA_BYTES
        start = known.body_end - len(context)
        if start < 0 or info.st_size < known.body_end + len(fixed):
            return None
        if os.pread(self.locked.fd, len(context) + len(fixed), start) != context + fixed:
            return None
        tail = read_all(self.locked.fd, known.body_end)
        return _Known(
            info.st_ino,
            info.st_dev,
            info.st_size,
            info.st_mtime_ns,
            known.body_end,
            tail,
            known.context,
            known.sep,
        )  # no headings: the conversation above may have changed (in place, same size)

    def _layout_as_written(self) -> tuple[Layout, bool]:
        """Like `_layout`, but when the file is still ours (`_fast`), the conversation is exactly
        what we wrote, not normalised: a message that streams on may end mid-line, or inside a
        code block closed only provisionally, and the next append continues it there."""
        fast = self._fast()
        own = self._own_layout(fast) if fast is not None else None
        return (own, False) if own is not None else self._layout()

    def _own_layout(self, fast: _Known) -> Layout | None:
        """The parts of a document `_fast` vouched for, without parsing the conversation (a
        block scan of megabytes): the header is read again, the body and the prompt area are
        exactly what we wrote. None when the header is no longer ours (then parse it whole)."""
        remove_stale_temp(self.path)  # we hold the lock
        data = read_all(self.locked.fd)
        first = data.find(b"\n")
        second = data.find(b"\n", first + 1) if first >= 0 else -1
        if not data.startswith(b"# ") or second < 0 or data[second + 1 : second + 2] != b"\n":
            return None
        start = second + 2
        if start > fast.body_end:
            return None
        try:
            header = data[:start].decode("utf-8")
            body = data[start : fast.body_end].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return None
        title_line, identity = header.split("\n", 2)[:2]
        if parse_identity(identity) != (self.agent, self.session_id):
            return None
        prompt = fast.tail[len(fast.sep.encode("utf-8", "surrogatepass")) + len(_AREA_BYTES) :]
        return Layout(
            header, title_line, body, prompt.decode("utf-8", "replace"), closing=fast.sep.strip("\n")
        )

    def _layout(self) -> tuple[Layout, bool]:
        """The whole document, parsed (created if empty). Returns (layout, created)."""
        remove_stale_temp(self.path)  # we hold the lock
        data = read_all(self.locked.fd)
        if not data:
            return Layout(header_text(self.title, self.agent, self.session_id), "", "", ""), True
        text, torn = decode_prefix(data)
        layout = parse_layout(text, self.agent, self.session_id, self.title)
        layout.repaired = layout.repaired or torn
        return layout, False

    # -- writing

    def _write_whole(
        self, layout: Layout, headings: Sequence[int] = (), written: tuple[str, bytes] | None = None
    ) -> str:
        """`written`: the layout's text and its UTF-8, when the caller made them already."""
        text, data = written or _as_data(layout)
        if os.fstat(self.locked.fd).st_size == 0:
            try:
                write_all(self.locked.fd, data, 0)
                if self.store.durable:
                    os.fsync(self.locked.fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(self.locked.fd, 0)  # still new: the retry writes it whole
                raise
        else:
            self.locked.replace(data)
        self._note_written(layout, data, headings)
        return text

    def _note_unchanged(self, layout: Layout) -> None:
        self._note_written(layout, _as_data(layout)[1])

    def _note_written(self, layout: Layout, data: bytes, headings: Sequence[int] = ()) -> None:
        """`data`: the layout's text in UTF-8, as the file holds it now."""
        sep = layout.separator
        body_end = len(data) - len(layout.ending().encode("utf-8", "surrogatepass"))
        self.known = _Written(
            body_end, data[body_end:], layout.body[-CONTEXT_CHARS:], sep, tuple(headings), len(layout.body)
        )

    def ensure(self) -> DocumentChange | None:
        fast = self._fast()
        if fast is not None:
            self.known = _as_written(fast)
            return None
        layout, created = self._layout()
        if created or layout.repaired:
            return DocumentChange(self.path, document=self._write_whole(layout), created=created)
        self._note_unchanged(layout)
        return None

    def fork(self, body: str, closing: str, keys: Counter[str]) -> DocumentChange | None:
        layout, created = self._layout()
        if layout.body.strip():
            return self.ensure()
        layout.body, layout.closing = body, closing
        text = self._write_whole(layout)
        self.store._index.add(self.keys_path, list(keys.elements()))
        return DocumentChange(self.path, document=text, created=created)

    def retitle(self, title: str | None) -> DocumentChange | None:
        layout, created = self._layout_as_written()
        new_line = title_line(title)
        if new_line == layout.title_line and not (created or layout.repaired):
            self._note_unchanged(layout)
            return None
        old_line = layout.title_line
        layout.header = new_line + layout.header[len(old_line) :]
        layout.title_line = new_line
        repaired = created or layout.repaired
        text = self._write_whole(layout)
        if repaired:
            return DocumentChange(self.path, document=text, title_changed=True, created=created)
        edit = AnchoredEdit(Anchor.TITLE, 0, old_line, new_line)
        return DocumentChange(self.path, edits=(edit,), title_changed=True)

    def clear_prompt(self) -> DocumentChange | None:
        layout, created = self._layout_as_written()
        if not layout.prompt and not created and not layout.repaired:
            self._note_unchanged(layout)
            return None
        layout.prompt = ""
        return DocumentChange(self.path, document=self._write_whole(layout), created=created)

    def replace_question(self, ident: str, text: str) -> DocumentChange | None:
        layout, created = self._layout_as_written()
        found = find_question(layout.body, ident)
        if found is not None:
            layout.body = layout.body[: found.start] + text + layout.body[found.end :]
        elif not (created or layout.repaired):
            self._note_unchanged(layout)
            return None
        return DocumentChange(self.path, document=self._write_whole(layout), created=created)

    def append(self, batch: Batch) -> DocumentChange | None:
        fast = self._fast()
        tail_of_body = fast.context[-2:] if fast is not None else None
        text, keys, headings = self._batch_text(batch, tail_of_body)
        if text.startswith(_TURN_START[1:]) or _TURN_START in text:
            self.store._raised.pop(self.path, None)  # a new turn: the one raised for is older now
        if not text:
            change = None
            if fast is not None:
                self.known = _as_written(fast)
            else:
                change = self.ensure()
        elif fast is not None and self._fits(fast, text):
            change = self._append_in_place(fast, text, batch.closing, headings)
        else:
            change = self._append_whole(batch, text, fast, headings)
        # The keys go after the text: a crash between the two can repeat an item on a later
        # replay, never lose one. (A disk that refuses them: they wait in memory, see index.py.)
        self.store._index.add(self.keys_path, keys)
        return change

    def _batch_text(self, batch: Batch, body_tail: str | None) -> tuple[str, list[str], list[int]]:
        """The batch as text (replayed items the document holds dropped), the keys to record, and
        where in the text the section headings put between replayed items start (each after a
        blank line, at the top level: whole items end their code blocks)."""
        keys = list(batch.keys)
        items_text = ""
        item_headings: list[int] = []
        if batch.items:
            # What the document holds, and the live items going in just before the replay (looked
            # up, not added up: a sum would copy the whole index at every flush of a long replay).
            held = self.store._index.counts(self.keys_path).get
            lead_counts = Counter(batch.keys[: batch.lead_keys])
            lead = lead_counts.get if lead_counts else None
            cursor = batch.cursor
            matched = cursor.matched if cursor is not None else Counter()
            count = matched.get
            parts: list[str] = []
            add, kept = parts.append, keys.append
            section: str | None = None
            size = 0
            for item_text, key, item_section in batch.items:
                seen = matched[key] = count(key, 0) + 1
                if seen <= held(key, 0) + (lead(key, 0) if lead is not None else 0):
                    continue  # the document already has it
                if item_section is not None and item_section != section:
                    if parts:
                        item_headings.append(size)
                    heading = HEADINGS[item_section] + "\n\n"
                    add(heading)
                    size += len(heading)
                section = item_section
                add(item_text)
                add("\n")
                size += len(item_text) + 1
                kept(key)
            items_text = "".join(parts)
        text = batch.lead
        headings: list[int] = []
        if items_text:
            text += _blank_after(text or (body_tail or ""))
            headings = [len(text) + at for at in item_headings]
            text += items_text
        if batch.text:
            if batch.needs_blank and (text or body_tail):
                text += _blank_after(text or (body_tail or ""))
            text += batch.text
        return text, keys, headings

    def _fits(self, fast: _Known, text: str) -> bool:
        return fits(fast.size, text, max(self.store.max_bytes, self.store._raised.get(self.path, 0)))

    def _append_in_place(self, fast: _Known, text: str, closing: str, headings: list[int]) -> DocumentChange:
        old_sep = fast.sep
        prompt = fast.tail[len(old_sep.encode()) + len(_AREA_BYTES) :]
        context = fast.context + text
        new_sep = separator_for(context[-2:] if context else "", closing)
        data = (text + new_sep).encode("utf-8", "surrogatepass") + _AREA_BYTES + prompt
        fd = self.locked.fd
        try:
            os.ftruncate(fd, fast.body_end)
            write_all(fd, data, fast.body_end)
            if self.store.durable:
                os.fsync(fd)
        except OSError:
            # The disk refused (full?): put back the end as it was, so that the retry (the batch
            # is kept) appends exactly this text, once, where it belongs.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, fast.body_end)
                write_all(fd, fast.tail, fast.body_end)
            raise
        added = len(text.encode("utf-8", "surrogatepass"))
        known_headings = fast.headings
        if fast.body_chars >= 0:
            known_headings += tuple(fast.body_chars + at for at in headings)
        self.known = _Written(
            fast.body_end + added,
            data[added:],
            context[-CONTEXT_CHARS:],
            new_sep,
            known_headings,
            fast.body_chars + len(text) if fast.body_chars >= 0 else -1,
        )
        edit = AnchoredEdit(
            Anchor.AREA,
            -(len(fast.context) + len(old_sep)),
            fast.context + old_sep,
            fast.context + text + new_sep,
        )
        return DocumentChange(self.path, edits=(edit,))

    def _append_whole(
        self, batch: Batch, text: str, fast: _Known | None, headings: list[int]
    ) -> DocumentChange:
        """Append by rewriting the whole document: when someone else wrote last (bridge to it),
        after a crash (repair), or when the head must be trimmed. `headings`: see `_batch_text`."""
        own = self._own_layout(fast) if fast is not None else None
        layout, created = (own, False) if own is not None else self._layout()
        if own is not None and fast is not None:
            # Our own document: the conversation ends exactly where we left it (maybe mid-line).
            old_body = own.body
            cuts = [*fast.headings, *(len(old_body) + at for at in headings)]
        else:
            old_body = layout.body
            # A new (or empty) conversation is the text alone: its headings are where it says.
            cuts = headings if not old_body and not batch.fence else []
            if old_body:  # bridged to someone else's text: its own offsets no longer hold
                text = bridge(old_body, batch.mid_line, batch.fence) + text
            elif batch.fence:
                text = batch.fence + "\n" + text
        combined = old_body + text
        layout.body = combined
        layout.closing = batch.closing
        trimmed = replaced = 0
        # The conversation is encoded once for every size the trim needs (megabytes each time).
        encoded = combined.encode("utf-8", "surrogatepass")
        total = len(encoded) + len((layout.header + layout.ending()).encode("utf-8", "surrogatepass"))
        written: tuple[str, bytes] | None = None
        if total > self.store.max_bytes:
            remove = self._to_trim(combined, encoded, total)
            if remove > 0:
                layout.body, trimmed, replaced = trim_head(
                    combined, remove, self.store.max_bytes // 8, cuts, encoded
                )
                written = _as_data(layout)
                total = len(written[1])
                shift = len(layout.body) - len(combined)  # the head replaced by the trim's note
                cuts = [at + shift for at in cuts if at >= replaced]
        if total > self.store.max_bytes:  # the current turn alone is over the bound: raise it
            self.store._raised[self.path] = min(self.store.ceiling, total + self.store.max_bytes // 4)
        else:
            self.store._raised.pop(self.path, None)
        document = self._write_whole(layout, cuts, written)
        if fast is None or layout.repaired or replaced > len(old_body) - len(fast.context):
            return DocumentChange(self.path, document=document, trimmed_bytes=trimmed, created=created)
        # Our own document, trimmed: two edits (the head, the end) rather than the whole text.
        edits = []
        if replaced:
            head = layout.body[: len(layout.body) - (len(combined) - replaced)]
            edits.append(AnchoredEdit(Anchor.BODY, 0, old_body[:replaced], head))
        new_sep = layout.separator
        edits.append(
            AnchoredEdit(
                Anchor.AREA,
                -(len(fast.context) + len(fast.sep)),
                fast.context + fast.sep,
                fast.context + text + new_sep,
            )
        )
        return DocumentChange(self.path, edits=tuple(edits), trimmed_bytes=trimmed)

    def _to_trim(self, body: str, encoded: bytes, total: int) -> int:
        """Bytes to trim from the head of `body` (`encoded`: its UTF-8; the document is `total`
        bytes, over the bound): down to TRIM_TO of the bound, but only older turns, unless the
        document would stay over the ceiling."""
        store = self.store
        want = total - int(store.max_bytes * TRIM_TO)
        # An ASCII line in UTF-8: found in the bytes where it is in the text, no offset to convert.
        turn = encoded.rfind(_TURN_START_BYTES)
        older = turn + 1 if turn >= 0 else 0
        note = TRIM_NOTE.match(body)  # trim_head counts from after an earlier trim's note
        if note is not None and older:
            older -= len(note.group(0).encode("utf-8", "surrogatepass"))
        remove = min(want, older)
        if total - remove > store.ceiling:
            remove = total - int(store.ceiling * TRIM_TO)
        return remove


def fits(size: int, text: str, bound: int) -> bool:
    """Whether a document of `size` bytes stays within `bound` with `text` (and a separator of at
    most two bytes) appended. A character is 1 to 4 bytes in UTF-8: most batches are decided
    without encoding them (a long replay's is megabytes)."""
    if size + len(text) + 2 > bound:
        return False
    if size + 4 * len(text) + 2 <= bound:
        return True
    return size + len(text.encode("utf-8", "surrogatepass")) + 2 <= bound


def _as_data(layout: Layout) -> tuple[str, bytes]:
    text = layout.text()
    return text, text.encode("utf-8", "surrogatepass")


def _as_written(known: _Known) -> _Written:
    return _Written(known.body_end, known.tail, known.context, known.sep, known.headings, known.body_chars)


def _blank_after(text: str) -> str:
    """Newlines that make `text` end with a blank line."""
    if not text or text.endswith("\n\n"):
        return ""
    return "\n" if text.endswith("\n") else "\n\n"
