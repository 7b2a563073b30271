"""The session engine: the agent's lifecycle, sessions, turns, permissions, files.

It knows nothing of LSP. The layer above calls its methods and receives events
through an `EngineListener`; it provides editor services through `EditorFiles`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..acp import (
    AcpClient,
    AcpError,
    AgentDescription,
    AuthRequired,
    CapabilityMissing,
    ConnectionClosed,
)
from ..acp.errors import RESOURCE_NOT_FOUND
from ..tasks import OwnedTasks
from . import errors
from .agent_names import AgentNames
from .errors import SidecarError
from .files import atomic_write, read_disk_text, resolve_inside, window
from .session import PermissionRequest, Session, choice_values
from .titling import Titling
from .turns import Turn, TurnKind, TurnState

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]

STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
READ_KINDS = {"read", "search"}


class EngineListener(Protocol):
    """Events for the editor side. Called synchronously, in order."""

    def on_session_update(
        self, session_id: str, turn_id: str | None, replay: bool, update: JsonObj
    ) -> None: ...
    def on_turn(
        self, session_id: str, turn_id: str, state: str, stop_reason: str | None, error: JsonObj | None
    ) -> None: ...
    def on_status(self, status: JsonObj) -> None: ...
    def on_session_info(self, info: JsonObj) -> None: ...
    def on_permission(self, request: PermissionRequest) -> None: ...
    def on_log(self, level: str, message: str) -> None: ...
    def on_error(self, message: str) -> None: ...


class EditorFiles(Protocol):
    """File access through the editor's buffers."""

    def open_document_text(self, path: Path) -> str | None: ...

    async def write_via_editor(self, path: Path, content: str) -> bool:
        """True when the editor applied it; False to fall back to disk; raise when rejected."""
        ...


@dataclass
class PromptContext:
    """Editor context for a prompt: a document (or a part of it)."""

    uri: str
    text: str
    label: str | None = None  # e.g. "lines 3-7"
    mime_type: str = "text/plain"


@dataclass
class EngineOptions:
    agent_command: list[str]
    agent_env: dict[str, str] = field(default_factory=dict)
    state_dir: Path = Path(".")
    permissions: str = "ask"  # ask | allow_reads | reject
    rename_timeout_ms: int = 120_000
    rename_fallback: str = "keep_local"  # keep_local | revert
    titles_max_length: int = 500
    queue_bound: int = 16
    request_timeout: float = 60.0
    cancel_timeout: float = 10.0
    max_restarts: int = 5
    restart_window: float = 60.0
    pending_update_bound: int = 2_000


