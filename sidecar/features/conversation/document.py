"""The conversation document's fixed parts and the text operations on it, store and editor alike.

A document is ``header + conversation + separator + prompt area [+ the user's unsent prompt]``:

- the header: ``# Title``, one comment line naming agent and session, a blank line;
- the conversation, grown by appends;
- a separator that puts exactly one blank line (at least) before the prompt area;
- the prompt area exactly as docs/protocol.md shows it, ending with the marker line; whatever
  follows the marker line is the user's next prompt.

Offsets here are in code points of Python strings; :func:`lsp_position` turns one into an LSP
position in any of the three position encodings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from sidecar.features.conversation.clean import one_line
from sidecar.kernel.pieces import (
    MARKER,
    PROMPT_AREA,
    PromptArea,
    carry_answers,
    locate_prompt_area,
)

__all__ = [
    "MARKER",
    "PROMPT_AREA",
    "PromptArea",
    "TextEdit",
    "apply_edits",
    "clear_prompt",
    "header_text",
    "locate_prompt_area",
    "lsp_position",
    "lsp_positions",
    "parse_identity",
    "prompt_text",
    "replace_edit",
    "resync",
    "separator_for",
]

# The header line that names a document's agent and session: on disk and read by the editors, so
# it keeps the old word.
IDENTITY_PREFIX = "<!-- acp-sidecar transcript"
UNTITLED = "Untitled session"
TITLE_LIMIT = 500
# What a trim leaves where the head of the conversation was.
TRIM_NOTE = re.compile(r"\A_… (\d+) earlier bytes trimmed …_\n\n")

# Ids are shown as they are when they are made of these; anything else is percent-encoded, so the
# comment stays one line, cannot end early ("-->"), and names the exact id.
_ID_SAFE = "-._~:@+=,;!$&'()*/"
_IDENTITY = re.compile(rf"\A{re.escape(IDENTITY_PREFIX)} · agent (\S+) · session (\S+) -->\Z")


@dataclass(frozen=True)
class TextEdit:
    """Replace text[start:end] with `text` (offsets in code points of the text it applies to)."""

    start: int
    end: int
    text: str


def _encode_id(value: str) -> str:
    return quote(value, safe=_ID_SAFE) if value else '""'


def identity_line(agent: str, session_id: str) -> str:
    return f"{IDENTITY_PREFIX} · agent {_encode_id(agent)} · session {_encode_id(session_id)} -->"


def parse_identity(line: str) -> tuple[str, str] | None:
    """(agent, session) from a header's identity line, or None when it is not one."""
    found = _IDENTITY.match(line.rstrip("\r\n"))
    if found is None:
        return None
    agent, session = (unquote(part) if part != '""' else "" for part in found.groups())
    return agent, session


def title_line(title: str | None) -> str:
    """The header's first line: the title as a level-1 heading, whatever it contains."""
    clean = one_line(title, TITLE_LIMIT) if title else ""
    if not clean:
        clean = UNTITLED
    # A closing "#" run would be eaten as the heading's closing sequence; a leading one is fine
    # after "# " but escaping both keeps the text exact.
    if clean.startswith("#"):
        clean = "\\" + clean
    if clean.endswith("#"):
        clean = clean[:-1] + "\\#"
    return f"# {clean}"


def header_text(title: str | None, agent: str, session_id: str) -> str:
    return f"{title_line(title)}\n{identity_line(agent, session_id)}\n\n"


def separator_for(conversation: str, closing: str = "") -> str:
    """What goes between the conversation and the prompt area: enough to leave one blank line,
    after `closing` (the fence that closes a code block the conversation is still inside, while
    an agent streams one: the prompt area must never be inside it)."""
    if closing:
        return ("" if not conversation or conversation.endswith("\n") else "\n") + closing + "\n\n"
    if not conversation or conversation.endswith("\n\n"):
        return ""
    return "\n" if conversation.endswith("\n") else "\n\n"


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def prompt_text(text: str) -> str | None:
    """What the user wrote below the marker line, without surrounding blank space; None when the
    text has no prompt area."""
    area = locate_prompt_area(text)
    if area is None:
        return None
    return text[area.prompt_start :].strip()


