"""The ACP client: one agent subprocess, the methods of schema v1, capability checks.

Payloads stay plain JSON dicts end to end, so unknown update kinds and unknown
fields reach the layers above untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sidecar import __version__
from sidecar.acp.chunk_merge import ChunkMerger
from sidecar.acp.errors import (
    METHOD_NOT_FOUND,
    AcpError,
    CapabilityMissing,
    InvalidParams,
    MethodNotFound,
    RemoteError,
)
from sidecar.acp.jsonrpc import JsonRpcConnection
from sidecar.acp.process import AgentProcess

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAX_LIST_PAGES = 10_000
TERMINAL_METHODS = frozenset(
    ("terminal/create", "terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release")
)
# What an agent may ask of us (the capabilities `initialize` offers); anything else is -32601.
CLIENT_REQUESTS = (
    frozenset(("session/request_permission", "fs/read_text_file", "fs/write_text_file", "elicitation/create"))
    | TERMINAL_METHODS
)
# Session ids longer than this are refused (agents use UUIDs): a session's conversation document
# names its id exactly in its header, and the header must stay small enough to identify it.
MAX_SESSION_ID_CHARS = 1024
# Agent notifications the sidecar does not know (qwen's `qwen/notify/session/mode-update`, vibe's
# `_session/retrying`) are ignored and logged once per method name, for this many names at most.
MAX_IGNORED_NAMES = 64
# Agents that rename a session only through a method of their own, by `agentInfo.name` (none
# advertises it): the method, called with `session/set_title`'s params after that is -32601.
# Mistral Vibe's answers `{}` and then sends `session_info_update` with the title.
VENDOR_SET_TITLE = {"@mistralai/mistral-vibe": "_session/set_title"}

JsonObj = dict[str, Any]


def too_long(length: int) -> str:
    """How a refused session id's length is said."""
    return f"{length} characters; acp-sidecar accepts at most {MAX_SESSION_ID_CHARS}"


class ClientHandler(Protocol):
    """What the layer above answers for the agent: one dispatch table, by method. Only the
    methods of CLIENT_REQUESTS and CLIENT_NOTIFICATIONS reach it, their params an object (and a
    `session/update`'s shape checked); notifications arrive in order."""

    def notify(self, method: str, params: JsonObj) -> None: ...
    async def request(self, method: str, params: JsonObj) -> JsonObj: ...


@dataclass
class AgentDescription:
    """What `initialize` told us about the agent."""

    protocol_version: int
    capabilities: JsonObj
    auth_methods: list[JsonObj]
    info: JsonObj = field(default_factory=dict)

    @property
    def name(self) -> str | None:
        """`agentInfo.name`: the agent's programmatic name."""
        name = self.info.get("name")
        return name if isinstance(name, str) and name else None

    @property
    def title(self) -> str | None:
        """`agentInfo.title`: the agent's name for display, when it has one."""
        title = self.info.get("title")
        return title if isinstance(title, str) and title else None

    @property
    def display_name(self) -> str:
        return self.title or self.name or "agent"

    @property
    def version(self) -> str | None:
        version = self.info.get("version")
        return version if isinstance(version, str) else None

    def _session_caps(self) -> JsonObj:
        caps = self.capabilities.get("sessionCapabilities")
        return caps if isinstance(caps, dict) else {}

    def _prompt_caps(self) -> JsonObj:
        caps = self.capabilities.get("promptCapabilities")
        return caps if isinstance(caps, dict) else {}

    @property
    def can_load(self) -> bool:
        return self.capabilities.get("loadSession") is True

    @property
    def can_list(self) -> bool:
        return isinstance(self._session_caps().get("list"), dict)

    @property
    def can_resume(self) -> bool:
        return isinstance(self._session_caps().get("resume"), dict)

    @property
    def can_close(self) -> bool:
        return isinstance(self._session_caps().get("close"), dict)

    @property
    def can_delete(self) -> bool:
        return isinstance(self._session_caps().get("delete"), dict)

    @property
    def can_fork(self) -> bool:
        """`session/fork` (unstable ACP), offered as `sessionCapabilities.fork`."""
        return isinstance(self._session_caps().get("fork"), dict)

    @property
    def can_set_title(self) -> bool:
        """`session/set_title` (unstable ACP), offered as `sessionCapabilities.title`."""
        return isinstance(self._session_caps().get("title"), dict)

    @property
    def vendor_set_title(self) -> str | None:
        """The agent's own rename method (VENDOR_SET_TITLE), recognised by its name."""
        return VENDOR_SET_TITLE.get(self.name or "")

    @property
    def can_rename(self) -> bool:
        """A rename without a prompt: `session/set_title`, or the agent's own method."""
        return self.can_set_title or self.vendor_set_title is not None

    @property
    def can_logout(self) -> bool:
        """`logout`, offered as `agentCapabilities.auth.logout`."""
        auth = self.capabilities.get("auth")
        return isinstance(auth, dict) and isinstance(auth.get("logout"), dict)

    @property
    def can_embed_context(self) -> bool:
        return self._prompt_caps().get("embeddedContext") is True

    @property
    def additional_directories(self) -> bool:
        return isinstance(self._session_caps().get("additionalDirectories"), dict)


