"""One daemon thread that runs jobs in order, as an `Executor` (for `loop.run_in_executor`).

`ThreadPoolExecutor`'s threads are joined when the interpreter exits, so one job stuck in the
kernel (a read of a dead mount, a lock another process never releases) would keep the sidecar
alive after `exit` for ever. A daemon thread is not waited for: whoever submits jobs bounds how
long it waits for them (and says what it abandoned).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

__all__ = ["DaemonWorker"]

T = TypeVar("T")

_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonWorker(Executor):
    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._shut_down = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._shut_down:
                raise RuntimeError(f"{self.name}: cannot run new jobs after shutdown")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._jobs.put((future, fn, args, kwargs))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if not self._shut_down:
                self._shut_down = True
                self._jobs.put(None)
            thread = self._thread
        if wait and thread is not None:
            thread.join()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args, kwargs = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
