"""Appending a rendered batch to a locked document: the store's ``append`` (see store.py).

Replayed items the document already holds are dropped (the index counts them) and section headings
go between the rest. The text goes in place while the file is still what we wrote last and stays
within its bound; else the whole document is rewritten: bridged to someone else's text, repaired,
or its oldest turns trimmed (the current turn is kept whole, up to the store's ceiling).
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter

from sidecar.features.conversation.document import TRIM_NOTE, separator_for
from sidecar.features.conversation.elements import HEADINGS
from sidecar.features.conversation.layout import bridge, trim_head
from sidecar.features.conversation.locked_document import (
    AREA_BYTES,
    CONTEXT_CHARS,
    Known,
    LockedDocument,
    StoreState,
    Written,
    as_written,
    encode_layout,
)
from sidecar.features.conversation.model import Anchor, AnchoredEdit, Batch, DocumentChange
from sidecar.kernel.state_files import write_all

__all__ = ["append_batch", "fits"]

_TURN_START = "\n" + HEADINGS["you"] + "\n"
_TURN_START_BYTES = _TURN_START.encode("ascii")
TRIM_TO = 0.75  # a trim leaves this share of the bound, so that trims are rare


def append_batch(doc: LockedDocument, batch: Batch) -> DocumentChange | None:
    """Append `batch` just above the prompt area (see the module doc); what changed, or None."""
    fast = doc.last_written()
    tail_of_body = fast.context[-2:] if fast is not None else None
    text, keys, headings = _batch_text(doc, batch, tail_of_body)
    if text.startswith(_TURN_START[1:]) or _TURN_START in text:
        doc.state.raised.pop(doc.path, None)  # a new turn: the one raised for is older now
    if not text:
        change = None
        if fast is not None:
            doc.known = as_written(fast)
        else:
            change = doc.ensure()
    elif fast is not None and _fits(doc, fast, text):
        change = _append_in_place(doc, fast, text, batch.closing, headings)
    else:
        change = _append_whole(doc, batch, text, fast, headings)
    # The keys go after the text: a crash between the two can repeat an item on a later
    # replay, never lose one. (A disk that refuses them: they wait in memory, see index.py.)
    doc.state.index.add(doc.keys_path, keys)
    return change


def _batch_text(doc: LockedDocument, batch: Batch, body_tail: str | None) -> tuple[str, list[str], list[int]]:
    """The batch as text (replayed items the document holds dropped), the keys to record, and
    where in the text the section headings put between replayed items start (each after a
    blank line, at the top level: whole items end their code blocks)."""
    keys = list(batch.keys)
    items_text = ""
    item_headings: list[int] = []
    if batch.items:
        # What the document holds, and the live items going in just before the replay (looked
        # up, not added up: a sum would copy the whole index at every flush of a long replay).
        held = doc.state.index.counts(doc.keys_path).get
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


def _fits(doc: LockedDocument, fast: Known, text: str) -> bool:
    return fits(fast.size, text, max(doc.state.max_bytes, doc.state.raised.get(doc.path, 0)))


def _append_in_place(
    doc: LockedDocument, fast: Known, text: str, closing: str, headings: list[int]
) -> DocumentChange:
    old_sep = fast.sep
    prompt = fast.tail[len(old_sep.encode()) + len(AREA_BYTES) :]
    context = fast.context + text
    new_sep = separator_for(context[-2:] if context else "", closing)
    data = (text + new_sep).encode("utf-8", "surrogatepass") + AREA_BYTES + prompt
    fd = doc.locked.fd
    try:
        os.ftruncate(fd, fast.body_end)
        write_all(fd, data, fast.body_end)
        if doc.state.durable:
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
    doc.known = Written(
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
    return DocumentChange(doc.path, edits=(edit,))


def _append_whole(
    doc: LockedDocument, batch: Batch, text: str, fast: Known | None, headings: list[int]
) -> DocumentChange:
    """Append by rewriting the whole document: when someone else wrote last (bridge to it),
    after a crash (repair), or when the head must be trimmed. `headings`: see `_batch_text`."""
    own = doc.own_layout(fast) if fast is not None else None
    layout, created = (own, False) if own is not None else doc.read_layout()
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
    if total > doc.state.max_bytes:
        remove = _to_trim(doc.state, combined, encoded, total)
        if remove > 0:
            layout.body, trimmed, replaced = trim_head(
                combined, remove, doc.state.max_bytes // 8, cuts, encoded
            )
            written = encode_layout(layout)
            total = len(written[1])
            shift = len(layout.body) - len(combined)  # the head replaced by the trim's note
            cuts = [at + shift for at in cuts if at >= replaced]
    if total > doc.state.max_bytes:  # the current turn alone is over the bound: raise it
        doc.state.raised[doc.path] = min(doc.state.ceiling, total + doc.state.max_bytes // 4)
    else:
        doc.state.raised.pop(doc.path, None)
    document = doc.write_whole(layout, cuts, written)
    if fast is None or layout.repaired or replaced > len(old_body) - len(fast.context):
        return DocumentChange(doc.path, document=document, trimmed_bytes=trimmed, created=created)
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
    return DocumentChange(doc.path, edits=tuple(edits), trimmed_bytes=trimmed)


def _to_trim(state: StoreState, body: str, encoded: bytes, total: int) -> int:
    """Bytes to trim from the head of `body` (`encoded`: its UTF-8; the document is `total`
    bytes, over the bound): down to TRIM_TO of the bound, but only older turns, unless the
    document would stay over the ceiling."""
    want = total - int(state.max_bytes * TRIM_TO)
    # An ASCII line in UTF-8: found in the bytes where it is in the text, no offset to convert.
    turn = encoded.rfind(_TURN_START_BYTES)
    older = turn + 1 if turn >= 0 else 0
    note = TRIM_NOTE.match(body)  # trim_head counts from after an earlier trim's note
    if note is not None and older:
        older -= len(note.group(0).encode("utf-8", "surrogatepass"))
    remove = min(want, older)
    if total - remove > state.ceiling:
        remove = total - int(state.ceiling * TRIM_TO)
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


def _blank_after(text: str) -> str:
    """Newlines that make `text` end with a blank line."""
    if not text or text.endswith("\n\n"):
        return ""
    return "\n" if text.endswith("\n") else "\n\n"
