"""A raw LSP client over the sidecar's real pipes: for tests that must send what no
well-behaved client would (bad framing, bad bytes) or start it with odd arguments."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.lsp.editor import SIDECAR
from tests.procs import descendants

JsonObj = dict[str, Any]


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawSidecar:
    """The sidecar as a subprocess; every message it sends is kept in `received`.

    Requests from the sidecar (showMessageRequest, progress create, applyEdit)
    are answered with `null` so that nothing waits on this client.
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.received: list[JsonObj] = []
        self.stderr = bytearray()
        self._cond = asyncio.Condition()
        self._next_id = 1
        self._reader = asyncio.ensure_future(self._read())
        self._stderr_reader = asyncio.ensure_future(self._read_stderr())

    @classmethod
    async def start(
        cls,
        workspace: Path,
        state_dir: Path,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> RawSidecar:
        server_env = dict(os.environ, ACP_SIDECAR_STATE_DIR=str(state_dir))
        server_env.pop("ACP_SIDECAR_AGENT", None)
        server_env.update(env or {})
        proc = await asyncio.create_subprocess_exec(
            SIDECAR,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=server_env,
            cwd=str(workspace),
        )
        return cls(proc)

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = await out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                key, _, value = line.decode().partition(":")
                if key.lower() == "content-length":
                    length = int(value)
            msg = json.loads(await out.readexactly(length))
            if "method" in msg and "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            async with self._cond:
                self.received.append(msg)
                self._cond.notify_all()

    async def _read_stderr(self) -> None:
        err = self.proc.stderr
        assert err is not None
        while chunk := await err.read(65536):
            self.stderr += chunk

    # ------------------------------------------------------------------ sending
    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send(self, obj: Any) -> None:
        self.send_bytes(frame(json.dumps(obj).encode()))

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def request(self, method: str, params: Any, timeout: float = 30) -> JsonObj:
        msg_id = self.new_id()
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await self.answer(msg_id, timeout)

    async def command(self, name: str, *args: Any, timeout: float = 30) -> JsonObj:
        return await self.request(
            "workspace/executeCommand", {"command": name, "arguments": list(args)}, timeout
        )

    # ------------------------------------------------------------------ receiving
    async def wait_for(self, pred: Callable[[JsonObj], bool], timeout: float = 30) -> JsonObj:
        index = 0
        async with asyncio.timeout(timeout), self._cond:
            while True:
                while index < len(self.received):
                    msg = self.received[index]
                    index += 1
                    if pred(msg):
                        return msg
                await self._cond.wait()

    async def answer(self, msg_id: Any, timeout: float = 30) -> JsonObj:
        return await self.wait_for(lambda m: "method" not in m and m.get("id") == msg_id, timeout)

    def answers_to(self, msg_id: Any) -> list[JsonObj]:
        return [m for m in self.received if "method" not in m and m.get("id") == msg_id]

    def of(self, method: str) -> list[Any]:
        return [m.get("params") for m in self.received if m.get("method") == method]

    # ------------------------------------------------------------------ lifecycle
    async def initialize(self, workspace: Path, process_id: int | None = None) -> JsonObj:
        answer = await self.request(
            "initialize",
            {"processId": process_id, "rootUri": workspace.as_uri(), "capabilities": {}},
        )
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return answer

    async def wait_idle(self, timeout: float = 30) -> None:
        await self.wait_for(
            lambda m: m.get("method") == "acp/status" and m["params"]["state"] == "idle", timeout
        )

    async def agent_pids(self, timeout: float = 15) -> set[int]:
        """The agent's processes: it is started first (agents start on first use: a new session)."""
        await self.command("acp.session.new", {}, timeout=timeout)
        async with asyncio.timeout(timeout):
            while not descendants(self.proc.pid):
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        return descendants(self.proc.pid)

    async def close(self) -> None:
        kids = descendants(self.proc.pid) if self.proc.returncode is None else set()
        if self.proc.returncode is None:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout=10)
                self.send({"jsonrpc": "2.0", "method": "exit"})
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    await self.proc.wait()
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        for task in (self._reader, self._stderr_reader):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        for pid in kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
