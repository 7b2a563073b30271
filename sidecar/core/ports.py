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

from ..acp import AgentDescription, ClientHandler
from ..transcripts import DocumentChange
from .elicitations import Elicitation
from .session import PermissionRequest
from .updates import Routed

JsonObj = dict[str, Any]


class EngineListener(Protocol):
    """Events for the editor side. Called synchronously, in order."""

    def on_session_update(self, routed: Routed) -> None: ...
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
    def on_elicitation(self, elicitation: Elicitation, state: str, answer: JsonObj | None) -> None: ...
    def on_log(self, level: str, message: str) -> None: ...
    def on_error(self, message: str) -> None: ...
    def on_transcript_change(
        self, session_id: str, uri: str, change: DocumentChange, at_once: bool = False
    ) -> None:
        """A session's transcript document changed on disk (an open editor buffer follows;
        `at_once`: without waiting for the interval between two edits, as for a turn's end)."""
        ...

    def on_terminal(self, session_id: str, info: JsonObj) -> None:
        """A client terminal started, was shown in a tool call, has new output, exited or was released."""
        ...


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
