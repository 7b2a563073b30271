"""Edits the user reviewed and changed before allowing them (a hunk taken back, a line fixed).

The editor allows an edit with the text the user settled on for each file
(`acp.permission.respond {..., edits: [{path, text}]}`). The agent still writes its own
version. When it writes through the sidecar (`fs/write_text_file`), the sidecar writes the
user's text instead and answers as usual, for every such write until the tool call ends (or the
turn, when the agent reported the call completed before writing); an agent that also writes its
edit to the disk itself (OpenCode, Kilo) gets the user's text put back over exactly that edit.
When it writes the disk itself only (claude-agent-acp), the sidecar looks once the tool call
completes (or the turn ends): if the file is exactly what
the agent's diff makes of the file as it was when the user allowed it (read before the agent
heard the answer), the user's text replaces it; otherwise nothing is touched (a line another
program added meanwhile is never overwritten). The user is told what happened in each case.
All of it is done before the turn's end is told (`settle_turn`): the editor reloads then.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sidecar.features.edits.diff_apply import apply_diffs
from sidecar.kernel import errors
from sidecar.kernel.files import resolve_inside
from sidecar.kernel.tool_calls import diffs_in

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
MAX_FILES = 64  # files one permission answer may carry
# How long the end of a turn waits for its reviewed edits to be put in place (a disk that hangs
# must not hold the turn open for ever; the check still finishes in the background).
SETTLE_WAIT = 10.0


@dataclass(frozen=True)
class _Reviewed:
    text: str
    tool_call_id: str | None
    shown_path: str  # as the editor named it, for messages
    # What the agent's own write makes of the file (its diffs applied to the file as it was when
    # the user allowed them); None: not known (no diff, unreadable, the diff does not fit).
    expected: str | None
    before: str | None  # the file then (None: no file, or unreadable)
    has_diff: bool  # the agent's tool call has a diff of this file
    written: bool = False  # the agent's write came through us and wrote the user's text


class ReviewedEdits:
    def __init__(
        self,
        tell_user: Callable[[str], None],
        spawn: Callable[[Coroutine[Any, Any, None], str], asyncio.Task[Any]],
        read_disk: Callable[[str, Path], Awaitable[str | None]],
        replace_exactly: Callable[[str, Path, str, str], Awaitable[str | None]],
    ) -> None:
        self._tell_user = tell_user
        self._spawn = spawn
        self._read_disk = read_disk  # (session id, real path) -> text, None: no file
        # (session id, real path, expected, text): writes text only if the file is exactly
        # `expected` (read and written in one step); returns the file as it was found.
        self._replace_exactly = replace_exactly
        self._by_file: dict[tuple[str, Path], _Reviewed] = {}
        self._settling: dict[str, set[asyncio.Task[Any]]] = {}  # session -> checks under way

    @staticmethod
    def parse(edits: object, roots: Iterable[str]) -> list[tuple[Path, str, str]]:
        """`[{path, text}]` from the editor: (real path inside the roots, path as given, text)."""
        if not isinstance(edits, list) or not edits or len(edits) > MAX_FILES:
            raise errors.invalid(f"edits must be a list of 1 to {MAX_FILES} objects {{path, text}}")
        parsed = []
        roots = list(roots)
        for index, edit in enumerate(edits):
            path = edit.get("path") if isinstance(edit, dict) else None
            text = edit.get("text") if isinstance(edit, dict) else None
            if not isinstance(path, str) or not path or not isinstance(text, str):
                raise errors.invalid(
                    f"edits[{index}] must be an object {{path: non-empty string, text: string}}"
                )
            parsed.append((resolve_inside(path, roots), path, text))
        return parsed

    async def prepare(
        self, session_id: str, cwd: str, tool_call: Mapping[str, Any], edits: list[tuple[Path, str, str]]
    ) -> list[tuple[Path, _Reviewed]]:
        """Each reviewed file with what the agent's own write will make of it: read now, before
        the agent is answered."""
        call_id = tool_call.get("toolCallId")
        prepared = []
        for real, name, text, mine in _with_diffs(cwd, tool_call, edits):
            before, expected = None, None
            if mine:
                try:
                    before = await self._read_disk(session_id, real)
                    expected = apply_diffs(before, mine).text
                except Exception as exc:
                    log.warning("reviewed edit of %s: reading it before the agent's edit: %r", name, exc)
            reviewed = _Reviewed(
                text, call_id if isinstance(call_id, str) else None, name, expected, before, bool(mine)
            )
            prepared.append((real, reviewed))
        return prepared

    def keep(self, session_id: str, prepared: list[tuple[Path, _Reviewed]]) -> None:
        for real, reviewed in prepared:
            self._by_file[(session_id, real)] = reviewed

    def take(self, session_id: str, path: Path) -> str | None:
        """The user's text for a write of `path`, if the user reviewed it. Kept until the tool call
        or the turn ends: Kilo and OpenCode also write their own edit to the disk, after or before
        the write through us, and the user's text must be what stays."""
        reviewed = self._by_file.get((session_id, path))
        if reviewed is None:
            return None
        self._by_file[(session_id, path)] = replace(reviewed, written=True)
        return reviewed.text

    def tool_call_ended(self, session_id: str, update: Mapping[str, Any]) -> None:
        """A tool call completed or failed: what it did not write through us is settled."""
        if not self._by_file:
            return  # no reviewed edit waits (every update of a replay's tool calls comes here)
        status = update.get("status")
        if update.get("sessionUpdate") not in ("tool_call", "tool_call_update") or status not in (
            "completed",
            "failed",
        ):
            return
        call_id = update.get("toolCallId")
        self._settle(
            lambda key, r: key[0] == session_id and r.tool_call_id == call_id, status == "completed", False
        )

    def turn_ended(self, session_id: str) -> None:
        self._settle(lambda key, _r: key[0] == session_id, True, True)

    async def settle_turn(self, session_id: str) -> None:
        """Settle the session's reviewed edits and wait for them (those of its ended tool calls
        too), before the editor hears that the turn ended: it looks at the disk then, so the
        user's version must be in place by that time."""
        self.turn_ended(session_id)
        pending = self._settling.get(session_id)
        if pending:
            await asyncio.wait(set(pending), timeout=SETTLE_WAIT)

    def close(self) -> None:
        """Shutdown: what was not written stays the agent's (no disk writes as the sidecar stops)."""
        self._by_file.clear()

    def _settle(
        self, which: Callable[[tuple[str, Path], _Reviewed], bool], completed: bool, turn_over: bool
    ) -> None:
        gone = [(key, r) for key, r in self._by_file.items() if which(key, r)]
        for key, reviewed in gone:
            del self._by_file[key]
            if completed:  # a failed tool call wrote nothing: nothing to replace
                task = self._spawn(
                    self._after_own_write(*key, reviewed, turn_over), f"reviewed-{reviewed.shown_path}"
                )
                pending = self._settling.setdefault(key[0], set())
                pending.add(task)
                task.add_done_callback(functools.partial(self._checked, key[0]))

    def _checked(self, session_id: str, task: asyncio.Task[Any]) -> None:
        pending = self._settling.get(session_id)
        if pending is not None:
            pending.discard(task)
            if not pending:
                del self._settling[session_id]

    async def _after_own_write(
        self, session_id: str, path: Path, reviewed: _Reviewed, turn_over: bool = True
    ) -> None:
        """The agent may have written the disk itself: put the user's version in place of
        exactly the agent's edit, never over anything else. A file still as it was when the
        tool call completes waits for the agent's write until the turn ends (Kilo and OpenCode
        report the call completed, then write through the client)."""
        name = reviewed.shown_path
        if reviewed.written:
            await self._after_write_through_us(session_id, path, reviewed)
            return
        if not reviewed.has_diff:
            why = "the agent's edit has no diff of this file"
        else:
            why = "the agent's diff did not fit the file, so its own write is not known"
        try:
            if reviewed.expected is not None:
                found = await self._replace_exactly(session_id, path, reviewed.expected, reviewed.text)
                if found == reviewed.expected:
                    self._tell_user(
                        f"{name}: the agent wrote its own edit; your reviewed version replaced it"
                    )
                    return
                if found == reviewed.text:
                    return  # it already holds the user's version
                if found is None:
                    why = "the file is gone"
                elif found == reviewed.before:
                    if not turn_over and (session_id, path) not in self._by_file:
                        self._by_file[(session_id, path)] = reviewed  # its write comes through us
                        return
                    why = "the agent did not write its edit"
                else:
                    why = "the file changed beyond the agent's edit; left as it is"
        except Exception as exc:
            log.warning("reviewed edit of %s: %r", name, exc)
            detail = exc.message if isinstance(exc, errors.SidecarError) else "see the log"
            why = f"could not check the file: {detail}"
        self._tell_user(f"{name}: your reviewed version was not applied ({why})")

    async def _after_write_through_us(self, session_id: str, path: Path, reviewed: _Reviewed) -> None:
        """The user's text was written for the agent; an own write of the agent's edit since
        (exactly it, nothing else) is put back to the user's text."""
        if reviewed.expected is None:
            return
        try:
            found = await self._replace_exactly(session_id, path, reviewed.expected, reviewed.text)
        except Exception as exc:
            log.warning("reviewed edit of %s: %r", reviewed.shown_path, exc)
            return
        if found == reviewed.expected:
            self._tell_user(
                f"{reviewed.shown_path}: the agent also wrote its own edit; your reviewed version replaced it"
            )


def _with_diffs(
    cwd: str, tool_call: Mapping[str, Any], edits: list[tuple[Path, str, str]]
) -> list[tuple[Path, str, str, list[JsonObj]]]:
    """(real path, name for messages, user's text, the agent's diffs of that file) per edit."""
    diffs = diffs_in(dict(tool_call))
    found = []
    for real, shown, text in edits:
        mine = [d for d in diffs if os.path.realpath(str(d.get("path"))) == str(real)]
        inside = os.path.relpath(real, os.path.realpath(cwd))
        name = shown if inside.startswith("..") else inside  # short: messages must fit one line
        found.append((real, name, text, mine))
    return found