class Engine:
    def __init__(self, options: EngineOptions, listener: EngineListener, files: EditorFiles) -> None:
        self.options = options
        self.listener = listener
        self.files = files
        self.client: AcpClient | None = None
        self.agent: AgentDescription | None = None
        self.agent_generation = 0
        self.agent_state = "starting"  # starting | ready | disconnected | error
        self.agent_problem: str | None = None
        self.sessions: dict[str, Session] = {}
        self.active_id: str | None = None
        self._turn_ids = itertools.count(1)
        self._perm_ids = itertools.count(1)
        self._tasks = OwnedTasks("engine", self._task_failed)
        self._last_status: JsonObj | None = None
        self._start_lock = asyncio.Lock()
        self._restarts: list[float] = []
        self._watch_task: asyncio.Task[None] | None = None
        self._early_updates: dict[str, list[JsonObj]] = {}
        self._early_count = 0
        self.titles = Titling(self, options)
        self._agent_names = AgentNames(options.state_dir)
        self._known_name: str | None = None
        self.closed = False

    # ================================================================== tasks
    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        """Start an owned background task: kept, logged on failure, cancelled on shutdown."""
        return self._tasks.spawn(coro, name)

    def _task_failed(self, name: str, exc: BaseException) -> None:
        self.listener.on_log("error", f"internal error in {name}: {exc!r}")

    # ================================================================== agent lifecycle
    async def start(self) -> None:
        """Start the agent; failures are reported, not raised (the editor stays usable)."""
        await self.titles.open()
        self.emit_status()
        try:
            await self.ensure_agent()
        except SidecarError as exc:
            self.listener.on_error(exc.message)

    async def ensure_agent(self) -> AcpClient:
        if self.closed:
            raise errors.agent_down("the sidecar is shutting down")
        if self.client is not None and self.client.running and self.agent is not None:
            return self.client
        async with self._start_lock:
            if self.client is not None and self.client.running and self.agent is not None:
                return self.client
            now = time.monotonic()
            self._restarts = [t for t in self._restarts if now - t < self.options.restart_window]
            if len(self._restarts) >= self.options.max_restarts:
                raise errors.agent_down(
                    f"it failed {len(self._restarts)} times within {self.options.restart_window:g} s; "
                    f"last problem: {self.agent_problem or 'unknown'}"
                )
            if self._restarts:
                # Back off a little more after each recent failure.
                await asyncio.sleep(min(0.25 * 2 ** (len(self._restarts) - 1), 4.0))
            self._restarts.append(time.monotonic())
            await self._spawn_agent()
            assert self.client is not None
            return self.client

    async def _spawn_agent(self) -> None:
        if self.client is not None:
            await self.client.stop(grace=0.5)
        self.agent_state = "starting"
        self.emit_status()
        env = dict(os.environ)
        env.update(self.options.agent_env)
        env.setdefault("ACP_SIDECAR_STATE_DIR", str(self.options.state_dir))
        client = AcpClient(
            self.options.agent_command,
            _Handler(self),
            env=env,
            on_stderr_line=self._stderr_line,
            request_timeout=self.options.request_timeout,
        )
        self.client = client
        try:
            await client.start()
        except OSError as exc:
            self._agent_failed(
                f"cannot start {' '.join(self.options.agent_command)!r}: {exc.strerror or exc}"
            )
            raise errors.agent_down(self.agent_problem or "start failed") from None
        try:
            self.agent = await client.initialize()
        except AcpError as exc:
            tail = " | ".join(client.process.stderr.tail(3))
            await client.stop(grace=0.2)
            self._agent_failed(f"initialize failed: {exc.message}" + (f" (stderr: {tail})" if tail else ""))
            raise errors.agent_down(self.agent_problem or "initialize failed") from None
        self.agent_generation += 1
        self.agent_state = "ready"
        self.agent_problem = None
        self.titles.agent_ready(self.agent_key)
        self._agent_names.remember(self.options.agent_command, self.agent_key)
        self._watch_task = self.spawn(self._watch(client, self.agent_generation), "agent-watch")
        self.emit_status()
        self.listener.on_log("info", f"agent {self.agent.name} {self.agent.version or ''} ready".strip())
        if self.agent.can_list:
            self.spawn(self.titles.reconcile_all(), "startup-reconcile")

    def _agent_failed(self, problem: str) -> None:
        self.agent_state = "error"
        self.agent_problem = problem
        self.listener.on_log("error", problem)
        self.emit_status()

    async def _watch(self, client: AcpClient, generation: int) -> None:
        """When the agent dies: end every turn, answer every waiter, report it."""
        await client.wait_closed()
        if self.closed or generation != self.agent_generation:
            return
        reason = await self._exit_reason("the agent closed its connection")
        self.agent_state = "disconnected"
        self.agent_problem = reason
        self.listener.on_log("error", self.agent_problem)
        for session in self.sessions.values():
            self._fail_session_turns(session, self.agent_problem)
        self.emit_status()
        self.listener.on_error(f"{self.agent_problem}. The next command restarts it.")
        await client.stop(grace=0.1)

    def _fail_session_turns(self, session: Session, reason: str) -> None:
        for perm in list(session.permissions.values()):
            perm.resolve({"outcome": "cancelled"})
        session.permissions.clear()
        while session.queue:
            self._end_turn(
                session, session.queue.popleft(), None, {"code": errors.AGENT_DOWN, "message": reason}
            )

    async def _exit_reason(self, fallback: str) -> str:
        """Why the agent went away: its exit code and last stderr lines, when it has exited."""
        client = self.client
        if client is None:
            return self.agent_problem or fallback
        code = client.process.returncode
        if code is None:
            with contextlib.suppress(TimeoutError):
                code = await asyncio.wait_for(client.process.wait(), 1.0)
        if code is None:
            return self.agent_problem or fallback
        tail = " | ".join(client.process.stderr.tail(3))
        return f"the agent exited (code {code})" + (f"; stderr: {tail}" if tail else "")

    def _stderr_line(self, line: str) -> None:
        self.listener.on_log("agent", line)

    @property
    def agent_key(self) -> str:
        """The identity titles are stored under: the agent's name (remembered per command line
        so cached titles show while the agent is down), else the command's name."""
        if self.agent is not None and isinstance(self.agent.info.get("name"), str):
            return str(self.agent.info["name"])
        if self._known_name is None:
            self._known_name = self._agent_names.lookup(self.options.agent_command) or ""
        return self._known_name or Path(self.options.agent_command[0]).name

    async def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        for session in self.sessions.values():
            self._fail_session_turns(session, "the sidecar is shutting down")
            if (
                session.current is not None
                and session.current.in_flight
                and self.client
                and self.client.running
            ):
                with contextlib.suppress(AcpError):
                    await self.client.cancel(session.session_id)
        await self._close_sessions()
        if self.client is not None:
            await self.client.stop(grace=1.0)
        await self._tasks.aclose()
        for session in self.sessions.values():
            if session.current is not None:
                self._end_turn(
                    session, session.current, None, {"code": errors.AGENT_DOWN, "message": "shutdown"}
                )
        await self.titles.aclose()

    async def _close_sessions(self) -> None:
        """Tell the agent we are done with its sessions (session/close, when offered), briefly."""
        client, agent = self.client, self.agent
        if client is None or agent is None or not agent.can_close or not client.running:
            return
        attached = [s.session_id for s in self.sessions.values() if s.attached_to == self.agent_generation]
        if not attached:
            return

        async def close(session_id: str) -> None:
            with contextlib.suppress(AcpError):
                await client.close_session(session_id)

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(close(sid) for sid in attached)), 1.0)

    def kill_agent_now(self) -> None:
        if self.client is not None:
            self.client.process.kill_now()

    # ================================================================== status
    def status(self) -> JsonObj:
        session = self.sessions.get(self.active_id) if self.active_id else None
        if self.agent_state == "ready":
            state = session.state() if session else "idle"
        else:
            state = self.agent_state
        title = self.titles.title_of(session.session_id) if session else None
        agent = {
            "name": self.agent.name if self.agent else Path(self.options.agent_command[0]).name,
            "version": self.agent.version if self.agent else None,
        }
        mode = session.mode_name if session else None
        model = session.model_name if session else None
        parts = [agent["name"] or "agent", title or ("no session" if session is None else "untitled"), state]
        if mode:
            parts.append(f"mode {mode}")
        if model:
            parts.append(str(model))
        if state in ("error", "disconnected") and self.agent_problem:
            parts.append(self.agent_problem)
        text = self.titles.clean(" · ".join(str(p) for p in parts), 200)
        return {
            "sessionId": session.session_id if session else None,
            "title": title,
            "state": state,
            "agent": agent,
            "mode": mode,
            "model": model,
            "text": text,
        }

    def emit_status(self) -> None:
        status = self.status()
        if status != self._last_status:
            self._last_status = status
            self.listener.on_status(status)

    # ================================================================== sessions
    def session(self, session_id: str | None) -> Session:
        sid = session_id or self.active_id
        if sid is None:
            raise errors.no_active_session()
        if not isinstance(sid, str):
            raise errors.invalid("sessionId must be a string")
        found = self.sessions.get(sid)
        if found is None:
            raise errors.unknown_session(sid)
        return found

    def _validate_cwd(self, cwd: object) -> str:
        if not isinstance(cwd, str) or not cwd:
            raise errors.invalid("cwd must be a non-empty string")
        if not os.path.isabs(cwd):
            raise errors.invalid(f"cwd must be an absolute path, got {cwd!r:.200}")
        if not os.path.isdir(cwd):
            raise errors.invalid(f"cwd {cwd!r:.200} is not an existing directory")
        return os.path.normpath(cwd)

    def _auth_error(self, exc: AuthRequired) -> SidecarError:
        methods = self.agent.auth_methods if self.agent else []
        listed = ", ".join(f"{m.get('id')} ({m.get('name')})" for m in methods) or "none offered"
        return SidecarError(
            errors.AUTH_REQUIRED,
            f"the agent requires authentication: {exc.message}. Methods: {listed}. "
            "Run the command acp.authenticate with one of these method ids.",
            {"authMethods": methods},
        )

    async def _agent_call(self, coro: Any) -> Any:
        """Await an agent call, turning protocol errors into user-facing ones."""
        try:
            return await coro
        except AuthRequired as exc:
            raise self._auth_error(exc) from None
        except CapabilityMissing as exc:
            raise SidecarError(errors.CAPABILITY, exc.message) from None
        except ConnectionClosed as exc:
            raise errors.agent_down(await self._exit_reason(exc.message)) from None
        except SidecarError:
            raise
        except AcpError as exc:
            raise SidecarError(exc.code, f"the agent answered: {exc.message}", exc.data) from None

    def _register(self, session_id: str, cwd: str, additional: Sequence[str], result: JsonObj) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            session = Session(session_id, cwd, list(additional))
            self.sessions[session_id] = session
        session.cwd = cwd
        session.attached_to = self.agent_generation
        self._absorb_session_state(session, result)
        return session

    def _absorb_session_state(self, session: Session, result: JsonObj) -> None:
        modes = result.get("modes")
        if isinstance(modes, dict):
            session.modes = modes
            session.transcript.mode_id = None
        options = result.get("configOptions")
        if isinstance(options, list):
            session.config_options = [o for o in options if isinstance(o, dict)]
        models = result.get("models")
        if isinstance(models, dict):
            session.legacy_models = models

    def _activate(self, session: Session) -> None:
        self.active_id = session.session_id
        self.emit_status()

    async def new_session(self, cwd: object) -> str:
        path = self._validate_cwd(cwd)
        client = await self.ensure_agent()
        result = await self._agent_call(client.new_session(path))
        session = self._register(result["sessionId"], path, (), result)
        await self.titles.session_created(session)
        self._flush_early_updates(session)
        self._activate(session)
        return session.session_id

    async def load_session(
        self, session_id: object, cwd: object | None = None, default_cwd: str | None = None
    ) -> str:
        """Attach a session; its cwd comes from the caller, else what we know of it, else `default_cwd`."""
        if not isinstance(session_id, str) or not session_id:
            raise errors.invalid("sessionId must be a non-empty string")
        client = await self.ensure_agent()
        known = self.sessions.get(session_id)
        record_cwd = await self.titles.cwd_of(session_id)
        if cwd is None:
            cwd = known.cwd if known else (record_cwd or default_cwd)
        if cwd is None:
            raise errors.unknown_session(session_id)
        path = self._validate_cwd(cwd)
        session = await self._attach(client, session_id, path, force=True)
        self._activate(session)
        return session.session_id

    async def _attach(self, client: AcpClient, session_id: str, cwd: str, force: bool = False) -> Session:
        """Make the agent hold the session: resume when offered, else load (replay)."""
        known = self.sessions.get(session_id)
        if known is not None and known.attached_to == self.agent_generation and not force:
            return known
        if known is not None and known.attached_to == self.agent_generation:
            return known
        agent = self.agent
        assert agent is not None
        try:
            if agent.can_resume:
                result = await self._agent_call(client.resume_session(session_id, cwd))
            elif agent.can_load:
                session = known or Session(session_id, cwd)
                self.sessions[session_id] = session
                session.replaying = True
                session.transcript.clear()
                try:
                    result = await self._agent_call(client.load_session(session_id, cwd))
                finally:
                    session.replaying = False
            else:
                raise SidecarError(
                    errors.CAPABILITY, "the agent offers neither session/resume nor session/load"
                )
        except SidecarError as exc:
            if exc.code == RESOURCE_NOT_FOUND or "not found" in exc.message.lower():
                if known is None:
                    self.sessions.pop(session_id, None)
                raise errors.unknown_session(session_id) from None
            if known is None:
                self.sessions.pop(session_id, None)
            raise
        session = self._register(session_id, cwd, (), result)
        await self.titles.session_attached(session)
        return session

    async def ensure_attached(self, session: Session) -> AcpClient:
        client = await self.ensure_agent()
        if session.attached_to != self.agent_generation:
            await self._attach(client, session.session_id, session.cwd)
        return client

    async def list_sessions(self, cwd: str | None, refresh: bool, all_cwds: Sequence[str]) -> list[JsonObj]:
        if refresh:
            client = await self.ensure_agent()
            if self.agent is None or not self.agent.can_list:
                raise SidecarError(
                    errors.CAPABILITY, "the agent does not offer session/list; showing cached titles"
                )
            targets: list[str | None] = [cwd] if cwd else (list(all_cwds) or [None])
            for one in targets:
                await self._agent_call(self.titles.reconcile(client, one))
        return await self.titles.entries(cwd, all_cwds, self.active_id)

    # ================================================================== updates from the agent
    async def on_session_update(self, params: JsonObj) -> None:
        session_id = params["sessionId"]
        update: JsonObj = params["update"]
        session = self.sessions.get(session_id)
        if session is None:
            self._keep_early(session_id, update)
            return
        self._route_update(session, update)

    def _keep_early(self, session_id: str, update: JsonObj) -> None:
        """Updates may precede the session/new answer: keep a bounded number."""
        if self._early_count >= self.options.pending_update_bound:
            log.warning("dropped an update for unknown session %s (buffer full)", session_id)
            return
        self._early_updates.setdefault(session_id, []).append(update)
        self._early_count += 1

    def _flush_early_updates(self, session: Session) -> None:
        early = self._early_updates.pop(session.session_id, [])
        self._early_count -= len(early)
        for update in early:
            self._route_update(session, update)

    def _route_update(self, session: Session, update: JsonObj) -> None:
        kind = update.get("sessionUpdate")
        turn = session.current if session.current is not None and session.current.in_flight else None
        if turn is not None and kind == "user_message_chunk":
            content = update.get("content")
            text = content.get("text") if isinstance(content, dict) else None
            if isinstance(text, str) and turn.consume_echo(text):
                return
        session.transcript.apply(update)
        if kind == "session_info_update":
            self.titles.on_info_update(session, update)
        self.listener.on_session_update(
            session.session_id, turn.turn_id if turn else None, session.replaying, update
        )
        if kind in ("current_mode_update", "config_option_update"):
            if kind == "config_option_update":
                session.config_options = list(session.transcript.config_options)
            self.emit_status()

    # ================================================================== turns
    async def prompt(
        self,
        text: object,
        session_id: str | None = None,
        cwd: str | None = None,
        context: PromptContext | None = None,
    ) -> JsonObj:
        if not isinstance(text, str) or not text.strip():
            raise errors.invalid("text must be a non-empty string")
        if session_id is None and self.active_id is None:
            if cwd is None:
                raise errors.invalid("no active session and no workspace folder to start one in")
            await self.new_session(cwd)
        session = self.session(session_id)
        blocks = self._prompt_blocks(text, context)
        turn = self._admit(session, blocks, TurnKind.PROMPT, echo=text)
        if not session.first_prompt_seen:
            session.first_prompt_seen = True
            self.titles.first_prompt(session, text)
        return {
            "sessionId": session.session_id,
            "turnId": turn.turn_id,
            "position": self._position(session, turn),
        }

    def _prompt_blocks(self, text: str, context: PromptContext | None) -> list[JsonObj]:
        blocks: list[JsonObj] = [{"type": "text", "text": text}]
        if context is None:
            return blocks
        name = context.uri.rsplit("/", 1)[-1] or context.uri
        if self.agent is not None and self.agent.can_embed_context:
            blocks.append(
                {
                    "type": "resource",
                    "resource": {"uri": context.uri, "text": context.text, "mimeType": context.mime_type},
                }
            )
        else:
            # Every agent accepts resource_link and text.
            blocks.append({"type": "resource_link", "uri": context.uri, "name": name})
            where = f" ({context.label})" if context.label else ""
            blocks.append({"type": "text", "text": f"Context from {name}{where}:\n```\n{context.text}\n```"})
        return blocks

    def _admit(
        self,
        session: Session,
        blocks: list[JsonObj],
        kind: TurnKind,
        echo: str = "",
        meta: JsonObj | None = None,
    ) -> Turn:
        if len(session.queue) >= self.options.queue_bound:
            raise errors.queue_full(session.session_id, self.options.queue_bound)
        turn = Turn(
            f"turn-{next(self._turn_ids)}", session.session_id, blocks, kind, meta, echo_remaining=echo
        )
        session.queue.append(turn)
        self.listener.on_turn(session.session_id, turn.turn_id, "queued", None, None)
        if session.runner is None or session.runner.done():
            session.runner = self.spawn(self._run_queue(session), f"turns-{session.session_id}")
        session.wakeup.set()
        return turn

    def _position(self, session: Session, turn: Turn) -> int:
        ahead = 1 if session.current is not None and session.current is not turn else 0
        for queued in session.queue:
            if queued is turn:
                return ahead
            ahead += 1
        return 0

    async def _run_queue(self, session: Session) -> None:
        """The session's serial turn runner: one prompt in flight at a time."""
        while True:
            if not session.queue:
                session.wakeup.clear()
                await session.wakeup.wait()
                continue
            turn = session.queue.popleft()
            if turn.state is TurnState.ENDED:
                continue
            session.current = turn
            try:
                await self._run_turn(session, turn)
            finally:
                session.current = None
                self._clear_permissions(session)
                self.emit_status()

    async def _run_turn(self, session: Session, turn: Turn) -> None:
        if turn.state is TurnState.CANCELLING:
            # Cancelled before it ever reached the agent: nothing to cancel there.
            self._end_turn(session, turn, "cancelled", None)
            return
        turn.advance(TurnState.RUNNING)
        self.listener.on_turn(session.session_id, turn.turn_id, "running", None, None)
        self.emit_status()
        try:
            client = await self.ensure_attached(session)
            if turn.cancelling:
                # Cancelled while the agent was (re)starting: never send the prompt.
                self._end_turn(session, turn, "cancelled", None)
                return
            session.generation += 1
            turn.in_flight = True
            result = await self._agent_call(client.prompt(session.session_id, turn.blocks, turn.meta))
            stop = result.get("stopReason")
            if not isinstance(stop, str) or stop not in STOP_REASONS:
                self.listener.on_log("warning", f"the agent answered an unknown stopReason {stop!r}")
                stop = stop if isinstance(stop, str) else "end_turn"
            if turn.cancelling and stop != "cancelled":
                self.listener.on_log("info", f"turn {turn.turn_id} was cancelled; the agent said {stop}")
            self._end_turn(session, turn, stop, None)
        except SidecarError as exc:
            self._end_turn(session, turn, None, {"code": exc.code, "message": exc.message})
        except asyncio.CancelledError:
            self._end_turn(session, turn, "cancelled", None)
            raise
        finally:
            turn.in_flight = False

    def _end_turn(self, session: Session, turn: Turn, stop: str | None, error: JsonObj | None) -> None:
        if turn.end(stop, error):
            self.listener.on_turn(session.session_id, turn.turn_id, "ended", stop, error)
            if turn.kind is TurnKind.RENAME:
                self.titles.rename_turn_ended(session, turn)
            self.emit_status()

    async def cancel(self, session_id: str | None = None) -> bool:
        session = self.session(session_id)
        turn = session.current
        if turn is None or turn.state is not TurnState.RUNNING:
            return False
        turn.advance(TurnState.CANCELLING)
        self.emit_status()
        self._clear_permissions(session)
        if turn.in_flight and self.client is not None and self.client.running:
            with contextlib.suppress(AcpError):
                await self.client.cancel(session.session_id)
            self.spawn(self._cancel_deadline(session, turn), f"cancel-deadline-{turn.turn_id}")
        return True

    async def _cancel_deadline(self, session: Session, turn: Turn) -> None:
        """An agent that ignores cancel must not hold the session forever."""
        try:
            await asyncio.wait_for(turn.ended.wait(), self.options.cancel_timeout)
        except TimeoutError:
            self.listener.on_log("warning", f"the agent ignored cancel of {turn.turn_id}; ending it here")
            self._end_turn(
                session,
                turn,
                "cancelled",
                {"code": errors.AGENT_DOWN, "message": "the agent did not stop after cancel"},
            )
            if session.runner is not None:
                # The runner is stuck awaiting the prompt: restart it (sends $/cancel_request).
                session.runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await session.runner
                session.runner = self.spawn(self._run_queue(session), f"turns-{session.session_id}")
                session.wakeup.set()

    # ================================================================== rename, mode, model, config
    async def rename(self, title: object, session_id: str | None = None) -> JsonObj:
        session = self.session(session_id)
        requested = self.titles.validate_user_title(title)
        text = (
            f'Rename this session to exactly: "{requested}"\n'
            "Do nothing else: confirm by sending a session_info_update with exactly that title."
        )
        meta = {"acpSidecar": {"renameTitle": requested}}
        turn = self._admit(session, [{"type": "text", "text": text}], TurnKind.RENAME, meta=meta)
        self.titles.rename_requested(session, requested, turn)
        return {"sessionId": session.session_id, "requestedTitle": requested}

    async def set_mode(self, mode_id: object, session_id: str | None = None) -> JsonObj:
        session = self.session(session_id)
        if not isinstance(mode_id, str) or not mode_id:
            raise errors.invalid("modeId must be a non-empty string")
        available = (session.modes or {}).get("availableModes")
        if not isinstance(available, list):
            raise SidecarError(errors.CAPABILITY, "the agent offers no session modes")
        ids = [m.get("id") for m in available if isinstance(m, dict)]
        if mode_id not in ids:
            raise errors.invalid(f"unknown mode {mode_id!r}; available: {', '.join(map(str, ids))}")
        client = await self.ensure_attached(session)
        await self._agent_call(client.set_mode(session.session_id, mode_id))
        session.transcript.mode_id = mode_id
        self.emit_status()
        return {}

    async def set_config_option(
        self, config_id: object, value: object, session_id: str | None = None
    ) -> JsonObj:
        session = self.session(session_id)
        if not isinstance(config_id, str) or not config_id:
            raise errors.invalid("configId must be a non-empty string")
        if not isinstance(value, str | bool):
            raise errors.invalid("value must be a string or a boolean")
        option = next((o for o in session.config_options if o.get("id") == config_id), None)
        if option is None:
            known = ", ".join(str(o.get("id")) for o in session.config_options) or "none"
            raise errors.invalid(f"unknown config option {config_id!r}; the agent offers: {known}")
        if option.get("type") == "select" and value not in choice_values(option):
            raise errors.invalid(
                f"{value!r} is not a value of {config_id}; choose one of: {', '.join(choice_values(option))}"
            )
        if option.get("type") == "boolean" and not isinstance(value, bool):
            raise errors.invalid(f"{config_id} takes true or false")
        client = await self.ensure_attached(session)
        result = await self._agent_call(client.set_config_option(session.session_id, config_id, value))
        options = result.get("configOptions")
        if isinstance(options, list):
            session.config_options = [o for o in options if isinstance(o, dict)]
        self.emit_status()
        return {"configOptions": session.config_options}

    async def set_model(self, model_id: object, session_id: str | None = None) -> JsonObj:
        session = self.session(session_id)
        if not isinstance(model_id, str) or not model_id:
            raise errors.invalid("modelId must be a non-empty string")
        option = session.model_option()
        if option is not None:
            await self.set_config_option(option.get("id"), model_id, session.session_id)
            return {}
        if session.legacy_models is None:
            raise SidecarError(errors.CAPABILITY, "the agent offers no model selection")
        available = [
            m.get("modelId")
            for m in session.legacy_models.get("availableModels") or []
            if isinstance(m, dict)
        ]
        if model_id not in available:
            raise errors.invalid(f"unknown model {model_id!r}; available: {', '.join(map(str, available))}")
        client = await self.ensure_attached(session)
        await self._agent_call(client.set_model_legacy(session.session_id, model_id))
        session.legacy_models = dict(session.legacy_models, currentModelId=model_id)
        self.emit_status()
        return {}

    async def authenticate(self, method_id: object) -> JsonObj:
        if not isinstance(method_id, str) or not method_id:
            raise errors.invalid("methodId must be a non-empty string")
        client = await self.ensure_agent()
        await self._agent_call(client.authenticate(method_id))
        return {}

    # ================================================================== permissions
    async def request_permission(self, params: JsonObj) -> JsonObj:
        session = self.sessions.get(params.get("sessionId"))  # type: ignore[arg-type]
        if session is None:
            raise SidecarError(RESOURCE_NOT_FOUND, f"unknown session {params.get('sessionId')!r:.80}")
        tool_call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        options = [
            o
            for o in params.get("options") or []
            if isinstance(o, dict) and isinstance(o.get("optionId"), str)
        ]
        if not options:
            raise errors.invalid("session/request_permission needs at least one option")
        turn = session.current
        request = PermissionRequest(
            f"perm-{next(self._perm_ids)}",
            session.session_id,
            turn.turn_id if turn else None,
            tool_call,  # type: ignore[arg-type]
            options,
            asyncio.get_running_loop().create_future(),
        )
        if turn is None or turn.state is not TurnState.RUNNING:
            return {"outcome": {"outcome": "cancelled"}}
        policy = self.options.permissions
        if policy == "reject":
            return {"outcome": self._reject_outcome(request)}
        if policy == "allow_reads" and request.kind in READ_KINDS:
            allow = request.first_of("allow_once", "allow_always")
            if allow is not None:
                return {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}
        session.permissions[request.request_id] = request
        self.emit_status()
        try:
            self.listener.on_permission(request)
            return await request.future
        finally:
            session.permissions.pop(request.request_id, None)
            self.emit_status()

    def _reject_outcome(self, request: PermissionRequest) -> JsonObj:
        reject = request.first_of("reject_once", "reject_always")
        if reject is None:
            return {"outcome": "cancelled"}
        return {"outcome": "selected", "optionId": reject["optionId"]}

    def pending_permissions(self) -> list[PermissionRequest]:
        return [p for s in self.sessions.values() for p in s.permissions.values()]

    def respond_permission(self, request_id: object, option_id: object | None) -> None:
        """Answer a pending request; option None means the user dismissed it (= reject)."""
        if not isinstance(request_id, str):
            raise errors.invalid("requestId must be a string")
        request = next((p for p in self.pending_permissions() if p.request_id == request_id), None)
        if request is None:
            raise errors.invalid(
                f"no pending permission request {request_id!r:.80} (already answered or cancelled)"
            )
        if option_id is None:
            request.resolve(self._reject_outcome(request))
            return
        if not isinstance(option_id, str) or request.option(option_id) is None:
            ids = ", ".join(str(o.get("optionId")) for o in request.options)
            raise errors.invalid(f"unknown optionId {option_id!r:.80}; choose one of: {ids}")
        request.resolve({"outcome": "selected", "optionId": option_id})

    def _clear_permissions(self, session: Session) -> None:
        for request in list(session.permissions.values()):
            request.resolve({"outcome": "cancelled"})

    # ================================================================== files
    def _session_for_fs(self, params: JsonObj) -> Session:
        session = self.sessions.get(params.get("sessionId"))  # type: ignore[arg-type]
        if session is None:
            raise SidecarError(RESOURCE_NOT_FOUND, f"unknown session {params.get('sessionId')!r:.80}")
        return session

    async def read_text_file(self, params: JsonObj) -> JsonObj:
        session = self._session_for_fs(params)
        path = resolve_inside(params.get("path"), session.roots)
        text = self.files.open_document_text(path)
        if text is None:
            text = await asyncio.to_thread(read_disk_text, path)
        return {"content": window(text, params.get("line"), params.get("limit"))}

    async def write_text_file(self, params: JsonObj) -> JsonObj:
        session = self._session_for_fs(params)
        path = resolve_inside(params.get("path"), session.roots)
        content = params.get("content")
        if not isinstance(content, str):
            raise errors.invalid("content must be a string")
        if not await self.files.write_via_editor(path, content):
            try:
                await asyncio.to_thread(atomic_write, path, content)
            except OSError as exc:
                raise SidecarError(-32603, f"cannot write {path}: {exc.strerror or exc}") from None
        return {}

    def tool_call_diffs(self, session_id: object, tool_call_id: object) -> list[JsonObj]:
        if not isinstance(session_id, str) or not session_id:
            raise errors.invalid("sessionId must be a non-empty string")
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise errors.invalid("toolCallId must be a non-empty string")
        session = self.session(session_id)
        diffs = session.transcript.diff_for(tool_call_id)
        if not diffs:
            raise errors.invalid(f"tool call {tool_call_id!r:.80} has no diff in session {session_id}")
        for diff in diffs:
            resolve_inside(diff.get("path"), session.roots)
        return diffs

    def pending_edits(self) -> list[tuple[Session, str, JsonObj]]:
        """Tool calls with a diff that is not completed or failed yet: (session, toolCallId, call)."""
        found: list[tuple[Session, str, JsonObj]] = []
        for session in self.sessions.values():
            for call_id, call in session.transcript.tool_calls.items():
                if call.get("status") in ("completed", "failed"):
                    continue
                if session.transcript.diff_for(call_id):
                    found.append((session, call_id, call))
        return found


class _Handler:
    """Adapts the ACP client's callbacks to the engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def on_session_update(self, params: JsonObj) -> None:
        await self.engine.on_session_update(params)

    async def request_permission(self, params: JsonObj) -> JsonObj:
        return await self.engine.request_permission(params)

    async def read_text_file(self, params: JsonObj) -> JsonObj:
        return await self.engine.read_text_file(params)

    async def write_text_file(self, params: JsonObj) -> JsonObj:
        return await self.engine.write_text_file(params)
