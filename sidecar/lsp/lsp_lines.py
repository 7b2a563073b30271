"""Lines and positions as LSP defines them, for every conversion the sidecar makes.

LSP lines end at `\\n`, `\\r\\n` and `\\r`, nowhere else. `str.splitlines` (which pygls uses)
also splits at `\\f`, `\\v`, `\\x1c`-`\\x1e`, `\\x85`, U+2028 and U+2029: counted that way, a
position below such a character points one line too far down the text. A position's
`character` counts units of the negotiated encoding; one past the end of its line means the
end of the line (LSP: "defaults back to the line length"), a line past the end of the text
means the end of the text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_BREAK = re.compile(r"\r\n|\r|\n")

Units = Callable[[str], int]  # how many units of the position encoding a string takes


class HasLineCharacter(Protocol):
    @property
    def line(self) -> int: ...
    @property
    def character(self) -> int: ...


def split_lines(text: str) -> list[str]:
    """`text` cut into its LSP lines, each with its line end (as `str.splitlines(True)` does)."""
    return _LINE.findall(text)


def line_starts(text: str) -> list[int]:
    """The offset where each LSP line starts; the empty line after a final line end counts."""
    return [0, *(match.end() for match in _BREAK.finditer(text))]


def line_content_end(text: str, starts: list[int], line: int) -> int:
    """Where the text of `line` ends, before its line end."""
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    while end > starts[line] and text[end - 1] in "\r\n":
        end -= 1
    return end


def offset_at(text: str, position: HasLineCharacter, units: Units, starts: list[int] | None = None) -> int:
    """The code-point offset in `text` of an LSP position (clamped as LSP says)."""
    starts = line_starts(text) if starts is None else starts
    line, character = int(position.line), int(position.character)
    if line < 0:
        return 0
    if line >= len(starts):
        return len(text)
    start = starts[line]
    end = line_content_end(text, starts, line)
    if character <= 0:
        return start
    content = text[start:end]
    if content.isascii():
        return start + min(character, len(content))
    counted = 0
    for index, char in enumerate(content):
        if counted >= character:
            return start + index
        counted += units(char)
    return end


class _At(NamedTuple):
    line: int
    character: int


Change = tuple[HasLineCharacter, HasLineCharacter, str]  # an incremental change: start, end, text


def apply_changes(text: str, changes: Sequence[Change], units: Units) -> str:
    """`text` with incremental changes applied in order, each relative to the text the ones before
    it made, as if applied one after the other. Changes that go down the text, each on a line
    below the one where the change before it ended, take one pass over the text for all of them
    (Helix reports a workspace edit of a long conversation as some 150 changes: one by one, each
    cost a pass over megabytes); others are applied one by one."""
    index = 0
    while index < len(changes):
        text, index = _apply_run(text, changes, index, units)
    return text


def _apply_run(text: str, changes: Sequence[Change], index: int, units: Units) -> tuple[str, int]:
    """Apply `changes[index]` and those after it that go down the text (see `apply_changes`) in
    one pass; returns the new text and the index of the first change not applied. Only in a text
    without "\\r" do positions below a change map to the text before it by a line shift alone (a
    change could join or split a "\\r\\n")."""
    starts = line_starts(text)
    plain = "\r" not in text  # and in every text put in so far
    pieces: list[str] = []
    consumed = 0  # `pieces` hold the new text up to this offset of `text`
    shift = 0  # below the changes so far: a line's number in the new text minus its number in `text`
    last_line = -1  # the line of the new text where the last change's text ends
    first = index
    while index < len(changes):
        start, end, new_text = changes[index]
        if index > first and not (
            plain
            and "\r" not in new_text
            and start.line > last_line
            and (end.line, end.character) >= (start.line, start.character)
        ):
            break
        begin = offset_at(text, _At(start.line - shift, start.character), units, starts)
        finish = offset_at(text, _At(end.line - shift, end.character), units, starts)
        if finish < begin:  # (only the first of a run)
            begin, finish = finish, begin
        pieces += (text[consumed:begin], new_text)
        consumed = finish
        plain = plain and "\r" not in new_text
        last_line = bisect.bisect_right(starts, begin) - 1 + shift + new_text.count("\n")
        shift = last_line - (bisect.bisect_right(starts, finish) - 1)
        index += 1
    pieces.append(text[consumed:])
    return "".join(pieces), index
