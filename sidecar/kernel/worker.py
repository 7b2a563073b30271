"""Heavy work off the event loop: the one way a feature runs CPU-bound work (diffs, an agent's
pattern, a big scan), bounded in threads and in time, cancellable, awaited at shutdown.

The event loop answers the editor: anything that may take more than a few milliseconds on
hostile or merely large input runs here, `await kernel.worker.run(fn, *args)`. Each job runs
in a daemon thread (nothing waits for it at exit); at most `threads` run at once, stuck ones
included, and a job waits on the loop for a free thread. The caller gets `WorkTimeout` after
`timeout` (the wait for a thread included) and is free at once when its task is cancelled.

A Python thread cannot be stopped from outside, so a job that can take long stops itself: it
calls `checkpoint()` now and then, which raises `WorkStopped` once its caller gave up (timed
out, cancelled, or the worker closed). A job that cannot (a C call: a regular expression) bounds
itself (the `regex` module's own `timeout`). Pure-Python work holds the GIL only for the
interpreter's switch interval at a time, so the loop goes on answering meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["WorkStopped", "WorkTimeout", "Worker", "checkpoint"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_local = threading.local()


class WorkTimeout(TimeoutError):
    """A job did not finish in its time (the wait for a free thread included)."""


class WorkStopped(Exception):
    """Raised in a job by `checkpoint()`: nobody waits for its result any more."""


class _Job:
    def __init__(self, name: str) -> None:
        self.name = name
        self.stop = threading.Event()


def checkpoint() -> None:
    """In a job: raise `WorkStopped` once its caller gave up. Anywhere else: nothing."""
    job: _Job | None = getattr(_local, "job", None)
    if job is not None and job.stop.is_set():
        raise WorkStopped(job.name)


class Worker:
    def __init__(self, threads: int = 2, timeout: float = 30.0, name: str = "heavy") -> None:
        self.threads = threads
        self.timeout = timeout
        self.name = name
        self._slots = asyncio.Semaphore(threads)
        # Jobs whose thread still runs (given-up ones included), with what they will answer.
        self._running: dict[_Job, asyncio.Future[Any]] = {}
        self._closed = False

    @property
    def running(self) -> int:
        """Threads running a job now, those whose caller gave up included."""
        return len(self._running)

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """`fn(*args)` in a worker thread: its result or its exception; `WorkTimeout` after
        `timeout` (the worker's when None)."""
        if self._closed:
            raise RuntimeError(f"{self.name}: the worker is closed")
        loop = asyncio.get_running_loop()
        limit = self.timeout if timeout is None else timeout
        deadline = loop.time() + limit
        name = getattr(fn, "__qualname__", repr(fn))
        try:
            async with asyncio.timeout_at(deadline):
                await self._slots.acquire()
        except TimeoutError:
            raise WorkTimeout(f"{name}: no free worker thread within {limit:g} s") from None
        if self._closed:  # closed while this job waited
            self._slots.release()
            raise RuntimeError(f"{self.name}: the worker is closed")
        job = _Job(name)
        future: asyncio.Future[T] = loop.create_future()
        # Retrieved even when the caller gave up: a late failure is not "never retrieved".
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._running[job] = future
        thread = threading.Thread(
            target=self._work, args=(loop, job, future, fn, args), name=f"{self.name}:{name}", daemon=True
        )
        thread.start()
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(future)
        except TimeoutError:
            job.stop.set()
            raise WorkTimeout(f"{name}: did not finish within {limit:g} s") from None
        except asyncio.CancelledError:
            job.stop.set()
            raise

    def _work(
        self,
        loop: asyncio.AbstractEventLoop,
        job: _Job,
        future: asyncio.Future[T],
        fn: Callable[..., T],
        args: tuple[Any, ...],
    ) -> None:
        _local.job = job
        try:
            result: Any = fn(*args)
            failure: BaseException | None = None
        except BaseException as exc:
            result, failure = None, exc
        finally:
            _local.job = None
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(self._finished, job, future, result, failure)

    def _finished(
        self, job: _Job, future: asyncio.Future[Any], result: Any, failure: BaseException | None
    ) -> None:
        self._running.pop(job, None)
        self._slots.release()
        if not future.done():
            if failure is not None:
                future.set_exception(failure)
            else:
                future.set_result(result)

    async def aclose(self, grace: float = 2.0) -> None:
        """No new job; every running one is told to stop, and awaited for up to `grace` seconds
        (a thread that does not stop by then is abandoned, and said so in the log)."""
        self._closed = True
        for job in self._running:
            job.stop.set()
        pending = list(self._running.values())
        if not pending:
            return
        start = time.monotonic()
        _done, left = await asyncio.wait(pending, timeout=grace)
        if left:
            names = ", ".join(sorted(job.name for job, f in self._running.items() if f in left))
            log.warning(
                "%s: %d jobs still running after %.1f s, abandoned: %s", self.name, len(left), grace, names
            )
        else:
            log.debug("%s: closed in %.3f s", self.name, time.monotonic() - start)
