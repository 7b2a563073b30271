"""changes.follow: the editor shows the file the agent reads or edits, at its line, without taking
the focus (`window/showDocument`, `takeFocus: false`), and never while the user types."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from sidecar.kernel.updates import Routed
    from sidecar.lsp.ports import FollowPort
    from sidecar.tasks import OwnedTasks

log = logging.getLogger(__name__)

QUIET = 2.0  # seconds since the user's last keystroke before the editor may be moved
TOOL_CALL_KINDS = ("tool_call", "tool_call_update")


def location_of(update: dict[str, Any]) -> tuple[str, int] | None:
    """The first location of a tool call update with an absolute path: (path, 0-based line)."""
    for location in update.get("locations") or ():
        if not isinstance(location, dict):
            continue
        path, line = location.get("path"), location.get("line")
        if isinstance(path, str) and os.path.isabs(path) and "\x00" not in path:
            at = line - 1 if isinstance(line, int) and not isinstance(line, bool) and line > 0 else 0
            return path, at
    return None


class FollowAgent:
    def __init__(
        self, port: FollowPort, tasks: OwnedTasks, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.port = port
        self.tasks = tasks
        self._now = now
        self._typed_at = float("-inf")
        self._shown: tuple[str, int] | None = None

    def typed(self) -> None:
        """The user changed a buffer (not one the sidecar writes, like a conversation document)."""
        self._typed_at = self._now()

    def on_update(self, routed: Routed) -> None:
        if routed.replay or not self.port.options.changes.follow or not self.port.caps.show_document:
            return
        update = routed.update.raw
        if update.get("sessionUpdate") not in TOOL_CALL_KINDS:
            return
        found = location_of(update)
        if found is None or found == self._shown or self._now() - self._typed_at < QUIET:
            return
        self._shown = found
        path, line = found
        at = types.Position(line=line, character=0)
        params = types.ShowDocumentParams(
            uri=Path(path).as_uri(), take_focus=False, selection=types.Range(start=at, end=at)
        )
        self.tasks.spawn(self._show(params), "follow-agent")

    async def _show(self, params: types.ShowDocumentParams) -> None:
        try:
            await self.port.show_document_params(params)
        except Exception as exc:  # the editor may refuse; following is a courtesy
            log.info("following the agent to %s: %r", params.uri, exc)
