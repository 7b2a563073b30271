"""The agent's changes after they landed: per session and file, the hunks between before and after.

A hunk is a run of lines the agent wrote (`new`) where the file had `old`; `start` is its first line
in the file as it is now (LSP lines: only \\n, \\r\\n and \\r end one). Hunks are kept aligned as
the file changes: an edit above a hunk shifts it, an edit that touches it makes the lines the
user's (the hunk is dropped), an edit below leaves it. Each session keeps at most `MAX_HUNKS`
hunks and `MAX_CHARS` characters of their text; the oldest go first. Pure: no I/O, no LSP.

The diff of one write (`diff_write`) is quadratic on a file changed all over (a formatter, a
generated file): it runs on the kernel's worker, and past `DIFF_BUDGET` seconds the write is
one coarse hunk (the lines between the common start and end) instead. So does the diff of an
editor buffer changed whole (`buffer_edits`, `buffer_steps.py`): past its budget it is one coarse
edit, which drops the hunks inside it and moves those below.
"""

from __future__ import annotations

import difflib
import itertools
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator

import attrs

from sidecar.kernel.bounded_diff import Block, BoundedMatcher, OutOfTime, coarse_block, cpu_clock

MAX_HUNKS = 2000  # per session
MAX_CHARS = 4 << 20  # per session: old and new text of its hunks together
DIFF_BUDGET = 2.0  # seconds to diff one write; past them it is one coarse hunk

_BREAK = re.compile(r"\r\n|\r|\n")


def lines_of(text: str) -> list[str]:
    """`text` cut into LSP lines, each with its line end (the empty line after a final break is
    not listed: it holds no text)."""
    lines: list[str] = []
    pos = 0
    for match in _BREAK.finditer(text):
        lines.append(text[pos : match.end()])
        pos = match.end()
    if pos < len(text):
        lines.append(text[pos:])
    return lines


def breaks_in(text: str) -> int:
    return len(_BREAK.findall(text))


@attrs.frozen
class LineEdit:
    """Lines [start, end) of the file replaced by `count` lines."""

    start: int
    end: int
    count: int

    @property
    def delta(self) -> int:
        return self.count - (self.end - self.start)


def line_edit(start_line: int, start_char: int, end_line: int, end_char: int, text: str) -> LineEdit:
    """The lines an LSP content change (range and new text) replaces. Only whether a character
    is 0 matters here, so it holds in every position encoding."""
    if start_char == 0 and end_char == 0 and (text == "" or text.endswith(("\n", "\r"))):
        return LineEdit(start_line, end_line, breaks_in(text))  # whole lines: those around stay
    return LineEdit(start_line, end_line + 1, breaks_in(text) + 1)


def line_edits_between(old: list[str], new: list[str]) -> list[LineEdit]:
    """The line edits that turn `old` into `new`, last first (each one's numbers hold when applied
    in that order)."""
    return _edits_of(changed_blocks(old, new))


def buffer_edits(before: str, after: str, budget: float | None = DIFF_BUDGET) -> list[LineEdit]:
    """`line_edits_between` the lines of two texts of a buffer, for the worker: past `budget`
    seconds, one coarse edit between the common first and last lines (None: no bound)."""
    return _edits_of(changed_blocks(lines_of(before), lines_of(after), budget))


def coarse_edits(before: str, after: str) -> list[LineEdit]:
    """The one edit between the common first and last lines of two texts (linear)."""
    old, new = lines_of(before), lines_of(after)
    return [] if old == new else _edits_of([coarse_block(old, new)])


def _edits_of(blocks: list[Block]) -> list[LineEdit]:
    return [LineEdit(i1, i2, j2 - j1) for i1, i2, j1, j2 in blocks][::-1]


def changed_blocks(old: list[str], new: list[str], budget: float | None = None) -> list[Block]:
    """The blocks that differ between `old` and `new`, first to last (difflib's opcodes other than
    `equal`). With a `budget` (seconds), past it: one block between the common start and end."""
    if budget is None:
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    else:
        matcher = BoundedMatcher(old, new, cpu_clock() + budget, autojunk=False)
    try:
        return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    except OutOfTime:
        return [coarse_block(old, new)]


