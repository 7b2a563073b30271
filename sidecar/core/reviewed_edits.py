"""Edits the user reviewed and changed before allowing them (a hunk taken back, a line fixed).

The editor allows an edit with the text the user settled on for each file
(`acp.permission.respond {..., edits: [{path, text}]}`). The agent still writes its own
version. When it writes through the sidecar (`fs/write_text_file`), the sidecar writes the
user's text instead and answers as usual. When it writes the disk itself (claude-agent-acp),
the sidecar looks once the tool call completes (or the turn ends): if the file holds exactly
the agent's edit, the user's text replaces it; otherwise nothing is touched. The user is told
what happened in both of those cases.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import errors
from .diff_apply import Fit, apply_diffs
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
    diffs: list[JsonObj]  # the agent's diffs of this file: what its own write makes of it


class ReviewedEdits:
    def __init__(
        self,
        tell_user: Callable[[str], None],
        spawn: Callable[[Coroutine[Any, Any, None], str], object],
        read_disk: Callable[[str, Path], Awaitable[str | None]],
        write_disk: Callable[[str, Path, str], Awaitable[None]],
    ) -> None:
        self._tell_user = tell_user
        self._spawn = spawn
        self._read_disk = read_disk  # (session id, real path) -> text, None: no file
        self._write_disk = write_disk
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

    def keep(
        self, session_id: str, cwd: str, tool_call: Mapping[str, Any], edits: list[tuple[Path, str, str]]
    ) -> None:
        call_id = tool_call.get("toolCallId")
        diffs = diffs_in(dict(tool_call))
        for real, shown, text in edits:
            mine = [d for d in diffs if os.path.realpath(str(d.get("path"))) == str(real)]
            inside = os.path.relpath(real, os.path.realpath(cwd))
            name = shown if inside.startswith("..") else inside  # short: messages must fit one line
            self._by_file[(session_id, real)] = _Reviewed(
                text, call_id if isinstance(call_id, str) else None, name, mine
            )

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
        try:
            disk = await self._read_disk(session_id, path)
            if disk == reviewed.text:
                return
            if reviewed.diffs and disk is not None and apply_diffs(disk, reviewed.diffs).fit is Fit.APPLIED:
                await self._write_disk(session_id, path, reviewed.text)
                self._tell_user(f"{name}: the agent wrote its own edit; your reviewed version replaced it")
                return
        except Exception as exc:
            log.warning("reviewed edit of %s: %r", name, exc)
        self._tell_user(f"{name}: your reviewed version was not applied (the agent wrote the file itself)")