def _obj(value: Any, what: str) -> JsonObj:
    if not isinstance(value, dict):
        raise RemoteError(-32603, f"the agent answered {what} with {type(value).__name__}, not an object")
    return value


class AcpClient:
    """Owns the agent process and its JSON-RPC connection."""

    def __init__(
        self,
        command: Sequence[str],
        handler: ClientHandler,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stderr_line: Callable[[str], None] | None = None,
        request_timeout: float = 60.0,
        max_frame_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self.process = AgentProcess(command, env=env, cwd=cwd, on_stderr_line=on_stderr_line)
        self.handler = handler
        self.request_timeout = request_timeout
        self._max_frame = max_frame_bytes
        self.connection: JsonRpcConnection | None = None
        self.agent: AgentDescription | None = None
        self._ignored: set[str] = set()  # unknown notifications logged already

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await self.process.start()
        self.connection = JsonRpcConnection(
            self.process.stdout,
            self.process.stdin,
            on_notification=self._on_notification,
            on_request=self._on_request,
            max_frame_bytes=self._max_frame,
            merge=ChunkMerger(),
        )
        self.connection.start()

    @property
    def running(self) -> bool:
        return self.connection is not None and not self.connection.closed

    async def wait_closed(self) -> None:
        if self.connection is not None:
            await self.connection.wait_closed()

    async def stop(self, grace: float = 2.0) -> int | None:
        code = await self.process.stop(grace=grace)
        if self.connection is not None:
            await self.connection.aclose()
        return code

    def _conn(self) -> JsonRpcConnection:
        if self.connection is None or self.connection.closed:
            from sidecar.acp.errors import ConnectionClosed

            raise ConnectionClosed("the agent is not running")
        return self.connection

    async def _call(self, method: str, params: Any, timeout: float | None = -1.0) -> Any:
        wait = self.request_timeout if timeout == -1.0 else timeout
        return await self._conn().request(method, params, wait)

    # ------------------------------------------------------------------ incoming
    def _on_notification(self, method: str, params: Any) -> None:
        if method == "session/update":
            if (
                isinstance(params, dict)
                and isinstance(params.get("sessionId"), str)
                and isinstance(params.get("update"), dict)
            ):
                self.handler.notify(method, params)
            else:
                log.warning("dropped a malformed session/update: %.300r", params)
        elif method == "elicitation/complete" and isinstance(params, dict):
            self.handler.notify(method, params)
        else:
            self._ignore(method)

    def _ignore(self, method: str) -> None:
        """An unknown notification: logged the first time its method is seen, then ignored quietly."""
        if method in self._ignored or len(self._ignored) > MAX_IGNORED_NAMES:
            return
        self._ignored.add(method)
        if len(self._ignored) > MAX_IGNORED_NAMES:
            log.info("the agent sent more unknown notifications; those are ignored without a log line")
            return
        log.info("ignored the agent's notification %.200r (unknown here; said once per method)", method)

    async def _on_request(self, method: str, params: Any) -> Any:
        if not isinstance(params, dict):
            raise InvalidParams(f"{method}: params must be an object")
        if method in CLIENT_REQUESTS:
            return await self.handler.request(method, params)
        raise MethodNotFound(method)

    # ------------------------------------------------------------------ methods
    async def initialize(self) -> AgentDescription:
        result = _obj(
            await self._call(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {
                        "fs": {"readTextFile": True, "writeTextFile": True},
                        "terminal": True,  # terminal/*: the sidecar runs them (features/terminals/)
                        # Opt-ins (stable since 2026-10): the editor is shown both.
                        "session": {"notices": {}, "compaction": {}},
                        # elicitation/create: asked through the editor (features/questions/elicitations.py).
                        "elicitation": {"form": {}, "url": {}},
                    },
                    "clientInfo": {"name": "acp-sidecar", "title": "acp-sidecar", "version": __version__},
                },
            ),
            "initialize",
        )
        version = result.get("protocolVersion")
        if not isinstance(version, int) or version < 1:
            raise AcpError(-32603, f"the agent speaks an unsupported protocol version {version!r}")
        if version > PROTOCOL_VERSION:
            raise AcpError(
                -32603,
                f"the agent answered protocol version {version}; this sidecar speaks {PROTOCOL_VERSION}",
            )
        caps = result.get("agentCapabilities")
        methods = result.get("authMethods")
        info = result.get("agentInfo")
        self.agent = AgentDescription(
            protocol_version=version,
            capabilities=caps if isinstance(caps, dict) else {},
            auth_methods=[m for m in methods if isinstance(m, dict)] if isinstance(methods, list) else [],
            info=info if isinstance(info, dict) else {},
        )
        return self.agent

    def _require(self, ok: bool, what: str) -> None:
        if not ok:
            raise CapabilityMissing(what)

    def _described(self) -> AgentDescription:
        if self.agent is None:
            raise AcpError(-32603, "the agent is not initialized")
        return self.agent

    async def authenticate(self, method_id: str) -> JsonObj:
        ids = [m.get("id") for m in self._described().auth_methods]
        if method_id not in ids:
            raise InvalidParams(
                f"unknown auth method {method_id!r}; the agent offers: {', '.join(map(str, ids)) or 'none'}"
            )
        return _obj(await self._call("authenticate", {"methodId": method_id}, None) or {}, "authenticate")

    async def logout(self) -> JsonObj:
        self._require(self._described().can_logout, "logout")
        return _obj(await self._call("logout", {}) or {}, "logout")

    def _session_params(self, cwd: str, additional: Sequence[str]) -> JsonObj:
        params: JsonObj = {"cwd": cwd, "mcpServers": []}
        if additional and self._described().additional_directories:
            params["additionalDirectories"] = list(additional)
        return params

    async def new_session(self, cwd: str, additional: Sequence[str] = ()) -> JsonObj:
        result = _obj(await self._call("session/new", self._session_params(cwd, additional)), "session/new")
        if not isinstance(result.get("sessionId"), str) or not result["sessionId"]:
            raise RemoteError(-32603, "the agent's session/new answer has no sessionId")
        if (length := len(result["sessionId"])) > MAX_SESSION_ID_CHARS:
            raise RemoteError(-32603, f"the agent's session/new answer has a sessionId of {too_long(length)}")
        return result

    async def fork_session(self, session_id: str, cwd: str, additional: Sequence[str] = ()) -> JsonObj:
        """`session/fork`: a new session holding `session_id`'s conversation (its id answered)."""
        self._require(self._described().can_fork, "session/fork")
        params = self._session_params(cwd, additional) | {"sessionId": session_id}
        result = _obj(await self._call("session/fork", params), "session/fork")
        forked = result.get("sessionId")
        if not isinstance(forked, str) or not forked or forked == session_id:
            raise RemoteError(-32603, "the agent's session/fork answer has no new sessionId")
        if (length := len(forked)) > MAX_SESSION_ID_CHARS:
            raise RemoteError(
                -32603, f"the agent's session/fork answer has a sessionId of {too_long(length)}"
            )
        return result

    async def load_session(self, session_id: str, cwd: str, additional: Sequence[str] = ()) -> JsonObj:
        self._require(self._described().can_load, "session/load")
        params = self._session_params(cwd, additional) | {"sessionId": session_id}
        # Replay can be long: no timeout beyond the connection's life.
        return _obj(await self._call("session/load", params, None) or {}, "session/load")

    async def resume_session(self, session_id: str, cwd: str, additional: Sequence[str] = ()) -> JsonObj:
        self._require(self._described().can_resume, "session/resume")
        params = self._session_params(cwd, additional) | {"sessionId": session_id}
        return _obj(await self._call("session/resume", params) or {}, "session/resume")

    async def close_session(self, session_id: str) -> None:
        self._require(self._described().can_close, "session/close")
        await self._call("session/close", {"sessionId": session_id})

    async def delete_session(self, session_id: str) -> None:
        self._require(self._described().can_delete, "session/delete")
        await self._call("session/delete", {"sessionId": session_id})

    async def list_sessions(self, cwd: str | None = None) -> tuple[list[JsonObj], bool]:
        """All pages of session/list. Returns (sessions, complete).

        `complete` is False when the agent repeated a cursor or exceeded the page
        bound: we stop instead of looping, and callers must not treat absent
        sessions as gone.
        """
        self._require(self._described().can_list, "session/list")
        sessions: list[JsonObj] = []
        seen: set[str] = set()
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params: JsonObj = {}
            if cwd is not None:
                params["cwd"] = cwd
            if cursor is not None:
                params["cursor"] = cursor
            page = _obj(await self._call("session/list", params), "session/list")
            items = page.get("sessions")
            if isinstance(items, list):
                entries = [s for s in items if isinstance(s, dict) and isinstance(s.get("sessionId"), str)]
                kept = [s for s in entries if len(s["sessionId"]) <= MAX_SESSION_ID_CHARS]
                sessions.extend(kept)
                if len(kept) < len(entries):
                    log.warning(
                        "session/list: left out %d session(s) whose sessionId is over %d characters",
                        len(entries) - len(kept),
                        MAX_SESSION_ID_CHARS,
                    )
                if dropped := len(entries) - len(sessions[len(sessions) - len(entries) :]):
                    log.warning(
                        "session/list: left out %d session(s) with a sessionId over %d characters",
                        dropped,
                        MAX_SESSION_ID_CHARS,
                    )
            nxt = page.get("nextCursor")
            if not isinstance(nxt, str) or not nxt:
                return sessions, True
            if nxt in seen:
                log.warning("session/list repeated cursor %r; stopped after %d pages", nxt, len(seen) + 1)
                return sessions, False
            seen.add(nxt)
            cursor = nxt
        return sessions, False

    async def set_title(self, session_id: str, title: str) -> str:
        """`session/set_title` (unstable): the title the agent stored (it may normalise it).

        For an agent with a rename method of its own (`vendor_set_title`) the standard method is
        still tried first, every time; only when it is -32601 is the agent's own method called.
        """
        agent = self._described()
        vendor = agent.vendor_set_title
        self._require(agent.can_rename, "session/set_title")
        params = {"sessionId": session_id, "title": title}
        try:
            result = _obj(await self._call("session/set_title", params), "session/set_title")
        except RemoteError as exc:
            if vendor is None or exc.code != METHOD_NOT_FOUND:
                raise
            log.info("session/set_title is -32601; renaming through %s (%s)", vendor, agent.name)
            answer = await self._call(vendor, params)
            result = answer if isinstance(answer, dict) else {}
            stored = result.get("title")  # Vibe answers {}: it stored the title as sent
            return stored if isinstance(stored, str) else title
        stored = result.get("title")
        if not isinstance(stored, str):
            raise RemoteError(-32603, "the agent's session/set_title answer has no title")
        return stored

    async def prompt(self, session_id: str, blocks: list[JsonObj], meta: JsonObj | None = None) -> JsonObj:
        params: JsonObj = {"sessionId": session_id, "prompt": blocks}
        if meta:
            params["_meta"] = meta
        # A turn may run for a long time; cancel is the way to stop it.
        return _obj(await self._call("session/prompt", params, None), "session/prompt")

    async def cancel(self, session_id: str) -> None:
        await self._conn().notify("session/cancel", {"sessionId": session_id})

    async def set_mode(self, session_id: str, mode_id: str) -> JsonObj:
        result = await self._call("session/set_mode", {"sessionId": session_id, "modeId": mode_id})
        return result if isinstance(result, dict) else {}

    async def set_config_option(self, session_id: str, config_id: str, value: Any) -> JsonObj:
        params: JsonObj = {"sessionId": session_id, "configId": config_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        return _obj(await self._call("session/set_config_option", params), "session/set_config_option")

    async def set_model_legacy(self, session_id: str, model_id: str) -> JsonObj:
        """`session/set_model`, removed from the spec; only for agents that still offer it."""
        result = await self._call("session/set_model", {"sessionId": session_id, "modelId": model_id})
        return result if isinstance(result, dict) else {}
