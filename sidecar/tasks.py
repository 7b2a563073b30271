"""Owned background tasks: every task has an owner that logs its failure and awaits it on close."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class OwnedTasks:
    """A set of tasks kept alive by a strong reference, reported when they fail,
    and cancelled and awaited together by `aclose()`."""

    def __init__(self, owner: str, on_failure: Callable[[str, BaseException], None] | None = None) -> None:
        self.owner = owner
        self._on_failure = on_failure
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        task.set_name(f"{self.owner}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        log.error("task %s failed: %r", task.get_name(), exc, exc_info=exc)
        if self._on_failure is not None:
            with contextlib.suppress(Exception):
                self._on_failure(task.get_name(), exc)

    def __len__(self) -> int:
        return len(self._tasks)

    async def aclose(self) -> None:
        """Cancel every task and wait for all of them to finish."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
