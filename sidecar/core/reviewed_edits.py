"""Edits the user reviewed and changed before allowing them (a hunk taken back, a line fixed).

The editor allows an edit with the text the user settled on for each file
(`acp.permission.respond {..., edits: [{path, text}]}`). The agent still writes its own
version. When it writes through the sidecar (`fs/write_text_file`), the sidecar writes the
user's text instead and answers as usual. When it writes the disk itself (claude-agent-acp),
the sidecar looks once the tool call completes (or the turn ends): if the file is exactly what
the agent's diff makes of the file as it was when the user allowed it (read before the agent
heard the answer), the user's text replaces it; otherwise nothing is touched (a line another
program added meanwhile is never overwritten). The user is told what happened in each case.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import errors
from .diff_apply import apply_diffs
from .files import resolve_inside
from .tool_calls import diffs_in

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
MAX_FILES = 64  # files one permission answer may carry


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


class ReviewedEdits:
    def __init__(
        self,
        tell_user: Callable[[str], None],
        spawn: Callable[[Coroutine[Any, Any, None], str], object],
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
        """The user's text for a write of `path` (once), if the user reviewed it."""
        reviewed = self._by_file.pop((session_id, path), None)
        return reviewed.text if reviewed is not None else None

    def tool_call_ended(self, session_id: str, update: Mapping[str, Any]) -> None:
        """A tool call completed or failed: what it did not write through us is settled."""
        status = update.get("status")
        if update.get("sessionUpdate") not in ("tool_call", "tool_call_update") or status not in (
            "completed",
            "failed",
        ):
            return
        call_id = update.get("toolCallId")
        self._settle(lambda key, r: key[0] == session_id and r.tool_call_id == call_id, status == "completed")

    def turn_ended(self, session_id: str) -> None:
        self._settle(lambda key, _r: key[0] == session_id, True)

    def close(self) -> None:
        """Shutdown: what was not written stays the agent's (no disk writes as the sidecar stops)."""
        self._by_file.clear()

    def _settle(self, which: Callable[[tuple[str, Path], _Reviewed], bool], completed: bool) -> None:
        gone = [(key, r) for key, r in self._by_file.items() if which(key, r)]
        for key, reviewed in gone:
            del self._by_file[key]
            if completed:  # a failed tool call wrote nothing: nothing to replace
                self._spawn(self._after_own_write(*key, reviewed), f"reviewed-{reviewed.shown_path}")

    async def _after_own_write(self, session_id: str, path: Path, reviewed: _Reviewed) -> None:
        """The agent may have written the disk itself: put the user's version in place of
        exactly the agent's edit, never over anything else."""
        name = reviewed.shown_path
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
                    why = "the agent did not write its edit"
                else:
                    why = "the file changed beyond the agent's edit; left as it is"
        except Exception as exc:
            log.warning("reviewed edit of %s: %r", name, exc)
            detail = exc.message if isinstance(exc, errors.SidecarError) else "see the log"
            why = f"could not check the file: {detail}"
        self._tell_user(f"{name}: your reviewed version was not applied ({why})")


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
