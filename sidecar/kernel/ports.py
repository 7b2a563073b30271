"""What the session engine needs of the world around it, as narrow interfaces.

Above it, the editor side: `EngineListener` receives events, `EditorFiles` gives
access to the editor's buffers. Below it, the agent: `AgentConnection` is what the
engine calls of `sidecar.acp.AcpClient`, and `AgentConnector` makes one. Tests put
an in-memory connection behind these; production uses the real client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from sidecar.acp import AgentDescription, ClientHandler
from sidecar.kernel.session import PermissionRequest, Session
from sidecar.kernel.updates import RoutedView

JsonObj = dict[str, Any]


class EngineListener(Protocol):
    """Events for the editor side. Called synchronously, in order. (A feature that tells the
    editor more declares what it needs of the editor side itself: the conversation documents'
    `ConversationEvents`, the questions' `ElicitationAsker`.)"""

    def on_session_update(self, event: RoutedView) -> object: ...
    def on_turn(
        self,
        session_id: str,
        turn_id: str,
        state: str,
        stop_reason: str | None,
        error: JsonObj | None,
        answered: bool | None = None,
    ) -> None: ...
    def on_status(self, status: JsonObj) -> None: ...
    def on_session_info(self, info: JsonObj) -> None: ...
    def on_permission(self, request: PermissionRequest) -> None: ...
    def on_log(self, level: str, message: str) -> None: ...
    def on_error(self, message: str) -> None: ...
    def on_terminal(self, session_id: str, info: JsonObj) -> None:
        """A client terminal started, was shown in a tool call, has new output, exited or was released."""
        ...


class SessionCatalog(Protocol):
    """What the session registry and the status need of the sessions' catalogue: their titles,
    cwd and agent, kept across restarts and reconciled with the agents' session/list. The titles
    feature keeps it (`Kernel.provide_catalog`)."""

    def title_of(self, session_id: str) -> str | None: ...
    def current_title(self, session_id: str) -> str | None:
        """The title as known now, saved or not (`title_of`: the one the editor was shown)."""
        ...

    async def find(self, session_id: str) -> object | None:
        """The catalogue's record of a session (this process's or any other's), or None."""
        ...

    async def forget(self, session_id: str) -> None:
        """A deleted session leaves the catalogue."""
        ...

    async def session_created(self, session: Session) -> None: ...
    async def session_attached(self, session: Session) -> None: ...
    def forked(self, session: Session, parent_id: str) -> None: ...
    async def cwd_of(self, session_id: str) -> str | None:
        """The cwd the catalogue has for a session (and its agent, taken from the catalogue)."""
        ...

    async def known(self, session_id: str) -> object:
        """The catalogue's record of the session read (a replay builds on it)."""
        ...

    async def reconcile(self, client: AgentConnection, cwd: str | None, agent: str) -> None: ...
    async def entries(
        self,
        cwd: str | None,
        all_cwds: Sequence[str],
        active_id: str | None,
        limit: int | None,
        words: Sequence[str],
    ) -> tuple[list[JsonObj], bool]: ...


class NoCatalog:
    """The catalogue of a kernel no feature keeps one for: it knows nothing and keeps nothing."""

    def title_of(self, session_id: str) -> str | None:
        return None

    def current_title(self, session_id: str) -> str | None:
        return None

    async def find(self, session_id: str) -> object | None:
        return None

    async def forget(self, session_id: str) -> None:
        return None

    async def session_created(self, session: Session) -> None:
        return None

    async def session_attached(self, session: Session) -> None:
        return None

    def forked(self, session: Session, parent_id: str) -> None:
        return None

    async def cwd_of(self, session_id: str) -> str | None:
        return None

    async def known(self, session_id: str) -> object:
        return None

    async def reconcile(self, client: AgentConnection, cwd: str | None, agent: str) -> None:
        return None

    async def entries(
        self,
        cwd: str | None,
        all_cwds: Sequence[str],
        active_id: str | None,
        limit: int | None,
        words: Sequence[str],
    ) -> tuple[list[JsonObj], bool]:
        return [], False


class EditorFiles(Protocol):
    """File access through the editor's buffers."""

    def open_document_text(self, path: Path) -> str | None: ...

    async def write_via_editor(self, path: Path, content: str) -> bool:
        """True when the editor applied it; False to fall back to disk; raise when rejected."""
        ...


class Spawn(Protocol):
    """Start an owned background task (kept, logged on failure, cancelled on shutdown)."""

    def __call__(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]: ...


class StderrTail(Protocol):
    def tail(self, n: int = 20) -> list[str]: ...
    def last_words(self, lines: int = 3) -> str: ...


class AgentProcessView(Protocol):
    """What the engine reads of the agent's process: how it ended, its last words."""

    @property
    def returncode(self) -> int | None: ...
    @property
    def stderr(self) -> StderrTail: ...
    async def wait(self) -> int: ...
    def kill_now(self) -> None: ...


class AgentConnection(Protocol):
    """The ACP client methods the engine calls (see `sidecar.acp.AcpClient`)."""

    @property
    def process(self) -> AgentProcessView: ...
    @property
    def running(self) -> bool: ...
    async def start(self) -> None: ...
    async def wait_closed(self) -> None: ...
    async def stop(self, grace: float = 2.0) -> int | None: ...
    async def initialize(self) -> AgentDescription: ...
    async def authenticate(self, method_id: str) -> JsonObj: ...
    async def logout(self) -> JsonObj: ...
    async def delete_session(self, session_id: str) -> None: ...
    async def fork_session(self, session_id: str, cwd: str, additional: Sequence[str] = ()) -> JsonObj: ...
    async def new_session(self, cwd: str, additional: Sequence[str] = ()) -> JsonObj: ...
    async def load_session(self, session_id: str, cwd: str, additional: Sequence[str] = ()) -> JsonObj: ...
    async def resume_session(self, session_id: str, cwd: str, additional: Sequence[str] = ()) -> JsonObj: ...
    async def close_session(self, session_id: str) -> None: ...
    async def list_sessions(self, cwd: str | None = None) -> tuple[list[JsonObj], bool]: ...
    async def prompt(
        self, session_id: str, blocks: list[JsonObj], meta: JsonObj | None = None
    ) -> JsonObj: ...
    async def cancel(self, session_id: str) -> None: ...
    async def set_mode(self, session_id: str, mode_id: str) -> JsonObj: ...
    async def set_config_option(self, session_id: str, config_id: str, value: Any) -> JsonObj: ...
    async def set_model_legacy(self, session_id: str, model_id: str) -> JsonObj: ...
    async def set_title(self, session_id: str, title: str) -> str: ...


class AgentConnector(Protocol):
    """Makes the connection to a new agent process (not started yet)."""

    def __call__(
        self,
        command: Sequence[str],
        handler: ClientHandler,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stderr_line: Callable[[str], None] | None = None,
        request_timeout: float = 60.0,
    ) -> AgentConnection: ...
