"""What the conversation documents queue for their worker thread: each session's queue and the
operations in it (text runs, updates, work on what was rendered), and the outcome of a flush."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sidecar.features.conversation.api import Batch, DocumentChange, Renderer

JsonObj = dict[str, Any]

# An operation runs in the worker thread; it may change the document (a store call) or only the
# renderer (it returns None).
Operation = Callable[[], DocumentChange | None]


TitleOf = Callable[[str], str | None]


class ConversationEvents(Protocol):
    def on_conversation_change(
        self, session_id: str, uri: str, change: DocumentChange, at_once: bool = False
    ) -> None: ...
    def on_log(self, level: str, message: str) -> None: ...
    def on_error(self, message: str) -> None: ...


@dataclass(eq=False)
class Conversation:
    """One session's document: its renderer (touched only by the worker thread) and its queue."""

    session_id: str
    agent: str
    uri: str
    renderer: Renderer
    operations: list[Operation] = field(default_factory=list)
    waiters: list[asyncio.Future[None]] = field(default_factory=list)
    unsaved: deque[Batch] = field(default_factory=deque)  # worker thread only
    urgent: asyncio.Event = field(default_factory=asyncio.Event)
    flusher: asyncio.Task[None] | None = None
    flushed_at: float = float("-inf")
    early_at: float = float("-inf")  # the last flush brought forward by a big chunk
    costly: bool = False  # the next urgent flush is a big chunk's: it counts as the interval's
    prompted: set[str] = field(default_factory=set)  # turns whose prompt the document shows
    replay_since: float | None = None  # a replay runs: when it began, or its last write


@dataclass
class Outcome:
    changes: list[DocumentChange] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # worked around, nothing lost: for the log


@dataclass
class TextRun:
    """Consecutive plain text chunks of one message, rendered as one update.

    The renderer's output does not depend on how a text is split into chunks, so a run of
    100 000 chunks costs one renderer call per flush instead of 100 000 in the worker thread
    (which shares the interpreter with the relay)."""

    renderer: Renderer
    kind: str
    message_id: str | None
    parts: list[str]

    def __call__(self) -> None:
        self.renderer.text_chunk(self.kind, self.message_id, "".join(self.parts))


@dataclass
class Updates:
    """Consecutive updates other than plain text chunks, rendered in order by one operation."""

    renderer: Renderer
    updates: list[JsonObj]

    def __call__(self) -> None:
        failed: Exception | None = None
        for update in self.updates:
            try:
                self.renderer.update(update)
            except Exception as exc:  # it loses only itself, as when each update was an operation
                failed = exc
        if failed is not None:
            raise failed


@dataclass
class AfterRendered:
    """An operation on text already rendered: what the renderer holds is written out first."""

    operation: Operation

    def __call__(self) -> DocumentChange | None:
        return self.operation()


def render_call(method: Callable[..., object], *args: object) -> None:
    """A renderer call as an operation (it changes no document by itself)."""
    method(*args)


def describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"cannot save it: {exc.strerror}{where}"
    return f"internal error: {exc!r}"
