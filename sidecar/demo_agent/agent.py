"""The demo agent's ACP method handlers and its prompt turns."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import secrets
import signal
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .. import __version__
from ..acp.errors import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
)
from . import script as scripting
from .protocol import (
    Connection,
    Incoming,
    JsonObject,
    RpcError,
    Stdio,
    encode,
    log,
    write_stderr,
)
from .script import Script, ScriptError
from .store import SessionRecord, Store, merge_meta, now_iso, parse_time

PROTOCOL_VERSION = 1
AGENT_INFO = {"name": "acp-sidecar-demo", "title": "acp-sidecar demo agent", "version": __version__}
MODES = [
    {"id": "ask", "name": "Ask", "description": "Ask before every edit"},
    {"id": "code", "name": "Code", "description": "Edit files (still asks permission)"},
    {"id": "plan", "name": "Plan", "description": "Plan only, never edit"},
]
MODELS = [("demo-fast", "Demo Fast"), ("demo-smart", "Demo Smart")]
VERBOSITY = [("normal", "Normal"), ("terse", "Terse")]
CONTEXT_SIZE = {"demo-fast": 128_000, "demo-smart": 200_000}
PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
]
ALLOW_OPTIONS = {"allow-once", "allow-always"}
AUTH_METHOD = {
    "id": "demo-login",
    "name": "Demo login",
    "description": "Pretend to log in; always succeeds (ACP_DEMO_CAPS=auth)",
}
EDIT_LINE = "Edited by the acp-sidecar demo agent.\n"
LATE_DELAY = 0.05
RENAME_SLOW_DELAY = 2.0
FLOOD_YIELD_EVERY = 256
STDERR_LINE = 80
CAP_TOKENS = {"no-load", "no-list", "no-resume", "no-close", "no-embedded", "legacy-model", "auth"}
RENAME_MODES = {"confirm", "ignore", "other", "slow"}


@dataclass
class Settings:
    """Behaviour switches read from the environment (see README)."""

    caps: set[str] = field(default_factory=set)
    chunk_delay_ms: float = 15.0
    page_size: int = 50
    list_loop: bool = False
    rename: str = "confirm"
    crash_at: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        settings = cls()
        for token in env.get("ACP_DEMO_CAPS", "").split(","):
            token = token.strip().lower()
            if not token:
                continue
            if token in CAP_TOKENS:
                settings.caps.add(token)
            else:
                log(f"ACP_DEMO_CAPS: unknown token {token!r} ignored")
        settings.chunk_delay_ms = _env_number(env, "ACP_DEMO_CHUNK_DELAY_MS", 15.0)
        settings.page_size = max(1, int(_env_number(env, "ACP_DEMO_PAGE_SIZE", 50)))
        settings.list_loop = env.get("ACP_DEMO_LIST_LOOP", "") not in ("", "0", "false")
        rename = env.get("ACP_DEMO_RENAME", "confirm").strip().lower() or "confirm"
        if rename not in RENAME_MODES:
            log(f"ACP_DEMO_RENAME: unknown value {rename!r}, using confirm")
            rename = "confirm"
        settings.rename = rename
        settings.crash_at = env.get("ACP_DEMO_CRASH_AT", "").strip().lower()
        if settings.crash_at not in ("", "startup", "initialize"):
            log(f"ACP_DEMO_CRASH_AT: unknown value {settings.crash_at!r} ignored")
        return settings

    def has(self, cap: str) -> bool:
        return cap in self.caps


def _env_number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        log(f"{name}: not a number ({raw!r}), using {default:g}")
        return default
    return max(0.0, value)


# -- parameter checks (errors name the field) --------------------------------


def _str(params: JsonObject, name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{name}' must be a string")
    return value


def _opt_str(params: JsonObject, name: str) -> str | None:
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{name}' must be a string or null")
    return value


def _abs_path(params: JsonObject, name: str, *, must_exist: bool) -> str:
    value = _str(params, name)
    if not os.path.isabs(value):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{name}' must be an absolute path: {value!r}")
    if must_exist and not os.path.isdir(value):
        raise RpcError(INVALID_PARAMS, f"Invalid params: '{name}' is not an existing directory: {value!r}")
    return os.path.normpath(value)


def _mcp_servers(params: JsonObject, *, required: bool) -> None:
    if "mcpServers" not in params and not required:
        return
    if not isinstance(params.get("mcpServers"), list):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'mcpServers' must be an array")


def _additional_dirs(params: JsonObject) -> list[str] | None:
    value = params.get("additionalDirectories")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(d, str) and os.path.isabs(d) for d in value):
        raise RpcError(
            INVALID_PARAMS,
            "Invalid params: 'additionalDirectories' must be an array of absolute paths",
        )
    return [os.path.normpath(d) for d in value]


def _encode_cursor(offset: int) -> str:
    return urllib.parse.quote(json.dumps({"offset": offset}).encode().hex())


def _decode_cursor(cursor: str) -> int:
    invalid = RpcError(INVALID_PARAMS, f"Invalid params: 'cursor' is not a valid cursor: {cursor!r}")
    try:
        offset = json.loads(bytes.fromhex(urllib.parse.unquote(cursor)))["offset"]
    except (ValueError, TypeError, KeyError):
        raise invalid from None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise invalid
    return offset


def _same_dir(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


def _is_under(path: str, root: str) -> bool:
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _path_from_uri(uri: Any) -> str | None:
    if not isinstance(uri, str):
        return None
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file":
        return None
    return urllib.parse.unquote(parsed.path)


def _split_chunks(text: str, target: int = 22) -> list[str]:
    """A few words per chunk, about ``target`` chunks (15-30 for our texts)."""
    words = text.split(" ")
    count = len(words)
    group = min(range(1, count + 1), key=lambda g: (abs(math.ceil(count / g) - target), g))
    pieces = [" ".join(words[i : i + group]) for i in range(0, count, group)]
    return [piece + " " for piece in pieces[:-1]] + pieces[-1:]


class TurnCancelled(Exception):
    """``session/cancel`` (or close) stopped the turn."""


async def _forever() -> NoReturn:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


class Session:
    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self.turn: Turn | None = None


class DemoAgent:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.conn: Connection | None = None
        self.sessions: dict[str, Session] = {}
        self.client_read = False
        self.client_write = False
        self.authenticated = False
        self.exit_code = 0
        self.stopped = asyncio.Event()

    @property
    def c(self) -> Connection:
        assert self.conn is not None
        return self.conn

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
        try:
            self.store.save(session.record)
        except OSError as exc:
            log(f"could not save session {session.record.session_id}: {exc}")

    def _session_state(self, record: SessionRecord) -> JsonObject:
        legacy = self.settings.has("legacy-model")
        state: JsonObject = {
            "modes": {"currentModeId": record.mode_id, "availableModes": MODES},
            "configOptions": self._config_options(record),
        }
        if legacy:
            state["models"] = {
                "currentModelId": record.config["model"],
                "availableModels": [{"modelId": v, "name": n} for v, n in MODELS],
            }
        return state

    def _config_options(self, record: SessionRecord) -> list[JsonObject]:
        options: list[JsonObject] = []
        if not self.settings.has("legacy-model"):
            options.append(
                {
                    "id": "model",
                    "name": "Model",
                    "category": "model",
                    "type": "select",
                    "currentValue": record.config["model"],
                    "options": [{"value": v, "name": n} for v, n in MODELS],
                }
            )
        options.append(
            {
                "id": "verbosity",
                "name": "Verbosity",
                "type": "select",
                "currentValue": record.config["verbosity"],
                "options": [{"value": v, "name": n} for v, n in VERBOSITY],
            }
        )
        return options

    def _send_commands(self, session: Session) -> None:
        self.send_update(
            session,
            {
                "sessionUpdate": "available_commands_update",
                "availableCommands": scripting.SLASH_COMMANDS,
            },
            record=False,
        )

    # -- dispatch ------------------------------------------------------------

    async def handle_request(self, method: str, params: JsonObject, incoming: Incoming) -> Any:
        handler = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/resume": self.resume_session,
            "session/list": self.list_sessions,
            "session/close": self.close_session,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
            "session/set_model": self.set_model,
            "session/prompt": self.prompt,
        }.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return await handler(params, incoming)

    async def handle_notification(self, method: str, params: JsonObject) -> None:
        if method == "session/cancel":
            session = self.sessions.get(str(params.get("sessionId")))
            if session is not None and session.turn is not None:
                session.turn.cancel()
        # Unknown notifications are ignored, as JSON-RPC asks.

    def _require(self, cap: str, method: str) -> None:
        if self.settings.has(cap):
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method} (disabled by ACP_DEMO_CAPS)")

    def _require_auth(self) -> None:
        if self.settings.has("auth") and not self.authenticated:
            raise RpcError(AUTH_REQUIRED, "Authentication required")

    def _session(self, params: JsonObject) -> Session:
        session_id = _str(params, "sessionId")
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        if self.store.exists(session_id):
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"Session {session_id} is not loaded; call session/load or session/resume first",
            )
        raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")

    # -- lifecycle -----------------------------------------------------------

    async def initialize(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        if self.settings.crash_at == "initialize":
            self.c.hung = True
            self.stop(3)
            await _forever()
        version = params.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool):
            raise RpcError(INVALID_PARAMS, "Invalid params: 'protocolVersion' must be an integer")
        caps = params.get("clientCapabilities")
        fs = caps.get("fs") if isinstance(caps, dict) else None
        self.client_read = isinstance(fs, dict) and fs.get("readTextFile") is True
        self.client_write = isinstance(fs, dict) and fs.get("writeTextFile") is True
        session_caps: JsonObject = {}
        for cap in ("list", "resume", "close"):
            if not self.settings.has(f"no-{cap}"):
                session_caps[cap] = {}
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": not self.settings.has("no-load"),
                "promptCapabilities": {
                    "image": False,
                    "audio": False,
                    "embeddedContext": not self.settings.has("no-embedded"),
                },
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": session_caps,
            },
            "agentInfo": AGENT_INFO,
            "authMethods": [AUTH_METHOD] if self.settings.has("auth") else [],
        }

    async def authenticate(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        method_id = _str(params, "methodId")
        if not self.settings.has("auth") or method_id != AUTH_METHOD["id"]:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown 'methodId' {method_id!r}")
        self.authenticated = True
        return {}

    async def new_session(self, params: JsonObject, incoming: Incoming) -> None:
        self._require_auth()
        cwd = _abs_path(params, "cwd", must_exist=True)
        _mcp_servers(params, required=True)
        dirs = _additional_dirs(params) or []
        session_id = "demo-" + secrets.token_hex(6)
        record = SessionRecord(
            session_id=session_id, cwd=cwd, additional_directories=dirs, updated_at=now_iso()
        )
        session = Session(record)
        self.sessions[session_id] = session
        self.save(session)
        incoming.respond({"sessionId": session_id, **self._session_state(record)})
        self._send_commands(session)

    async def _open_saved(self, params: JsonObject, method: str) -> Session:
        self._require_auth()
        session_id = _str(params, "sessionId")
        cwd = _abs_path(params, "cwd", must_exist=False)
        _mcp_servers(params, required=method == "session/load")
        dirs = _additional_dirs(params)
        existing = self.sessions.get(session_id)
        if existing is not None and existing.turn is not None:
            raise RpcError(INVALID_REQUEST, f"A prompt is running in session {session_id}")
        record = existing.record if existing is not None else self.store.load(session_id)
        if record is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")
        record.cwd = cwd
        if dirs is not None:
            record.additional_directories = dirs
        session = Session(record)
        self.sessions[session_id] = session
        return session

    async def load_session(self, params: JsonObject, incoming: Incoming) -> None:
        self._require("no-load", "session/load")
        session = await self._open_saved(params, "session/load")
        # Replay only: nothing is re-executed, no fs or permission requests.
        for index, update in enumerate(session.record.history.snapshot()):
            self.send_update(session, update, record=False)
            if index % FLOOD_YIELD_EVERY == FLOOD_YIELD_EVERY - 1:
                await self.c.drain()
        incoming.respond(self._session_state(session.record))
        self._send_commands(session)

    async def resume_session(self, params: JsonObject, incoming: Incoming) -> None:
        self._require("no-resume", "session/resume")
        session = await self._open_saved(params, "session/resume")
        incoming.respond(self._session_state(session.record))
        self._send_commands(session)

    async def list_sessions(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        self._require("no-list", "session/list")
        self._require_auth()
        cwd = _opt_str(params, "cwd")
        cursor = _opt_str(params, "cursor")
        offset = _decode_cursor(cursor) if cursor is not None else 0
        records = {r.session_id: r for r in self.store.list_records()}
        for session_id, session in self.sessions.items():
            records[session_id] = session.record  # newer than the file mid-turn
        matching = [r for r in records.values() if cwd is None or _same_dir(r.cwd, cwd)]
        matching.sort(key=lambda r: (-parse_time(r.updated_at), r.session_id))
        size = self.settings.page_size
        page = matching[offset : offset + size]
        result: JsonObject = {"sessions": [r.info() for r in page]}
        if self.settings.list_loop:
            result["nextCursor"] = _encode_cursor(0)
        elif offset + size < len(matching):
            result["nextCursor"] = _encode_cursor(offset + size)
        return result

    async def close_session(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        self._require("no-close", "session/close")
        session_id = _str(params, "sessionId")
        session = self.sessions.pop(session_id, None)
        if session is None:
            if not self.store.exists(session_id):
                raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")
            return {}
        if session.turn is not None:
            session.turn.cancel()
        return {}

    # -- settings ------------------------------------------------------------

    async def set_mode(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        session = self._session(params)
        mode_id = _str(params, "modeId")
        if mode_id not in {m["id"] for m in MODES}:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown 'modeId' {mode_id!r}")
        self.switch_mode(session, mode_id)
        return {}

    def switch_mode(self, session: Session, mode_id: str) -> None:
        session.record.mode_id = mode_id
        self.send_update(session, {"sessionUpdate": "current_mode_update", "currentModeId": mode_id})
        self.save(session)

    async def set_config_option(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        session = self._session(params)
        config_id = _str(params, "configId")
        value = params.get("value")
        option = next((o for o in self._config_options(session.record) if o["id"] == config_id), None)
        if option is None:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown 'configId' {config_id!r}")
        allowed = [o["value"] for o in option["options"]]
        if value not in allowed:
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: 'value' for {config_id} must be one of {', '.join(allowed)}",
            )
        session.record.config[config_id] = str(value)
        options = self._config_options(session.record)
        self.send_update(session, {"sessionUpdate": "config_option_update", "configOptions": options})
        self.save(session)
        return {"configOptions": options}

    async def set_model(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        if not self.settings.has("legacy-model"):
            raise RpcError(METHOD_NOT_FOUND, "Method not found: session/set_model")
        session = self._session(params)
        model_id = _str(params, "modelId")
        if model_id not in {v for v, _ in MODELS}:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown 'modelId' {model_id!r}")
        session.record.config["model"] = model_id
        self.save(session)
        return {}

    # -- prompt --------------------------------------------------------------

    async def prompt(self, params: JsonObject, incoming: Incoming) -> None:
        session = self._session(params)
        blocks = params.get("prompt")
        if not isinstance(blocks, list) or not all(
            isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks
        ):
            raise RpcError(INVALID_PARAMS, "Invalid params: 'prompt' must be an array of content blocks")
        for block in blocks:
            kind = block["type"]
            if kind in ("image", "audio"):
                raise RpcError(INVALID_PARAMS, f"Invalid params: 'prompt' has {kind} content, not supported")
            if kind == "resource" and self.settings.has("no-embedded"):
                raise RpcError(
                    INVALID_PARAMS,
                    "Invalid params: 'prompt' has an embedded resource, but embeddedContext is not offered",
                )
            if kind == "text" and not isinstance(block.get("text"), str):
                raise RpcError(INVALID_PARAMS, "Invalid params: 'prompt' text block without 'text'")
        if session.turn is not None:
            raise RpcError(INVALID_REQUEST, "prompt already running in this session")
        text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
        try:
            script = scripting.parse(text, params.get("_meta"))
        except ScriptError as exc:
            raise RpcError(INVALID_PARAMS, f"Invalid params: 'prompt': {exc}") from None
        turn = Turn(self, session, blocks, script)
        session.turn = turn
        try:
            stop_reason = await turn.run()
        finally:
            session.turn = None
            turn.finish()
            self.save(session)
        incoming.respond({"stopReason": stop_reason})
        if script.late:
            await asyncio.sleep(LATE_DELAY)
            turn.chunk("late update", message_id=turn.new_id("late"))
            self.save(session)


@dataclass
class ReadResult:
    rel: str
    text: str | None = None
    error: str | None = None


class Turn:
    """One ``session/prompt``; cancellable at every wait."""

    def __init__(self, agent: DemoAgent, session: Session, blocks: list[JsonObject], script: Script):
        self.agent = agent
        self.session = session
        self.record = session.record
        self.blocks = blocks
        self.script = script
        self.cancelled = asyncio.Event()
        self.open_tools: set[str] = set()
        self.sent_info = False
        self.explicit_updated_at = False
        self._ids = 0
        self._tag = secrets.token_hex(4)

    # -- helpers ---------------------------------------------------------------

    def cancel(self) -> None:
        self.cancelled.set()

    def check(self) -> None:
        if self.cancelled.is_set():
            raise TurnCancelled

    def new_id(self, kind: str) -> str:
        self._ids += 1
        return f"{kind}-{self._tag}-{self._ids}"

    @property
    def conn(self) -> Connection:
        return self.agent.c

    @property
    def cwd(self) -> str:
        return self.record.cwd

    def fail_tool(self, tool_id: str, what: str, exc: RpcError | OSError) -> str:
        """Mark a tool call failed with the client's (or the OS's) reason; returns that reason."""
        message = exc.message if isinstance(exc, RpcError) else str(exc)
        self.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_id,
                "status": "failed",
                "content": [_text_content(f"{what}: {message}")],
            }
        )
        return message

    def update(self, update: JsonObject, *, record: bool = True) -> None:
        self.agent.send_update(self.session, update, record=record)
        kind = update.get("sessionUpdate")
        if kind == "tool_call":
            self.open_tools.add(str(update["toolCallId"]))
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            self.open_tools.discard(str(update["toolCallId"]))

    def tool_status(self, tool_id: str, status: str) -> None:
        self.update({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": status})

    def chunk(self, text: str, *, message_id: str) -> None:
        self.update(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
                "messageId": message_id,
            }
        )

    async def pause(self, seconds: float) -> None:
        """Sleep, but wake at once on cancel."""
        self.check()
        if seconds <= 0:
            return
        try:
            async with asyncio.timeout(seconds):
                await self.cancelled.wait()
        except TimeoutError:
            return
        raise TurnCancelled

    async def call(self, method: str, params: JsonObject) -> Any:
        """A request to the client, abandoned at once on cancel."""
        self.check()
        request = asyncio.ensure_future(self.conn.request(method, params))
        cancel = asyncio.ensure_future(self.cancelled.wait())
        try:
            await asyncio.wait({request, cancel}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancel.cancel()
            if not request.done():
                request.cancel()
        if request.done() and not request.cancelled():
            return request.result()
        raise TurnCancelled

    def chunk_delay(self, default_ms: float) -> float:
        ms = self.script.slow_ms if self.script.slow_ms is not None else default_ms
        return ms / 1000.0

    async def stream(self, pieces: Iterable[str], delay: float) -> None:
        message_id = self.new_id("msg")
        for index, piece in enumerate(pieces):
            if index and delay:
                await self.pause(delay)
            self.chunk(piece, message_id=message_id)
            if index % 64 == 63:
                await self.conn.drain()
        await self.conn.drain()

    def set_info(self, fields: JsonObject) -> None:
        """Send a session_info_update and keep its effect on the session."""
        update: JsonObject = {"sessionUpdate": "session_info_update", **fields}
        if "title" in fields and (fields["title"] is None or isinstance(fields["title"], str)):
            self.record.title = fields["title"]
        if "updatedAt" in fields:
            updated = fields["updatedAt"]
            if updated is None or isinstance(updated, str):
                self.record.updated_at = updated or ""
                self.explicit_updated_at = True
        if "_meta" in fields:
            meta = fields["_meta"]
            if meta is None:
                self.record.meta = None
            elif isinstance(meta, dict):
                self.record.meta = merge_meta(self.record.meta, meta) or None
        self.update(update)
        self.sent_info = True
        self.agent.save(self.session)

    # -- the turn ---------------------------------------------------------------

    async def run(self) -> str:
        record = self.record
        record.history.begin_turn()
        user_id = self.new_id("user")
        for block in self.blocks:
            record.history.append(
                {"sessionUpdate": "user_message_chunk", "content": block, "messageId": user_id}
            )
        record.prompt_count += 1
        first_prompt = record.prompt_count == 1
        self.agent.save(self.session)
        try:
            await self.preludes(user_id)
            if self.script.error:
                raise RpcError(INTERNAL_ERROR, "demo failure")
            if self.script.crash or self.script.hang:
                self.chunk("Working on it", message_id=self.new_id("msg"))
                self.conn.hung = True  # nothing more leaves this process
                if self.script.crash:
                    self.agent.stop(3)
                await _forever()
            stop_reason = await self.body()
        except TurnCancelled:
            for tool_id in sorted(self.open_tools):
                self.tool_status(tool_id, "failed")
            if not self.explicit_updated_at:
                record.updated_at = now_iso()  # still activity, for list order
            return "cancelled"
        self.usage()
        now = now_iso()
        if not self.explicit_updated_at:
            record.updated_at = now
        # A rename prompt is no topic to title a session after (even if ignored).
        if first_prompt and record.title is None and not self.sent_info and self.script.rename is None:
            title = scripting.derive_title(self.script.text) or "Demo session"
            self.set_info({"title": title, "updatedAt": record.updated_at})
        return stop_reason

    def finish(self) -> None:
        self.record.history.begin_turn()  # flushes coalesced text

    def usage(self) -> None:
        words = sum(len(str(b.get("text", "")).split()) for b in self.blocks)
        used = 1200 * self.record.prompt_count + 4 * words
        size = CONTEXT_SIZE.get(self.record.config["model"], 128_000)
        self.update({"sessionUpdate": "usage_update", "used": min(used, size), "size": size})

    async def preludes(self, user_id: str) -> None:
        script = self.script
        if script.echo:
            for block in self.blocks:
                self.update(
                    {"sessionUpdate": "user_message_chunk", "content": block, "messageId": user_id},
                    record=False,  # the history already holds the prompt
                )
        if script.stderr:
            await self.write_stderr(script.stderr)
        if script.garbage:
            self.garbage()
        if script.bigframe is not None:
            text = ("bigframe " * (script.bigframe // 9 + 1))[: script.bigframe]
            self.chunk(text, message_id=self.new_id("big"))
            await self.conn.drain()
        if script.unknown:
            self.update({"sessionUpdate": "future_kind_xyz", "someField": {"nested": [1, 2]}})
            self.update(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "A chunk from the future. "},
                    "messageId": self.new_id("msg"),
                    "futureField": True,
                }
            )
        if script.mode:
            self.agent.switch_mode(self.session, "code")
        self.check()

    async def write_stderr(self, total: int) -> None:
        line = (b"demo agent stderr filler " * 4)[: STDERR_LINE - 1] + b"\n"
        block = line * (65536 // STDERR_LINE)
        remaining = total
        while remaining > 0:
            piece = block[:remaining]
            if len(piece) == remaining and remaining % STDERR_LINE:
                piece = piece[:-1] + b"\n"  # end on a full line
            write_stderr(piece)
            remaining -= len(piece)
            await asyncio.sleep(0)  # keep reading stdin (cancel) between blocks
            self.check()

    def garbage(self) -> None:
        sid = self.record.session_id
        self.conn.write_raw(b'{"jsonrpc": "2.0", "method": "session/update", "params": {oops\n')
        self.conn.write_raw(b"[1,2,3]\n")
        self.conn.write({"jsonrpc": "2.0", "id": "demo-garbage-unknown-id", "result": {"surprise": True}})
        self.conn.notify(
            "session/update",
            {
                "sessionId": "demo-no-such-session",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "for a session nobody has"},
                },
            },
        )
        self.conn.notify(
            "session/update",
            {
                "sessionId": sid,
                "update": {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "garbage-tool",
                    "title": 42,
                    "kind": "read",
                    "status": "pending",
                },
            },
        )

    async def body(self) -> str:
        script = self.script
        if script.rename is not None:
            return await self.rename(script.rename)
        if script.title is not None:
            self.chunk("Setting the session title. ", message_id=self.new_id("msg"))
            self.set_info({"title": script.title, "updatedAt": now_iso()})
            return "end_turn"
        if script.info is not None:
            return self.info(script.info)
        if script.help:
            await self.stream(_split_chunks(scripting.HELP_TEXT), self.chunk_delay(0))
            return "end_turn"
        if script.edit:
            return await self.edit()
        if script.permission:
            return await self.permission()
        if script.chunks is not None:
            await self.flood(script.chunks)
            return "end_turn"
        if script.refuse:
            self.chunk(
                "I won't do that: the #refuse keyword asks me to refuse.",
                message_id=self.new_id("msg"),
            )
            return "refusal"
        await self.default_reply()
        return "end_turn"

    async def rename(self, title: str) -> str:
        mode = self.agent.settings.rename
        message_id = self.new_id("msg")
        if mode == "slow":
            self.chunk("Renaming this session, slowly... ", message_id=message_id)
            await self.pause(RENAME_SLOW_DELAY)
        if mode == "ignore":
            self.chunk("I can't rename sessions (ACP_DEMO_RENAME=ignore).", message_id=message_id)
            return "end_turn"
        chosen = title if mode in ("confirm", "slow") else f"{title} (demo)"
        self.chunk(f"Renamed this session to “{chosen}”.", message_id=message_id)
        self.set_info({"title": chosen, "updatedAt": now_iso()})
        return "end_turn"

    def info(self, raw: str) -> str:
        try:
            fields = json.loads(raw)
        except ValueError:
            fields = None
        if not isinstance(fields, dict):
            self.chunk("#info needs a JSON object after it.", message_id=self.new_id("msg"))
            return "end_turn"
        self.set_info(fields)
        return "end_turn"

    async def flood(self, count: int) -> None:
        message_id = self.new_id("msg")
        session_id = self.record.session_id
        # Frames are cut from one template; nothing is built up front.
        marker = "\u0000"
        template = encode(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": session_id,
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": marker},
                        "messageId": message_id,
                    },
                },
            }
        )
        prefix, suffix = template.split(b"\\u0000")
        delay = self.chunk_delay(0)
        history = self.record.history
        for index in range(count):
            if index and delay:
                await self.pause(delay)
            text = f"c{index} "
            self.conn.write_raw(prefix + text.encode() + suffix)
            history.append_text("agent_message_chunk", message_id, text)
            if index % FLOOD_YIELD_EVERY == FLOOD_YIELD_EVERY - 1:
                await self.conn.drain()
                await asyncio.sleep(0)  # let session/cancel in
                self.check()
        await self.conn.drain()

    # -- files ------------------------------------------------------------------

    def resolve(self, path: str) -> str | None:
        """An absolute path for ``path`` if it lies in the workspace."""
        full = os.path.normpath(path if os.path.isabs(path) else os.path.join(self.cwd, path))
        roots = [self.cwd, *self.record.additional_directories]
        return full if any(_is_under(full, root) for root in roots) else None

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.cwd) if _is_under(path, self.cwd) else path

    def readme(self) -> str | None:
        try:
            names = sorted(
                entry.name
                for entry in os.scandir(self.cwd)
                if entry.name.lower().startswith("readme") and entry.is_file()
            )
        except OSError:
            return None
        return os.path.join(self.cwd, names[0]) if names else None

    def read_target(self) -> str | None:
        for block in self.blocks:
            candidates: list[str] = []
            if block["type"] == "text":
                for token in re.findall(r"[^\s`'\"<>()\[\]{},;]+", str(block["text"])):
                    token = token.rstrip(".:!?")
                    if not token.startswith("#") and ("." in token or "/" in token):
                        candidates.append(token)
            elif block["type"] == "resource_link":
                candidates.append(_path_from_uri(block.get("uri")) or "")
            elif block["type"] == "resource":
                resource = block.get("resource")
                if isinstance(resource, dict):
                    candidates.append(_path_from_uri(resource.get("uri")) or "")
            for candidate in candidates:
                if not candidate:
                    continue
                full = self.resolve(candidate)
                if full is not None and os.path.isfile(full):
                    return full
        return self.readme()

    async def read_file(self, path: str) -> str:
        if self.agent.client_read:
            result = await self.call("fs/read_text_file", {"sessionId": self.record.session_id, "path": path})
            if not isinstance(result, dict) or not isinstance(result.get("content"), str):
                raise RpcError(INTERNAL_ERROR, "the client's read answer has no 'content'")
            return str(result["content"])
        # The client offered no fs access: read the disk ourselves.
        return _read_disk(path)

    async def write_file(self, path: str, content: str) -> None:
        if self.agent.client_write:
            await self.call(
                "fs/write_text_file",
                {"sessionId": self.record.session_id, "path": path, "content": content},
            )
            return
        _write_disk(path, content)

    async def read_step(self, path: str) -> ReadResult:
        rel = self.rel(path)
        tool_id = self.new_id("read")
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tool_id,
                "title": f"Read {rel}",
                "kind": "read",
                "status": "pending",
                "locations": [{"path": path}],
            }
        )
        try:
            text = await self.read_file(path)
        except (RpcError, OSError) as exc:
            message = self.fail_tool(tool_id, f"Could not read {rel}", exc)
            return ReadResult(rel, error=message)
        lines = text.splitlines()
        head = "\n".join(lines[:3])
        summary = f"{rel}: {len(lines)} lines. First lines:\n{head}" if lines else f"{rel} is empty."
        self.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_id,
                "status": "completed",
                "content": [_text_content(summary)],
            }
        )
        return ReadResult(rel, text=text)

    # -- bodies -----------------------------------------------------------------

    def plan(self, statuses: list[str], first: str) -> None:
        contents = [first, "Think about the question", "Write the answer"]
        priorities = ["high", "medium", "low"]
        self.update(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": c, "priority": p, "status": s}
                    for c, p, s in zip(contents, priorities, statuses, strict=True)
                ],
            }
        )

    async def default_reply(self) -> None:
        target = self.read_target()
        first = f"Read {self.rel(target)}" if target else "Look for a file to read"
        self.plan(["in_progress", "pending", "pending"], first)
        result = await self.read_step(target) if target else None
        self.plan(["completed", "in_progress", "pending"], first)
        await self.pause(self.chunk_delay(self.agent.settings.chunk_delay_ms))
        self.plan(["completed", "completed", "in_progress"], first)
        await self.stream(
            _split_chunks(self.answer(result)), self.chunk_delay(self.agent.settings.chunk_delay_ms)
        )
        self.plan(["completed", "completed", "completed"], first)

    def answer(self, result: ReadResult | None) -> str:
        config = self.record.config
        parts: list[str] = []
        if result is None:
            parts.append(
                "I looked for a file to read but found none in your workspace, so this answer is general."
            )
        elif result.error is not None:
            parts.append(f"I tried to read {result.rel} but the editor refused: {result.error}.")
        else:
            text = result.text or ""
            lines = text.splitlines()
            folder = os.path.dirname(result.rel)
            where = "at the root of your workspace" if not folder else f"in {folder} of your workspace"
            first_line = " ".join(lines[0].split())[:60] if lines else ""
            parts.append(f"{result.rel} is {where} and it has {len(lines)} lines.")
            if first_line:
                parts.append(f"It starts with “{first_line}”.")
        asked = scripting.derive_title(self.script.text) or "nothing in particular"
        parts.append(f"You asked about “{asked}”.")
        parts.append(
            f"I am the acp-sidecar demo agent, in {self.record.mode_id} mode with the "
            f"{config['model']} model: my answers are canned and deterministic."
        )
        if config["verbosity"] != "terse":
            parts.append(
                "Try #edit to see a diff and a permission request, or /help to list every keyword I know."
            )
        return " ".join(parts)

    async def ask_permission(self, tool_call: JsonObject) -> str | None:
        """The chosen option id; None if the request failed; cancel raises."""
        try:
            result = await self.call(
                "session/request_permission",
                {
                    "sessionId": self.record.session_id,
                    "toolCall": tool_call,
                    "options": PERMISSION_OPTIONS,
                },
            )
        except RpcError as exc:
            log(f"permission request failed: {exc.message}")
            return None
        outcome = result.get("outcome") if isinstance(result, dict) else None
        kind = outcome.get("outcome") if isinstance(outcome, dict) else None
        if kind == "cancelled":
            raise TurnCancelled
        if kind == "selected" and isinstance(outcome, dict):
            return str(outcome.get("optionId"))
        return None

    async def edit(self) -> str:
        message_id = self.new_id("msg")
        if self.script.edit_path:
            target = self.resolve(self.script.edit_path)
            if target is None:
                self.chunk(
                    f"I won't edit {self.script.edit_path}: it is outside the workspace.",
                    message_id=message_id,
                )
                return "end_turn"
        else:
            target = self.readme() or os.path.join(self.cwd, "demo.txt")
        rel = self.rel(target)
        if self.record.mode_id == "plan":
            self.chunk(
                f"Plan mode is on, so I will not edit {rel}. My plan: append one line to it. "
                "Switch to ask or code mode to let me edit.",
                message_id=message_id,
            )
            return "end_turn"
        old: str | None = None
        if _is_file(target):
            try:
                old = await self.read_file(target)
            except (RpcError, OSError) as exc:
                message = exc.message if isinstance(exc, RpcError) else str(exc)
                self.chunk(f"I could not read {rel}: {message}.", message_id=message_id)
                return "end_turn"
        new = EDIT_LINE if old is None else f"{old}\n{EDIT_LINE}"
        tool_id = self.new_id("edit")
        tool_call: JsonObject = {
            "toolCallId": tool_id,
            "title": f"Edit {rel}",
            "kind": "edit",
            "status": "pending",
            "content": [{"type": "diff", "path": target, "oldText": old, "newText": new}],
            "locations": [{"path": target}],
        }
        self.update({"sessionUpdate": "tool_call", **tool_call})
        choice = await self.ask_permission(tool_call)
        if choice not in ALLOW_OPTIONS:
            self.update({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "failed"})
            why = "the permission request failed" if choice is None else "you rejected the edit"
            self.chunk(f"I did not edit {rel}: {why}, so it is unchanged.", message_id=message_id)
            return "end_turn"
        self.update({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "in_progress"})
        try:
            await self.write_file(target, new)
        except (RpcError, OSError) as exc:
            message = self.fail_tool(tool_id, f"Could not write {rel}", exc)
            self.chunk(f"Writing {rel} failed: {message}.", message_id=message_id)
            return "end_turn"
        self.update({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "completed"})
        self.chunk(f"I added one line to {rel}.", message_id=message_id)
        return "end_turn"

    async def permission(self) -> str:
        message_id = self.new_id("msg")
        tool_id = self.new_id("exec")
        tool_call: JsonObject = {
            "toolCallId": tool_id,
            "title": "Run `echo hello from the demo agent`",
            "kind": "execute",
            "status": "pending",
            "rawInput": {"command": ["echo", "hello from the demo agent"]},
        }
        self.update({"sessionUpdate": "tool_call", **tool_call})
        choice = await self.ask_permission(tool_call)
        names = {o["optionId"]: o["name"] for o in PERMISSION_OPTIONS}
        if choice in ALLOW_OPTIONS:
            self.update(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": tool_id,
                    "status": "completed",
                    "content": [_text_content("hello from the demo agent")],
                }
            )
            self.chunk(
                f"You chose “{names[choice]}” ({choice}), so I ran the command.",
                message_id=message_id,
            )
        else:
            self.update({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": "failed"})
            label = f"“{names[choice]}” ({choice})" if choice in names else f"an unknown option ({choice})"
            said = "The permission request failed" if choice is None else f"You chose {label}"
            self.chunk(f"{said}, so I did not run the command.", message_id=message_id)
        return "end_turn"


def _is_file(path: str) -> bool:
    return os.path.isfile(path)


def _read_disk(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _write_disk(path: str, content: str) -> None:
    tmp = f"{path}.demo-agent.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(content)
    os.replace(tmp, path)


def _text_content(text: str) -> JsonObject:
    return {"type": "content", "content": {"type": "text", "text": text}}


async def serve(settings: Settings, store: Store) -> int:
    """Run the agent on stdin/stdout until EOF, a signal, or a scripted crash."""
    io = Stdio()
    await io.open()
    agent = DemoAgent(settings, store)
    conn = Connection(io, agent.handle_request, agent.handle_notification)
    agent.conn = conn
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, agent.stop, 0)
    reader = asyncio.create_task(conn.run())
    stopped = asyncio.create_task(agent.stopped.wait())
    lost = asyncio.create_task(io.lost.wait())
    await asyncio.wait({reader, stopped, lost}, return_when=asyncio.FIRST_COMPLETED)
    code = agent.exit_code
    if reader.done() and not reader.cancelled() and reader.exception() is not None:
        log(f"reader failed: {reader.exception()!r}")
        code = 1
    eof = reader.done() and not agent.stopped.is_set()
    for task in (reader, stopped, lost):
        task.cancel()
    await conn.shutdown(grace_s=0.2 if eof else 0.0)
    for session in agent.sessions.values():
        agent.save(session)
    await io.flush(2.0)
    return code
