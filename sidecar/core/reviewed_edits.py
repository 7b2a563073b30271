"""Edits the user reviewed and changed before allowing them (a hunk taken back, a line fixed).

The editor allows an edit with the text the user settled on for each file
(`acp.permission.respond {..., edits: [{path, text}]}`). The agent still writes its own
version: the next `fs/write_text_file` of that file in that session writes the user's text
instead, and the agent is answered as usual (it reads the file again before its next edit).
When the tool call ends without such a write (an agent that writes the disk itself), the user's
text was not applied: the user is told, and nothing is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import errors
from .files import resolve_inside

MAX_FILES = 64  # files one permission answer may carry


@dataclass(frozen=True)
class _Reviewed:
    text: str
    tool_call_id: str | None
    shown_path: str  # as the editor named it, for messages


class ReviewedEdits:
    def __init__(self, tell_user: Callable[[str], None]) -> None:
        self._tell_user = tell_user
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

    def keep(self, session_id: str, tool_call_id: str | None, edits: list[tuple[Path, str, str]]) -> None:
        for real, shown, text in edits:
            self._by_file[(session_id, real)] = _Reviewed(text, tool_call_id, shown)

    def take(self, session_id: str, path: Path) -> str | None:
        """The user's text for a write of `path` (once), if the user reviewed it."""
        reviewed = self._by_file.pop((session_id, path), None)
        return reviewed.text if reviewed is not None else None

    def tool_call_ended(self, session_id: str, update: dict[str, Any]) -> None:
        """A tool call completed or failed: what it did not write is dropped (said when completed)."""
        status = update.get("status")
        if update.get("sessionUpdate") not in ("tool_call", "tool_call_update") or status not in (
            "completed",
            "failed",
        ):
            return
        call_id = update.get("toolCallId")
        self._drop(lambda key, r: key[0] == session_id and r.tool_call_id == call_id, status == "completed")

    def turn_ended(self, session_id: str) -> None:
        self._drop(lambda key, _r: key[0] == session_id, True)

    def _drop(self, which: Callable[[tuple[str, Path], _Reviewed], bool], say: bool) -> None:
        gone = [(key, r) for key, r in self._by_file.items() if which(key, r)]
        for key, reviewed in gone:
            del self._by_file[key]
            if say:
                self._tell_user(
                    f"the agent did not write {reviewed.shown_path} through the editor, so your changes "
                    "to its proposed edit were not applied (the file may hold the agent's version)"
                )
