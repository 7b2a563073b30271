"""Watching the editor's process (`--clientProcessId`, `initialize.processId`): when it dies, we stop.

A pidfd (Linux 5.3+) becomes readable when the process exits; where there is
none, the process is polled once a second. A pid that does not exist when the
watch starts is not watched (it may live in another PID namespace, as in a
container): a warning says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable

log = logging.getLogger(__name__)

POLL_INTERVAL = 1.0


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except (OSError, IndexError):
        return True


class ClientWatch:
    """Calls `on_gone(pid)` once, when a watched process exits."""

    def __init__(self, on_gone: Callable[[int], None], use_pidfd: bool = True) -> None:
        self._on_gone = on_gone
        self._use_pidfd = use_pidfd and hasattr(os, "pidfd_open")
        self._watched: dict[int, int | None] = {}  # pid -> pidfd (None: polled)
        self._poller: asyncio.Task[None] | None = None
        self._fired = False

    @property
    def watched(self) -> set[int]:
        return set(self._watched)

    def watch(self, pid: int, source: str) -> None:
        if pid <= 0 or pid == os.getpid() or pid in self._watched:
            return
        if not process_alive(pid):
            log.warning("%s %d is not a process here (another PID namespace?): not watched", source, pid)
            return
        fd: int | None = None
        if self._use_pidfd:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                self._gone(pid)
                return
            except OSError as exc:
                log.info("pidfd_open(%d) failed (%s): polling instead", pid, exc)
        self._watched[pid] = fd
        loop = asyncio.get_running_loop()
        if fd is not None:
            loop.add_reader(fd, self._gone, pid)
        elif self._poller is None:
            self._poller = loop.create_task(self._poll(), name="client-watch-poll")
        log.info("watching %s %d", source, pid)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_INTERVAL)
            for pid, fd in list(self._watched.items()):
                if fd is None and not process_alive(pid):
                    self._gone(pid)

    def _gone(self, pid: int) -> None:
        self._forget(pid)
        if not self._fired:
            self._fired = True
            log.info("the editor process %d exited; stopping", pid)
            self._on_gone(pid)

    def _forget(self, pid: int) -> None:
        fd = self._watched.pop(pid, None)
        if fd is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    async def aclose(self) -> None:
        for pid in list(self._watched):
            self._forget(pid)
        poller, self._poller = self._poller, None
        if poller is not None:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
