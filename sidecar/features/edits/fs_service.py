"""The agent's file access (`fs/read_text_file`, `fs/write_text_file`) and the diffs it proposes.

Every path is admitted by `files.resolve_inside` against the session's
directories first; the editor's buffers are preferred to the disk both ways.
Disk access uses that very real path without following a symlink (`files`),
in daemon threads bounded in time and per session (`FileOps`). The diff of a write, for the
agent's changes, runs on the kernel's worker (`Worker`): a big file changed all over takes seconds.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from sidecar.acp.errors import RESOURCE_NOT_FOUND
from sidecar.features.edits.agent_changes import AgentChanges, diff_write
from sidecar.features.edits.diff_apply import by_path
from sidecar.features.edits.reviewed_edits import ReviewedEdits
from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.file_ops import FileOps
from sidecar.kernel.files import (
    read_text,
    read_text_if_exists,
    replace_exactly,
    resolve_inside,
    window,
    write_text,
)
from sidecar.kernel.ports import EditorFiles
from sidecar.kernel.session import Session
from sidecar.kernel.tool_calls import diffs_in
from sidecar.kernel.worker import Worker, WorkTimeout

JsonObj = dict[str, Any]

log = logging.getLogger(__name__)


class FileService:
    def __init__(
        self,
        sessions: Mapping[str, Session],
        files: EditorFiles,
        *,
        ops: FileOps,
        worker: Worker,
        tell_user: Callable[[str], None],
        spawn: Callable[[Coroutine[Any, Any, None], str], asyncio.Task[Any]],
        changes: AgentChanges | None = None,
    ) -> None:
        self._sessions = sessions
        self._files = files
        self._ops = ops  # the kernel's: one bound per session for every file operation
        self._worker = worker  # the kernel's: the diffs of the agent's writes
        # What each write changed, for review after it landed (None: not tracked).
        self.changes = changes
        self._spawn = spawn
        # (session, path) -> the text the agent wrote through us, until its tool call completes:
        # that write is tracked already, its diff must not be taken for the agent's own write.
        self._written: dict[tuple[str, str], str] = {}
        self.reviewed = ReviewedEdits(tell_user, spawn, self._read_disk, self._replace_exactly)

    def roots_of(self, session_id: str) -> list[str] | None:
        """The session's roots (None for a session not known here)."""
        session = self._sessions.get(session_id)
        return session.roots if session is not None else None

    def _session_for_fs(self, params: JsonObj) -> Session:
        return self._session(params.get("sessionId"))

    def _session(self, session_id: object) -> Session:
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise SidecarError(RESOURCE_NOT_FOUND, f"unknown session {session_id!r:.80}")
        return session

    async def read_text_file(self, params: JsonObj) -> JsonObj:
        session = self._session_for_fs(params)
        path = resolve_inside(params.get("path"), session.roots)
        line, limit = params.get("line"), params.get("limit")
        text = self._files.open_document_text(path)
        if text is not None:
            return {"content": window(text, line, limit)}
        content = await self._ops.run(session.session_id, read_text, path, session.roots, line, limit)
        return {"content": content}

    async def write_text_file(self, params: JsonObj) -> JsonObj:
        session = self._session_for_fs(params)
        path = resolve_inside(params.get("path"), session.roots)
        content = params.get("content")
        if not isinstance(content, str):
            raise errors.invalid("content must be a string")
        reviewed = self.reviewed.take(session.session_id, path)
        if reviewed is not None:
            content = reviewed  # the user changed the agent's proposal before allowing it
        before = self._files.open_document_text(path) if self.changes is not None else None
        if not await self._files.write_via_editor(path, content):
            if self.changes is not None and before is None:
                before = await self._disk_before(session.session_id, path)
            await self._ops.run(session.session_id, write_text, path, content, session.roots)
        if self.changes is not None and before is not None:
            await self._record(session.session_id, str(path), before, content)
            if len(self._written) >= MAX_WRITTEN:
                self._written.pop(next(iter(self._written)))
            self._written[(session.session_id, str(path))] = content
        return {}

    def tool_call_ended(self, session: Session, update: Mapping[str, Any]) -> None:
        """A tool call completed: the files its diffs name that the agent did not write through
        `fs/write_text_file` it wrote itself (claude-agent-acp); their hunks are tracked too."""
        if self.changes is None or update.get("status") != "completed":
            return
        call_id = update.get("toolCallId")
        diffs = session.tool_calls.diffs(call_id) if isinstance(call_id, str) else []
        own: dict[str, list[Mapping[str, Any]]] = {}
        for path, group in by_path(diffs).items():
            try:
                real = str(resolve_inside(path, session.roots))
            except SidecarError:
                continue
            if self._written.pop((session.session_id, real), None) is None:
                own[real] = group
        if own:
            self._spawn(self._track_own_writes(session.session_id, own), f"own-writes-{call_id}")

    async def _track_own_writes(self, session_id: str, own: dict[str, list[Mapping[str, Any]]]) -> None:
        for path, group in own.items():
            after = await self._disk_before(session_id, Path(path))
            before = undo_diffs(after, group) if after is not None else None
            if before is not None and after is not None:
                await self._record(session_id, path, before, after)

    async def _record(self, session_id: str, path: str, before: str, after: str) -> None:
        """The agent's write from `before` to `after`, diffed on the worker, its hunks recorded."""
        if self.changes is None:
            return
        try:
            diff = await self._worker.run(diff_write, before, after)
        except WorkTimeout as exc:  # the write landed all the same: it goes untracked
            log.warning("the agent's write to %s is not tracked for review: %s", path, exc)
            return
        self.changes.apply(session_id, path, diff)

    async def _disk_before(self, session_id: str, path: Path) -> str | None:
        """The file before the agent's write, for its review ("" for no file); None when it cannot
        be read as text (the write itself goes on, untracked)."""
        try:
            found = await self._read_disk(session_id, path)
        except SidecarError:
            return None
        return found or ""

    async def write_closed_file(self, session_id: object, path: str, expected: str | None, text: str) -> bool:
        """Write `text` to `path` (admitted inside the session's roots) only while the file holds
        `expected` (None: no file), through the very directory checked; True when written."""
        session = self._session(session_id)
        real = resolve_inside(path, session.roots)
        found = await self._replace_exactly(session.session_id, real, expected, text)
        return found == expected

    async def revert_closed_file(self, session_id: str, path: str, expected: str, text: str) -> bool:
        """An agent change reverted in a closed file: `text` written only while the file holds
        `expected`. Its session's roots, or (a session not loaded since a restart) the file's own
        folder: the path was admitted when the agent wrote it; a symlink put there since is not
        followed."""
        session = self._sessions.get(session_id)
        roots = session.roots if session is not None else [os.path.dirname(path)]
        real = resolve_inside(path, roots)
        found = await self._ops.run(session_id, replace_exactly, real, expected, text, roots)
        return found == expected

    async def _read_disk(self, session_id: str, path: Path) -> str | None:
        return await self._ops.run(session_id, read_text_if_exists, path, self._session(session_id).roots)

    async def _replace_exactly(
        self, session_id: str, path: Path, expected: str | None, text: str
    ) -> str | None:
        """Write `text` only if the file holds exactly `expected`, read and written in one step
        of the file thread; the file as it was found."""
        return await self._ops.run(
            session_id, replace_exactly, path, expected, text, self._session(session_id).roots
        )

    def tool_call_diffs(self, session_id: object, tool_call_id: object) -> list[JsonObj]:
        """The diffs of one tool call, each path admitted like a write."""
        roots, diffs = self.diffs_of(session_id, tool_call_id)
        for diff in diffs:
            resolve_inside(diff.get("path"), roots)
        return diffs

    def diffs_of(self, session_id: object, tool_call_id: object) -> tuple[list[str], list[JsonObj]]:
        """The session's roots and the diffs of one of its tool calls (not admitted yet: the
        proposals say per file which path is refused)."""
        if not isinstance(session_id, str) or not session_id:
            raise errors.invalid("sessionId must be a non-empty string")
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise errors.invalid("toolCallId must be a non-empty string")
        session = self._sessions.get(session_id)
        if session is None:
            raise errors.unknown_session(session_id)
        diffs = session.tool_calls.diffs(tool_call_id) or _asked_diffs(session, tool_call_id)
        if not diffs:
            raise errors.invalid(f"tool call {tool_call_id!r:.80} has no diff in session {session_id}")
        return session.roots, diffs

    def pending_edits(self) -> list[tuple[Session, str, JsonObj, list[JsonObj]]]:
        """Tool calls with a diff that is not completed or failed yet, and diffs of pending
        permission requests: (session, toolCallId, call, diffs). Only those whose every path
        `tool_call_diffs` admits: what is offered can be applied, and nothing outside the roots."""
        found: list[tuple[Session, str, JsonObj, list[JsonObj]]] = []
        for session in self._sessions.values():
            for call_id, call in session.tool_calls.items():
                if call.get("status") in ("completed", "failed"):
                    continue
                if diffs := session.tool_calls.diffs(call_id):
                    found.append((session, call_id, call, diffs))
            known = {call_id for _, call_id, _, _ in found}
            for request in session.permissions.values():
                asked = request.tool_call.get("toolCallId")
                if isinstance(asked, str) and asked not in known and (diffs := diffs_in(request.tool_call)):
                    found.append((session, asked, request.tool_call, diffs))
        return [edit for edit in found if _admitted(edit[0], edit[3])]


