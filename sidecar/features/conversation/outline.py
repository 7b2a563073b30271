"""The structure of a conversation document as an editor navigates it: its turns (for symbols),
the blocks that fold, and the file paths it names (for links). Read from the text itself, so an
edited or reloaded document is outlined as it is. Lines split at \\n, \\r\\n and \\r, as in LSP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sidecar.features.conversation.clean import one_line
from sidecar.features.conversation.document import locate_prompt_area
from sidecar.features.conversation.elements import HEADINGS

NAME_LIMIT = 80
MAX_TURNS = 10_000
MAX_LINKS = 5_000

_LINE_END = re.compile(r"\r\n|\r|\n")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_WHERE = re.compile(r"\A(.+?)(?::(\d+))?\Z")
_MENTION = re.compile(r'(?:(?<=\s)|(?<=^))@(?:"([^"\n]+)"|([^\s"]+))')
# Lines of ours that name files: a tool call's locations, a diff, the context of a prompt.
_NAMING = ("**Tool:** ", "Diff of ", "Context: ")


@dataclass(frozen=True)
class Turn:
    start: int  # line of its "## You"
    end: int  # last line of the turn (blank lines at its end left out)
    name: str  # the prompt's first line
    tools: list[tuple[int, str]] = field(default_factory=list)  # (line, title) of each tool call


@dataclass(frozen=True)
class Fold:
    start: int
    end: int
    region: bool  # a whole turn (else a block: a diff, a fenced block)


@dataclass(frozen=True)
class PathRef:
    line: int
    start: int  # code points into the line
    end: int
    path: str  # as written: relative to the session's folder, or absolute
    target_line: int | None  # 1-based, when the document names one


@dataclass
class Outline:
    turns: list[Turn] = field(default_factory=list)
    folds: list[Fold] = field(default_factory=list)
    paths: list[PathRef] = field(default_factory=list)


def split_lines(text: str) -> list[str]:
    return _LINE_END.split(text)


def outline(text: str) -> Outline:
    """Turns, folds and file paths above the prompt area (the prompt being written is the user's)."""
    area = locate_prompt_area(text)
    lines = split_lines(text[: area.start] if area is not None else text)
    result = Outline()
    fence: str | None = None  # the open fence's run, while inside a fenced block
    fence_start = 0
    turn_start: int | None = None
    turn_name = ""
    tools: list[tuple[int, str]] = []
    in_you = False
    last_content = 0

    def close_turn(end: int) -> None:
        if turn_start is not None and len(result.turns) < MAX_TURNS:
            result.turns.append(Turn(turn_start, max(turn_start, end), turn_name or "(empty prompt)", tools))
            if end > turn_start:
                result.folds.append(Fold(turn_start, end, region=True))

    for number, line in enumerate(lines):
        if fence is not None:
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                if not line.strip().lstrip(fence[0]):
                    captioned = fence_start >= 2 and lines[fence_start - 2].startswith("Diff of ")
                    caption = fence_start - 2 if captioned else fence_start
                    result.folds.append(Fold(caption, number, region=False))
                    fence = None
                    last_content = number
            elif in_you and not turn_name and line.strip():
                turn_name = one_line(line.strip(), NAME_LIMIT)  # a prompt shown as a fenced block
            continue
        opening = _FENCE.match(line)
        if opening:
            fence, fence_start = opening.group(1), number
            continue
        if line == HEADINGS["you"]:
            close_turn(last_content)
            turn_start, turn_name, tools, in_you = number, "", [], True
            last_content = number
            continue
        if line == HEADINGS["agent"]:
            in_you = False
        elif in_you and not turn_name and line.strip():
            turn_name = one_line(line.strip().removeprefix("> "), NAME_LIMIT)
        if line.startswith("**Tool:** ") and turn_start is not None:
            title = re.split(r" \(| — ", line.removeprefix("**Tool:** "), maxsplit=1)[0]
            title = one_line(re.sub(r"[*_`\\]", "", title), NAME_LIMIT)
            tools.append((number, title))
        if line.strip():
            last_content = number
        if len(result.paths) < MAX_LINKS:
            result.paths.extend(_paths_in(number, line, in_you))
    if fence is not None:
        last_content = len(lines) - 1  # a block cut by the prompt area: the turn runs to it
    close_turn(last_content)
    return result


def _paths_in(number: int, line: str, in_prompt: bool) -> list[PathRef]:
    found: list[PathRef] = []
    if line.startswith(_NAMING):
        for match in _CODE_SPAN.finditer(line):
            inner = match.group(2).strip()
            where = _WHERE.match(inner)
            if not where or not _looks_like_path(where.group(1)):
                continue
            target = int(where.group(2)) if where.group(2) else None
            found.append(PathRef(number, match.start(), match.end(), where.group(1), target))
    elif in_prompt:
        for match in _MENTION.finditer(line):
            path = match.group(1) or match.group(2).rstrip(",;:!?)]}'.")
            if _looks_like_path(path):
                found.append(PathRef(number, match.start(), match.end(), path, None))
    return found


def _looks_like_path(text: str) -> bool:
    return bool(text) and text != "?" and ("/" in text or "." in text.strip(".")) and "\n" not in text
