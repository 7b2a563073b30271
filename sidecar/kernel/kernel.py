"""The kernel: the parts every feature stands on, built once per sidecar, and their lifecycle.

The bus, the owned tasks, the configured agents and their supervisors, the session registry,
the turn queue, the session config, the status, the worker for heavy work off the event loop
(`worker.py`), and the table of the agent's requests that the
features answer. A feature is added by the composition (`sidecar/composition.py`) with one call:
it takes what it needs of the kernel, registers the agent's requests it answers and its steps of
the start and the shutdown and, where it keeps something the kernel's parts ask for, fills a
port (`SessionCatalog`, `document_uri`); who reacts to what is the composition's one table.
Nothing here imports a feature (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sidecar.acp import AcpClient
from sidecar.acp.errors import METHOD_NOT_FOUND, RESOURCE_NOT_FOUND
from sidecar.kernel.actions import Actions
from sidecar.kernel.agent_directory import AgentDirectory
from sidecar.kernel.agent_names import AgentIdentity
from sidecar.kernel.agent_supervisor import AgentSupervisor
from sidecar.kernel.agents import Agents
from sidecar.kernel.bus import (
    AgentLost,
    AgentStopped,
    EventBus,
    PromptSent,
    StatusChanged,
    TurnEnded,
    UpdateRouted,
)
from sidecar.kernel.context import EngineContext
from sidecar.kernel.early_updates import EarlyUpdates
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.file_ops import FileOps
from sidecar.kernel.options import AgentSpec, EngineOptions
from sidecar.kernel.ports import AgentConnector, EditorFiles, EngineListener, SessionCatalog
from sidecar.kernel.session_config import SessionConfig
from sidecar.kernel.sessions import Sessions
from sidecar.kernel.status import StatusReporter, build_status
from sidecar.kernel.turn_queue import TurnQueue
from sidecar.kernel.updates import Update
from sidecar.kernel.worker import Worker
from sidecar.tasks import OwnedTasks
from sidecar.text_safety import prepare as prepare_text_tables

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
F = TypeVar("F")

# Seconds a feature's pending writes (titles, the agent's changes) get at shutdown, before the
# agents stop.
SAVE_BEFORE_STOP_WAIT = 3.0

# An agent->client request a feature answers: its params (and, for the requests that need it, the
# configured agent's name) -> the result.
RequestHandler = Callable[[JsonObj, str], Awaitable[JsonObj]]
NotificationHandler = Callable[[JsonObj, str], None]


class AgentRequests:
    """The one table of what the agents ask of the client: which part answers each method.

    `session/update` is the kernel's own (the registry routes it); the rest are registered by
    the features that answer them. A method nobody registered is answered -32601. An agent's
    request about another agent's session is refused, and its notification dropped, before any
    part looks: an agent never sees, nor writes into, another agent's session.
    """

    def __init__(self, owner: Mapping[str, str], on_log: Callable[[str, str], None]) -> None:
        self.requests: dict[str, RequestHandler] = {}
        self.notifications: dict[str, NotificationHandler] = {}
        self._owner = owner
        self._log = on_log

    def answer(self, method: str, handler: RequestHandler) -> None:
        if method in self.requests:
            raise ValueError(f"{method} is answered already")
        self.requests[method] = handler

    def hear(self, method: str, handler: NotificationHandler) -> None:
        if method in self.notifications:
            raise ValueError(f"{method} is heard already")
        self.notifications[method] = handler

    def of(self, agent: str) -> AgentDoor:
        """The table as the agent's ACP client sees it (its `ClientHandler`)."""
        return AgentDoor(self, agent)

    def _foreign(self, params: JsonObj, agent: str) -> bool:
        held = self._owner.get(params.get("sessionId"))  # type: ignore[arg-type]
        return held is not None and held != agent

    async def request(self, method: str, params: JsonObj, agent: str) -> JsonObj:
        if self._foreign(params, agent):
            raise SidecarError(RESOURCE_NOT_FOUND, f"unknown session {params.get('sessionId')!r:.80}")
        handler = self.requests.get(method)
        if handler is None:
            raise SidecarError(METHOD_NOT_FOUND, f"method not found: {method}")
        return await handler(params, agent)

    def notify(self, method: str, params: JsonObj, agent: str) -> None:
        if self._foreign(params, agent):
            if method == "session/update":
                self._log("warning", f"the agent {agent} sent an update for another agent's session; dropped")
            return
        handler = self.notifications.get(method)
        if handler is not None:
            handler(params, agent)


