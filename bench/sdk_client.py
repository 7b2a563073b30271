"""Baseline (b): a minimal client on the ACP Python SDK (`agent-client-protocol`).

It does what an SDK-based editor integration would do at the least: parse
every `session/update` into the SDK's models and keep the agent's text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import text_block
from acp.schema import AgentMessageChunk, ClientCapabilities, FileSystemCapabilities
from acp.stdio import spawn_agent_process

from .common import STREAM_LIMIT


class TextClient:
    """An `acp.Client`: keeps agent text; refuses everything else."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.expected = 0
        self.done_ns = 0
        self.frames = 0
        self.keep_stamps = False
        self.stamps: list[tuple[int, str]] = []  # (receipt monotonic ns, text)
        self.done: asyncio.Future[None] | None = None

    def arm(self, expected: int, keep_stamps: bool = False) -> None:
        self.parts, self.size, self.frames, self.done_ns = [], 0, 0, 0
        self.expected = expected
        self.keep_stamps = keep_stamps
        self.stamps = []
        self.done = asyncio.get_running_loop().create_future()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk) and getattr(update.content, "type", None) == "text":
            text = update.content.text
            if self.keep_stamps:
                self.stamps.append((time.monotonic_ns(), text))
            self.frames += 1
            self.parts.append(text)
            self.size += len(text)
            if self.size >= self.expected and self.done is not None and not self.done.done():
                self.done_ns = time.monotonic_ns()
                self.done.set_result(None)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def on_connect(self, conn: Any) -> None:
        pass


@dataclass
class SdkRun:
    seconds: float  # prompt sent -> all expected text received
    frames: int
    text: str
    stamps: list[tuple[int, str]]


async def sdk_prompt(
    agent: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    prompt: str,
    expected: int,
    *,
    timeout: float = 600,
    keep_stamps: bool = False,
) -> SdkRun:
    """Start the agent, open a session, prompt, wait for `expected` characters of text.

    With `expected` 0, wait for the prompt's answer instead (the SDK returns it
    only after every update before it was handled).
    """
    client = TextClient()
    async with (
        spawn_agent_process(
            client,  # type: ignore[arg-type]
            agent[0],
            *agent[1:],
            env=dict(env),
            transport_kwargs={"limit": STREAM_LIMIT, "stderr": asyncio.subprocess.DEVNULL},
        ) as (conn, _proc)
    ):
        await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(), terminal=False),
        )
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        client.arm(expected, keep_stamps)
        assert client.done is not None
        start = time.monotonic_ns()
        await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block(prompt)]), timeout
        )
        if expected:
            await asyncio.wait_for(client.done, timeout)
        else:
            client.done_ns = time.monotonic_ns()
        return SdkRun((client.done_ns - start) / 1e9, client.frames, "".join(client.parts), client.stamps)
