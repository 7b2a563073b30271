"""A small raw ACP client for driving the demo agent as a real subprocess.

It records every frame the agent sends, validates each against the vendored
ACP v1 JSON schemas (``tests/schema_check.py``: stable and unstable), and
answers the agent's ``fs/*`` and permission requests with test-provided
callbacks. Nothing here waits without a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import schema_check

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 10.0

RESPONSE_TYPES = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/resume": "ResumeSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/close": "CloseSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/prompt": "PromptResponse",
    "session/set_title": "SetSessionTitleResponse",  # unstable
    "session/fork": "ForkSessionResponse",  # unstable
    # Removed from v1; the legacy fallback answers {} (checked as an extension).
    "session/set_model": "ExtResponse",
}
AGENT_REQUEST_TYPES = {
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
}

Json = Any
Handler = Callable[[dict[str, Any]], Any]


class PeerError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


@dataclass
class Pending:
    id: int
    method: str
    future: asyncio.Future[dict[str, Any]]

    def done(self) -> bool:
        return self.future.done()


@dataclass
class Frame:
    raw: bytes
    msg: Json
    at: float = field(default_factory=time.monotonic)


def _default_read(params: dict[str, Any]) -> dict[str, Any]:
    return {"content": Path(params["path"]).read_text(encoding="utf-8")}


def _default_write(params: dict[str, Any]) -> dict[str, Any]:
    Path(params["path"]).write_text(params["content"], encoding="utf-8")
    return {}


def _default_permission(params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow-once"}}


def agent_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["ACP_DEMO_CHUNK_DELAY_MS"] = "0"  # fast by default; tests that need pace set it
    env.update(extra or {})
    return env


class AgentPeer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.frames: list[Frame] = []
        self.bad_lines: list[bytes] = []
        self.invalid: list[tuple[Json, list[str]]] = []
        self.updates: list[dict[str, Any]] = []  # params of session/update, in order
        self.agent_requests: list[dict[str, Any]] = []
        self.stderr = bytearray()
        self.stderr_total = 0
        self.on_read: Handler = _default_read
        self.on_write: Handler = _default_write
        self.on_permission: Handler = _default_permission
        self.eof = False
        self._ids = itertools.count(1)
        self._pending: dict[Any, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._sent_methods: dict[Any, str] = {}
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._shape_cache: set[str] = set()
        self._reader = asyncio.create_task(self._read_stdout())
        self._err_reader = asyncio.create_task(self._read_stderr())

    @classmethod
    async def start(
        cls,
        state_dir: Path,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
        umask: int = -1,
    ) -> AgentPeer:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sidecar.demo_agent",
            "--state-dir",
            str(state_dir),
            *(args or []),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=agent_env(env),
            limit=256 * 1024 * 1024,
            start_new_session=True,  # its own process group: nothing leaks
            umask=umask,  # -1: inherit ours
        )
        return cls(proc)

    # -- sending -------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send(self, msg: Json) -> None:
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def notify(self, method: str, params: Json) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def start_request(self, method: str, params: Json) -> Pending:
        """Send a request without waiting; see :meth:`response`."""
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (method, future)
        self._sent_methods[request_id] = method
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return Pending(request_id, method, future)

    async def request(self, method: str, params: Json, timeout: float = DEFAULT_TIMEOUT) -> Json:
        return unwrap(await self.response(self.start_request(method, params), timeout))

    async def response(self, pending: Pending, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The whole response frame of a request started earlier."""
        async with asyncio.timeout(timeout):
            return await asyncio.shield(pending.future)

    # -- convenience -----------------------------------------------------------

    async def initialize(
        self, fs: bool = True, version: int = 1, session: dict[str, Any] | None = None
    ) -> Json:
        """``session``: ``clientCapabilities.session`` (e.g. ``{"notices": {}}``), absent if None."""
        caps: dict[str, Any] = {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": False}
        if session is not None:
            caps["session"] = session
        return await self.request(
            "initialize",
            {
                "protocolVersion": version,
                "clientCapabilities": caps,
                "clientInfo": {"name": "acp-peer", "version": "0"},
            },
        )

    async def new_session(self, cwd: Path | str) -> str:
        """A new session, once its ``available_commands_update`` has arrived too
        (it follows the response), so later updates are the test's own."""
        result = await self.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        session_id = str(result["sessionId"])
        await self.wait_for(lambda: "available_commands_update" in self.kinds(session_id))
        return session_id

    async def prompt(
        self, session_id: str, text: str, timeout: float = DEFAULT_TIMEOUT, **extra: Any
    ) -> Json:
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}], **extra}
        return await self.request("session/prompt", params, timeout)

    def session_updates(self, session_id: str, since: int = 0) -> list[dict[str, Any]]:
        return [u["update"] for u in self.updates[since:] if u.get("sessionId") == session_id]

    def kinds(self, session_id: str, since: int = 0) -> list[str]:
        return [str(u.get("sessionUpdate")) for u in self.session_updates(session_id, since)]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = DEFAULT_TIMEOUT) -> Any:
        async with asyncio.timeout(timeout):
            while True:
                result = predicate()
                if result:
                    return result
                if self.eof:
                    raise AssertionError("agent closed stdout while waiting")
                event = self._changed
                await event.wait()

    async def wait_exit(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        async with asyncio.timeout(timeout):
            return await self.proc.wait()

    def take_invalid(self) -> list[tuple[Json, list[str]]]:
        invalid, self.invalid = self.invalid, []
        return invalid

    async def close(self) -> int | None:
        """Close stdin, give the agent a moment, then kill its process group."""
        if self.proc.returncode is None and self.proc.stdin is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(3):
                await self.proc.wait()
        if self.proc.returncode is None:
            self.kill()
            async with asyncio.timeout(5):
                await self.proc.wait()
        for task in (self._reader, self._err_reader, *self._tasks):
            task.cancel()
        await asyncio.gather(self._reader, self._err_reader, *self._tasks, return_exceptions=True)
        return self.proc.returncode

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    # -- reading -------------------------------------------------------------

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while True:
            data = await self.proc.stderr.read(65536)
            if not data:
                return
            self.stderr_total += len(data)
            if len(self.stderr) < 1_000_000:
                self.stderr += data[: 1_000_000 - len(self.stderr)]

    async def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            while True:
                line = await self.proc.stdout.readline()
                if not line:
                    return
                self._on_line(line)
                self._wake()
        finally:
            self.eof = True
            for _, future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("agent closed stdout"))
            self._wake()

    def _on_line(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            self.bad_lines.append(line)
            self.invalid.append((line, ["not JSON"]))
            return
        frame = Frame(line, msg)
        self.frames.append(frame)
        errors = self._validate(msg)
        if errors:
            self.invalid.append((msg, errors))
        if not isinstance(msg, dict):
            return
        if "method" in msg and "id" in msg:
            self.agent_requests.append(msg)
            task = asyncio.create_task(self._answer(msg))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif "method" in msg:
            if msg["method"] == "session/update" and isinstance(msg.get("params"), dict):
                self.updates.append(msg["params"])
        elif "id" in msg:
            entry = self._pending.pop(msg["id"], None)
            if entry is not None and not entry[1].done():
                entry[1].set_result(msg)

    def _validate(self, msg: Json) -> list[str]:
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return ["not a JSON-RPC 2.0 object"]
        if "method" in msg:
            method = msg["method"]
            if "id" in msg:
                type_name = AGENT_REQUEST_TYPES.get(method)
                if type_name is None:
                    return [f"unexpected agent request {method}"]
                return schema_check.errors(type_name, msg.get("params"))
            if method != "session/update":
                return [f"unexpected notification {method}"]
            params = msg.get("params")
            shape = _chunk_shape(params)
            if shape is not None and shape in self._shape_cache:
                return []  # same shape as a chunk already validated (floods)
            errors = schema_check.errors("SessionNotification", params)
            if shape is not None and not errors:
                self._shape_cache.add(shape)
            return errors
        if "id" not in msg:
            return ["frame without id or method"]
        method_for = self._sent_methods.get(msg["id"])
        if msg["id"] is None and "error" in msg:  # e.g. a parse error: no id to echo
            return schema_check.errors("Error", msg["error"])
        if method_for is None:
            return [f"response to an unknown id {msg['id']!r}"]
        if "error" in msg:
            return schema_check.errors("Error", msg["error"])
        if "result" not in msg:
            return ["response without result or error"]
        return schema_check.errors(RESPONSE_TYPES[method_for], msg["result"])

    async def _answer(self, msg: dict[str, Any]) -> None:
        handler = {
            "fs/read_text_file": self.on_read,
            "fs/write_text_file": self.on_write,
            "session/request_permission": self.on_permission,
        }.get(msg["method"])
        try:
            if handler is None:
                raise PeerError(-32601, f"Method not found: {msg['method']}")
            result = handler(msg.get("params") or {})
            if inspect.isawaitable(result):
                result = await result
        except PeerError as exc:
            self.send(
                {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": exc.code, "message": exc.message}}
            )
        except OSError as exc:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": str(exc)}})
        else:
            if result is not None:  # None: the test answers by itself later
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})


def _chunk_shape(params: Json) -> str | None:
    """A key for text chunks that differ only in their text."""
    if not isinstance(params, dict):
        return None
    update = params.get("update")
    if not isinstance(update, dict) or update.get("sessionUpdate") != "agent_message_chunk":
        return None
    content = update.get("content")
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        return None
    skeleton = dict(params, update=dict(update, content=dict(content, text="")))
    return json.dumps(skeleton, sort_keys=True)


def unwrap(response: dict[str, Any]) -> Json:
    if "error" in response:
        error = response["error"]
        raise PeerError(error.get("code"), error.get("message"), error.get("data"))
    return response["result"]


def chunk_text(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(
        u["content"].get("text", "")
        for u in updates
        if u.get("sessionUpdate") == kind and isinstance(u.get("content"), dict)
    )