@dataclass(frozen=True)
class AgentDoor:
    """One agent's way into the table: what it asks carries its configured name."""

    table: AgentRequests
    agent: str

    def notify(self, method: str, params: JsonObj) -> None:
        self.table.notify(method, params, self.agent)

    async def request(self, method: str, params: JsonObj) -> JsonObj:
        return await self.table.request(method, params, self.agent)


class Kernel:
    """The kernel's parts (see the module doc); `listener` is the editor side, `files` the
    editor's buffers."""

    def __init__(
        self,
        options: EngineOptions,
        listener: EngineListener,
        files: EditorFiles,
        connect: AgentConnector = AcpClient,
    ) -> None:
        self.options = options
        self.listener = listener
        self.files = files
        self._tasks = OwnedTasks("engine", self._task_failed)
        self.bus = EventBus(self._task_failed)
        self.directory = AgentDirectory(options)
        self.ctx = EngineContext(options, listener, self.bus, self.spawn, self.directory)
        self.requests = AgentRequests(self.directory.owner, listener.on_log)
        ctx = self.ctx

        def supervisor(spec: AgentSpec, identity: AgentIdentity) -> AgentSupervisor:
            return AgentSupervisor(
                ctx, self.requests.of(spec.name), connect=connect, spec=spec, identity=identity
            )

        # Every configured agent, each started on its first use (docs/architecture.md).
        self.agents = Agents(
            directory=self.directory, make=supervisor, idle_stop=options.agent_idle_stop, spawn=self.spawn
        )
        early: EarlyUpdates[Update] = EarlyUpdates(
            options.pending_update_bound, options.pending_update_sessions, options.pending_update_max_age
        )
        self.registry = Sessions(ctx, self.agents, early)
        self.requests.hear("session/update", self.registry.on_update)
        self.turns = TurnQueue(ctx, self.registry, self.agents)
        self.config = SessionConfig(self.registry.ensure_attached, self.agents.call, ctx.status_changed)
        # Blocking file operations off the loop, bounded per session (every feature's file work).
        self.file_ops = FileOps()
        # Heavy work off the loop (diffs, the agent's patterns): bounded, cancellable, awaited.
        self.worker = Worker()
        # The user's actions on sessions, as the editor's commands ask for them.
        self.actions = Actions(
            self.registry, self.turns, self.agents, self.config, self.bus, files, self.file_ops
        )
        # Ports a feature fills: the session's conversation document, for the status.
        self.document_uri: Callable[[str], str | None] = lambda _session_id: None
        self._status = StatusReporter(listener, self._status_snapshot)
        self.bus.react(StatusChanged, "kernel: acp/status", lambda _e: self._status.emit())
        self._features: dict[type, Any] = {}
        # Lifecycle hooks the features add, each stage's run in the order the features were added.
        self._on_start: list[Callable[[], Awaitable[None]]] = []
        self._on_closing: list[Callable[[], None]] = []
        self._before_agents_stop: list[tuple[str, Callable[[], Awaitable[None]]]] = []
        self._after_agents_stop: list[tuple[str, Callable[[], Awaitable[None]]]] = []
        self._on_kill: list[Callable[[], None]] = []
        self.shutdown_step = "not begun"  # where a shutdown that took too long was stuck

    # ------------------------------------------------------------------ features
    def add(self, feature: F) -> F:
        """A feature's engine side, found by its class from then on (`feature`)."""
        kind = type(feature)
        if kind in self._features:
            raise ValueError(f"{kind.__name__} is added already")
        self._features[kind] = feature
        return feature

    def feature(self, kind: type[F]) -> F:
        found = self._features.get(kind)
        if found is None:
            raise LookupError(f"no feature {kind.__name__}")
        result: F = found
        return result

    def on_start(self, hook: Callable[[], Awaitable[None]]) -> None:
        self._on_start.append(hook)

    def on_closing(self, hook: Callable[[], None]) -> None:
        """The shutdown begins: take no new work (before the turns are cancelled)."""
        self._on_closing.append(hook)

    def before_agents_stop(self, step: str, hook: Callable[[], Awaitable[None]]) -> None:
        """What must reach the disk, or end, before the agents are asked to stop: stopping them
        may use up the time the editor gives us."""
        self._before_agents_stop.append((step, hook))

    def after_agents_stop(self, step: str, hook: Callable[[], Awaitable[None]]) -> None:
        """The last writes, once the agents and the background tasks are gone."""
        self._after_agents_stop.append((step, hook))

    def on_kill(self, hook: Callable[[], None]) -> None:
        """A signal wants us gone now: what the feature runs must die with the agents."""
        self._on_kill.append(hook)

    @property
    def catalog(self) -> SessionCatalog:
        return self.registry.catalog

    def provide_catalog(self, catalog: SessionCatalog) -> None:
        """The feature that keeps the sessions' catalogue (their titles, cwd and agent)."""
        self.registry.catalog = catalog

    # ------------------------------------------------------------------ tasks
    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Start an owned background task: kept, logged on failure, cancelled on shutdown."""
        return self._tasks.spawn(coro, name)

    def _task_failed(self, name: str, exc: BaseException) -> None:
        self.listener.on_log("error", f"internal error in {name}: {exc!r}")

    async def close_tasks(self) -> None:
        await self._tasks.aclose()
        await self.worker.aclose()

    # ------------------------------------------------------------------ the agents
    # ------------------------------------------------------------------ the kernel's reactions
    def agent_used(self, event: PromptSent | TurnEnded) -> None:
        """A prompt went to the agent or a turn ended: its idle stop's clock starts again."""
        self.agents.by_name[event.session.agent].last_used = time.monotonic()

    def status_follows(self, event: UpdateRouted) -> None:
        """The session's mode, config options or usage changed with the update: `acp/status`."""
        if event.state_changed:
            self.emit_status()

    def agent_lost(self, event: AgentLost) -> None:
        """Only that agent's sessions: the others' turns go on untouched."""
        for session in self.registry.of_agent(event.name):
            self.turns.fail_queued(session, event.reason)

    async def _agent_stopped(self, name: str) -> None:
        """An agent stopped idle: what reacts to it is done before the idle watch goes on."""
        await self.bus.settle(AgentStopped(name))

    # ------------------------------------------------------------------ status
    def _status_snapshot(self) -> JsonObj:
        session = self.registry.active
        title = self.catalog.title_of(session.session_id) if session else None
        uri = self.document_uri(session.session_id) if session else None
        supervisor = self.agents.by_name[session.agent] if session else self.agents.default
        return build_status(supervisor.view(), session, title, uri)

    def status(self) -> JsonObj:
        return self._status.current()

    def emit_status(self) -> None:
        self._status.emit()

    # ------------------------------------------------------------------ life
    async def start(self) -> None:
        # The Unicode tables every one-line text needs (titles, status, terminals, ...) are built
        # on the worker now, not on the loop at their first use (some 250 ms).
        self.spawn(self.worker.run(prepare_text_tables), "text-tables")
        for hook in self._on_start:
            await hook()
        self.emit_status()
        # No agent is started here: each starts on its first use.
        self.agents.watch_idle(self.registry.busy, self.registry.attached_ids, self._agent_stopped)

    async def shutdown(self) -> None:
        """Everything stopped in its order; `shutdown_step` says where it is."""
        if self.shutdown_step != "not begun":
            return
        self.shutdown_step = "closing"
        self.agents.close()
        for closing in self._on_closing:
            closing()
        self.shutdown_step = "cancelling turns"
        for session in self.registry.by_id.values():
            self.turns.fail_queued(session, "the sidecar is shutting down")
            if session.current is not None and session.current.in_flight:
                await self.agents.by_name[session.agent].send_cancel(session.session_id)
        for step, hook in self._before_agents_stop:
            self.shutdown_step = step
            await hook()
        self.shutdown_step = "closing the agents' sessions"
        await asyncio.gather(
            *(s.close_sessions(self.registry.attached_ids(s.name)) for s in self.agents.all())
        )
        self.shutdown_step = "stopping the agents"
        await asyncio.gather(*(s.stop(grace=1.0) for s in self.agents.all()))
        self.shutdown_step = "stopping background tasks"
        await self.close_tasks()
        for session in self.registry.by_id.values():
            self.turns.end_current(session, "shutdown")
        for step, hook in self._after_agents_stop:
            self.shutdown_step = step
            await hook()
        self.shutdown_step = "done"

    def kill_now(self) -> None:
        """Kill at once what we started: the features' processes, then the agents'."""
        for kill in self._on_kill:
            kill()
        for supervisor in self.agents.all():
            supervisor.kill_now()
