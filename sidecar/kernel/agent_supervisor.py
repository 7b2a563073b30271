"""The agent's life: start and initialize it, notice when it dies, restart it with backoff.

It also keeps the agent's identity (the key titles are stored under) up to date and turns
protocol errors of agent calls into messages meant for the user.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Iterable
from typing import Any, Protocol, TypeVar

from sidecar.acp import (
    AcpError,
    AgentDescription,
    AuthRequired,
    CapabilityMissing,
    ClientHandler,
    ConnectionClosed,
)
from sidecar.acp.process import signal_name
from sidecar.kernel import errors
from sidecar.kernel.agent_names import AgentIdentity
from sidecar.kernel.bus import AgentLost, AgentReady
from sidecar.kernel.context import EngineContext
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.options import AgentSpec
from sidecar.kernel.ports import AgentConnection, AgentConnector
from sidecar.kernel.status import AgentView

T = TypeVar("T")

# Restart backoff: 0.25 s after the first recent failure, doubling, at most this.
MAX_BACKOFF_SECONDS = 4.0


class SupervisorEvents(Protocol):
    def on_log(self, level: str, message: str) -> None: ...
    def on_error(self, message: str) -> None: ...


class AgentSupervisor:
    """Owns the connection to one configured agent; one process of it at a time."""

    def __init__(
        self,
        ctx: EngineContext,
        handler: ClientHandler,
        *,
        connect: AgentConnector,
        spec: AgentSpec,
        identity: AgentIdentity,
    ) -> None:
        self.options = ctx.options
        self.spec = spec
        self.name = spec.name  # the configured name (what the editor picks it by)
        self._handler = handler
        self._events: SupervisorEvents = ctx.listener
        self._bus = ctx.bus
        self._connect = connect
        self._spawn = ctx.spawn
        self._emit_status = ctx.status_changed
        self._identity = identity
        self.client: AgentConnection | None = None
        self.agent: AgentDescription | None = None
        # Bumped per agent process that initialized: sessions attached to an older one re-attach.
        self.generation = 0
        self.state = "stopped"  # stopped | starting | ready | disconnected | error
        self.problem: str | None = None
        self.closed = False
        self._start_lock = asyncio.Lock()
        self._restarts: list[float] = []
        # When one of its sessions last did something (a turn began or ended): the idle stop's clock.
        self.last_used = time.monotonic()

    # ------------------------------------------------------------------ start
    async def start(self) -> None:
        """The first start; a failure is reported, not raised (the editor stays usable)."""
        try:
            await self.ensure()
        except SidecarError as exc:
            self._events.on_error(exc.message)

    @property
    def ready(self) -> bool:
        return self.client is not None and self.client.running and self.agent is not None

    async def ensure(self) -> AgentConnection:
        """The running agent, started (or restarted, with backoff) when it is not."""
        if self.closed:
            raise errors.agent_down("the sidecar is shutting down")
        self.last_used = time.monotonic()  # every command that needs it: the idle stop waits
        if self.ready:
            assert self.client is not None
            return self.client
        async with self._start_lock:
            if self.ready:
                assert self.client is not None
                return self.client
            now = time.monotonic()
            self._restarts = [t for t in self._restarts if now - t < self.options.restart_window]
            if len(self._restarts) >= self.options.max_restarts:
                raise errors.agent_down(
                    f"it failed {len(self._restarts)} times within {self.options.restart_window:g} s; "
                    f"last problem: {self.problem or 'unknown'}"
                )
            if self._restarts:
                # Back off a little more after each recent failure.
                await asyncio.sleep(min(0.25 * 2 ** (len(self._restarts) - 1), MAX_BACKOFF_SECONDS))
            self._restarts.append(time.monotonic())
            self.last_used = time.monotonic()
            return await self._spawn_agent()

    async def _spawn_agent(self) -> AgentConnection:
        if self.client is not None:
            await self.client.stop(grace=0.5)
        self.state = "starting"
        self._emit_status()
        env = dict(os.environ)
        env.update(self.spec.env)
        env.setdefault("ACP_SIDECAR_STATE_DIR", str(self.options.state_dir))
        client = self._connect(
            self.spec.command,
            self._handler,
            env=env,
            cwd=self.options.agent_cwd,
            on_stderr_line=self._stderr_line,
            request_timeout=self.options.request_timeout,
        )
        self.client = client
        try:
            await client.start()
        except OSError as exc:
            self._failed(f"cannot start {' '.join(self.spec.command)!r}: {exc.strerror or exc}")
            raise errors.agent_down(self.problem or "start failed") from None
        try:
            self.agent = await client.initialize()
        except AcpError as exc:
            if isinstance(exc, ConnectionClosed):
                # It died before answering: its exit code and last words say why.
                why = await self.exit_reason(f"initialize failed: {exc.message}")
            else:
                tail = client.process.stderr.last_words()
                why = f"initialize failed: {exc.described()}" + (f" (stderr: {tail})" if tail else "")
            await client.stop(grace=0.2)
            self._failed(f"{why}. The agent's full stderr is in {self.options.log_hint}")
            raise errors.agent_down(self.problem or "initialize failed") from None
        self.generation += 1
        self.state = "ready"
        self.problem = None
        name = self.agent.info.get("name")
        self._identity.name = name if isinstance(name, str) else None
        self._bus.publish(AgentReady(self.name, client, self.agent))
        # Off the event loop: it writes and fsyncs a small file.
        self._spawn(asyncio.to_thread(self._identity.remember), "agent-name")
        self._spawn(self._watch(client, self.generation), "agent-watch")
        self._emit_status()
        self._events.on_log(
            "info", f"agent {self.name}: {self.agent.display_name} {self.agent.version or ''} ready".strip()
        )
        return client

    def _failed(self, problem: str) -> None:
        self.state = "error"
        self.problem = problem
        self._events.on_log("error", problem)
        self._emit_status()

    def _stderr_line(self, line: str) -> None:
        self._events.on_log("agent", line)  # one agent's words: the log line of several is theirs

    # ------------------------------------------------------------------ death
    async def _watch(self, client: AgentConnection, generation: int) -> None:
        """When the agent dies: end every turn, answer every waiter, report it."""
        await client.wait_closed()
        if self.closed or generation != self.generation or self.client is not client:
            return  # shutting down, replaced, or stopped on purpose (`stop_idle`)
        reason = await self.exit_reason(f"the agent {self.name} closed its connection")
        self.state = "disconnected"
        self.problem = reason
        self._events.on_log("error", reason)
        self._bus.publish(AgentLost(self.name, reason))
        self._emit_status()
        self._events.on_error(f"{reason}. The next command restarts it.")
        await client.stop(grace=0.1)

    async def exit_reason(self, fallback: str) -> str:
        """Why the agent went away: its exit code and last stderr lines, when it has exited."""
        client = self.client
        if client is None:
            return self.problem or fallback
        code = client.process.returncode
        if code is None:
            with contextlib.suppress(TimeoutError):
                code = await asyncio.wait_for(client.process.wait(), 1.0)
        if code is None:
            return self.problem or fallback
        tail = client.process.stderr.last_words()
        how = f"code {code}" if code >= 0 else f"ended by {signal_name(-code)}"
        return f"the agent {self.name} exited ({how})" + (f"; stderr: {tail}" if tail else "")

    # ------------------------------------------------------------------ identity
    @property
    def key(self) -> str:
        """The identity titles are stored under (see `AgentIdentity`)."""
        return self._identity.key

    def view(self) -> AgentView:
        agent = self.agent
        return AgentView(
            state=self.state,
            # Before its first start: the name it had last time, else the configured one.
            name=(agent.name if agent else None) or self._identity.remembered() or self.name,
            title=agent.title if agent else None,
            version=agent.version if agent else None,
            problem=self.problem,
            configured=self.name,
        )

    def describe(self) -> dict[str, Any]:
        """The agent as `acp.agents` lists it (docs/protocol.md)."""
        agent = self.agent
        state = {"ready": "idle", "disconnected": "error"}.get(self.state, self.state)
        return {
            "name": self.name,
            "title": agent.title if agent is not None else None,
            "version": agent.version if agent is not None else None,
            "agentName": agent.name if agent is not None else None,
            "state": state,
            "message": self.problem if state == "error" else None,
            "capabilities": None
            if agent is None
            else {
                "load": agent.can_load,
                "resume": agent.can_resume,
                "list": agent.can_list,
                "setTitle": agent.can_set_title,
                "fork": agent.can_fork,
                "close": agent.can_close,
                "delete": agent.can_delete,
                "logout": agent.can_logout,
            },
        }

    # ------------------------------------------------------------------ calls
    async def call(self, call: Awaitable[T]) -> T:
        """Await an agent call, turning protocol errors into user-facing ones."""
        try:
            return await call
        except AuthRequired as exc:
            raise self._auth_error(exc) from None
        except CapabilityMissing as exc:
            raise SidecarError(errors.CAPABILITY, exc.message) from None
        except ConnectionClosed as exc:
            raise errors.agent_down(await self.exit_reason(exc.message)) from None
        except SidecarError:
            raise
        except AcpError as exc:
            raise SidecarError(exc.code, f"the agent answered: {exc.described()}", exc.data) from None

    def _auth_error(self, exc: AuthRequired) -> SidecarError:
        methods = self.agent.auth_methods if self.agent else []
        listed = ", ".join(f"{m.get('id')} ({m.get('name')})" for m in methods) or "none offered"
        return SidecarError(
            errors.AUTH_REQUIRED,
            f"the agent requires authentication: {exc.message}. Methods: {listed}. "
            "Run the command acp.authenticate with one of these method ids.",
            {"authMethods": methods},
        )

    async def authenticate(self, method_id: object) -> dict[str, Any]:
        if not isinstance(method_id, str) or not method_id:
            raise errors.invalid("methodId must be a non-empty string")
        client = await self.ensure()
        await self.call(client.authenticate(method_id))
        return {}

    async def logout(self) -> dict[str, Any]:
        """`logout` (when the agent offers it): it asks for authentication again when it needs it."""
        client = await self.ensure()
        await self.call(client.logout())
        return {}

    # ------------------------------------------------------------------ stop
    async def send_cancel(self, session_id: str) -> bool:
        """`session/cancel` to the running agent; False when there is none to tell."""
        if self.client is None or not self.client.running:
            return False
        with contextlib.suppress(AcpError):
            await self.client.cancel(session_id)
        return True

    async def close_sessions(self, session_ids: Iterable[str]) -> None:
        """Tell the agent we are done with these sessions (session/close, when offered), briefly."""
        client, agent = self.client, self.agent
        if client is None or agent is None or not agent.can_close or not client.running:
            return
        attached = list(session_ids)
        if not attached:
            return

        async def close(session_id: str) -> None:
            with contextlib.suppress(AcpError):
                await client.close_session(session_id)

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(close(sid) for sid in attached)), 1.0)

    async def stop(self, grace: float) -> None:
        if self.client is not None:
            await self.client.stop(grace=grace)

    async def stop_idle(self, session_ids: Iterable[str]) -> None:
        """Stop the agent on purpose (idle): its sessions closed where it offers that, the process
        ended; the next use starts it again and re-attaches them. Not a crash: no backoff."""
        async with self._start_lock:
            client = self.client
            if client is None or self.closed:
                return
            await self.close_sessions(session_ids)
            self.client = None  # its watcher sees a stop, not a death
            self.generation += 1  # sessions attached to it re-attach on their next use
            self.state, self.problem = "stopped", None
            self._restarts.clear()
            await client.stop(grace=1.0)
            self._events.on_log("info", f"agent {self.name} stopped (idle)")
            self._emit_status()

    def kill_now(self) -> None:
        if self.client is not None:
            self.client.process.kill_now()
