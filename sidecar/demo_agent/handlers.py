"""The demo agent's ACP request and notification handlers (one method each)."""

from __future__ import annotations

import asyncio
import copy
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from sidecar.acp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
)
from sidecar.demo_agent import catalog, steps
from sidecar.demo_agent import script as scripting
from sidecar.demo_agent.agent import DemoAgent, Session
from sidecar.demo_agent.params import (
    absolute_path,
    additional_directories,
    check_mcp_servers,
    decode_cursor,
    encode_cursor,
    optional_str,
    require_str,
    same_dir,
    session_title,
)
from sidecar.demo_agent.protocol import Incoming, JsonObject, RpcError
from sidecar.demo_agent.script import ScriptError
from sidecar.demo_agent.store import SessionRecord, now_iso, parse_time
from sidecar.demo_agent.turn import Turn, forever

LATE_DELAY = 0.05
COMPACTION_KINDS = {"compaction_update", "compaction_summary_chunk"}
REPLAY_DRAIN_EVERY = 256

Handler = Callable[[JsonObject, Incoming], Awaitable[Any]]


class Handlers:
    """Answers the client's requests for one :class:`DemoAgent`."""

    def __init__(self, agent: DemoAgent) -> None:
        self.agent = agent
        self._table: dict[str, Handler] = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "logout": self.logout,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/resume": self.resume_session,
            "session/list": self.list_sessions,
            "session/close": self.close_session,
            "session/delete": self.delete_session,
            "session/fork": self.fork_session,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
            "session/set_model": self.set_model,
            "session/set_title": self.set_title,
            "session/prompt": self.prompt,
        }

    async def handle_request(self, method: str, params: JsonObject, incoming: Incoming) -> Any:
        handler = self._table.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return await handler(params, incoming)

    async def handle_notification(self, method: str, params: JsonObject) -> None:
        if method == "session/cancel":
            session = self.agent.sessions.get(str(params.get("sessionId")))
            if session is not None and session.turn is not None:
                session.turn.cancel()
        # Unknown notifications are ignored, as JSON-RPC asks.

    # -- lifecycle -----------------------------------------------------------

    async def initialize(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        agent = self.agent
        settings = agent.settings
        if settings.crash_at == "initialize":
            agent.c.hung = True
            agent.stop(3)
            await forever()
        version = params.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool):
            raise RpcError(INVALID_PARAMS, "Invalid params: 'protocolVersion' must be an integer")
        caps = params.get("clientCapabilities")
        fs = caps.get("fs") if isinstance(caps, dict) else None
        agent.client_read = isinstance(fs, dict) and fs.get("readTextFile") is True
        agent.client_write = isinstance(fs, dict) and fs.get("writeTextFile") is True
        agent.client_terminal = isinstance(caps, dict) and caps.get("terminal") is True
        agent.client_elicitation = isinstance(caps, dict) and isinstance(caps.get("elicitation"), dict)
        # Omitted or null means unsupported; an object (even {}) declares support.
        client_session = caps.get("session") if isinstance(caps, dict) else None
        agent.client_notices = isinstance(client_session, dict) and isinstance(
            client_session.get("notices"), dict
        )
        agent.client_compaction = isinstance(client_session, dict) and isinstance(
            client_session.get("compaction"), dict
        )
        session_caps: JsonObject = {}
        for cap in ("list", "resume", "close", "delete", "fork"):
            if not settings.has(f"no-{cap}"):
                session_caps[cap] = {}
        if not settings.has("no-set-title"):
            session_caps["title"] = {}  # session/set_title (unstable)
        return {
            "protocolVersion": catalog.PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": not settings.has("no-load"),
                "promptCapabilities": {
                    "image": False,
                    "audio": False,
                    "embeddedContext": not settings.has("no-embedded"),
                },
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": session_caps,
                **({"auth": {"logout": {}}} if settings.has("auth") else {}),
            },
            "agentInfo": catalog.agent_info(settings.name),
            "authMethods": [catalog.AUTH_METHOD] if settings.has("auth") else [],
        }

    async def authenticate(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        method_id = require_str(params, "methodId")
        if not self.agent.settings.has("auth") or method_id != catalog.AUTH_METHOD["id"]:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown 'methodId' {method_id!r}")
        self.agent.authenticated = True
        return {}

    async def logout(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        """Offered with ``auth``: what needs authentication asks for it again."""
        self.agent.require_offered_with("auth", "logout")
        self.agent.authenticated = False
        return {}

    # -- sessions ------------------------------------------------------------

    async def new_session(self, params: JsonObject, incoming: Incoming) -> None:
        agent = self.agent
        agent.require_auth()
        cwd = absolute_path(params, "cwd", must_exist=True)
        check_mcp_servers(params, required=True)
        dirs = additional_directories(params) or []
        session_id = "demo-" + secrets.token_hex(6)
        record = SessionRecord(
            session_id=session_id, cwd=cwd, additional_directories=dirs, updated_at=now_iso()
        )
        session = Session(record)
        agent.sessions[session_id] = session
        agent.save(session)
        incoming.respond({"sessionId": session_id, **agent.session_state(record)})
        agent.send_commands(session)

    def _open_saved(self, params: JsonObject, method: str) -> Session:
        agent = self.agent
        agent.require_auth()
        session_id = require_str(params, "sessionId")
        cwd = absolute_path(params, "cwd", must_exist=False)
        check_mcp_servers(params, required=method == "session/load")
        dirs = additional_directories(params)
        existing = agent.sessions.get(session_id)
        if existing is not None and existing.turn is not None:
            raise RpcError(INVALID_REQUEST, f"A prompt is running in session {session_id}")
        record = existing.record if existing is not None else agent.store.load(session_id)
        if record is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")
        record.cwd = cwd
        if dirs is not None:
            record.additional_directories = dirs
        session = Session(record)
        agent.sessions[session_id] = session
        agent.unlive_forks.discard(session_id)
        return session

    async def load_session(self, params: JsonObject, incoming: Incoming) -> None:
        agent = self.agent
        agent.require_offered("no-load", "session/load")
        session = self._open_saved(params, "session/load")
        # Replay only: nothing is re-executed, no fs or permission requests.
        for index, update in enumerate(session.record.history.snapshot()):
            if update.get("sessionUpdate") in COMPACTION_KINDS and not agent.client_compaction:
                continue  # this client did not declare session.compaction
            agent.send_update(session, update, record=False)
            if index % REPLAY_DRAIN_EVERY == REPLAY_DRAIN_EVERY - 1:
                await agent.c.drain()
        incoming.respond(agent.session_state(session.record))
        agent.send_commands(session)

    async def resume_session(self, params: JsonObject, incoming: Incoming) -> None:
        agent = self.agent
        agent.require_offered("no-resume", "session/resume")
        session = self._open_saved(params, "session/resume")
        incoming.respond(agent.session_state(session.record))
        agent.send_commands(session)

    async def list_sessions(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        agent = self.agent
        agent.require_offered("no-list", "session/list")
        agent.require_auth()
        cwd = optional_str(params, "cwd")
        cursor = optional_str(params, "cursor")
        offset = decode_cursor(cursor) if cursor is not None else 0
        records = {r.session_id: r for r in agent.store.list_records()}
        for session_id, session in agent.sessions.items():
            records[session_id] = session.record  # newer than the file mid-turn
        matching = [r for r in records.values() if cwd is None or same_dir(r.cwd, cwd)]
        matching.sort(key=lambda r: (-parse_time(r.updated_at), r.session_id))
        size = agent.settings.page_size
        page = matching[offset : offset + size]
        result: JsonObject = {"sessions": [r.info() for r in page]}
        if agent.settings.list_loop:
            result["nextCursor"] = encode_cursor(0)
        elif offset + size < len(matching):
            result["nextCursor"] = encode_cursor(offset + size)
        return result

    async def close_session(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        agent = self.agent
        agent.require_offered("no-close", "session/close")
        session_id = require_str(params, "sessionId")
        session = agent.sessions.pop(session_id, None)
        if session is None:
            if not agent.store.exists(session_id):
                raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")
            return {}
        if session.turn is not None:
            session.turn.cancel()
        return {}

    async def delete_session(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        agent = self.agent
        agent.require_offered("no-delete", "session/delete")
        agent.require_auth()
        session_id = require_str(params, "sessionId")
        session = agent.sessions.pop(session_id, None)
        if session is not None and session.turn is not None:
            session.turn.cancel()
        if not agent.store.delete(session_id) and session is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")
        return {}

    async def fork_session(self, params: JsonObject, incoming: Incoming) -> None:
        """A copy of the stored session (history, mode, config; not its title) under a new id.
        With ``fork-not-live`` the copy is stored but not loaded: a prompt fails as
        claude-agent-acp's does until session/resume or session/load."""
        agent = self.agent
        agent.require_offered("no-fork", "session/fork")
        agent.require_auth()
        parent_id = require_str(params, "sessionId")
        cwd = absolute_path(params, "cwd", must_exist=True)
        check_mcp_servers(params, required=True)
        dirs = additional_directories(params)
        loaded = agent.sessions.get(parent_id)
        parent = loaded.record if loaded is not None else agent.store.load(parent_id)
        if parent is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {parent_id}")
        data = copy.deepcopy(parent.to_json())  # shares nothing with the parent
        # The parent's titles are the parent's: a replay of the fork does not retitle it.
        data["history"] = [u for u in data["history"] if u.get("sessionUpdate") != "session_info_update"]
        record = SessionRecord.from_json(data)
        record.session_id = "demo-" + secrets.token_hex(6)
        record.cwd = cwd
        record.title = None
        record.updated_at = now_iso()
        if dirs is not None:
            record.additional_directories = dirs
        agent.save_record(record)
        if agent.settings.has("fork-not-live"):
            agent.unlive_forks.add(record.session_id)
            incoming.respond({"sessionId": record.session_id, **agent.session_state(record)})
            return
        session = Session(record)
        agent.sessions[record.session_id] = session
        incoming.respond({"sessionId": record.session_id, **agent.session_state(record)})
        agent.send_commands(session)

    # -- settings ------------------------------------------------------------

    async def set_mode(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        session = self.agent.loaded_session(params)
        mode_id = require_str(params, "modeId")
        if mode_id not in catalog.MODE_IDS:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown 'modeId' {mode_id!r}")
        self.agent.switch_mode(session, mode_id)
        return {}

    async def set_config_option(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        agent = self.agent
        session = agent.loaded_session(params)
        config_id = require_str(params, "configId")
        value = params.get("value")
        option = next((o for o in agent.config_options(session.record) if o["id"] == config_id), None)
        if option is None:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown 'configId' {config_id!r}")
        allowed = [o["value"] for o in option["options"]]
        if value not in allowed:
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: 'value' for {config_id} must be one of {', '.join(allowed)}",
            )
        session.record.config[config_id] = str(value)
        options = agent.config_options(session.record)
        agent.send_update(session, {"sessionUpdate": "config_option_update", "configOptions": options})
        agent.save(session)
        return {"configOptions": options}

    async def set_model(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        agent = self.agent
        if not agent.legacy_model:
            raise RpcError(METHOD_NOT_FOUND, "Method not found: session/set_model")
        session = agent.loaded_session(params)
        model_id = require_str(params, "modelId")
        if model_id not in catalog.MODEL_IDS:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown 'modelId' {model_id!r}")
        session.record.config["model"] = model_id
        agent.save(session)
        return {}

    async def set_title(self, params: JsonObject, incoming: Incoming) -> JsonObject:
        """session/set_title (unstable): any stored session, loaded here or not; answers once saved."""
        agent = self.agent
        agent.require_offered("no-set-title", "session/set_title")
        agent.require_auth()
        session_id = require_str(params, "sessionId")
        require_str(params, "title")
        session = agent.sessions.get(session_id)
        record = session.record if session is not None else agent.store.load(session_id)
        if record is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")
        title = session_title(params)
        update: JsonObject = {"sessionUpdate": "session_info_update", "title": title}
        previous = record.title
        record.title = title
        record.history.append(update)  # a later session/load replays the new title
        try:
            agent.store.save(record)
        except OSError as exc:
            record.title = previous
            record.history.drop_last()
            raise RpcError(INTERNAL_ERROR, f"could not save session {session_id}: {exc}") from None
        if session is not None:
            # As agents that report titles do: the live view follows the stored title.
            agent.send_update(session, update, record=False)
        return {"title": title}

    # -- prompt --------------------------------------------------------------

    async def prompt(self, params: JsonObject, incoming: Incoming) -> None:
        agent = self.agent
        session = agent.loaded_session(params)
        blocks = params.get("prompt")
        if not isinstance(blocks, list) or not all(
            isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks
        ):
            raise RpcError(INVALID_PARAMS, "Invalid params: 'prompt' must be an array of content blocks")
        for block in blocks:
            kind = block["type"]
            if kind in ("image", "audio"):
                raise RpcError(INVALID_PARAMS, f"Invalid params: 'prompt' has {kind} content, not supported")
            if kind == "resource" and agent.settings.has("no-embedded"):
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
        turn = Turn(agent, session, blocks, script)
        session.turn = turn
        try:
            stop_reason = await steps.run(turn)
        finally:
            session.turn = None
            turn.finish()
            agent.save(session)
        incoming.respond({"stopReason": stop_reason})
        if script.late:
            await asyncio.sleep(LATE_DELAY)
            turn.chunk("late update", message_id=turn.new_id("late"))
            agent.save(session)
