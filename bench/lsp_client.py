"""A minimal LSP client: Content-Length framing over a subprocess's stdio, asyncio.

It is the "editor side" of the benchmarks: it stamps every message with
`time.monotonic_ns()` as it is parsed, hands notifications to callbacks
synchronously (in arrival order), and answers the few requests a server sends
an editor (progress tokens, dialogs, edits) so that nothing waits on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .common import STREAM_LIMIT, stop_process

Handler = Callable[[Any, int], None]  # (params, receipt time in monotonic ns)

# What an ordinary editor advertises that matters to the sidecar: progress,
# edits, dialogs (as Neovim 0.11 and VS Code do).
EDITOR_CAPABILITIES: dict[str, Any] = {
    "window": {"workDoneProgress": True, "showMessage": {}},
    "workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}, "workspaceFolders": True},
}

_ANSWERS: dict[str, Any] = {
    "window/workDoneProgress/create": None,
    "window/showMessageRequest": None,
    "workspace/applyEdit": {"applied": False},
    "client/registerCapability": None,
    "client/unregisterCapability": None,
}


class LspError(RuntimeError):
    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = dict(error)


class LspClient:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        assert proc.stdin is not None and proc.stdout is not None
        self._stdin = proc.stdin
        self._stdout = proc.stdout
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.handlers: dict[str, Handler] = {}
        self.counts: dict[str, int] = {}
        self.bytes_in = 0
        self._reader = asyncio.ensure_future(self._read_loop())
        self.closed = asyncio.Event()

    @classmethod
    async def spawn(
        cls, argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | Path | None = None
    ) -> LspClient:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=str(cwd) if cwd is not None else None,
            limit=STREAM_LIMIT,
        )
        return cls(proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    # ------------------------------------------------------------------ sending
    def _write(self, msg: Mapping[str, Any]) -> None:
        body = json.dumps(msg, separators=(",", ":")).encode()
        self._stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        msg_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)
        await self._stdin.drain()
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop(msg_id, None)

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)

    async def command(self, name: str, *arguments: Any, timeout: float = 60.0) -> Any:
        return await self.request(
            "workspace/executeCommand", {"command": name, "arguments": list(arguments)}, timeout
        )

    # ------------------------------------------------------------------ reading
    async def _read_loop(self) -> None:
        stdout = self._stdout
        try:
            while True:
                try:
                    header = await stdout.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                length = -1
                for line in header.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length < 0:
                    raise RuntimeError(f"no Content-Length in {header!r}")
                body = await stdout.readexactly(length)
                now = time.monotonic_ns()
                self.bytes_in += len(header) + length
                self._dispatch(json.loads(body), now)
        finally:
            self.closed.set()
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("the server closed its output"))

    def _dispatch(self, msg: dict[str, Any], now: int) -> None:
        method = msg.get("method")
        if method is None:
            fut = self._pending.get(msg.get("id"))  # type: ignore[arg-type]
            if fut is not None and not fut.done():
                if msg.get("error") is not None:
                    fut.set_exception(LspError(msg["error"]))
                else:
                    fut.set_result(msg.get("result"))
            return
        self.counts[method] = self.counts.get(method, 0) + 1
        if "id" in msg:
            if method in _ANSWERS:
                self._write({"jsonrpc": "2.0", "id": msg["id"], "result": _ANSWERS[method]})
            elif method == "workspace/configuration":
                items = msg.get("params", {}).get("items", [])
                self._write({"jsonrpc": "2.0", "id": msg["id"], "result": [None] * len(items)})
            else:
                self._write({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": method}})
            return
        handler = self.handlers.get(method)
        if handler is not None:
            handler(msg.get("params"), now)

    # ------------------------------------------------------------------ lifecycle
    async def initialize(self, root: Path, options: Mapping[str, Any] | None = None) -> Any:
        result = await self.request(
            "initialize",
            {
                "processId": None,
                "clientInfo": {"name": "acp-bench", "version": "1"},
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "capabilities": EDITOR_CAPABILITIES,
                "initializationOptions": dict(options or {}),
            },
        )
        return result

    async def close(self, timeout: float = 10.0) -> None:
        """shutdown + exit, then wait for the process (killed if it lingers)."""
        if self.proc.returncode is None and not self.closed.is_set():
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout)
            with contextlib.suppress(Exception):
                self.notify("exit")
                await self._stdin.drain()
            with contextlib.suppress(Exception):
                self._stdin.close()
        await stop_process(self.proc, timeout)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader


class StatusWatch:
    """Follows `acp/status`; `wait_state` returns the receipt time of the first matching one."""

    def __init__(self, client: LspClient) -> None:
        self.last: dict[str, Any] | None = None
        self._waiters: list[tuple[str, asyncio.Future[int]]] = []
        client.handlers["acp/status"] = self._on_status

    def _on_status(self, params: Any, now: int) -> None:
        self.last = params
        state = params.get("state") if isinstance(params, dict) else None
        for wanted, fut in list(self._waiters):
            if state == wanted and not fut.done():
                fut.set_result(now)
                self._waiters.remove((wanted, fut))

    async def wait_state(self, state: str, timeout: float = 60.0) -> int:
        if self.last is not None and self.last.get("state") == state:
            return time.monotonic_ns()
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append((state, fut))
        return await asyncio.wait_for(fut, timeout)
