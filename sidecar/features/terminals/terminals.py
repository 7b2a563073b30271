"""Client terminals (ACP `terminal/*`): the sidecar runs the agent's commands and keeps their output.

Each command runs behind its own `acp/reaper.py`, exactly like the agent: the reaper leads the
command's process group, adopts its orphaned descendants and holds a lifeline socket to the sidecar,
so nothing a terminal started survives a kill, a release, the agent's death or the sidecar's (even
by SIGKILL: the kernel closes the lifeline and the reaper ends everything).

Output (stdout and stderr, merged) is kept in a bounded buffer: `outputByteLimit` bytes, or
DEFAULT_OUTPUT_LIMIT, never more than MAX_OUTPUT_LIMIT; older output is dropped from the front at a
UTF-8 character boundary and `truncated` is set. A session holds at most MAX_TERMINALS terminals
that were not released; one more is refused with an error at once.

Which commands run is the agent's decision, made with the user through `session/request_permission`
before it calls `terminal/create`: this module only confines the working directory to the
session's roots.

A terminal embedded in a tool call (`{type: "terminal", terminalId}` content) is shown: its new
output goes to the session's transcript document (fenced, bounded) and to the editor as progress,
every FEED_INTERVAL seconds while it runs, and a last time with its exit status.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import socket
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from sidecar.acp.process import REAPER, reaper_handshake
from sidecar.features.terminals.pieces import (
    terminal_cut_note,
    terminal_exit_line,
    terminal_heading,
    terminal_output_block,
)
from sidecar.features.terminals.terminal import OutputBuffer, Shown, Terminal, complete_prefix, exit_status_of
from sidecar.kernel import errors
from sidecar.kernel.bus import ConversationPiece, EventBus
from sidecar.kernel.files import resolve_inside
from sidecar.kernel.session import Session
from sidecar.tasks import OwnedTasks

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]

DEFAULT_OUTPUT_LIMIT = 1024 * 1024  # bytes kept when the agent names no outputByteLimit
MAX_OUTPUT_LIMIT = 4 * 1024 * 1024  # a larger outputByteLimit is lowered to this
MAX_TERMINALS = 64  # per session, until released
MAX_ARGS_BYTES = 256 * 1024  # command, arguments and environment together
KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL
EXIT_WAIT = 10.0  # seconds a release waits for the reaper to finish after SIGKILL
HANDSHAKE_TIMEOUT = 30.0
READ_CHUNK = 64 * 1024
FEED_INTERVAL = 0.5  # seconds between two reports of a shown terminal's new output
DOC_MAX_CHARS = 16_000  # characters of one terminal's output written into the transcript
DOC_TAIL_CHARS = 2_000  # when that was exceeded: the last characters, shown once it exited
DOC_LONG_LINE = 4096  # a line without end longer than this is written before its end arrives
UNKNOWN_TERMINAL = -32602


EventSink = Callable[[str, JsonObj], None]  # (session id, terminal event) for the editor


class Terminals:
    """Every terminal of the sidecar; the agent's `terminal/*` requests and the editor's kills."""

    def __init__(
        self,
        sessions: Callable[[], dict[str, Session]],
        bus: EventBus,
        on_event: EventSink,
        *,
        environ: dict[str, str] | None = None,
    ) -> None:
        self._sessions = sessions
        self._bus = bus  # the conversation document takes the terminal's pieces from it
        self._on_event = on_event
        self._environ = environ
        self._by_id: dict[str, Terminal] = {}
        self._starting: Counter[str] = Counter()
        self._ids = itertools.count(1)
        self._tasks = OwnedTasks("terminals")
        self._feeder: asyncio.Task[None] | None = None
        self._closed = False

    # ------------------------------------------------------------------ lookup

    def _session(self, params: JsonObj) -> Session:
        session_id = params.get("sessionId")
        session = self._sessions().get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise errors.unknown_session(str(session_id))
        return session

    def _terminal(self, params: JsonObj) -> Terminal:
        session = self._session(params)
        terminal_id = params.get("terminalId")
        terminal = self._by_id.get(terminal_id) if isinstance(terminal_id, str) else None
        if terminal is None or terminal.session_id != session.session_id:
            raise errors.SidecarError(
                UNKNOWN_TERMINAL, f"unknown terminal {terminal_id!r:.80} (released, or never created)"
            )
        return terminal

    def live(self, session_id: str | None = None) -> list[Terminal]:
        """Terminals still running (of one session, or all)."""
        chosen = self._by_id.values()
        return [t for t in chosen if t.running and session_id in (None, t.session_id)]

    # ------------------------------------------------------------------ the agent's requests

    async def handle(self, method: str, params: JsonObj) -> JsonObj:
        if method == "terminal/create":
            return await self.create(params)
        if method == "terminal/output":
            return self.output(params)
        if method == "terminal/wait_for_exit":
            return await self.wait_for_exit(params)
        if method == "terminal/kill":
            await self.kill(self._terminal(params))
            return {}
        if method == "terminal/release":
            await self.release(self._terminal(params))
            return {}
        raise errors.SidecarError(-32601, f"method not found: {method}")

    async def create(self, params: JsonObj) -> JsonObj:
        if self._closed:
            raise errors.agent_down("the sidecar is shutting down")
        session = self._session(params)
        command, args, env, limit = _parse_create(params)
        raw_cwd = params.get("cwd")
        cwd = resolve_inside(session.cwd if raw_cwd is None else raw_cwd, session.roots)
        if not cwd.is_dir():
            raise errors.path_refused(str(raw_cwd), "it is not a directory")
        sid = session.session_id
        held = sum(1 for t in self._by_id.values() if t.session_id == sid) + self._starting[sid]
        if held >= MAX_TERMINALS:
            raise errors.SidecarError(
                errors.QUEUE_FULL,
                f"session {session.session_id} already holds {held} terminals (the most allowed): "
                "release one with terminal/release first",
            )
        terminal = Terminal(
            terminal_id=f"term-{next(self._ids)}",
            session_id=session.session_id,
            command=command,
            args=args,
            cwd=str(cwd),
            output=OutputBuffer(limit),
        )
        self._starting[sid] += 1  # concurrent creates count against the bound while they start
        try:
            await self._start(terminal, env)
        finally:
            self._starting[sid] -= 1
        self._by_id[terminal.terminal_id] = terminal
        if self._closed:  # the sidecar began to stop while it started: it must not outlive that
            await self.release(terminal)
            raise errors.agent_down("the sidecar is shutting down")
        self._event(terminal)
        return {"terminalId": terminal.terminal_id}

    def output(self, params: JsonObj) -> JsonObj:
        terminal = self._terminal(params)
        # Output read after the exit is complete: the reader ends only at EOF, before the exit is set.
        return {
            "output": terminal.output.text(complete=not terminal.running),
            "truncated": terminal.output.truncated,
            "exitStatus": terminal.exit_status,
        }

    async def wait_for_exit(self, params: JsonObj) -> JsonObj:
        terminal = self._terminal(params)
        await terminal.exited.wait()
        assert terminal.exit_status is not None
        return dict(terminal.exit_status)

    # ------------------------------------------------------------------ processes

    async def _start(self, terminal: Terminal, env: dict[str, str]) -> None:
        base = dict(os.environ if self._environ is None else self._environ)
        ours, theirs = socket.socketpair()
        try:
            terminal.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-S",
                str(REAPER),
                str(theirs.fileno()),
                "--",
                terminal.command,
                *terminal.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=base | env,
                cwd=terminal.cwd,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as exc:
            ours.close()
            raise errors.SidecarError(-32603, f"cannot start {terminal.command!r:.200}: {exc}") from None
        finally:
            theirs.close()
        terminal.lifeline = ours
        try:
            await asyncio.wait_for(
                reaper_handshake(ours, "its reaper ended before starting it", "it did not start"),
                HANDSHAKE_TIMEOUT,
            )
        except (OSError, TimeoutError) as exc:
            terminal.tell(b"kill")
            terminal.close_lifeline()
            with contextlib.suppress(ProcessLookupError):
                terminal.process.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(terminal.process.wait(), EXIT_WAIT)
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or "no answer"
            raise errors.SidecarError(-32603, f"cannot start {terminal.command!r:.200}: {why}") from None
        terminal.tasks.spawn(self._run(terminal), f"run-{terminal.terminal_id}")

    async def _run(self, terminal: Terminal) -> None:
        """Read the output to its end, then take the exit status (the reaper exits last)."""
        process = terminal.process
        assert process is not None and process.stdout is not None
        while chunk := await process.stdout.read(READ_CHUNK):
            terminal.output.append(chunk)
        code = await process.wait()
        terminal.close_lifeline()
        terminal.exit_status = exit_status_of(code)
        terminal.exited.set()
        self._event(terminal)
        self._wake_feeder()

    async def kill(self, terminal: Terminal) -> None:
        """SIGTERM to the command and everything it started; SIGKILL after KILL_GRACE."""
        if not terminal.running:
            return
        terminal.tell(b"term")
        if await _exits_within(terminal, KILL_GRACE):
            return
        terminal.tell(b"kill")
        if not await _exits_within(terminal, EXIT_WAIT) and terminal.process is not None:
            # The reaper itself does not answer: end its whole group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(terminal.process.pid, signal.SIGKILL)
            await _exits_within(terminal, EXIT_WAIT)

    async def release(self, terminal: Terminal) -> None:
        """Kill the command if it still runs, write its end into the transcript, forget it."""
        if terminal.released:
            return
        terminal.released = True
        await self.kill(terminal)
        self._feed(terminal)
        self._by_id.pop(terminal.terminal_id, None)
        terminal.close_lifeline()
        await terminal.tasks.aclose()
        self._on_event(terminal.session_id, self._describe(terminal, "released"))

    async def kill_session(self, session_id: str) -> list[str]:
        """The editor's kill, or a cancelled turn: every running terminal of the session."""
        live = self.live(session_id)
        await asyncio.gather(*(self.kill(t) for t in live))
        return [t.terminal_id for t in live]

    async def kill_by_id(self, terminal_id: str) -> bool:
        terminal = self._by_id.get(terminal_id)
        if terminal is None or not terminal.running:
            return False
        await self.kill(terminal)
        return True

    async def release_all(self, session_ids: Iterable[str] | None = None) -> None:
        """The agent is gone (or the sidecar stops): nothing it started keeps running."""
        wanted = None if session_ids is None else set(session_ids)
        chosen = [t for t in self._by_id.values() if wanted is None or t.session_id in wanted]
        await asyncio.gather(*(self.release(t) for t in chosen))

    async def aclose(self) -> None:
        self._closed = True
        await self.release_all()
        await self._tasks.aclose()

    def kill_now(self) -> None:
        """Last resort, synchronous (signal handlers, atexit): the reapers end every command."""
        for terminal in self._by_id.values():
            terminal.tell(b"kill")
            terminal.close_lifeline()

    # ------------------------------------------------------------------ shown in the transcript

    def show(self, session_id: str, update: JsonObj) -> None:
        """A tool call's content embeds terminals: show their output from now on."""
        content = update.get("content")
        call_id = update.get("toolCallId")
        if not isinstance(content, list) or not isinstance(call_id, str):
            return
        for item in content:
            if not isinstance(item, dict) or item.get("type") != "terminal":
                continue
            terminal = self._by_id.get(str(item.get("terminalId")))
            if terminal is None or terminal.session_id != session_id or terminal.shown is not None:
                continue
            terminal.shown = Shown(call_id)
            self._event(terminal)
            self._wake_feeder()

    def _wake_feeder(self) -> None:
        if self._feeder is None and not self._closed:
            self._feeder = self._tasks.spawn(self._feed_loop(), "terminal-feeder")

    async def _feed_loop(self) -> None:
        """While a shown terminal has not written its end: its new output every FEED_INTERVAL."""
        try:
            while True:
                pending = [t for t in self._by_id.values() if t.shown is not None and not t.shown.final]
                if not pending:
                    return
                for terminal in pending:
                    self._feed(terminal)
                await asyncio.sleep(FEED_INTERVAL)
        finally:
            self._feeder = None

    def _feed(self, terminal: Terminal) -> None:
        shown = terminal.shown
        session = self._sessions().get(terminal.session_id)
        if shown is None or shown.final or session is None:
            return
        final = not terminal.running
        data, skipped = terminal.output.since(shown.offset)
        if not final:
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) > DOC_LONG_LINE:
                cut = complete_prefix(data)
            data = data[:cut]
        shown.offset += skipped + len(data)
        text = data.decode("utf-8", "replace")
        if text.strip():
            shown.last_line = text.rstrip("\n").rsplit("\n", 1)[-1][-200:]
        pieces: list[str] = []
        if not shown.began:
            shown.began = True
            pieces.append(terminal_heading(terminal.label, terminal.cwd))
        if shown.capped:
            text = ""
        elif shown.chars + len(text) > DOC_MAX_CHARS or skipped:
            room = max(0, DOC_MAX_CHARS - shown.chars)
            text, shown.capped = text[:room], True
            text = text[: text.rfind("\n") + 1] if "\n" in text else text
        if text:
            shown.chars += len(text)
            pieces.append(terminal_output_block(text))
        if final:
            shown.final = True
            if shown.capped:
                tail = terminal.output.text(complete=True)[-DOC_TAIL_CHARS:]
                pieces.append(terminal_cut_note(terminal.output.end - shown.chars))
                if tail.strip():
                    pieces.append(terminal_output_block(tail.split("\n", 1)[-1] if "\n" in tail else tail))
            assert terminal.exit_status is not None
            pieces.append(terminal_exit_line(terminal.label, terminal.exit_status))
        if pieces:
            self._bus.publish(ConversationPiece(session, "\n".join(pieces)))
        if text or final:
            self._event(terminal)

    # ------------------------------------------------------------------ the editor's view

    def _describe(self, terminal: Terminal, state: str | None = None) -> JsonObj:
        info: JsonObj = {
            "terminalId": terminal.terminal_id,
            "command": terminal.label[:500],
            "cwd": terminal.cwd,
            "state": state or ("running" if terminal.running else "exited"),
            "exitStatus": terminal.exit_status,
            "toolCallId": terminal.shown.tool_call_id if terminal.shown else None,
        }
        if terminal.shown is not None and terminal.shown.last_line:
            info["lastLine"] = terminal.shown.last_line
        return info

    def _event(self, terminal: Terminal) -> None:
        self._on_event(terminal.session_id, self._describe(terminal))


