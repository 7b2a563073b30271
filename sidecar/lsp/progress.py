"""One work-done progress per running turn: begin, report, end, strictly in that order."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from .ports import ProgressPort

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
_END = object()


def describe(update: JsonObj) -> str | None:
    """The one line a progress report shows for an update, if it deserves one."""
    kind = update.get("sessionUpdate")
    if kind in ("tool_call", "tool_call_update"):
        title = update.get("title")
        status = update.get("status")
        if isinstance(title, str) and title:
            return f"{title} ({status})" if isinstance(status, str) else title
        return None
    if kind == "plan":
        entries = update.get("entries")
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, dict) and entry.get("status") == "in_progress":
                    content = entry.get("content")
                    return f"Plan: {content}" if isinstance(content, str) else None
    return None


class TurnProgress:
    def __init__(self, server: ProgressPort, turn_id: str, title: str) -> None:
        self.server = server
        self.turn_id = turn_id
        self.title = title
        # A fresh token each time: pygls never releases an ended token.
        self.token = f"acp-{turn_id}-{uuid.uuid4().hex[:8]}"
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._last: str | None = None

    def on_update(self, update: JsonObj) -> None:
        text = describe(update)
        if text is not None and text != self._last:
            self._last = text
            self._queue.put_nowait(text)

    def finish(self, stop_reason: str | None, error: JsonObj | None) -> None:
        message = f"failed: {error.get('message')}" if error else (stop_reason or "ended")
        self._queue.put_nowait((_END, message))

    async def run(self) -> None:
        progress = self.server.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(self.token), 10)
        except Exception as exc:  # the client may not support the create request
            log.info("workDoneProgress/create failed: %r", exc)
            return
        clean = self.server.clean
        progress.begin(
            self.token,
            types.WorkDoneProgressBegin(title=clean(self.title, 100), message="running", cancellable=False),
        )
        while True:
            item = await self._queue.get()
            if isinstance(item, tuple) and item[0] is _END:
                if not self.server.stopping:
                    progress.end(self.token, types.WorkDoneProgressEnd(message=clean(item[1], 200)))
                return
            if not self.server.stopping:
                progress.report(self.token, types.WorkDoneProgressReport(message=clean(str(item), 200)))
