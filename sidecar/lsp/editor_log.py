"""The editor's log (window/logMessage): the agent's stderr, rate-limited, and the sidecar's own
warnings and errors (`EditorLogHandler`), each line bounded."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from lsprotocol import types

from sidecar.lsp.ports import Messages

_LOG_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
    "agent": types.MessageType.Log,
    "debug": types.MessageType.Log,
}
STDERR_LINES_PER_SECOND = 200
LOG_LINE_MAX = 2_000


class EditorLog:
    def __init__(self, port: Messages) -> None:
        self.port = port
        self._window = 0.0
        self._count = 0
        self._dropped = 0

    def on_log(self, level: str, message: str) -> None:
        if self.port.stopping:
            return
        if level == "agent":
            now = time.monotonic()
            if now - self._window >= 1.0:
                if self._dropped:
                    self._log(types.MessageType.Log, f"[agent] ({self._dropped} stderr lines not shown)")
                self._window, self._count, self._dropped = now, 0, 0
            self._count += 1
            if self._count > STDERR_LINES_PER_SECOND:
                self._dropped += 1
                return
            message = f"[agent] {message}"
        self._log(_LOG_TYPES.get(level, types.MessageType.Log), message)

    def _log(self, kind: types.MessageType, message: str) -> None:
        if len(message) > LOG_LINE_MAX:
            message = message[:LOG_LINE_MAX] + "…"
        self.port.log_message(kind, message)


class EditorLogHandler(logging.Handler):
    """The sidecar's own warnings and errors, also shown in the editor's log (window/logMessage)."""

    def __init__(self, on_log: Callable[[str, str], None]) -> None:
        super().__init__(logging.WARNING)
        self._on_log = on_log
        self._busy = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._busy or record.name.startswith("pygls"):
            return  # pygls logs its own sends: forwarding those would recurse
        self._busy = True
        try:
            level = "error" if record.levelno >= logging.ERROR else "warning"
            self._on_log(level, f"[sidecar] {record.getMessage()}")
        except Exception:
            self.handleError(record)
        finally:
            self._busy = False
