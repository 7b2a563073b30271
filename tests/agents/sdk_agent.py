"""A foreign peer: a minimal agent written against the ACP Python SDK's `Agent` interface.

It greets, reads README.md through the client when asked about it, and echoes
the prompt back in words. Used to prove our client interoperates with the SDK.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from acp import (
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    text_block,
    update_agent_message,
)
from acp.interfaces import Client


class WordEchoAgent(Agent):
    def __init__(self) -> None:
        self._conn: Client | None = None
        self._cwd: dict[str, str] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = f"sdk-{uuid.uuid4().hex[:8]}"
        self._cwd[session_id] = cwd
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        assert self._conn is not None
        words: list[str] = []
        for block in prompt:
            text = getattr(block, "text", None)
            if isinstance(text, str):
                words.extend(text.split())
        if "readme" in " ".join(words).lower():
            path = os.path.join(self._cwd[session_id], "README.md")
            read = await self._conn.read_text_file(path=path, session_id=session_id)
            words.append(f"[{len(read.content.splitlines())} lines]")
        for word in words:
            await self._conn.session_update(
                session_id=session_id, update=update_agent_message(text_block(word + " "))
            )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(WordEchoAgent()))
