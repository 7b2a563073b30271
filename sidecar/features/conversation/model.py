"""What passes between the renderer, the store and the editor layer."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import NamedTuple

from sidecar.features.conversation.document import TextEdit, apply_edits, locate_prompt_area, resync

__all__ = ["Anchor", "AnchoredEdit", "Batch", "DocumentChange", "ReplayCursor", "ReplayItem"]


class ReplayItem(NamedTuple):
    """One complete item of a replayed history, rendered on its own.

    `key` identifies it (role and content hash, or tool call id): the store drops it when the
    document already holds an item with that key. `section` ("you", "agent" or None) is the
    heading it belongs under; the heading is added when the kept items change section.
    (A named tuple: a long replay makes one per item, and a frozen dataclass's creation costs
    several times a tuple's.)
    """

    text: str
    key: str
    section: str | None


@dataclass
class ReplayCursor:
    """How many of each key one replay has matched so far (replays are merged as multisets)."""

    matched: Counter[str] = field(default_factory=Counter)


@dataclass
class Batch:
    """Text for one locked append.

    Live text goes in as it is (`text`, with the `keys` of the items it completes); replayed
    `items` are filtered against what the document holds first. `mid_line` and `fence` say how the
    text begins (inside a line; inside a code block opened with that fence), so that a store that
    finds someone else wrote in between can bridge to it safely.
    """

    lead: str = ""  # live text rendered before a replay began (goes first)
    lead_keys: int = 0  # the first `lead_keys` of `keys` name items in `lead`
    text: str = ""
    keys: list[str] = field(default_factory=list)
    items: list[ReplayItem] = field(default_factory=list)
    cursor: ReplayCursor | None = None
    mid_line: bool = False
    fence: str = ""
    needs_blank: bool = False  # the text starts a new element after unknown text: ensure a blank line
    closing: str = ""  # the fence that closes a code block the text ends inside (written provisionally)

    def __bool__(self) -> bool:
        return bool(self.lead or self.text or self.keys or self.items)


class Anchor(Enum):
    TITLE = "title"  # the first line
    BODY = "body"  # the start of the conversation (just after the header)
    AREA = "area"  # the start of the prompt area ("---" line)


@dataclass(frozen=True)
class AnchoredEdit:
    """Replace `expect` found at `offset` code points from `anchor` with `text`."""

    anchor: Anchor
    offset: int
    expect: str
    text: str


@dataclass(frozen=True)
class DocumentChange:
    """What one store write did to a document, for an editor buffer to do the same.

    `edits` are relative to the document before the write (non-overlapping); when the change
    cannot be told that way (someone else wrote in between, a repair), `document` is the whole new
    document instead. `serial` orders this process's writes of the document (see
    :meth:`ConversationStore.snapshot`): a text read at serial N already holds changes up to N.
    """

    path: Path
    edits: tuple[AnchoredEdit, ...] = ()
    document: str | None = None
    trimmed_bytes: int = 0
    title_changed: bool = False
    created: bool = False
    serial: int = 0

    def mirror(self, buffer_text: str) -> list[TextEdit] | None:
        """The edits that do this change to an editor buffer showing the document (the user's
        text in its prompt area stays as it is). None: the buffer is not what the change expects
        (edited by the user, or missed a change); resync it with :func:`resync` and the file."""
        if self.document is not None:
            return resync(buffer_text, self.document)
        edits: list[TextEdit] = []
        for edit in self.edits:
            base = _anchor_offset(buffer_text, edit.anchor)
            if base is None:
                return None
            start = base + edit.offset
            end = start + len(edit.expect)
            if start < 0 or buffer_text[start:end] != edit.expect:
                return None
            edits.append(TextEdit(start, end, edit.text))
        try:
            apply_edits(buffer_text, edits)  # rejects overlaps
        except ValueError:
            return None
        return edits


def _anchor_offset(text: str, anchor: Anchor) -> int | None:
    if anchor is Anchor.TITLE:
        return 0
    if anchor is Anchor.BODY:
        first = text.find("\n")
        second = text.find("\n", first + 1) if first >= 0 else -1
        if second < 0 or text[second + 1 : second + 2] != "\n":
            return None
        return second + 2
    area = locate_prompt_area(text)
    return None if area is None else area.start
