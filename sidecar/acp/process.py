"""The agent child process: behind its reaper, stderr drained, stopped for sure.

The agent runs under `reaper.py`, a tiny process that leads the agent's
process group, adopts its orphaned descendants (a subreaper) and holds one end
of a socket pair with the sidecar: when the sidecar dies, even by SIGKILL, the
reaper sees EOF and ends every descendant, so nothing the agent started
outlives the sidecar. Nothing runs in the child between fork and exec (no
`preexec_fn`, which is unsafe once threads run): `start_new_session` does the
only set-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import socket
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sidecar.acp import reaper

log = logging.getLogger(__name__)

REAPER = Path(reaper.__file__)
HANDSHAKE_TIMEOUT = 30.0


LAST_WORDS_SCAN = 200  # the lines of the tail searched for an error headline
LAST_WORD_MAX = 300
# The line that names the error: `TypeError: x`, `Error [ERR_X]: x`, `error: x`, `fatal: x`,
# `Uncaught Error: x`, Rust's `thread 'main' panicked at ...`.
_HEADLINE = re.compile(
    r"(?:uncaught |unhandled )?(?:[\w.$]*(?:error|exception)(?: \[[\w-]+\])?:"
    r"|(?:fatal|panic)(?:\[\w+\])?:|thread '.*' panicked)",
    re.IGNORECASE,
)


def signal_name(number: int) -> str:
    """The name a user looks up for a signal that ended a process (SIGKILL for 9: the
    out-of-memory killer's, or `kill -9`); SIG<number> for one Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def _clip(line: str) -> str:
    return line if len(line) <= LAST_WORD_MAX else line[: LAST_WORD_MAX - 1] + "…"


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

    def last_words(self, lines: int = 3) -> str:
        """What to tell the user of why the agent stopped, on one line.

        A crash's last lines are often noise (node ends with `}`, a blank line and
        `Node.js v24`): the last error headline is shown first, then the last line.
        """
        said = [line.strip() for line in list(self._lines)[-LAST_WORDS_SCAN:] if line.strip()]
        headline = next((i for i in range(len(said) - 1, -1, -1) if _HEADLINE.match(said[i])), None)
        if headline is None:
            words = said[-lines:]
        else:
            words = said[headline : headline + 1]
            if words[0].endswith(":") and headline + 1 < len(said):
                words.append(said[headline + 1])  # Rust's panic says what on the next line
            after = headline + len(words)
            if after < len(said):
                words += (["…"] if after < len(said) - 1 else []) + [said[-1]]
        return " | ".join(_clip(word) for word in words)


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
        self._proc: asyncio.subprocess.Process | None = None  # the reaper
        self._lifeline: socket.socket | None = None
        self.agent_pid: int | None = None
        self._drain_task: asyncio.Task[None] | None = None
        self._wait_task: asyncio.Task[int] | None = None

    @property
    def pid(self) -> int | None:
        """The reaper's pid: it leads the agent's process group and exits with the agent's status."""
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
        """Start the reaper, which starts the agent; OSError when the agent cannot be started."""
        ours, theirs = socket.socketpair()
        try:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-S",
                str(REAPER),
                str(theirs.fileno()),
                "--",
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
                limit=self._stream_limit,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._lifeline = ours
        self._drain_task = asyncio.create_task(self._drain_stderr(), name="agent-stderr")
        self._wait_task = asyncio.create_task(self._proc.wait(), name="agent-wait")
        try:
            self.agent_pid = await asyncio.wait_for(
                reaper_handshake(ours, "the agent's reaper ended before starting the agent"),
                HANDSHAKE_TIMEOUT,
            )
        except BaseException:
            await self.stop(grace=0.5, term_grace=0.5)
            raise

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

    def _tell(self, word: bytes) -> None:
        """Ask the reaper to signal every descendant of the agent (also those outside its group)."""
        if self._lifeline is not None:
            with contextlib.suppress(OSError):
                self._lifeline.send(word + b"\n")

    def _close_lifeline(self) -> None:
        if self._lifeline is not None:
            self._lifeline.close()
            self._lifeline = None

    async def stop(self, grace: float = 2.0, term_grace: float = 2.0) -> int | None:
        """Close stdin, wait; then SIGTERM everything, wait; then SIGKILL everything."""
        if self._proc is None:
            return None
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            with contextlib.suppress(Exception):
                self._proc.stdin.close()
        code: int | None = None
        try:
            code = await asyncio.wait_for(self.wait(), grace)
        except TimeoutError:
            self._tell(b"term")
            self._signal_group(signal.SIGTERM)  # the reaper survives it and stays to finish
            try:
                code = await asyncio.wait_for(self.wait(), term_grace)
            except TimeoutError:
                self._tell(b"kill")
                try:
                    code = await asyncio.wait_for(self.wait(), 5.0)
                except TimeoutError:  # the reaper itself does not answer
                    self._signal_group(signal.SIGKILL)
                    code = await asyncio.wait_for(self.wait(), 5.0)
        # The reaper ended the agent's helpers before exiting; this catches a reaper that was killed.
        self._signal_group(signal.SIGKILL)
        self._close_lifeline()
        if self._drain_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._drain_task, 1.0)
            self._drain_task.cancel()
        return code

    def kill_now(self) -> None:
        """Last-resort, synchronous: for signal handlers and atexit.

        The agent gets SIGKILL at once; the reaper, told to and then seeing EOF,
        kills every other descendant (a SIGKILL to the group would kill the
        reaper too, and orphan the helpers that left the group).
        """
        if self.agent_pid is not None and self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.agent_pid, signal.SIGKILL)
        self._tell(b"kill")
        self._close_lifeline()


async def reaper_handshake(channel: socket.socket, ended: str, not_started: str | None = None) -> int:
    """The reaper's first line on its lifeline: "ok PID" (the child's pid), or "error ERRNO
    MESSAGE" raised as OSError (`not_started` when it names no message; else the line itself).
    `ended`: the error when the reaper closes the lifeline before answering."""
    channel.setblocking(False)
    loop = asyncio.get_running_loop()
    answer = b""
    while not answer.endswith(b"\n"):
        chunk = await loop.sock_recv(channel, 512)
        if not chunk:
            raise OSError(0, ended)
        answer += chunk
    word, _, rest = answer.decode("utf-8", "replace").strip().partition(" ")
    if word == "ok" and rest.isdigit():
        return int(rest)
    number, _, message = rest.partition(" ")
    fallback = not_started if not_started is not None else answer.decode("utf-8", "replace")
    raise OSError(int(number) if number.isdigit() else 0, message or fallback)
