"""The agent child process: its own process group, stderr drained, stopped for sure."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: new process group, SIGTERM when the sidecar dies.

    The death signal covers the sidecar being SIGKILLed, when none of our
    exit paths run; the agent also sees EOF on stdin then.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class StderrRing:
    """The agent's last stderr lines, bounded in bytes; never blocks the agent."""

    def __init__(self, max_bytes: int = 256 * 1024) -> None:
        self.max_bytes = max_bytes
        self._lines: deque[str] = deque()
        self._size = 0
        self.total_bytes = 0
        self.dropped_lines = 0

    def add(self, line: str) -> None:
        if len(line) > self.max_bytes:
            line = line[-self.max_bytes :]
        self._lines.append(line)
        self._size += len(line)
        while self._size > self.max_bytes and self._lines:
            self._size -= len(self._lines.popleft())
            self.dropped_lines += 1

    def tail(self, n: int = 20) -> list[str]:
        return list(self._lines)[-n:]


class AgentProcess:
    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stderr_line: Callable[[str], None] | None = None,
        stream_limit: int = 1024 * 1024,
    ) -> None:
        if not command:
            raise ValueError("the agent command is empty")
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stderr = StderrRing()
        self._on_stderr_line = on_stderr_line
        self._stream_limit = stream_limit
        self._proc: asyncio.subprocess.Process | None = None
        self._drain_task: asyncio.Task[None] | None = None
        self._wait_task: asyncio.Task[int] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc else None

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self._proc and self._proc.stdout
        return self._proc.stdout

    @property
    def stdin(self) -> asyncio.StreamWriter:
        assert self._proc and self._proc.stdin
        return self._proc.stdin

    async def start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent,
            limit=self._stream_limit,
        )
        self._drain_task = asyncio.create_task(self._drain_stderr(), name="agent-stderr")
        self._wait_task = asyncio.create_task(self._proc.wait(), name="agent-wait")

    async def wait(self) -> int:
        assert self._wait_task is not None
        return await asyncio.shield(self._wait_task)

    async def _drain_stderr(self) -> None:
        assert self._proc and self._proc.stderr
        stream = self._proc.stderr
        pending = b""
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                break
            self.stderr.total_bytes += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if len(pending) > 65536:  # a "line" without end: flush it in pieces
                lines.append(pending)
                pending = b""
            for raw in lines:
                self._stderr_line(raw)
        if pending:
            self._stderr_line(pending)

    def _stderr_line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        self.stderr.add(line)
        if self._on_stderr_line is not None:
            try:
                self._on_stderr_line(line)
            except Exception:
                log.exception("stderr callback failed")

    def _signal_group(self, sig: int) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    async def stop(self, grace: float = 2.0, term_grace: float = 2.0) -> int | None:
        """Close stdin, wait; then SIGTERM the group, wait; then SIGKILL it."""
        if self._proc is None:
            return None
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            with contextlib.suppress(Exception):
                self._proc.stdin.close()
        code: int | None = None
        try:
            code = await asyncio.wait_for(self.wait(), grace)
        except TimeoutError:
            self._signal_group(signal.SIGTERM)
            try:
                code = await asyncio.wait_for(self.wait(), term_grace)
            except TimeoutError:
                self._signal_group(signal.SIGKILL)
                code = await asyncio.wait_for(self.wait(), 5.0)
        # The leader is gone; helpers it spawned in its group must not linger.
        self._signal_group(signal.SIGKILL)
        if self._drain_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._drain_task, 1.0)
            self._drain_task.cancel()
        return code

    def kill_now(self) -> None:
        """Last-resort, synchronous: for signal handlers and atexit."""
        self._signal_group(signal.SIGKILL)
