"""The agent's open questions as blocks of the conversation (docs/protocol.md, "Answering in the
document"): where one begins and ends, and what the user typed into one, carried over when an
editor buffer is brought back to the file.

A block is whatever lies between its two comment lines, both ours and naming the question:

    <!-- acp-sidecar question ID -->
    ...
    <!-- acp-sidecar end of question ID -->

Nothing else can write such a line into the conversation: agent text is escaped (a line that
starts with `<` gets a backslash), the user's prompts are indented. While the question waits, the
user types into the block of their buffer; the file keeps the block as the sidecar wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sidecar.features.conversation.blocks import MARKER_PREFIX

__all__ = ["Question", "carry_answers", "find_question", "question_end", "question_start", "questions_in"]

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
