"""The demo agent's state: its connection, the sessions loaded in this process, what the client offers."""

from __future__ import annotations

import asyncio
from typing import Protocol

from sidecar.acp.errors import AUTH_REQUIRED, INTERNAL_ERROR, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND
from sidecar.demo_agent import catalog
from sidecar.demo_agent import script as scripting
from sidecar.demo_agent.params import require_str
from sidecar.demo_agent.protocol import Connection, JsonObject, RpcError, log
from sidecar.demo_agent.settings import Settings
from sidecar.demo_agent.store import SessionRecord, Store


class RunningTurn(Protocol):
    """What the agent's state needs of a running prompt turn (turn.py builds on this module)."""

    def cancel(self) -> None: ...


class Session:
    """A session loaded in this process, and its running prompt turn if any."""

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self.turn: RunningTurn | None = None


class DemoAgent:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.conn: Connection | None = None
        self.sessions: dict[str, Session] = {}
        # Forks not loaded yet with ACP_DEMO_CAPS=fork-not-live (a prompt fails until resume/load).
        self.unlive_forks: set[str] = set()
        self.client_read = False
        self.client_write = False
        self.client_terminal = False  # clientCapabilities.terminal: #terminal runs there
        self.client_elicitation = False  # clientCapabilities.elicitation: #elicit asks there
        # clientCapabilities.session.notices/compaction: only a client that declared them gets them.
        self.client_notices = False
        self.client_compaction = False
        self.authenticated = False
        self.exit_code = 0
        self.stopped = asyncio.Event()

    @property
    def c(self) -> Connection:
        assert self.conn is not None
        return self.conn

    @property
    def legacy_model(self) -> bool:
        return self.settings.has("legacy-model")

    def stop(self, code: int) -> None:
        if not self.stopped.is_set():
            self.exit_code = code
            self.stopped.set()

    # -- sending -------------------------------------------------------------

    def send_update(self, session: Session, update: JsonObject, *, record: bool = True) -> None:
        self.c.notify("session/update", {"sessionId": session.record.session_id, "update": update})
        if record:
            session.record.history.append(update)

    def save(self, session: Session) -> None:
        self.save_record(session.record)

    def save_record(self, record: SessionRecord) -> None:
        try:
            self.store.save(record)
        except OSError as exc:
            log(f"could not save session {record.session_id}: {exc}")

    def session_state(self, record: SessionRecord) -> JsonObject:
        return catalog.session_state(record, legacy_model=self.legacy_model)

    def config_options(self, record: SessionRecord) -> list[JsonObject]:
        return catalog.config_options(record, legacy_model=self.legacy_model)

    def send_commands(self, session: Session) -> None:
        self.send_update(
            session,
            {
                "sessionUpdate": "available_commands_update",
                "availableCommands": scripting.SLASH_COMMANDS,
            },
            record=False,
        )

    def switch_mode(self, session: Session, mode_id: str) -> None:
        session.record.mode_id = mode_id
        self.send_update(session, {"sessionUpdate": "current_mode_update", "currentModeId": mode_id})
        self.save(session)

    # -- checks --------------------------------------------------------------

    def require_offered(self, cap: str, method: str) -> None:
        """-32601 for a method that ``ACP_DEMO_CAPS`` turned off with ``cap``."""
        if self.settings.has(cap):
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method} (disabled by ACP_DEMO_CAPS)")

    def require_offered_with(self, cap: str, method: str) -> None:
        """-32601 for a method offered only when ``ACP_DEMO_CAPS`` has ``cap``."""
        if not self.settings.has(cap):
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method} (offered with ACP_DEMO_CAPS={cap})")

    def require_auth(self) -> None:
        if self.settings.has("auth") and not self.authenticated:
            raise RpcError(AUTH_REQUIRED, "Authentication required")

    def loaded_session(self, params: JsonObject) -> Session:
        """The loaded session ``params.sessionId`` names; -32002 says why there is none."""
        session_id = require_str(params, "sessionId")
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        if session_id in self.unlive_forks:  # claude-agent-acp's answer for a fork not resumed
            raise RpcError(INTERNAL_ERROR, "Internal error", {"details": "Session not found"})
        if self.store.exists(session_id):
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"Session {session_id} is not loaded; call session/load or session/resume first",
            )
        raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")
