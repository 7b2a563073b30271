"""The stream feature's LSP side: the engine's events to the editor, `acp/*` notifications,
progress and messages (host.py builds it; the shell holds it as its `EditorEvents`).

`Notifier` is the engine's `EngineListener`. It is called synchronously and in order; text
chunks go through the coalescer, everything else flushes it first. What concerns another
feature's LSP side goes to it through its hooks (`LspFeature`): a permission, a question, a
document change, the fields and the follow-up of an update.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sidecar.features.stream.coalesce import Coalescer
from sidecar.features.stream.lsp_live_events import LiveEvents
from sidecar.features.stream.lsp_progress import AgentStartProgress, TurnProgress
from sidecar.kernel.turns import no_answer
from sidecar.lsp.editor_log import EditorLog, EditorLogHandler
from sidecar.tasks import OwnedTasks

if TYPE_CHECKING:
    from sidecar.kernel.bus import UpdateRouted
    from sidecar.kernel.session import PermissionRequest
    from sidecar.lsp.features import LspFeatures
    from sidecar.lsp.ports import NotifierPort
    from sidecar.lsp.status_diagnostic import StatusDiagnostic

JsonObj = dict[str, Any]


class Notifier:
    def __init__(
        self,
        port: NotifierPort,
        tasks: OwnedTasks,
        status_diagnostic: StatusDiagnostic,
        features: LspFeatures,
    ) -> None:
        self.port = port
        self._features = features  # what the features' LSP sides are told, in their order
        # The editor's reaction to a routed update is the coalescer itself: a plain chunk goes
        # from the bus to `acp/sessionUpdate` there; anything else comes back to `_other_update`.
        self.coalescer = Coalescer(
            functools.partial(port.notify, "acp/sessionUpdate"),
            other=self._other_update,
            skip_replay=lambda: not self.port.options.notify.replay_updates,
        )
        self.on_session_update = self.coalescer.push
        self.progress: dict[str, TurnProgress] = {}
        self.live = LiveEvents(port, tasks)
        self.starting = AgentStartProgress(port, tasks, lambda: self.port.caps.progress)
        self._tasks = tasks
        self._status_diagnostic = status_diagnostic
        self.log = EditorLog(port)
        self._last_title: dict[str, str | None] = {}
        self._progress_session: dict[str, str] = {}  # running turn's progress -> its session
        self.log_handler = EditorLogHandler(self.log.on_log)

    def flush(self) -> None:
        """What the coalescer holds goes out now (before the engine stops)."""
        self.coalescer.flush()

    def close(self) -> None:
        self.coalescer.close()

    # ------------------------------------------------------------------ EngineListener
    def _other_update(self, routed: UpdateRouted) -> None:
        """An update other than a plain text chunk (the coalescer flushed first): sent, then
        progress and notices (a text chunk never changes what those show)."""
        session_id, replay, update = routed.session_id, routed.replay, routed.update.raw
        params: JsonObj = {
            "sessionId": session_id,
            "turnId": routed.turn_id,
            "replay": replay,
            "update": update,
        }
        for feature in self._features.all:  # the edits' proposals of a tool call's diffs
            if (fields := feature.update_fields(session_id, replay, update)) is not None:
                params.update(fields)
        self.port.notify("acp/sessionUpdate", params)
        turn_id = routed.turn_id
        if turn_id is not None and (progress := self.progress.get(turn_id)) is not None:
            progress.on_update(routed.routed)
        if not replay:
            self.live.on_update(routed.update)
        for feature in self._features.all:  # the editor following the agent
            feature.update_sent(routed.routed)

    def on_turn(
        self,
        session_id: str,
        turn_id: str,
        state: str,
        stop_reason: str | None,
        error: JsonObj | None,
        answered: bool | None = None,
    ) -> None:
        self.coalescer.flush()
        params: JsonObj = {
            "sessionId": session_id,
            "turnId": turn_id,
            "state": state,
            "stopReason": stop_reason,
            "error": error,
        }
        if answered is not None:  # the turn ended: whether the agent sent anything for it
            params["answered"] = answered
        self.port.notify("acp/turn", params)
        if state == "running" and self.port.caps.progress:
            progress = TurnProgress(self.port, turn_id, self.port.session_title(session_id))
            self.progress[turn_id] = progress
            self._progress_session[turn_id] = session_id
            self._tasks.spawn(progress.run(), f"progress-{turn_id}")
        elif state == "ended":
            ended = self.progress.pop(turn_id, None)
            self._progress_session.pop(turn_id, None)
            if ended is not None:
                ended.finish(stop_reason, error, no_answer=no_answer(stop_reason, error, answered))
            self.live.turn_ended(session_id, stop_reason)
            if error is not None:
                failed = f"ACP turn failed: {error.get('message')}"
                if ended is None:
                    self.port.show_message(types.MessageType.Error, failed)
                else:  # after the progress's end and a title said after it: the failure stays
                    ended.after_end(lambda: self.port.show_message(types.MessageType.Error, failed))

    def on_status(self, status: JsonObj) -> None:
        self.coalescer.flush()
        self.port.notify("acp/status", status)
        self._status_diagnostic.status(status)
        self.starting.on_status(status)

    def on_session_info(self, info: JsonObj) -> None:
        self.coalescer.flush()
        self.port.notify("acp/sessionInfo", info)
        session_id = info.get("sessionId")
        title = info.get("title")
        if (
            self.port.options.notify.title_as_show_message
            and isinstance(session_id, str)
            and title
            and session_id == self.port.active_session_id  # not other sessions the cache reconciles
            and self._last_title.get(session_id) != title
        ):
            self._last_title[session_id] = title
            self._say_title(session_id, f"ACP session: {title}")

    def _say_title(self, session_id: str, message: str) -> None:
        """The title in the message line; while a turn of the session shows progress, after its end:
        Helix writes the end into the same line, under the title the progress began with."""
        running = [turn for turn, session in self._progress_session.items() if session == session_id]
        progress = self.progress.get(running[-1]) if running else None
        if progress is None:
            self.port.show_message(types.MessageType.Info, message)
        else:
            progress.after_end(lambda: self.port.show_message(types.MessageType.Info, message))

    def on_permission(self, request: PermissionRequest) -> None:
        self.coalescer.flush()
        for feature in self._features.all:
            feature.permission(request)

    def on_elicitation(self, elicitation: Any, state: str, answer: JsonObj | None) -> None:
        self.coalescer.flush()
        for feature in self._features.all:
            feature.elicitation(elicitation, state, answer)

    def on_log(self, level: str, message: str) -> None:
        self.log.on_log(level, message)

    def on_error(self, message: str) -> None:
        # After a start progress's end: Helix writes that end into the message line too.
        self.starting.after_end(lambda: self.port.show_message(types.MessageType.Error, message))

    def on_conversation_change(self, session_id: str, uri: str, change: Any, at_once: bool = False) -> None:
        for feature in self._features.all:
            feature.document_changed(uri, change, at_once)

    def on_terminal(self, session_id: str, info: JsonObj) -> None:
        """`acp/terminal`; a shown terminal's last line is also the running turn's progress."""
        self.coalescer.flush()
        self.port.notify("acp/terminal", {"sessionId": session_id, **info})
        line = info.get("lastLine")
        running = [turn for turn, session in self._progress_session.items() if session == session_id]
        if isinstance(line, str) and line.strip() and running:
            progress = self.progress.get(running[-1])
            if progress is not None:
                progress.on_terminal(f"$ {info.get('command')}: {line}")
