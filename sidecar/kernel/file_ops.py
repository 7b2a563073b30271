"""Blocking file operations off the event loop, bounded in time and per owner.

`asyncio.to_thread` would run them in the loop's default pool: a read stuck on
a dead mount then holds a pool thread forever, a few of them exhaust the pool
for every session, and the interpreter waits for them at exit. Here each
operation runs in its own daemon thread (nothing waits for it at exit), the
caller gets a clear error after `timeout`, and each owner (a session) may have
at most `per_owner` operations running, stuck ones included, so one session's
stuck files never starve another's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from sidecar.kernel.errors import SidecarError

T = TypeVar("T")

TIMED_OUT = -32603


class FileOps:
    def __init__(self, timeout: float = 30.0, per_owner: int = 4, total: int = 64) -> None:
        self.timeout = timeout
        self.per_owner = per_owner
        self.total = total
        self.running: Counter[str] = Counter()  # threads still running, abandoned ones included
        self._waiters: list[asyncio.Future[None]] = []

    def _full(self, owner: str) -> bool:
        return self.running[owner] >= self.per_owner or self.running.total() >= self.total

    async def run(self, owner: str, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a daemon thread; its result, its exception, or a clear error after the timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        try:
            async with asyncio.timeout_at(deadline):
                while self._full(owner):
                    freed = loop.create_future()
                    self._waiters.append(freed)
                    await freed
        except TimeoutError:
            raise SidecarError(
                TIMED_OUT,
                f"{self.running[owner]} earlier file operations of this session have not finished "
                f"for {self.timeout:g} s (a file on a stuck mount?); try again later",
            ) from None
        future: asyncio.Future[T] = loop.create_future()
        # Retrieved even when the caller gave up waiting: a late failure is not "never retrieved".
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.running[owner] += 1
        thread = threading.Thread(
            target=self._work, args=(loop, future, owner, fn, args), name=f"file-op:{owner}", daemon=True
        )
        thread.start()
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(future)
        except TimeoutError:
            raise SidecarError(
                TIMED_OUT,
                f"the file operation did not finish within {self.timeout:g} s (a file on a stuck mount?)",
            ) from None

    def _work(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[T],
        owner: str,
        fn: Callable[..., T],
        args: tuple[Any, ...],
    ) -> None:
        try:
            result: Any = fn(*args)
            failure: BaseException | None = None
        except BaseException as exc:
            result, failure = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(self._finished, future, owner, result, failure)

    def _finished(
        self, future: asyncio.Future[Any], owner: str, result: Any, failure: BaseException | None
    ) -> None:
        self.running[owner] -= 1
        if self.running[owner] <= 0:
            del self.running[owner]
        if not future.done():
            if failure is not None:
                future.set_exception(failure)
            else:
                future.set_result(result)
        waiters, self._waiters = self._waiters, []
        for freed in waiters:
            if not freed.done():
                freed.set_result(None)
