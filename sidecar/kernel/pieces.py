"""The conversation document's shared format: what a feature that writes or reads a piece of a
session's conversation document needs of it (docs/architecture.md, "The conversation document").

The conversation feature owns the document; the terminals write their output into it and the
questions feature writes a form's block and reads the user's answers back. They share: the
marker lines nothing else may write (agent text is escaped, so only the sidecar writes a line
that starts with `MARKER_PREFIX`), the fences and code spans that keep a piece whole, the prompt
area (where the user's part begins), and the question blocks:

    <!-- acp-sidecar question ID -->
    ...
    <!-- acp-sidecar end of question ID -->

While a question waits, the user types into the block of their buffer; the file keeps the block as
the sidecar wrote it, and what the user typed survives a resync (`carry_answers`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER_PREFIX = "<!-- acp-sidecar"
MARKER = '<!-- acp-sidecar: write your prompt below this line, then run the code action "Send to agent" -->'
PROMPT_HEADING = "## Your prompt"
PROMPT_AREA = f"---\n\n{PROMPT_HEADING}\n\n{MARKER}\n"


@dataclass(frozen=True)
class PromptArea:
    """Where the prompt area is in a document text."""

    start: int  # where the area begins (its "---" line; the marker line if the lines above it were edited)
    marker_end: int  # just past the marker line (and its newline, when it has one)
    prompt_start: int  # where the user's prompt begins (== marker_end)


def locate_prompt_area(text: str) -> PromptArea | None:
    """The prompt area of a document: its last marker line (exact, at the start of a line).

    Nothing we write into the conversation can be a marker line (it is escaped), so the last one is
    ours unless the user pasted one into their own prompt.
    """
    search_end = len(text)
    while True:
        found = text.rfind(MARKER, 0, search_end)
        if found < 0:
            return None
        search_end = found
        if found and text[found - 1] != "\n":
            continue
        after = found + len(MARKER)
        line_end = text.find("\n", after)
        rest = text[after:] if line_end < 0 else text[after:line_end]
        if rest.strip(" \t\r"):
            continue
        marker_end = len(text) if line_end < 0 else line_end + 1
        start = found
        expected = f"---\n\n{PROMPT_HEADING}\n\n"
        if text.startswith(expected, found - len(expected)) and (
            found - len(expected) == 0 or text[found - len(expected) - 1] == "\n"
        ):
            start = found - len(expected)
        return PromptArea(start, marker_end, marker_end)


def fence_for(text: str, char: str = "`") -> str:
    longest = max((len(run) for run in re.findall(f"{re.escape(char)}+", text)), default=0)
    return char * max(3, longest + 1)


def inline_code(text: str) -> str:
    """`text` (one line) as a Markdown code span that nothing inside can end early."""
    if "`" not in text:  # most paths and names: no run of backticks to outlast
        return f"` {text} `" if not text.strip(" ") else f"`{text}`"
    longest = 0
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# ---------------------------------------------------------------- question blocks

_START = re.compile(rf"^{re.escape(MARKER_PREFIX)} question (\S+) -->$", re.MULTILINE)


def question_start(ident: str) -> str:
    return f"{MARKER_PREFIX} question {ident} -->"


def question_end(ident: str) -> str:
    return f"{MARKER_PREFIX} end of question {ident} -->"


@dataclass(frozen=True)
class Question:
    """One block in a text: `text[start:end]`, its two comment lines and their newlines included
    (the end line's newline when it has one)."""

    ident: str
    start: int
    end: int


def questions_in(text: str, limit: int | None = None) -> list[Question]:
    """The complete question blocks in `text[:limit]`, first to last."""
    stop = len(text) if limit is None else limit
    found: list[Question] = []
    position = 0
    while (start := _START.search(text, position, stop)) is not None:
        ident = start.group(1)
        end_line = question_end(ident)
        end = _line_at(text, end_line, start.end(), stop)
        if end is None:
            position = start.end()
            continue
        after = end + len(end_line)
        after += text[after : after + 1] == "\n"
        found.append(Question(ident, start.start(), after))
        position = after
    return found


def find_question(text: str, ident: str, limit: int | None = None) -> Question | None:
    return next((q for q in questions_in(text, limit) if q.ident == ident), None)


def carry_answers(buffer: str, target: str) -> str:
    """`target` (the file's text) with each question block that `buffer` also holds taken from
    `buffer` as it is there: what the user typed into it survives a resync. A block the file no
    longer holds (answered: its outcome stands there instead) is not carried."""
    ours = {q.ident: buffer[q.start : q.end] for q in questions_in(buffer)}
    if not ours:
        return target
    parts: list[str] = []
    position = 0
    for question in questions_in(target):
        typed = ours.get(question.ident)
        if typed is None:
            continue
        parts.append(target[position : question.start])
        parts.append(typed)
        position = question.end
    parts.append(target[position:])
    return "".join(parts)


def _line_at(text: str, line: str, start: int, stop: int) -> int | None:
    """Where `line` stands alone on a line of `text[start:stop]`."""
    position = start
    while (found := text.find(line, position, stop)) >= 0:
        after = found + len(line)
        if (found == 0 or text[found - 1] == "\n") and (after == len(text) or text[after] in "\r\n"):
            return found
        position = found + 1
    return None
