"""Engine events to LSP messages, and editor services (buffers, edits, dialogs) to the engine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from ..core.errors import SidecarError
from ..core.session import PermissionRequest
from ..tasks import OwnedTasks
from .coalesce import Coalescer
from .edits import whole_file_edit
from .progress import TurnProgress

if TYPE_CHECKING:
    from .server import AcpLanguageServer

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]

_LOG_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
    "agent": types.MessageType.Log,
    "debug": types.MessageType.Log,
}
STDERR_LINES_PER_SECOND = 200
LOG_LINE_MAX = 2_000


class EditorLogHandler(logging.Handler):
    """The sidecar's own warnings and errors, also shown in the editor's log (window/logMessage)."""

    def __init__(self, bridge: Bridge) -> None:
        super().__init__(logging.WARNING)
        self.bridge = bridge
        self._busy = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._busy or record.name.startswith("pygls"):
            return  # pygls logs its own sends: forwarding those would recurse
        self._busy = True
        try:
            level = "error" if record.levelno >= logging.ERROR else "warning"
            self.bridge.on_log(level, f"[sidecar] {record.getMessage()}")
        except Exception:
            self.handleError(record)
        finally:
            self._busy = False


class Bridge:
    def __init__(self, server: AcpLanguageServer) -> None:
        self.server = server
        self.coalescer = Coalescer(self._send_update)
        self.progress: dict[str, TurnProgress] = {}
        self._tasks = OwnedTasks("bridge")
        self._log_window = 0.0
        self._log_count = 0
        self._log_dropped = 0
        self._last_title: dict[str, str | None] = {}
        self.log_handler = EditorLogHandler(self)

    # ------------------------------------------------------------------ helpers
    def notify(self, method: str, params: Any) -> None:
        if self.server.stopping:
            return
        try:
            # Our params are plain JSON dicts: give pygls the message as one, so
            # it skips building an attrs message and unstructuring it with
            # cattrs (3-4x the cost of the encoding itself). Same writer, same
            # framing and the same bytes as `protocol.notify`, written in order
            # with pygls' own messages.
            self.server.protocol._send_data({"method": method, "jsonrpc": "2.0", "params": params})
        except (BrokenPipeError, ValueError, OSError):
            # The editor is gone; shutdown follows from stdin EOF.
            self.server.stopping = True

    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        return self._tasks.spawn(coro, name)

    async def aclose(self) -> None:
        self.coalescer.flush()
        await self._tasks.aclose()

    def show_message(self, kind: types.MessageType, message: str) -> None:
        if self.server.stopping:
            return
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    # ------------------------------------------------------------------ EngineListener
    def on_session_update(self, session_id: str, turn_id: str | None, replay: bool, update: JsonObj) -> None:
        # A text chunk never changes what progress shows: only other updates go there.
        if (
            not self.coalescer.push(session_id, turn_id, replay, update)
            and turn_id is not None
            and (progress := self.progress.get(turn_id)) is not None
        ):
            progress.on_update(update)

    def _send_update(self, params: JsonObj) -> None:
        self.notify("acp/sessionUpdate", params)

    def on_turn(
        self, session_id: str, turn_id: str, state: str, stop_reason: str | None, error: JsonObj | None
    ) -> None:
        self.coalescer.flush()
        self.notify(
            "acp/turn",
            {
                "sessionId": session_id,
                "turnId": turn_id,
                "state": state,
                "stopReason": stop_reason,
                "error": error,
            },
        )
        if state == "running" and self.server.supports_progress():
            title = self.server.engine_title(session_id)
            progress = TurnProgress(self.server, turn_id, title)
            self.progress[turn_id] = progress
            self.spawn(progress.run(), f"progress-{turn_id}")
        elif state == "ended":
            ended = self.progress.pop(turn_id, None)
            if ended is not None:
                ended.finish(stop_reason, error)
            if error is not None and not self.server.stopping:
                self.show_message(types.MessageType.Error, f"ACP turn failed: {error.get('message')}")

    def on_status(self, status: JsonObj) -> None:
        self.coalescer.flush()
        self.notify("acp/status", status)
        self.server.status_diagnostic.status(status)

    def on_session_info(self, info: JsonObj) -> None:
        self.coalescer.flush()
        self.notify("acp/sessionInfo", info)
        session_id = info.get("sessionId")
        title = info.get("title")
        if (
            self.server.options.title_as_show_message
            and isinstance(session_id, str)
            and title
            and self._last_title.get(session_id) != title
        ):
            self._last_title[session_id] = title
            self.show_message(types.MessageType.Info, f"ACP session: {title}")

    def on_permission(self, request: PermissionRequest) -> None:
        if self.server.supports_message_request():
            self.spawn(self._ask(request), f"permission-{request.request_id}")
        else:
            names = ", ".join(str(o.get("name")) for o in request.options)
            self.show_message(
                types.MessageType.Warning,
                f"The agent asks permission: {request.title} ({names}). "
                f"Answer with a code action, or acp.permission.respond {{requestId: {request.request_id}}}.",
            )

    async def _ask(self, request: PermissionRequest) -> None:
        actions = [
            types.MessageActionItem(title=str(o.get("name") or o.get("optionId"))) for o in request.options
        ]
        ask = asyncio.ensure_future(
            self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=f"The agent asks permission: {request.title}",
                    actions=actions,
                )
            )
        )
        # The request may be answered elsewhere (code action, cancel): stop waiting then.
        waiters: set[asyncio.Future[Any]] = {ask, request.future}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if request.future.done():
            ask.cancel()
            return
        try:
            chosen = ask.result()
        except Exception as exc:
            log.warning("showMessageRequest failed: %r; code actions remain", exc)
            return
        option_id = None
        if chosen is not None:
            title = getattr(chosen, "title", None)
            option_id = next(
                (o["optionId"] for o in request.options if str(o.get("name") or o.get("optionId")) == title),
                None,
            )
        with contextlib.suppress(SidecarError):
            self.server.engine_or_raise().respond_permission(request.request_id, option_id)

    def on_log(self, level: str, message: str) -> None:
        if self.server.stopping:
            return
        if level == "agent":
            now = time.monotonic()
            if now - self._log_window >= 1.0:
                if self._log_dropped:
                    self._log(types.MessageType.Log, f"[agent] ({self._log_dropped} stderr lines not shown)")
                self._log_window, self._log_count, self._log_dropped = now, 0, 0
            self._log_count += 1
            if self._log_count > STDERR_LINES_PER_SECOND:
                self._log_dropped += 1
                return
            message = f"[agent] {message}"
        self._log(_LOG_TYPES.get(level, types.MessageType.Log), message)

    def _log(self, kind: types.MessageType, message: str) -> None:
        if len(message) > LOG_LINE_MAX:
            message = message[:LOG_LINE_MAX] + "…"
        self.server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def on_error(self, message: str) -> None:
        self.show_message(types.MessageType.Error, message)

    # ------------------------------------------------------------------ EditorFiles
    def _document_for(self, path: Path) -> Any:
        workspace = self.server.workspace
        for uri, doc in workspace.text_documents.items():
            fs = to_fs_path(uri)
            if fs and os.path.realpath(fs) == str(path):
                return doc
        return None

    def open_document_text(self, path: Path) -> str | None:
        doc = self._document_for(path)
        return doc.source if doc is not None else None

    async def write_via_editor(self, path: Path, content: str) -> bool:
        caps = self.server.client_caps()
        if not caps.apply_edit:
            return False
        doc = self._document_for(path)
        workspace = self.server.workspace
        if doc is not None:
            edit = whole_file_edit(
                doc.uri,
                doc.source,
                content,
                workspace,
                document_changes=caps.document_changes,
                create_ok=False,
                version=doc.version if caps.document_changes else None,
            )
        elif caps.document_changes and caps.create_files:
            old = await asyncio.to_thread(_read_if_exists, path)
            edit = whole_file_edit(
                path.as_uri(), old, content, workspace, document_changes=True, create_ok=True
            )
        else:
            return False
        if edit is None:
            return False
        await self.apply_edit(edit, f"Agent: write {path.name}")
        return True

    async def apply_edit(self, edit: types.WorkspaceEdit, label: str) -> None:
        timeout = self.server.engine.options.request_timeout if self.server.engine else 60.0
        try:
            result = await asyncio.wait_for(
                self.server.workspace_apply_edit_async(
                    types.ApplyWorkspaceEditParams(edit=edit, label=label)
                ),
                timeout,
            )
        except TimeoutError:
            raise SidecarError(
                -32603, f"the editor did not answer workspace/applyEdit within {timeout:g} s"
            ) from None
        if result is None or not getattr(result, "applied", False):
            reason = getattr(result, "failure_reason", None) if result is not None else None
            raise SidecarError(-32603, f"the editor rejected the edit{': ' + reason if reason else ''}")


def _read_if_exists(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
