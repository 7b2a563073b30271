"""Reading a whole document back into its parts, repairing it, trimming its head, and joining new
text to a conversation someone else ended. Pure text functions: the store does the I/O."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from sidecar.features.conversation.blocks import BlockState, Mode, line_states, scan_end
from sidecar.features.conversation.document import (
    PROMPT_AREA,
    TRIM_NOTE,
    header_text,
    locate_prompt_area,
    parse_identity,
    separator_for,
)
from sidecar.features.conversation.elements import HEADINGS

__all__ = ["Layout", "bridge", "parse_layout", "trim_head"]

CONTINUED = "…"
_OUR_HEADINGS = tuple(h + "\n" for h in HEADINGS.values())


@dataclass
class Layout:
    """A document split into its parts. `repaired`: it was not well formed (a torn write, a
    missing header or prompt area) and must be rewritten whole."""

    header: str
    title_line: str
    body: str  # the conversation, without the separator before the prompt area
    prompt: str  # what follows the marker line (the user's unsent prompt)
    repaired: bool = False
    closing: str = ""  # closes a code block the body ends inside (see separator_for)

    @property
    def separator(self) -> str:
        return separator_for(self.body, self.closing)

    def ending(self) -> str:
        """What follows the conversation: the separator, the prompt area, the unsent prompt."""
        return self.separator + PROMPT_AREA + self.prompt

    def text(self) -> str:
        return self.header + self.body + self.ending()


def decode_prefix(data: bytes) -> tuple[str, bool]:
    """Bytes as text; a multi-byte character cut off at the end (a torn write) is dropped.
    Returns (text, whether anything was dropped or replaced)."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":
            return data[: exc.start].decode("utf-8", "replace"), True
        return data.decode("utf-8", "replace"), True


def parse_layout(text: str, agent: str, session_id: str, title: str | None) -> Layout:
    """Split a document; repair what a torn write or an edit broke (nothing before the tear is lost)."""
    repaired = False
    first = text.find("\n")
    second = text.find("\n", first + 1) if first >= 0 else -1
    identity = parse_identity(text[first + 1 : second]) if second >= 0 else None
    fresh_header = header_text(title, agent, session_id)
    if text.startswith("# ") and identity == (agent, session_id) and text[second + 1 : second + 2] == "\n":
        header = text[: second + 2]
        title_line = text[:first]
        rest = text[second + 2 :]
    else:
        repaired = True
        header = fresh_header
        title_line = fresh_header.split("\n", 1)[0]
        # A creation torn before its header was complete leaves a prefix of a header: drop it.
        if fresh_header.startswith(text) or (text.startswith("# ") and "\n" not in text):
            rest = ""
        else:
            rest = text
    area = locate_prompt_area(rest)
    if area is None:
        repaired = True
        body = _strip_torn_area(rest)
        prompt = ""
    else:
        body = rest[: area.start]
        prompt = rest[area.prompt_start :]
        if rest[area.start : area.prompt_start] != PROMPT_AREA:
            repaired = True  # the area's own lines were edited: write them afresh
    body = body.rstrip("\n")
    body = body + "\n" if body else ""
    state = scan_end(body)
    if state.mode is Mode.FENCE:
        # A writer stopped inside a code block: close it, or it swallows the prompt area.
        body += state.fence_opener + "\n"
        repaired = True
    return Layout(header, title_line, body, prompt, repaired)


def _strip_torn_area(rest: str) -> str:
    """Drop a prompt area cut off by a torn write (the text before it is kept)."""
    for size in range(len(PROMPT_AREA) - 1, 0, -1):
        piece = PROMPT_AREA[:size]
        if rest.endswith(piece) and (len(rest) == size or rest[-size - 1] == "\n"):
            return rest[:-size]
    return rest


def bridge(body: str, mid_line: bool, fence: str) -> str:
    """What goes between `body` (a conversation someone else wrote last) and new text that was
    rendered for another ending: a code block left open is closed, containers are closed by a
    blank line and an unindented line, and the new text's own fence or line is re-opened."""
    if not body:
        return (fence + "\n" if fence else "") + (CONTINUED if mid_line else "")
    state = scan_end(body)
    parts: list[str] = []
    if not body.endswith("\n"):
        parts.append("\n")
    if state.mode is Mode.FENCE:
        parts.append(state.fence_opener + "\n")
    if not (body + "".join(parts)).endswith("\n\n"):
        parts.append("\n")
    # Containers (lists, quotes) may still be open: an unindented line after the blank one
    # closes them all.
    containers = state.mode is Mode.UNCERTAIN
    if fence:
        if containers:
            parts.append(CONTINUED + "\n\n")
        parts.append(fence + "\n")
        if mid_line:
            parts.append(CONTINUED)
    elif mid_line:
        parts.append(CONTINUED)
    elif containers:
        parts.append(CONTINUED + "\n\n")
    return "".join(parts)


