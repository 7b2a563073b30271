"""Coalescing of consecutive text chunks, so a fast agent cannot flood the editor.

Leading edge plus window: a chunk that comes after a quiet moment (no chunk
for `quiet` seconds, 3/4 of the window) is sent at once. A chunk that follows
the previous one closely is held, and joined with those that follow it for at
most `window` seconds or `max_chars` characters. So a steady stream slower
than one chunk per `quiet` is passed through without delay, and a flood
becomes at most one notification per window (plus one per quiet moment).

Chunks of one message (same session, turn, kind, messageId, replay flag) are
joined. Anything else flushes first, so order is kept and no text is lost.
Only plain text chunks are joined (the one rule: `acp/chunk_merge.py` `plain_text`, read once
into `Update.plain`): a chunk with any field we do not know passes through untouched.

The coalescer is itself the editor's reaction to a routed update (`push` takes the bus's
`UpdateRouted` as it takes a `Routed`): a chunk goes from the bus to `acp/sessionUpdate` here,
with no step between; anything else is handed on to `other` (progress, notices) after the flush.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sidecar.kernel.updates import RoutedView

JsonObj = dict[str, Any]

WINDOW = 0.02  # seconds
_monotonic = time.monotonic

Emit = Callable[[JsonObj], None]


Other = Callable[[Any], None]


class Coalescer:
    def __init__(
        self,
        emit: Emit,
        window: float = WINDOW,
        max_chars: int = 32 * 1024,
        *,
        other: Other | None = None,
        skip_replay: Callable[[], bool] | None = None,
    ) -> None:
        self._emit = emit
        # Anything but a plain chunk, after the flush: sent with `emit` unless `other` takes it.
        self._other = other
        self._skip_replay = skip_replay  # replayed updates are not sent (the option says so)
        self.window = window
        self.max_chars = max_chars
        self._key: tuple[Any, ...] | None = None
        self._head: JsonObj | None = None
        self._parts: list[str] = []
        self._size = 0
        # Shorter than the window, so a stream of one chunk per window (50/s) passes
        # without delay despite jitter; long enough that a stall inside a flood
        # rarely counts as quiet.
        self.quiet = window * 0.75
        self._timer: asyncio.TimerHandle | None = None
        self._last_chunk = float("-inf")  # time.monotonic() of the last text chunk
        self.chunks_in = 0
        self.notifications_out = 0

    def push(self, routed: RoutedView) -> bool:
        """Take one update; True when it was a plain text chunk (sent now or held for joining)."""
        view = routed.update
        session_id, turn_id, replay, update = view.session_id, routed.turn_id, routed.replay, view.raw
        if replay and self._skip_replay is not None and self._skip_replay():
            return False  # the plugin shows the history from the conversation document
        self.chunks_in += 1
        text = view.text
        if not view.plain or text is None:
            self.flush()
            if self._other is None:
                self._send(session_id, turn_id, replay, update)
            else:
                self._other(routed)
            return False
        now = _monotonic()
        quiet_before = now - self._last_chunk >= self.quiet
        self._last_chunk = now
        key = (session_id, turn_id, replay, view.kind, view.message_id)
        if key != self._key:
            self.flush()
            if quiet_before:
                self._send(session_id, turn_id, replay, update)  # after a quiet moment: no delay
                return True
            self._key = key
            self._head = {"sessionId": session_id, "turnId": turn_id, "replay": replay, "update": update}
            self._timer = asyncio.get_running_loop().call_later(self.window, self.flush)
        self._parts.append(text)
        self._size += len(text)
        if self._size >= self.max_chars:
            self.flush()
        return True

    def flush(self) -> None:
        """Send what is held now (before anything else goes out)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        head = self._head
        if head is None:
            return
        update: JsonObj = head["update"]
        if len(self._parts) > 1:
            update = dict(update)
            update["content"] = {"type": "text", "text": "".join(self._parts)}
        self._key = None
        self._head = None
        self._parts = []
        self._size = 0
        self._send(head["sessionId"], head["turnId"], head["replay"], update)

    def close(self) -> None:
        """Flush what is held (shutdown): no timer is left behind."""
        self.flush()

    def _send(self, session_id: str, turn_id: str | None, replay: bool, update: JsonObj) -> None:
        self.notifications_out += 1
        self._emit({"sessionId": session_id, "turnId": turn_id, "replay": replay, "update": update})