@attrs.frozen
class WriteDiff:
    """One write of the agent, diffed: its lines before and after, and the blocks that differ."""

    old: list[str]
    new: list[str]
    blocks: list[Block]


def diff_write(before: str, after: str, budget: float = DIFF_BUDGET) -> WriteDiff:
    """What `record` needs of a write; heavy on a big file changed all over: the worker runs it."""
    old, new = lines_of(before), lines_of(after)
    return WriteDiff(old, new, [] if old == new else changed_blocks(old, new, budget))


@attrs.define
class Hunk:
    id: str
    session_id: str
    path: str
    start: int
    new: list[str]  # the agent's lines, as they are in the file
    old: list[str]  # the lines they replaced
    at: float  # when the agent wrote them (epoch seconds)

    @property
    def end(self) -> int:
        return self.start + len(self.new)

    @property
    def size(self) -> int:
        return sum(map(len, self.new)) + sum(map(len, self.old))

    def holds_agent_text(self, lines: list[str]) -> bool:
        """True while `lines` (the file's) hold exactly the agent's lines at this hunk."""
        return self.start <= len(lines) and lines[self.start : self.end] == self.new

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "sessionId": self.session_id,
            "path": self.path,
            "start": self.start,
            "new": self.new,
            "old": self.old,
            "at": self.at,
        }

    @classmethod
    def from_json(cls, raw: object) -> Hunk | None:
        """A stored hunk, or None for a record that is not one."""
        if not isinstance(raw, dict):
            return None
        try:
            hunk = cls(
                id=str(raw["id"]),
                session_id=str(raw["sessionId"]),
                path=str(raw["path"]),
                start=int(raw["start"]),
                new=[str(x) for x in raw["new"]],
                old=[str(x) for x in raw["old"]],
                at=float(raw["at"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        return hunk if hunk.start >= 0 else None


def in_file_order(hunk: Hunk) -> tuple[int, bool]:
    """Where a hunk is in its file: by its first line; a deletion sits before the line there."""
    return hunk.start, bool(hunk.new)


def align(hunks: list[Hunk], edit: LineEdit) -> tuple[list[Hunk], bool]:
    """`hunks` (sorted by start) after `edit`: shifted, dropped where it touches them, kept below
    it. True when anything changed."""
    kept: list[Hunk] = []
    changed = False
    for hunk in hunks:
        if edit.end <= hunk.start:
            if edit.delta:
                hunk.start += edit.delta
                changed = True
            kept.append(hunk)
        elif edit.start >= hunk.end:
            kept.append(hunk)
        else:
            changed = True  # the user's now
    return kept, changed


class AgentChanges:
    """Every session's hunks by file; `listen` hears which file's hunks changed, and whether by an
    agent's write."""

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self._files: dict[str, list[Hunk]] = {}
        self._now = now
        self._listeners: list[Callable[[str, bool], None]] = []
        self._session_listeners: list[Callable[[set[str]], None]] = []

    def listen(self, listener: Callable[[str, bool], None]) -> None:
        """`listener(path, written)`: the hunks of `path` changed (`written`: by an agent's write)."""
        self._listeners.append(listener)

    def listen_sessions(self, listener: Callable[[set[str]], None]) -> None:
        """`listener(session_ids)`: the hunks of these sessions changed (to save them)."""
        self._session_listeners.append(listener)

    def _changed(self, path: str, sessions: set[str], written: bool = False) -> None:
        for listener in self._listeners:
            listener(path, written)
        sessions |= self._sessions_in(path)
        for session_listener in self._session_listeners:
            session_listener(set(sessions))

    def _sessions_in(self, path: str) -> set[str]:
        return {h.session_id for h in self._files.get(path, ())}

    # ------------------------------------------------------------------ reading
    def paths(self) -> list[str]:
        return sorted(self._files)

    def has(self, path: str) -> bool:
        """Whether `path` has hunks (per keystroke: no copy)."""
        return path in self._files

    def hunks(self, path: str) -> list[Hunk]:
        return list(self._files.get(path, ()))

    def all_hunks(self) -> Iterator[Hunk]:
        return itertools.chain.from_iterable(self._files.values())

    def of_session(self, session_id: str) -> list[Hunk]:
        return [h for h in self.all_hunks() if h.session_id == session_id]

    def find(self, hunk_id: str) -> Hunk | None:
        return next((h for h in self.all_hunks() if h.id == hunk_id), None)

    # ------------------------------------------------------------------ writing
    def record(self, session_id: str, path: str, before: str, after: str) -> list[Hunk]:
        """The agent turned `path` from `before` into `after`: the hunks of that write (older hunks
        of the file move with it; those it rewrote are dropped). On the loop: small texts only;
        `apply` a `diff_write` the worker made for the agent's writes."""
        return self.apply(session_id, path, diff_write(before, after))

    def apply(self, session_id: str, path: str, diff: WriteDiff) -> list[Hunk]:
        """`record` of a write already diffed (`diff_write`)."""
        old, new = diff.old, diff.new
        if not diff.blocks:
            return []
        hunks = self._files.get(path, [])
        before_sessions = self._sessions_in(path)
        for i1, i2, j1, j2 in reversed(diff.blocks):
            hunks, _ = align(hunks, LineEdit(i1, i2, j2 - j1))
        at = self._now()
        added = [
            Hunk(uuid.uuid4().hex[:12], session_id, path, j1, new[j1:j2], old[i1:i2], at)
            for i1, i2, j1, j2 in diff.blocks
        ]
        self._files[path] = sorted([*hunks, *added], key=in_file_order)
        self._bound(session_id)
        self._changed(path, before_sessions | {session_id}, written=True)
        return added

    def restore(self, hunks: Iterable[Hunk]) -> None:
        """Hunks read back from storage (no overlap with those known: those are skipped)."""
        touched: set[str] = set()
        for hunk in hunks:
            known = self._files.setdefault(hunk.path, [])
            if any(h.id == hunk.id or _overlap(h, hunk) for h in known):
                continue
            known.append(hunk)
            known.sort(key=in_file_order)
            touched.add(hunk.path)
        for path in touched:
            self._changed(path, set())

    def edited(self, path: str, edits: Iterable[LineEdit]) -> bool:
        """The file changed by `edits` (in order); True when its hunks moved or went."""
        hunks = self._files.get(path)
        if not hunks:
            return False
        changed = False
        before_sessions = self._sessions_in(path)
        for edit in edits:
            hunks, moved = align(hunks, edit)
            changed |= moved
        self._set(path, hunks)
        if changed:
            self._changed(path, before_sessions)
        return changed

    def keep_only(self, path: str, lines: list[str]) -> bool:
        """Drop the hunks of `path` that `lines` (its text now) no longer hold; True if any went."""
        hunks = self._files.get(path)
        if not hunks:
            return False
        kept = [h for h in hunks if h.holds_agent_text(lines)]
        if len(kept) == len(hunks):
            return False
        before_sessions = self._sessions_in(path)
        self._set(path, kept)
        self._changed(path, before_sessions)
        return True

    def drop(self, hunk_ids: Iterable[str]) -> list[Hunk]:
        """Forget these hunks (kept by the user, or reverted); the ones that were known."""
        wanted = set(hunk_ids)
        gone: list[Hunk] = []
        for path in list(self._files):
            hunks = self._files[path]
            kept = [h for h in hunks if h.id not in wanted]
            if len(kept) != len(hunks):
                gone.extend(h for h in hunks if h.id in wanted)
                before_sessions = self._sessions_in(path)
                self._set(path, kept)
                self._changed(path, before_sessions)
        return gone

    def _set(self, path: str, hunks: list[Hunk]) -> None:
        if hunks:
            self._files[path] = hunks
        else:
            self._files.pop(path, None)

    def _bound(self, session_id: str) -> None:
        mine = sorted((h for h in self.all_hunks() if h.session_id == session_id), key=lambda h: h.at)
        total = sum(h.size for h in mine)
        dropped: list[str] = []
        count = len(mine)
        for hunk in mine:
            if count <= MAX_HUNKS and total <= MAX_CHARS:
                break
            dropped.append(hunk.id)
            count -= 1
            total -= hunk.size
        if dropped:
            self.drop(dropped)


def _overlap(a: Hunk, b: Hunk) -> bool:
    """Whether two hunks share a line (a deletion counts as the line it sits before)."""
    return a.start < max(b.end, b.start + 1) and b.start < max(a.end, a.start + 1)
