"""Baseline (a): the limit. A reader that only splits lines and parses JSON.

Two forms: the demo agent's own output read directly (the agent's speed plus a
parse), and the very same frames, recorded, through a plain pipe (`cat`), which
is what any relay at all would be compared with.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .common import stop_process

_READ = 256 * 1024
FrameHandler = Callable[[dict[str, Any], int], None]  # (frame, receipt monotonic ns)


class RawAcp:
    """Newline-delimited JSON-RPC to an agent subprocess; nothing but json.loads."""

    def __init__(self, proc: asyncio.subprocess.Process, on_frame: FrameHandler) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self._stdin = proc.stdin
        self._stdout = proc.stdout
        self._on_frame = on_frame
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.frames = 0
        self._task = asyncio.ensure_future(self._read())

    @classmethod
    async def spawn(cls, argv: Sequence[str], env: Mapping[str, str], on_frame: FrameHandler) -> RawAcp:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(env),
        )
        return cls(proc, on_frame)

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        frame = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self._stdin.write(json.dumps(frame).encode() + b"\n")
        await self._stdin.drain()
        return await fut

    async def _read(self) -> None:
        buf = b""
        stdout = self._stdout
        while True:
            data = await stdout.read(_READ)
            if not data:
                break
            now = time.monotonic_ns()
            lines = (buf + data).split(b"\n")
            buf = lines.pop()
            for line in lines:
                if line:
                    self._frame(json.loads(line), now)

    def _frame(self, msg: dict[str, Any], now: int) -> None:
        self.frames += 1
        if "method" not in msg:
            fut = self._pending.pop(msg["id"], None)
            if fut is not None and not fut.done():
                if msg.get("error") is not None:
                    fut.set_exception(RuntimeError(str(msg["error"])))
                else:
                    fut.set_result(msg.get("result"))
            return
        if "id" in msg:  # a request to the client: this baseline offers nothing
            err = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
            self._stdin.write(json.dumps(err).encode() + b"\n")
            return
        self._on_frame(msg, now)

    async def close(self) -> None:
        self._stdin.close()
        await stop_process(self.proc, 5)
        self._task.cancel()


async def open_session(acp: RawAcp, cwd: Path) -> str:
    await acp.request(
        "initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {}, "terminal": False}}
    )
    result = await acp.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    return str(result["sessionId"])


class TextCollector:
    """Collects agent_message_chunk text; resolves once `expected` characters arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.parts: list[str] = []
        self.size = 0
        self.frames = 0
        self.done_ns = 0
        self.stamps: list[tuple[int, str]] = []
        self.keep_stamps = False
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def __call__(self, msg: dict[str, Any], now: int) -> None:
        if msg.get("method") != "session/update":
            return
        update = msg["params"]["update"]
        if update.get("sessionUpdate") != "agent_message_chunk":
            return
        self.frames += 1
        text = update["content"]["text"]
        self.parts.append(text)
        self.size += len(text)
        if self.keep_stamps:
            self.stamps.append((now, text))
        if self.size >= self.expected and not self.done.done():
            self.done_ns = now
            self.done.set_result(None)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def flood_frames(count: int, session_id: str = "demo-0123456789ab", message_id: str = "msg-1") -> bytes:
    """The frames the demo agent writes for `#chunks=count`, byte for byte in shape."""
    template = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": session_id,
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "\u0000"},
                    "messageId": message_id,
                },
            },
        },
        separators=(",", ":"),
    ).encode()
    prefix, suffix = template.split(b"\\u0000")
    return b"".join(prefix + f"c{i} ".encode() + suffix + b"\n" for i in range(count))


async def pipe_limit(count: int) -> tuple[float, int, bool]:
    """Recorded frames through `cat` into a JSON-lines parser: (seconds, frames, text intact)."""
    with tempfile.NamedTemporaryFile(prefix="acp-bench-frames-", suffix=".ndjson") as tmp:
        tmp.write(flood_frames(count))
        tmp.flush()
        Path(tmp.name).stat()  # written through
        collector = TextCollector(sum(len(f"c{i} ") for i in range(count)))
        start = time.monotonic_ns()
        proc = await asyncio.create_subprocess_exec(
            "cat", tmp.name, stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
        )
        assert proc.stdout is not None
        buf = b""
        while True:
            data = await proc.stdout.read(_READ)
            if not data:
                break
            now = time.monotonic_ns()
            lines = (buf + data).split(b"\n")
            buf = lines.pop()
            for line in lines:
                collector(json.loads(line), now)
        await proc.wait()
        seconds = (collector.done_ns - start) / 1e9
        expected = "".join(f"c{i} " for i in range(count))
        return seconds, collector.frames, collector.text == expected
