"""Lines and positions as LSP defines them, for every conversion the sidecar makes.

LSP lines end at `\\n`, `\\r\\n` and `\\r`, nowhere else. `str.splitlines` (which pygls uses)
also splits at `\\f`, `\\v`, `\\x1c`-`\\x1e`, `\\x85`, U+2028 and U+2029: counted that way, a
position below such a character points one line too far down the text. A position's
`character` counts units of the negotiated encoding; one past the end of its line means the
end of the line (LSP: "defaults back to the line length"), a line past the end of the text
means the end of the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

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


def apply_change(
    text: str, start: HasLineCharacter, end: HasLineCharacter, new_text: str, units: Units
) -> str:
    """`text` with the range `start`-`end` replaced by `new_text` (an incremental didChange)."""
    starts = line_starts(text)
    begin, finish = offset_at(text, start, units, starts), offset_at(text, end, units, starts)
    if finish < begin:
        begin, finish = finish, begin
    return text[:begin] + new_text + text[finish:]