MAX_WRITTEN = 256


def undo_diffs(text: str, diffs: list[Mapping[str, Any]]) -> str | None:
    """The file before `diffs` made it `text` (each one's `newText` the whole file or found exactly
    once, in reverse order); None when that cannot be told."""
    for diff in reversed(diffs):
        old, new = diff.get("oldText"), diff.get("newText")
        if not isinstance(new, str) or not (old is None or isinstance(old, str)):
            return None
        if new == text:
            text = old or ""
        elif old is not None and new and text.count(new) == 1:
            text = text.replace(new, old, 1)
        else:
            return None
    return text


def _admit(session: Session, diffs: list[JsonObj]) -> None:
    """Every diff's path inside the session's roots, or the error saying which is not."""
    for diff in diffs:
        resolve_inside(diff.get("path"), session.roots)


def _admitted(session: Session, diffs: list[JsonObj]) -> bool:
    try:
        _admit(session, diffs)
    except SidecarError:
        return False
    return True


def _asked_diffs(session: Session, tool_call_id: str) -> list[JsonObj]:
    """A diff an agent sent only with its permission request (gemini-cli), while it waits."""
    for request in session.permissions.values():
        if request.tool_call.get("toolCallId") == tool_call_id:
            return diffs_in(request.tool_call)
    return []
