"""The session registry: new, load and resume (attach), replay, and routing the agent's updates.

Each update is routed once, in order, marked as replay while a `session/load`
replays history, attributed to the turn whose prompt is in flight (to no turn
before a prompt is sent or after its answer), with the agent's echo of our own
prompt dropped. The session's own state takes it in first (its tool calls, mode,
config options, usage); then it is published (`UpdateRouted`) to whoever reacts.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from sidecar.acp.client import MAX_SESSION_ID_CHARS, too_long
from sidecar.acp.errors import RESOURCE_NOT_FOUND
from sidecar.kernel import errors
from sidecar.kernel.agent_supervisor import AgentSupervisor
from sidecar.kernel.agents import Agents
from sidecar.kernel.bus import ReplayBoundary, SessionOpened, UpdateRouted
from sidecar.kernel.context import EngineContext
from sidecar.kernel.early_updates import EarlyUpdates
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.ports import AgentConnection, NoCatalog, SessionCatalog
from sidecar.kernel.session import Session
from sidecar.kernel.session_config import SessionConfig
from sidecar.kernel.slash_commands import parse_commands
from sidecar.kernel.updates import Routed, Update, read_update
from sidecar.kernel.usage import parse_usage

JsonObj = dict[str, Any]


class Sessions:
    def __init__(self, ctx: EngineContext, agents: Agents, early: EarlyUpdates[Update]) -> None:
        self._agents = agents
        # The sessions' catalogue (titles, cwd, agent): the titles feature fills this port.
        self.catalog: SessionCatalog = NoCatalog()
        self._bus = ctx.bus
        self._early = early
        self._emit_status = ctx.status_changed
        self.by_id: dict[str, Session] = {}
        self.active_id: str | None = None
        # Sessions attached but not published yet: their updates are parked meanwhile.
        self._parking: set[str] = set()
        # Set while a prompt creates the session it goes to (no session was active).
        self._creating: asyncio.Event | None = None

    # ------------------------------------------------------------------ lookup
    def get(self, session_id: str | None) -> Session:
        """A known session; None means the active one."""
        sid = session_id or self.active_id
        if sid is None:
            raise errors.no_active_session()
        if not isinstance(sid, str):
            raise errors.invalid("sessionId must be a string")
        found = self.by_id.get(sid)
        if found is None:
            raise errors.unknown_session(sid)
        return found

    @property
    def active(self) -> Session | None:
        return self.by_id.get(self.active_id) if self.active_id else None

    def attached_ids(self, agent: str) -> list[str]:
        """Sessions the agent's running process holds for us."""
        generation = self._agents.by_name[agent].generation
        return [s.session_id for s in self.of_agent(agent) if s.attached_to == generation]

    def of_agent(self, agent: str) -> list[Session]:
        return [s for s in self.by_id.values() if s.agent == agent]

    def busy(self, agent: str) -> bool:
        """A turn of one of the agent's sessions is queued or running, or a permission waits."""
        return any(s.queue or s.permissions or s.state() != "idle" for s in self.of_agent(agent))

    @staticmethod
    def validate_cwd(cwd: object) -> str:
        if not isinstance(cwd, str) or not cwd:
            raise errors.invalid("cwd must be a non-empty string")
        if not os.path.isabs(cwd):
            raise errors.invalid(f"cwd must be an absolute path, got {cwd!r:.200}")
        if not os.path.isdir(cwd):
            raise errors.invalid(f"cwd {cwd!r:.200} is not an existing directory")
        return os.path.normpath(cwd)

    def forget(self, session_id: str) -> None:
        """A deleted session: no longer here (nor active)."""
        self.by_id.pop(session_id, None)
        self._parking.discard(session_id)
        if self.active_id == session_id:
            self.active_id = None
        self._emit_status()

    def _activate(self, session: Session) -> None:
        self.active_id = session.session_id
        self._emit_status()

    async def resolve(self, session_id: str | None) -> Session:
        """Like `get`; but a command without a session id that follows a prompt still creating
        the active session applies to that session (commands apply in the order sent)."""
        while session_id is None and self.active_id is None and self._creating is not None:
            await self._creating.wait()
        return self.get(session_id)

    async def for_prompt(self, session_id: str | None, cwd: str | None, agent: str | None = None) -> Session:
        """The session a prompt goes to; without one, a new session in `cwd` becomes active."""
        while session_id is None and self.active_id is None:
            if self._creating is not None:
                await self._creating.wait()  # another prompt is creating it: use that one
                continue
            if cwd is None:
                raise errors.invalid("no active session and no workspace folder to start one in")
            creating = self._creating = asyncio.Event()
            try:
                await self.new(cwd, agent)
            finally:
                # Waiters wake in the order they came, after this prompt's turn is admitted.
                self._creating = None
                creating.set()
        return self.get(session_id)

    # ------------------------------------------------------------------ new, load, attach
    async def new(self, cwd: object, agent: object | None = None) -> str:
        """A new session of `agent` (None: the default agent), active from now on."""
        supervisor = self._agents.get(agent)
        path = self.validate_cwd(cwd)
        client = await supervisor.ensure()
        result = await supervisor.call(client.new_session(path))
        session_id = result["sessionId"]
        self._agents.directory.own(session_id, supervisor.name)
        session = self.by_id.get(session_id) or Session(session_id, path, supervisor.name)
        self._attached(supervisor, session, path, result)
        try:
            await self.catalog.session_created(session)
        finally:
            self._bus.publish(SessionOpened(session))
            self._publish(session)
        self._activate(session)
        return session.session_id

    async def fork(self, parent: Session) -> Session:
        """`session/fork` of `parent` on its agent: the new session, active from now on, titled
        `Fork: <parent title>` unless the agent titles it. Its document starts with the
        parent's (Conversations.opened copies it, `forked_from`)."""
        supervisor = self._agents.by_name[parent.agent]
        client = await supervisor.ensure()
        forking = client.fork_session(parent.session_id, parent.cwd, parent.additional_dirs)
        result = await supervisor.call(forking)
        session_id = result["sessionId"]
        self._agents.directory.own(session_id, supervisor.name)
        session = Session(session_id, parent.cwd, supervisor.name, list(parent.additional_dirs))
        session.forked_from, session.fork_unproven = parent.session_id, True
        self._attached(supervisor, session, parent.cwd, result)
        try:
            self.catalog.forked(session, parent.session_id)  # first: the editor sees no untitled fork
            await self.catalog.session_created(session)
        finally:
            self._bus.publish(SessionOpened(session))
            self._publish(session)
        self._activate(session)
        return session

    async def revive(self, session: Session) -> AgentConnection:
        """Attach the session again (resume, else load) though we think the agent holds it: a fork
        the agent has not made live yet."""
        supervisor = self._agents.by_name[session.agent]
        client = await supervisor.ensure()
        session.attached_to = -1
        await self._attach(supervisor, client, session.session_id, session.cwd)
        return client

    async def load(
        self,
        session_id: object,
        cwd: object | None = None,
        default_cwd: str | None = None,
        agent: object | None = None,
    ) -> str:
        """Attach a session; its cwd comes from the caller, else what we know of it, else `default_cwd`.

        Its agent is the one it belongs to (the title cache knows), else `agent`, else the
        default one; that agent is started when it is not running."""
        if not isinstance(session_id, str) or not session_id:
            raise errors.invalid("sessionId must be a non-empty string")
        if len(session_id) > MAX_SESSION_ID_CHARS:
            raise errors.invalid(f"sessionId is {too_long(len(session_id))}")
        wanted = None if agent is None else self._agents.directory.name(agent)
        known = self.by_id.get(session_id)
        record_cwd = await self.catalog.cwd_of(session_id)  # finds its agent in the title cache
        owner = self._agents.directory.owner.get(session_id)
        if wanted is not None and owner is not None and owner != wanted:
            raise errors.invalid(f"session {session_id!r:.80} belongs to the agent {owner}, not {wanted}")
        name = owner or wanted or self._agents.directory.default
        supervisor = self._agents.by_name[name]
        client = await supervisor.ensure()
        if cwd is None:
            cwd = known.cwd if known else (record_cwd or default_cwd)
        if cwd is None:
            raise errors.unknown_session(session_id)
        path = self.validate_cwd(cwd)
        self._agents.directory.own(session_id, name)
        try:
            session = await self._attach(supervisor, client, session_id, path)
        except SidecarError:
            if owner is None and session_id not in self.by_id:
                self._agents.directory.owner.pop(session_id, None)  # it was never this agent's
            raise
        self._activate(session)
        return session.session_id

    async def ensure_attached(self, session: Session) -> AgentConnection:
        """The session's agent, (re)started if needed, holding this session."""
        supervisor = self._agents.by_name[session.agent]
        client = await supervisor.ensure()
        if session.attached_to != supervisor.generation:
            await self._attach(supervisor, client, session.session_id, session.cwd)
        return client

    async def _attach(
        self, supervisor: AgentSupervisor, client: AgentConnection, session_id: str, cwd: str
    ) -> Session:
        """Make the agent hold the session: resume when offered, else load (replay)."""
        known = self.by_id.get(session_id)
        if known is not None and known.attached_to == supervisor.generation:
            return known
        agent = supervisor.agent
        assert agent is not None
        call = supervisor.call
        session = known or Session(session_id, cwd, supervisor.name)
        await self.catalog.known(session_id)  # a replay builds on the stored title
        try:
            if agent.can_resume:
                result = await call(client.resume_session(session_id, cwd))
            elif agent.can_load:
                # Known from here on: the replay goes straight to it.
                self._publish(session)
                session.replaying = True
                session.tool_calls.clear()
                self._bus.publish(ReplayBoundary(session, starting=True))
                try:
                    result = await call(client.load_session(session_id, cwd))
                finally:
                    session.replaying = False
                    self._bus.publish(ReplayBoundary(session, starting=False))
            else:
                raise SidecarError(
                    errors.CAPABILITY, "the agent offers neither session/resume nor session/load"
                )
        except SidecarError as exc:
            if known is None:
                self.by_id.pop(session_id, None)
            if exc.code == RESOURCE_NOT_FOUND:
                raise errors.unknown_session(session_id) from None
            raise
        self._attached(supervisor, session, cwd, result)
        try:
            await self.catalog.session_attached(session)
        finally:
            self._bus.publish(SessionOpened(session))
            self._publish(session)
        return session

    def _attached(self, supervisor: AgentSupervisor, session: Session, cwd: str, result: JsonObj) -> None:
        """The agent holds the session: it is known from here on (the agent's file and permission
        requests find it), but its updates stay parked until `_publish`, after its title record
        is ready, so the ones sent before the answer are delivered first."""
        session.cwd = cwd
        session.attached_to = supervisor.generation
        SessionConfig.absorb(session, result)
        self.by_id[session.session_id] = session
        self._parking.add(session.session_id)

    def _publish(self, session: Session) -> None:
        """Route the session's updates from now on, the parked ones first, in order."""
        self.by_id[session.session_id] = session
        self._parking.discard(session.session_id)
        for update in self._early.take(session.session_id):
            self._route(update)

    async def list(
        self,
        cwd: str | None,
        refresh: bool,
        all_cwds: Sequence[str],
        limit: int | None = None,
        words: Sequence[str] = (),
    ) -> tuple[list[JsonObj], bool]:
        """Every configured agent's sessions, newest first: the first `limit` that contain every
        one of the lower-case `words` (see `Titling.entries`), and whether more would follow.
        `refresh`: each running agent that offers session/list (and the default one, started when
        it is not) is asked first."""
        if refresh:
            default = self._agents.default
            try:
                await default.ensure()
            except SidecarError:
                if not any(s.ready for s in self._agents.all()):
                    raise  # nothing to ask: say why the default one did not start
            listing = [s for s in self._agents.all() if s.ready and s.agent is not None and s.agent.can_list]
            if not listing:
                raise SidecarError(
                    errors.CAPABILITY, "the agent does not offer session/list; showing cached titles"
                )
            targets: list[str | None] = [cwd] if cwd else (list(all_cwds) or [None])
            for supervisor in listing:
                client = await supervisor.ensure()
                for one in targets:
                    await supervisor.call(self.catalog.reconcile(client, one, supervisor.name))
        return await self.catalog.entries(cwd, all_cwds, self.active_id, limit, words)

    # ------------------------------------------------------------------ updates from the agent
    def on_update(self, params: JsonObj, _agent: str) -> None:
        """The agent's `session/update` (the ACP client checked its shape, the table its owner):
        read once, here, and routed."""
        self._route(read_update(params["sessionId"], params["update"]))

    def _route(self, update: Update) -> None:
        session = self.by_id.get(update.session_id)
        if session is None or update.session_id in self._parking:
            self._early.keep(update.session_id, update)
            return
        kind, raw = update.kind, update.raw
        # Only the turn whose prompt is in flight owns an update: one that arrives before the
        # next prompt is sent (a late update of an ended turn) belongs to no turn.
        turn = session.current if session.current is not None and session.current.in_flight else None
        if (
            turn is not None
            and kind == "user_message_chunk"
            and update.text is not None
            and turn.consume_echo(update.text)
        ):
            return
        if turn is not None:
            turn.took(kind)
        # The session's own state first, then everyone who reacts (`subscribe` in composition.py).
        call: JsonObj | None = None
        changed = False
        if update.tool_call_id is not None:
            call = session.tool_calls.apply(update.tool_call_id, raw, replace=kind == "tool_call")
        elif kind == "current_mode_update":
            if isinstance(mode := raw.get("currentModeId"), str):
                session.reported_mode_id = mode
            changed = True
        elif kind == "config_option_update":
            if isinstance(options := raw.get("configOptions"), list):
                session.config_options = [o for o in options if isinstance(o, dict)]
            changed = True
        elif kind == "available_commands_update":
            session.commands = parse_commands(raw)
            changed = True
        elif kind == "usage_update" and (usage := parse_usage(raw)) is not None:
            session.usage = usage
            changed = True
        routed = Routed(update, turn.turn_id if turn else None, session.replaying, call)
        self._bus.publish(UpdateRouted(session, routed, changed))