def trim_head(
    body: str,
    remove_bytes: int,
    prefer_within: int,
    headings: Sequence[int] = (),
    encoded: bytes | None = None,
) -> tuple[str, int, int]:
    """Cut at least `remove_bytes` bytes from the head of a conversation; returns the new body
    (starting with the trim note), how many bytes of conversation are gone in all, and how many
    characters of `body` were replaced by the new note (and re-opening fence).

    The cut is at a line start, where the block state is known, so the rest keeps its structure:
    a code block cut in two is re-opened. One of our own headings within `prefer_within` bytes
    after the minimum is preferred. `headings`: offsets in `body`, in order, where the writer
    knows one of our headings starts at the top level after a blank line (the store's replayed
    sections): the first one far enough in is the cut, with no scan of what comes before.
    `encoded`: `body` in UTF-8, when the caller has it (an encode of megabytes saved)."""
    earlier = 0
    skipped = 0
    note = TRIM_NOTE.match(body)
    if note is not None:
        earlier = int(note.group(1))
        skipped = note.end()
        body = body[skipped:]
    if encoded is None:
        encoded, skipped_bytes = body.encode("utf-8", "surrogatepass"), 0
    else:  # it still holds the earlier trim's note
        skipped_bytes = len(note.group(0).encode("utf-8", "surrogatepass")) if note is not None else 0
    # The first character that may start the rest:
    at_least = _char_at_byte(encoded, remove_bytes, skipped_bytes)
    first = at_least[0]
    known = _known_heading_cut(body, at_least, remove_bytes, prefer_within, [h - skipped for h in headings])
    cut_offset, cut_state, cut_bytes = known or _choose_cut(body, first, prefer_within)
    if cut_offset is None:
        # No line starts late enough: cut inside the last line.
        cut_offset, cut_bytes = at_least
        line_start = body.rfind("\n", 0, cut_offset) + 1
        before = scan_end(body[:line_start])
        after = scan_end(body[line_start:], before)
        prefix = (after.fence_opener + "\n" if after.mode is Mode.FENCE else "") + CONTINUED
    else:
        prefix = cut_state.fence_opener + "\n" if cut_state.mode is Mode.FENCE else ""
    gone = earlier + cut_bytes
    kept = body[cut_offset:]
    new_note = f"_… {gone} earlier bytes trimmed …_\n\n"
    return new_note + prefix + kept, gone, skipped + cut_offset


def _known_heading_cut(
    body: str, at_least: tuple[int, int], remove_bytes: int, prefer_within: int, headings: Sequence[int]
) -> tuple[int, BlockState, int] | None:
    """The first of `headings` at or after `at_least` (the first character at least `remove_bytes`
    bytes in, and its byte offset), when it is at most `prefer_within` bytes further (else None:
    scan)."""
    first, first_bytes = at_least
    at = bisect.bisect_left(headings, max(first, 1))
    if at == len(headings) or headings[at] >= len(body):
        return None
    offset = headings[at]
    if not (body.startswith(_OUR_HEADINGS, offset) and body.endswith("\n\n", 0, offset)):
        return None  # not what the writer said (it cannot be trusted to know): scan
    cut_bytes = first_bytes + len(body[first:offset].encode("utf-8", "surrogatepass"))
    if cut_bytes - remove_bytes > prefer_within:
        return None
    return offset, BlockState(Mode.CERTAIN, after_blank=True), cut_bytes


def _choose_cut(body: str, first: int, prefer_within: int) -> tuple[int | None, BlockState, int]:
    """The first line start at or after the character `first` (never the first line), or one of
    our headings at most `prefer_within` bytes after it. The lines before it are scanned in one
    pass (half the cost of a state per line: a long replay trims megabytes at a time)."""
    start = first if first > 0 and body[first - 1] == "\n" else body.find("\n", first) + 1
    if start <= 0 or start >= len(body):
        return None, BlockState(), 0
    state = scan_end(body[:start])
    first_bytes = len(body[:start].encode("utf-8", "surrogatepass"))
    rest = body[start:]
    position_bytes = first_bytes
    last_offset = 0
    for offset, line_state in line_states(rest, state):
        position_bytes += len(rest[last_offset:offset].encode("utf-8", "surrogatepass"))
        last_offset = offset
        if (
            line_state.mode is not Mode.FENCE
            and line_state.after_blank
            and rest.startswith(_OUR_HEADINGS, offset)
        ):
            return start + offset, line_state, position_bytes
        if position_bytes - first_bytes > prefer_within:
            break
    return start, state, first_bytes


def _char_at_byte(encoded: bytes, byte_count: int, start: int = 0) -> tuple[int, int]:
    """In the text `encoded[start:]` (UTF-8), the first character offset whose UTF-8 prefix is
    at least `byte_count` bytes (and that size)."""
    cut = start + byte_count
    if cut >= len(encoded):
        cut = len(encoded)
    while cut < len(encoded) and (encoded[cut] & 0xC0) == 0x80:
        cut += 1  # not inside a character
    return len(encoded[start:cut].decode("utf-8", "surrogatepass")), cut - start
