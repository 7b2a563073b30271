"""One work-done progress per running turn: begin, report, end, strictly in that order; and one
while the agent takes long to start ("Starting agent")."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sidecar.kernel.tool_calls import tool_label
from sidecar.tasks import OwnedTasks

if TYPE_CHECKING:
    from sidecar.kernel.updates import Routed, Update
    from sidecar.lsp.ports import ProgressPort

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
_END = object()
# An agent start that takes longer than this (OpenCode answers initialize after 5-20 s) is shown as
# a progress; a quicker one shows nothing.
START_PROGRESS_AFTER = 1.0


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def describe(update: Update, call: JsonObj | None = None) -> str | None:
    """The one line a progress report shows for an update, if it deserves one.

    `call`: for a tool call's update, the call's fields merged so far (the session's tool-call
    table), so an update carrying only a status still says which call it is.
    """
    raw, known = update.raw, call or {}
    if update.kind in ("tool_call", "tool_call_update"):
        title = _text(raw.get("title")) or _text(known.get("title"))
        name = _text(raw.get("name")) or _text(known.get("name"))
        if title is None:
            return None
        status = _text(raw.get("status"))
        label = tool_label(title, name)
        return f"{label} · {status}" if status else label
    if update.kind == "plan":
        entries = raw.get("entries")
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, dict) and entry.get("status") == "in_progress":
                    content = entry.get("content")
                    return f"Plan: {content}" if isinstance(content, str) else None
    return None


class TurnProgress:
    """One work-done progress; `turn_id` names it (a turn, or another piece of work such as a compaction)."""

    def __init__(
        self, server: ProgressPort, turn_id: str, title: str, begin_message: str = "running"
    ) -> None:
        self.server = server
        self.turn_id = turn_id
        self.title = title
        self.begin_message = begin_message
        # A fresh token each time: pygls never releases an ended token.
        self.token = f"acp-{turn_id}-{uuid.uuid4().hex[:8]}"
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._last: str | None = None
        self._after_end: list[Callable[[], None]] = []
        self._over = False  # ended in the editor, or never begun there

    def after_end(self, send: Callable[[], None]) -> None:
        """Run `send` once the editor has this progress's end (at once when it has, or never had a
        begin): a message that must not be overwritten by the end (Helix shows both in one line)."""
        if self._over:
            send()
        else:
            self._after_end.append(send)

    def _ended(self) -> None:
        self._over = True
        sends, self._after_end = self._after_end, []
        for send in sends:
            try:
                send()
            except Exception:
                log.exception("a message after the end of progress %s", self.token)

    def on_update(self, routed: Routed) -> None:
        text = describe(routed.update, routed.tool_call)
        if text is not None and text != self._last:
            self._last = text
            self._queue.put_nowait(text)

    def on_terminal(self, text: str) -> None:
        """A shown client terminal's newest line of output."""
        if text != self._last:
            self._last = text
            self._queue.put_nowait(text)

    def finish(self, stop_reason: str | None, error: JsonObj | None, no_answer: bool = False) -> None:
        message = f"failed: {error.get('message')}" if error else (stop_reason or "ended")
        if no_answer:
            message = f"no answer ({message})"
        self._queue.put_nowait((_END, message))

    async def run(self) -> None:
        progress = self.server.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(self.token), 10)
        except Exception as exc:  # the client may not support the create request
            log.info("workDoneProgress/create failed: %r", exc)
            self._ended()
            return
        clean = self.server.clean
        progress.begin(
            self.token,
            types.WorkDoneProgressBegin(
                title=clean(self.title, 100), message=self.begin_message, cancellable=False
            ),
        )
        while True:
            item = await self._queue.get()
            if isinstance(item, tuple) and item[0] is _END:
                if not self.server.stopping:
                    progress.end(self.token, types.WorkDoneProgressEnd(message=clean(item[1], 200)))
                self._ended()
                return
            if not self.server.stopping:
                progress.report(self.token, types.WorkDoneProgressReport(message=clean(str(item), 200)))


class AgentStartProgress:
    """ "Starting agent" while the agent (re)starts for more than START_PROGRESS_AFTER seconds.

    It follows `acp/status`: it begins once the state has been `starting` that long (if the client
    shows progress), and ends when the state leaves `starting`: "NAME ready", or "failed" (the
    error itself is a message, sent after that end: `after_end`).
    """

    def __init__(self, server: ProgressPort, tasks: OwnedTasks, enabled: Callable[[], bool]) -> None:
        self.server = server
        self._tasks = tasks
        self._enabled = enabled
        self._waiting: asyncio.Task[None] | None = None
        self._shown: TurnProgress | None = None  # begun, not finished yet
        self._last: TurnProgress | None = None  # the latest one, finished or not

    def on_status(self, status: JsonObj) -> None:
        agent = status.get("agent")
        agent = agent if isinstance(agent, dict) else {}
        name = _text(agent.get("title")) or _text(agent.get("name")) or "agent"
        if status.get("state") == "starting":
            if self._waiting is None and self._shown is None and self._enabled():
                self._waiting = self._tasks.spawn(self._show_later(name), "progress-agent-start")
            return
        if self._waiting is not None:  # started quickly: nothing to show
            self._waiting.cancel()
            self._waiting = None
        shown, self._shown = self._shown, None
        if shown is not None:
            failed = status.get("state") in ("error", "disconnected")
            shown.finish("failed" if failed else f"{name} ready", None)

    async def _show_later(self, name: str) -> None:
        await asyncio.sleep(START_PROGRESS_AFTER)
        self._waiting = None  # from here on it is shown, and ended by the next status
        progress = self._shown = self._last = TurnProgress(
            self.server, "agent-start", "Starting agent", f"{name}…"
        )
        await progress.run()

    def after_end(self, send: Callable[[], None]) -> None:
        """Run `send` once the latest start progress has ended in the editor (at once if none)."""
        if self._last is None:
            send()
        else:
            self._last.after_end(send)