def clear_prompt(text: str) -> TextEdit | None:
    """The edit that empties the prompt area (None when there is nothing to clear or no area).
    The marker line keeps its newline, so the document still ends like a fresh one."""
    area = locate_prompt_area(text)
    if area is None:
        return None
    if text[area.marker_end - 1 : area.marker_end] != "\n":
        return TextEdit(area.marker_end, len(text), "\n")
    if area.prompt_start == len(text):
        return None
    return TextEdit(area.prompt_start, len(text), "")


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """`text` with non-overlapping `edits` applied (any order given)."""
    parts: list[str] = []
    position = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < position or edit.end < edit.start or edit.end > len(text):
            raise ValueError(f"overlapping or out-of-range edit {edit.start}..{edit.end}")
        parts.append(text[position : edit.start])
        parts.append(edit.text)
        position = edit.end
    parts.append(text[position:])
    return "".join(parts)


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # slice comparisons run in C: O(n log n) in the worst case, fast in practice
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, min(len(a), len(b)) - limit
    high = max(high, 0)
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            low = mid
        else:
            high = mid - 1
    return low


def replace_edit(old: str, new: str) -> TextEdit | None:
    """The smallest single edit that turns `old` into `new`, prompt area and all (None: equal)."""
    if old == new:
        return None
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old, new, prefix)
    return TextEdit(prefix, len(old) - suffix, new[prefix : len(new) - suffix])


def resync(buffer_text: str, document_text: str) -> list[TextEdit]:
    """The smallest single edit that makes an editor buffer show `document_text` above its prompt
    area while keeping what the user typed below the marker, and into the blocks of the agent's
    open questions (an empty list: already equal).

    A buffer without a prompt area gets the whole document, prompt area included."""
    target_area = locate_prompt_area(document_text)
    target = document_text if target_area is None else document_text[: target_area.marker_end]
    buffer_area = locate_prompt_area(buffer_text)
    current = buffer_text if buffer_area is None else buffer_text[: buffer_area.marker_end]
    target = carry_answers(current, target)
    # The marker line's own newline may be missing in a buffer: compare without it.
    if buffer_area is not None and target_area is not None and not current.endswith("\n"):
        target = target.removesuffix("\n")
    if current == target:
        return []
    prefix = _common_prefix(current, target)
    suffix = _common_suffix(current, target, prefix)
    return [TextEdit(prefix, len(current) - suffix, target[prefix : len(target) - suffix])]


def lsp_position(text: str, offset: int, encoding: str = "utf-16") -> tuple[int, int]:
    """(line, character) of a code-point offset, lines split at \\n, \\r\\n and \\r as LSP does,
    characters counted in `encoding` units ("utf-8", "utf-16" or "utf-32")."""
    if not 0 <= offset <= len(text):
        raise ValueError(f"offset {offset} outside 0..{len(text)}")
    # Counted in place: a copy of the text before the offset is megabytes in a long conversation.
    line = text.count("\n", 0, offset) + text.count("\r", 0, offset) - text.count("\r\n", 0, offset)
    if text[offset - 1 : offset] == "\r" and text[offset : offset + 1] == "\n":
        raise ValueError("offset inside a CR LF line break")
    start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    return line, _units(text[start:offset], encoding)


def lsp_positions(text: str, offsets: Sequence[int], encoding: str = "utf-16") -> list[tuple[int, int]]:
    """`lsp_position` of each offset, the lines counted in one pass up to the last offset (an edit
    of many lines near the end of a long conversation names hundreds of offsets)."""
    if "\r" in text:  # not in our documents; a CR LF at a boundary would need care
        return [lsp_position(text, offset, encoding) for offset in offsets]
    found: dict[int, tuple[int, int]] = {}
    line = counted_to = 0
    for offset in sorted(set(offsets)):
        if not 0 <= offset <= len(text):
            raise ValueError(f"offset {offset} outside 0..{len(text)}")
        line += text.count("\n", counted_to, offset)
        counted_to = offset
        found[offset] = line, _units(text[text.rfind("\n", 0, offset) + 1 : offset], encoding)
    return [found[offset] for offset in offsets]


def _units(column_text: str, encoding: str) -> int:
    if encoding == "utf-32":
        return len(column_text)
    if encoding == "utf-8":
        return len(column_text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return len(column_text.encode("utf-16-le", "surrogatepass")) // 2
    raise ValueError(f"unknown position encoding {encoding!r}")
