"""Edits that scroll a view anchored at a character along with text added at the end.

Helix keeps a view's top as a character offset and maps it through every change "before"
insertions: text appended below the top never moves it, and a replaced range that holds it moves
it to the range's start. An answer streamed above the prompt area (where the cursor is) would grow
below the screen. :func:`follow_edits` writes the same change so that a view whose top is within
the last lines above the change ends up the same number of lines further down, as if the editor
had scrolled to keep the end in sight:

1. the first lines of the window are inserted again just before the newline above the window
   (the copy comes before every top in the window, so each moves down by that many lines);
2. each line of the window becomes the line that many lines below it in the new text (a top at a
   line's start stays at that start: the start of the replacement);
3. the old text from the line of the change to the end of the change becomes the rest of the new
   text. What follows the change (the prompt area, the cursor in it) is kept as it is.

The result is the same text; only where positions inside the window land differs.
"""

from __future__ import annotations

from sidecar.features.conversation.document import TextEdit, apply_edits

__all__ = ["FOLLOW_CHARS", "FOLLOW_LINES", "follow_edits"]

FOLLOW_LINES = 150  # a view whose top is this many lines above the change follows it
FOLLOW_CHARS = 24_000  # at most this much text of the window is rewritten per change


def follow_edits(
    text: str, edits: list[TextEdit], max_lines: int = FOLLOW_LINES, max_chars: int = FOLLOW_CHARS
) -> list[TextEdit]:
    """`edits` of `text`, rewritten as the module doc says when they add lines; else as given.
    The header's first line is never part of the window (a view at the very top stays there)."""
    if not edits:
        return edits
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    # The change to follow: the last edit that adds lines, with edits on its lines. Edits further
    # up (a new title) or below it (the prompt area cleared) stay as they are.
    adding = [i for i, e in enumerate(ordered) if e.text.count("\n") > text.count("\n", e.start, e.end)]
    if not adding:
        return edits
    later = ordered[adding[-1] + 1 :]
    ordered = ordered[: adding[-1] + 1]
    tail = [ordered.pop()]
    while ordered and ordered[-1].end >= text.rfind("\n", 0, tail[0].start):
        tail.insert(0, ordered.pop())
    floor = max((e.end for e in ordered), default=-1) + 2  # the window starts after these
    start, end = tail[0].start, max(e.end for e in tail)
    new = apply_edits(text, tail)
    added = new.count("\n") - text.count("\n")
    change_line_start = text.rfind("\n", 0, start) + 1
    if added <= 0 or change_line_start == 0:
        return edits
    # The window: whole lines above the change's line, not the first line of the document.
    window_start = change_line_start
    lines = 0
    while lines < max_lines:
        previous = text.rfind("\n", 0, window_start - 1) + 1
        if previous < max(floor, 1) or change_line_start - previous > max_chars:
            break
        window_start = previous
        lines += 1
    if lines == 0:
        return edits
    old_lines = text[window_start:change_line_start].split("\n")[:-1]
    # The new text has the same lines up to the change: its lines from the window's start on.
    tail_end = end + len(new) - len(text)  # where the change ends in the new text
    new_lines = new[window_start:tail_end].split("\n")
    out = [*ordered, TextEdit(window_start - 1, window_start - 1, "\n" + "\n".join(new_lines[:added]))]
    offset = window_start
    for index, old in enumerate(old_lines):
        replacement = new_lines[index + added]
        if replacement != old:
            out.append(TextEdit(offset, offset + len(old), replacement))
        offset += len(old) + 1
    rest = "\n".join(new_lines[len(old_lines) + added :])
    if rest != text[change_line_start:end]:
        out.append(TextEdit(change_line_start, end, rest))
    return out + later