def _parse_create(params: JsonObj) -> tuple[str, list[str], dict[str, str], int]:
    command = params.get("command")
    if not isinstance(command, str) or not command or "\x00" in command:
        raise errors.invalid("terminal/create: command must be a non-empty string without NUL")
    raw_args = params.get("args")
    args = [] if raw_args is None else raw_args
    if not isinstance(args, list) or not all(isinstance(a, str) and "\x00" not in a for a in args):
        raise errors.invalid("terminal/create: args must be a list of strings without NUL")
    raw_env = params.get("env")
    env: dict[str, str] = {}
    for item in [] if raw_env is None else raw_env if isinstance(raw_env, list) else [None]:
        name = item.get("name") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name or "=" in name or "\x00" in name:
            raise errors.invalid("terminal/create: env must be a list of {name, value} (name without '=')")
        if not isinstance(value, str) or "\x00" in value:
            raise errors.invalid(f"terminal/create: the value of {name!r:.80} must be a string without NUL")
        env[name] = value
    size = len(command) + sum(map(len, args)) + sum(len(k) + len(v) for k, v in env.items())
    if size > MAX_ARGS_BYTES:
        raise errors.invalid(f"terminal/create: command, args and env are too long ({size} characters)")
    raw_limit = params.get("outputByteLimit")
    if raw_limit is None:
        limit = DEFAULT_OUTPUT_LIMIT
    elif isinstance(raw_limit, int) and not isinstance(raw_limit, bool) and raw_limit >= 0:
        limit = min(raw_limit, MAX_OUTPUT_LIMIT)
    else:
        raise errors.invalid("terminal/create: outputByteLimit must be a non-negative integer")
    return command, list(args), env, limit


async def _exits_within(terminal: Terminal, seconds: float) -> bool:
    try:
        await asyncio.wait_for(terminal.exited.wait(), seconds)
    except TimeoutError:
        return False
    return True
