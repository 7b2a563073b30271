"""Agent updates that are events for the user rather than conversation: notices and context compaction.

A `notice` becomes a `window/showMessage` with its severity; it never fails the
turn. A compaction (`compaction_update` in_progress ... completed, failed or
cancelled) is one work-done progress "Compacting context", ended at the latest
with the turn it ran in. Replayed updates (session/load) are history: they show
nothing here.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sidecar.features.stream.lsp_progress import TurnProgress

if TYPE_CHECKING:
    from sidecar.kernel.updates import Update
    from sidecar.lsp.ports import NotifierPort
    from sidecar.tasks import OwnedTasks

JsonObj = dict[str, Any]

NOTICE_LENGTH = 500
COMPACTION_TITLE = "Compacting context"
# Compactions open at once (an agent that never ends its compactions cannot pile up progress).
MAX_OPEN_COMPACTIONS = 8
_SEVERITIES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
}


def notice_message(update: JsonObj) -> tuple[types.MessageType, str] | None:
    """What the editor shows for a `notice`: severity (an unknown one is info) and one line."""
    title = update.get("title")
    if not isinstance(title, str) or not title.strip():
        return None
    description = update.get("description")
    text = f"{title}: {description}" if isinstance(description, str) and description.strip() else title
    severity = update.get("severity")
    return _SEVERITIES.get(severity if isinstance(severity, str) else "", types.MessageType.Info), text


def compaction_end(status: str, update: JsonObj) -> tuple[str, JsonObj | None]:
    """The stop reason and error a compaction's progress ends with."""
    if status == "failed":
        error = update.get("error")
        return "failed", {"message": error if isinstance(error, str) and error else "no reason given"}
    return status, None


class LiveEvents:
    def __init__(self, port: NotifierPort, tasks: OwnedTasks) -> None:
        self.port = port
        self._tasks = tasks
        self._compactions: dict[tuple[str, str], TurnProgress] = {}
        self._ids = itertools.count(1)

    def on_update(self, update: Update) -> None:
        if update.kind == "notice":
            shown = notice_message(update.raw)
            if shown is not None:
                self.port.show_message(shown[0], self.port.clean(shown[1], NOTICE_LENGTH))
        elif update.kind == "compaction_update":
            self._compaction(update.session_id, update.raw)

    def _compaction(self, session_id: str, update: JsonObj) -> None:
        compaction_id, status = update.get("compactionId"), update.get("status")
        if not isinstance(compaction_id, str) or not isinstance(status, str):
            return
        key = (session_id, compaction_id)
        if status == "in_progress":
            if key in self._compactions or len(self._compactions) >= MAX_OPEN_COMPACTIONS:
                return
            if self.port.caps.progress:
                begun = TurnProgress(
                    self.port, f"compaction-{next(self._ids)}", COMPACTION_TITLE, begin_message="summarizing"
                )
                self._compactions[key] = begun
                self._tasks.spawn(begun.run(), begun.token)
            return
        ended = self._compactions.pop(key, None)
        if ended is not None:
            ended.finish(*compaction_end(status, update))

    def turn_ended(self, session_id: str, stop_reason: str | None) -> None:
        """A compaction still open when its session's turn ends ends with it."""
        for key in [k for k in self._compactions if k[0] == session_id]:
            progress = self._compactions.pop(key)
            progress.finish(stop_reason or "ended", None)
