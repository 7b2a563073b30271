"""One conversation document during one locked operation of the store (store.py): read (only its
end while the file is still what the store wrote last, :class:`Known`; else parsed whole and
repaired), changed, written whole. Appending a batch is appending.py's.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sidecar.features.conversation.document import PROMPT_AREA, header_text, parse_identity, title_line
from sidecar.features.conversation.index import ItemIndex
from sidecar.features.conversation.layout import Layout, decode_prefix, parse_layout
from sidecar.features.conversation.model import Anchor, AnchoredEdit, DocumentChange
from sidecar.kernel.pieces import find_question
from sidecar.kernel.state_files import Locked, read_all, remove_stale_temp, write_all

__all__ = [
    "AREA_BYTES",
    "CONTEXT_CHARS",
    "Known",
    "LockedDocument",
    "StoreState",
    "Written",
    "as_written",
    "encode_layout",
]

CONTEXT_CHARS = 32  # text before an insertion that an editor buffer must match to mirror it
AREA_BYTES = PROMPT_AREA.encode()


@dataclass(frozen=True)
class Known:
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
    # in order; see `_batch_text` in appending.py): a trim cuts at one of them without scanning
    # the head. Kept only while the file is exactly what we wrote.
    headings: tuple[int, ...] = ()
    body_chars: int = -1  # the conversation's length in characters (-1: not known)


@dataclass
class Written:
    """What one operation left in the document, for the store to remember (as :class:`Known`)."""

    body_end: int
    tail: bytes
    context: str
    sep: str
    headings: tuple[int, ...] = ()
    body_chars: int = -1


@dataclass
class StoreState:
    """What the store keeps across its locked operations, which they read and update."""

    durable: bool  # written data is fsynced
    max_bytes: int  # a document's bound
    ceiling: int  # how far the bound is raised to keep a current turn whole (see store.py)
    index: ItemIndex
    known: dict[Path, Known] = field(default_factory=dict)  # what it last wrote in each document
    raised: dict[Path, int] = field(default_factory=dict)  # the bound raised for a current turn


class LockedDocument:
    """One document during one locked operation (see the module doc)."""

    def __init__(
        self,
        state: StoreState,
        locked: Locked,
        agent: str,
        session_id: str,
        title: str | None,
        keys_path: Path,
    ):
        self.state = state
        self.locked = locked
        self.agent = agent
        self.session_id = session_id
        self.title = title
        self.path = locked.path
        self.keys_path = keys_path
        self.known: Written | None = None

    # -- reading

    def last_written(self) -> Known | None:
        """What we wrote last, if the file is still that up to the end of the prompt area's
        marker line (an editor may have saved the user's unsent prompt below it since)."""
        known = self.state.known.get(self.path)
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

    def _still_ours(self, known: Known, info: os.stat_result) -> Known | None:
        """The file changed since we wrote it, but our conversation still ends where we left it:
        its last characters, then our separator and prompt area, are right there. (A change
        anywhere above would move them; another writer's text would stand in their place.)"""
        context = known.context.encode("utf-8", "surrogatepass")
        fixed = known.sep.encode("utf-8", "surrogatepass") + AREA_BYTES
        start = known.body_end - len(context)
        if start < 0 or info.st_size < known.body_end + len(fixed):
            return None
        if os.pread(self.locked.fd, len(context) + len(fixed), start) != context + fixed:
            return None
        tail = read_all(self.locked.fd, known.body_end)
        return Known(
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
        """Like `read_layout`, but when the file is still ours (`last_written`), the conversation
        is exactly what we wrote, not normalised: a message that streams on may end mid-line, or
        inside a code block closed only provisionally, and the next append continues it there."""
        fast = self.last_written()
        own = self.own_layout(fast) if fast is not None else None
        return (own, False) if own is not None else self.read_layout()

    def own_layout(self, fast: Known) -> Layout | None:
        """The parts of a document `last_written` vouched for, without parsing the conversation
        (a block scan of megabytes): the header is read again, the body and the prompt area are
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
        prompt = fast.tail[len(fast.sep.encode("utf-8", "surrogatepass")) + len(AREA_BYTES) :]
        return Layout(
            header, title_line, body, prompt.decode("utf-8", "replace"), closing=fast.sep.strip("\n")
        )

    def read_layout(self) -> tuple[Layout, bool]:
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

    def write_whole(
        self, layout: Layout, headings: Sequence[int] = (), written: tuple[str, bytes] | None = None
    ) -> str:
        """`written`: the layout's text and its UTF-8, when the caller made them already."""
        text, data = written or encode_layout(layout)
        if os.fstat(self.locked.fd).st_size == 0:
            try:
                write_all(self.locked.fd, data, 0)
                if self.state.durable:
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
        self._note_written(layout, encode_layout(layout)[1])

    def _note_written(self, layout: Layout, data: bytes, headings: Sequence[int] = ()) -> None:
        """`data`: the layout's text in UTF-8, as the file holds it now."""
        sep = layout.separator
        body_end = len(data) - len(layout.ending().encode("utf-8", "surrogatepass"))
        self.known = Written(
            body_end, data[body_end:], layout.body[-CONTEXT_CHARS:], sep, tuple(headings), len(layout.body)
        )

    def ensure(self) -> DocumentChange | None:
        fast = self.last_written()
        if fast is not None:
            self.known = as_written(fast)
            return None
        layout, created = self.read_layout()
        if created or layout.repaired:
            return DocumentChange(self.path, document=self.write_whole(layout), created=created)
        self._note_unchanged(layout)
        return None

    def fork(self, body: str, closing: str, keys: Counter[str]) -> DocumentChange | None:
        layout, created = self.read_layout()
        if layout.body.strip():
            return self.ensure()
        layout.body, layout.closing = body, closing
        text = self.write_whole(layout)
        self.state.index.add(self.keys_path, list(keys.elements()))
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
        text = self.write_whole(layout)
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
        return DocumentChange(self.path, document=self.write_whole(layout), created=created)

    def replace_question(self, ident: str, text: str) -> DocumentChange | None:
        layout, created = self._layout_as_written()
        found = find_question(layout.body, ident)
        if found is not None:
            layout.body = layout.body[: found.start] + text + layout.body[found.end :]
        elif not (created or layout.repaired):
            self._note_unchanged(layout)
            return None
        return DocumentChange(self.path, document=self.write_whole(layout), created=created)


def encode_layout(layout: Layout) -> tuple[str, bytes]:
    """The layout's text, and the bytes the file holds for it."""
    text = layout.text()
    return text, text.encode("utf-8", "surrogatepass")


def as_written(known: Known) -> Written:
    """What we wrote last, taken as what this operation left (it wrote nothing)."""
    return Written(known.body_end, known.tail, known.context, known.sep, known.headings, known.body_chars)
