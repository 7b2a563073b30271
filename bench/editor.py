"""The editor side of a sidecar run: start `acp-sidecar`, open a session, prompt, collect."""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import SIDECAR, bench_env
from .lsp_client import LspClient, StatusWatch


@dataclass
class Collected:
    """What the editor received for one prompt."""

    start_ns: int
    done_ns: int = 0  # receipt of the notification that completed the expected text
    text: str = ""
    notifications: int = 0  # acp/sessionUpdate notifications of this turn
    chunk_notifications: int = 0  # of which agent_message_chunk
    stamps: list[tuple[int, str]] = field(default_factory=list)  # (receipt ns, text) per chunk note
    stop_reason: str | None = None

    @property
    def seconds(self) -> float:
        return (self.done_ns - self.start_ns) / 1e9


class SidecarEditor:
    """One `acp-sidecar` process driven over stdio by our minimal LSP client."""

    def __init__(self, client: LspClient, status: StatusWatch, ws: Path) -> None:
        self.client = client
        self.status = status
        self.ws = ws
        self.session_id: str | None = None
        self._collect: Collected | None = None
        self._expected = 0
        self._parts: list[str] = []
        self._size = 0
        self._keep_stamps = False
        self._text_done: asyncio.Future[None] | None = None
        self._turn_done: asyncio.Future[str | None] | None = None
        client.handlers["acp/sessionUpdate"] = self._on_update
        client.handlers["acp/turn"] = self._on_turn

    @classmethod
    async def start(
        cls,
        state: Path,
        ws: Path,
        *,
        agent: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        wait_idle: bool = True,
        prefix: Sequence[str] = (),
        options: Mapping[str, Any] | None = None,
    ) -> SidecarEditor:
        argv = [*prefix, SIDECAR]
        if agent is not None:
            argv += ["--agent", shlex.join(agent)]
        client = await LspClient.spawn(argv, env=bench_env(state, **dict(env or {})), cwd=ws)
        status = StatusWatch(client)
        await client.initialize(ws, options)
        client.notify("initialized", {})
        editor = cls(client, status, ws)
        if wait_idle:
            await status.wait_state("idle")
        return editor

    @property
    def pid(self) -> int:
        return self.client.pid

    async def new_session(self) -> str:
        result = await self.client.command("acp.session.new", {"cwd": str(self.ws)})
        self.session_id = str(result["sessionId"])
        return self.session_id

    async def load_session(self, session_id: str) -> None:
        await self.client.command("acp.session.load", {"sessionId": session_id}, timeout=120)

    # ------------------------------------------------------------------ collecting
    def _on_update(self, params: Any, now: int) -> None:
        got = self._collect
        if got is None:
            return
        got.notifications += 1
        update = params["update"]
        if update.get("sessionUpdate") != "agent_message_chunk":
            return
        got.chunk_notifications += 1
        text = update["content"]["text"]
        self._parts.append(text)
        self._size += len(text)
        if self._keep_stamps:
            got.stamps.append((now, text))
        if self._size >= self._expected and self._text_done is not None and not self._text_done.done():
            got.done_ns = now
            self._text_done.set_result(None)

    def _on_turn(self, params: Any, now: int) -> None:
        if params.get("state") != "ended":
            return
        # The sidecar flushes every update of a turn before its `ended`: a
        # shortfall now is text lost, not text late.
        if self._text_done is not None and not self._text_done.done():
            if self._collect is not None:
                self._collect.done_ns = now
            self._text_done.set_result(None)
        if self._turn_done is not None and not self._turn_done.done():
            self._turn_done.set_result(params.get("stopReason"))

    async def prompt(
        self, text: str, expected_chars: int, *, timeout: float = 600.0, keep_stamps: bool = False
    ) -> Collected:
        """Prompt and wait until `expected_chars` of agent text arrived and the turn ended."""
        loop = asyncio.get_running_loop()
        self._text_done = loop.create_future()
        self._turn_done = loop.create_future()
        self._parts = []
        self._size = 0
        self._expected = expected_chars
        self._keep_stamps = keep_stamps
        got = self._collect = Collected(start_ns=time.monotonic_ns())
        await self.client.command("acp.prompt", {"text": text, "sessionId": self.session_id})
        await asyncio.wait_for(self._text_done, timeout)
        got.stop_reason = await asyncio.wait_for(self._turn_done, timeout)
        got.text = "".join(self._parts)
        self._collect = None
        return got

    async def close(self) -> None:
        await self.client.close()
