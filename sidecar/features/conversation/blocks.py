"""Escape untrusted Markdown so that it can never forge the conversation document's own structure.

Agent (and user) text is Markdown and should render as such: lists, emphasis, code blocks. What it
must not do is make a heading, a thematic break, an HTML block (an HTML comment can swallow the rest
of a document), or a code block that stays open past its message and swallows our headings and the
prompt area. :class:`MarkdownEscaper` tracks the CommonMark block state line by line, as a stream,
and puts a backslash in front of every line start that would do one of those things.

It does not parse all of CommonMark; it tracks the one thing that matters, whether a line is
certainly at the top level of the document (no list item or block quote open), and is
conservative everywhere else:

- ``CERTAIN``: top level. Fenced code blocks are tracked exactly; headings, breaks and HTML starts
  are escaped; a line that opens a list item or a block quote switches to ``UNCERTAIN``.
- ``UNCERTAIN``: maybe inside containers. Every line is escaped at every place where a container
  could have left its content (after any mix of indentation, ``>`` and list markers), fence lines
  included, so nothing opened here can outlive the containers. A non-indented line that follows
  a blank line and opens no container closes every container (CommonMark: a list item needs its
  content indented, a block quote needs ``>``, a lazy line needs an open paragraph): ``CERTAIN``.
- ``FENCE``: inside a top-level fenced code block, until its closing fence.

Whoever ends a segment of escaped text calls :meth:`MarkdownEscaper.close`: it ends the line and
closes an open fence, and the blank line plus the unindented line of what we write next close all
containers. The property tests check this against a real CommonMark parser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from sidecar.kernel.pieces import MARKER_PREFIX

__all__ = ["BlockState", "MarkdownEscaper", "Mode", "escape_markdown", "line_states", "scan_end"]

# A line undecided for this long is decided the safe way (escaped): a hostile line must not be
# held back, or examined again and again, without bound.
_HOLD_LIMIT = 1024


# Complete lines that need a decision of their own (the rest goes out in bulk). At the top level:
# what may open a fence or a container, or be a break or an underline made of - or *.
_TOP_LINES = re.compile(r"^[ ]{0,3}[`~\-*+>0-9]", re.MULTILINE)
# Lines at the top level that are escaped and change nothing: "#" and "<" starts, "=" underlines,
# "_" breaks. (Each is what _core decides for that line.)
_TOP_ESCAPES = re.compile(r"^([ ]{0,3})(?=[#<]|=+[ \t]*$|_(?:[ \t]*_){2,}[ \t]*$)", re.MULTILINE)
# Inside containers: any line whose first character may matter, and blank lines.
_NESTED_LINES = re.compile(r"^[ \t]*(?:[#<`~\-*_=+>0-9]|$)", re.MULTILINE)
# Inside a fence: a possible closing fence, or our marker.
_FENCE_LINES = {
    char: re.compile(rf"^(?:[ ]{{0,3}}{re.escape(char)}|{re.escape(MARKER_PREFIX)})", re.MULTILINE)
    for char in "`~"
}


class Mode(Enum):
    CERTAIN = "certain"
    UNCERTAIN = "uncertain"
    FENCE = "fence"


@dataclass
class BlockState:
    """Where a stream of Markdown lines stands, between lines."""

    mode: Mode = Mode.UNCERTAIN
    after_blank: bool = True
    fence_char: str = ""
    fence_len: int = 0

    def copy(self) -> BlockState:
        return BlockState(self.mode, self.after_blank, self.fence_char, self.fence_len)

    @property
    def fence_opener(self) -> str:
        return self.fence_char * self.fence_len


class _Decision(NamedTuple):
    escape_at: int | None  # where a backslash goes into the line, if anywhere
    mode: Mode  # the mode after this line
    blank: bool = False
    fence_char: str = ""
    fence_len: int = 0


def _columns(text: str, end: int) -> int:
    """Columns taken by the spaces and tabs text[:end] (tab stops every 4)."""
    col = 0
    for ch in text[:end]:
        col = col + 4 - col % 4 if ch == "\t" else col + 1
    return col


def _skip_ws(text: str, pos: int) -> int:
    end = len(text)
    while pos < end and text[pos] in " \t":
        pos += 1
    return pos


def _only(text: str, char: str) -> bool:
    return not text.replace(char, "").strip(" \t")


def _break_or_underline(rest: str, char: str) -> bool:
    """A thematic break (three or more of - * _) or a setext underline (= or - run)."""
    if char in "-*_" and rest.count(char) >= 3:
        return True
    stripped = rest.rstrip(" \t")
    return char in "-=" and stripped == char * len(stripped)


def _core(line: str, pos: int, complete: bool, top: bool) -> _Decision | None:
    """Decide a line from `pos`, its first character after indentation. `top`: at the top level
    (indentation of at most 3 columns, checked by the caller); cleared once a container opens."""
    mode = Mode.CERTAIN if top else Mode.UNCERTAIN
    end = len(line)
    while True:
        ch = line[pos]
        if ch in "<#":
            return _Decision(pos, mode)
        if ch in "`~":
            run = len(line) - pos - len(line[pos:].lstrip(ch))
            if pos + run == end and not complete and run < 3:
                return None
            if run < 3:
                return _Decision(None, mode)
            if not top:
                return _Decision(pos, mode)
            if not complete:
                return None
            if ch == "`" and "`" in line[pos + run :]:
                return _Decision(None, mode)  # an inline code span, not a fence
            return _Decision(None, Mode.FENCE, fence_char=ch, fence_len=run)
        if ch in "-*_=+":
            rest = line[pos:]
            if ch != "+" and _only(rest, ch):
                if not complete:
                    return None
                if _break_or_underline(rest, ch):
                    return _Decision(pos, mode)
            if ch not in "-*+":
                return _Decision(None, mode)
            after = pos + 1
        elif "0" <= ch <= "9":
            digits = pos
            while digits < end and "0" <= line[digits] <= "9":
                digits += 1
            if digits == end:
                return None if not complete else _Decision(None, mode)
            if digits - pos > 9 or line[digits] not in ".)":
                return _Decision(None, mode)
            after = digits + 1
        elif ch == ">":
            after = pos + 1
            if after < end and line[after] in " \t":
                after += 1
            pos = _skip_ws(line, after)
            top, mode = False, Mode.UNCERTAIN
            if pos == end:
                return None if not complete else _Decision(None, mode)
            continue
        else:
            return _Decision(None, mode)
        # A list marker opens an item only when followed by a space, a tab or the line's end.
        if after == end:
            return None if not complete else _Decision(None, Mode.UNCERTAIN)
        if line[after] not in " \t":
            return _Decision(None, mode)
        pos = _skip_ws(line, after)
        top, mode = False, Mode.UNCERTAIN
        if pos == end:
            return None if not complete else _Decision(None, mode)


def _decide_top(line: str, complete: bool) -> _Decision | None:
    pos = _skip_ws(line, 0)
    if pos == len(line):
        if complete:
            return _Decision(None, Mode.CERTAIN, blank=True)
        return _Decision(None, Mode.CERTAIN) if _columns(line, pos) >= 4 else None
    if _columns(line, pos) >= 4:
        return _Decision(None, Mode.CERTAIN)  # indented code or a paragraph's continuation
    return _core(line, pos, complete, top=True)


def _decide_uncertain(line: str, complete: bool, after_blank: bool) -> _Decision | None:
    if after_blank and line and line[0] not in " \t":
        return _decide_top(line, complete)
    pos = _skip_ws(line, 0)
    if pos == len(line):
        return _Decision(None, Mode.UNCERTAIN, blank=True) if complete else None
    return _core(line, pos, complete, top=False)


def _decide_fence(line: str, complete: bool, char: str, length: int) -> _Decision | None:
    content = _Decision(None, Mode.FENCE, fence_char=char, fence_len=length)
    if line.startswith("<"):
        # Our own marker line is escaped even inside code: the prompt area is found by that line.
        if line.startswith(MARKER_PREFIX):
            return _Decision(0, Mode.FENCE, fence_char=char, fence_len=length)
        if MARKER_PREFIX.startswith(line) and not complete:
            return None
        return content
    pos = _skip_ws(line, 0)
    if pos == len(line):
        if complete or _columns(line, pos) >= 4:
            return content
        return None
    if _columns(line, pos) >= 4 or line[pos] != char:
        return content
    run = len(line) - pos - len(line[pos:].lstrip(char))
    if pos + run == len(line) and not complete:
        return None
    if run < length or line[pos + run :].strip(" \t"):
        return content
    if not complete:
        return None
    return _Decision(None, Mode.CERTAIN)


class MarkdownEscaper:
    """Escapes a stream of cleaned text (line breaks are ``\\n`` only); see the module doc.

    :meth:`feed` returns what can be written now: the start of a line is held back until it is
    known whether (and where) it needs a backslash.
    """

    def __init__(self, state: BlockState | None = None) -> None:
        self.state = state.copy() if state is not None else BlockState()
        self._line = ""  # the current line's text, not written yet (undecided)
        self._passing = False  # the current line is decided: the rest of it goes straight out
        self._ws_out = False  # UNCERTAIN: the current line's indentation was already written

    def feed(self, text: str) -> str:
        out: list[str] = []
        start = 0
        size = len(text)
        while start < size:
            if not self._passing and not self._line and not self._ws_out:
                # At a line start: lines that need no decision go out in bulk (regexes run in C).
                start = self._bulk(text, start, out)
                if start >= size:
                    break
            newline = text.find("\n", start)
            stop = size if newline < 0 else newline
            piece = text[start:stop]
            if self._passing:
                out.append(piece)
            else:
                self._line += piece
                self._try_decide(out, complete=newline >= 0)
            if newline < 0:
                break
            out.append("\n")
            self._passing = False
            self._ws_out = False
            start = newline + 1
        return "".join(out)

    def _bulk(self, text: str, start: int, out: list[str]) -> int:
        """Write the complete lines from `start` that the line-by-line rules would pass (or only
        escape, without any change of state); return where the first other line starts."""
        state = self.state
        if state.mode is Mode.UNCERTAIN and state.after_blank:
            return start  # this line may close every container: decide it alone
        if state.mode is Mode.FENCE:
            pattern = _FENCE_LINES.get(state.fence_char)
            if pattern is None:
                return start
        elif state.mode is Mode.CERTAIN:
            pattern = _TOP_LINES
        else:
            pattern = _NESTED_LINES
        found = pattern.search(text, start)
        end = found.start() if found is not None else text.rfind("\n", start) + 1
        if end <= start:
            return start
        region = text[start:end]
        if state.mode is Mode.CERTAIN:
            region = _TOP_ESCAPES.sub(r"\1\\", region)
        out.append(region)
        last_line_start = region.rfind("\n", 0, len(region) - 1) + 1
        state.after_blank = not region[last_line_start:].strip(" \t\n")
        return end

    @property
    def line_open(self) -> bool:
        """Part of the current line has been written (the output does not end with a newline)."""
        return self._passing or self._ws_out

    def _try_decide(self, out: list[str], complete: bool) -> None:
        line = self._line
        decision = self._decide(line, complete)
        if decision is None:
            if len(line) <= _HOLD_LIMIT:
                return
            decision = self._forced(line)
            if decision is None:
                out.append(line)
                self._line = ""
                return
        if decision.escape_at is not None:
            line = line[: decision.escape_at] + "\\" + line[decision.escape_at :]
        out.append(line)
        self._line = ""
        self._passing = True
        state = self.state
        state.mode = decision.mode
        state.fence_char = decision.fence_char
        state.fence_len = decision.fence_len
        state.after_blank = decision.blank

    def _decide(self, line: str, complete: bool) -> _Decision | None:
        state = self.state
        if state.mode is Mode.FENCE:
            return _decide_fence(line, complete, state.fence_char, state.fence_len)
        if state.mode is Mode.CERTAIN:
            return _decide_top(line, complete)
        if self._ws_out:
            pos = _skip_ws(line, 0)
            if pos == len(line):
                return _Decision(None, Mode.UNCERTAIN, blank=True) if complete else None
            return _core(line, pos, complete, top=False)
        return _decide_uncertain(line, complete, state.after_blank)

    def _forced(self, line: str) -> _Decision | None:
        """A line still undecided after _HOLD_LIMIT characters: make it harmless. None: only
        indentation so far (UNCERTAIN), which is written out; the rest is decided on its own."""
        state = self.state
        pos = _skip_ws(line, 0)
        if pos == len(line):
            self._ws_out = True
            return None
        # A backslash before the first character makes the line a paragraph (or plain content
        # inside a fence): it opens nothing, and in a fence it closes nothing.
        return _Decision(pos, state.mode, fence_char=state.fence_char, fence_len=state.fence_len)

    def close(self) -> str:
        """End the segment: finish the current line and close an open fence. What is written
        after it must start after a blank line, unindented (all containers then close)."""
        out: list[str] = []
        if not self._passing and self._line:
            self._try_decide(out, complete=True)  # a complete line is always decided
        if self.line_open:
            out.append("\n")
        self._passing = False
        self._ws_out = False
        if self.state.mode is Mode.FENCE:
            out.append(self.state.fence_opener + "\n")
        self.state = BlockState()
        return "".join(out)

    def pending(self) -> str:
        """The held-back start of the current line (not yet written)."""
        return self._line


def escape_markdown(text: str, state: BlockState | None = None) -> str:
    """`text` escaped and closed as one segment (for whole texts known at once)."""
    escaper = MarkdownEscaper(state)
    return escaper.feed(text) + escaper.close()


def scan_end(text: str, state: BlockState | None = None) -> BlockState:
    """The block state after `text`, a final unterminated line counted as a complete line."""
    escaper = MarkdownEscaper(state)
    escaper.feed(text)
    if text and not text.endswith("\n"):
        escaper.feed("\n")
    return escaper.state


def line_states(text: str, state: BlockState | None = None) -> Iterator[tuple[int, BlockState]]:
    """(offset, state before the line) for every line of `text`, first to last."""
    escaper = MarkdownEscaper(state)
    offset = 0
    size = len(text)
    while offset < size:
        yield offset, escaper.state.copy()
        newline = text.find("\n", offset)
        end = size if newline < 0 else newline + 1
        escaper.feed(text[offset:end])
        offset = end
