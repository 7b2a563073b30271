"""One ``session/prompt`` turn: what it sends, and waits that wake at once on cancel."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterable
from typing import Any, NoReturn

from sidecar.demo_agent.agent import DemoAgent, Session
from sidecar.demo_agent.catalog import CONTEXT_SIZE, PRICE_PER_MILLION_TOKENS
from sidecar.demo_agent.protocol import Connection, JsonObject, RpcError
from sidecar.demo_agent.script import Script
from sidecar.demo_agent.store import merge_meta

STREAM_DRAIN_EVERY = 64
TOKENS_PER_PROMPT = 1200
TOKENS_PER_WORD = 4
# What a compaction summary occupies in the context afterwards.
SUMMARY_TOKENS = 300


class TurnCancelled(Exception):
    """``session/cancel`` (or close) stopped the turn."""


async def forever() -> NoReturn:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def text_content(text: str) -> JsonObject:
    """A tool call content item holding one text block."""
    return {"type": "content", "content": {"type": "text", "text": text}}


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

    def update(self, update: JsonObject, *, record: bool = True) -> None:
        self.agent.send_update(self.session, update, record=record)
        kind = update.get("sessionUpdate")
        if kind == "tool_call":
            self.open_tools.add(str(update["toolCallId"]))
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            self.open_tools.discard(str(update["toolCallId"]))

    def tool_status(self, tool_id: str, status: str) -> None:
        self.update({"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": status})

    def fail_tool(self, tool_id: str, what: str, exc: RpcError | OSError) -> str:
        """Mark a tool call failed with the client's (or the OS's) reason; returns that reason."""
        message = exc.message if isinstance(exc, RpcError) else str(exc)
        self.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_id,
                "status": "failed",
                "content": [text_content(f"{what}: {message}")],
            }
        )
        return message

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
        # A cancel read with the answer (the client sends session/cancel first) wins over it.
        if request.done() and not request.cancelled() and not self.cancelled.is_set():
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
            if index % STREAM_DRAIN_EVERY == STREAM_DRAIN_EVERY - 1:
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

    def finish(self) -> None:
        self.record.history.begin_turn()  # flushes coalesced text

    def usage(self) -> None:
        """usage_update: tokens in context since the last compaction, and the session's cost."""
        record = self.record
        words = sum(len(str(b.get("text", "")).split()) for b in self.blocks)
        used = TOKENS_PER_PROMPT * (record.prompt_count - record.compacted_prompts) + TOKENS_PER_WORD * words
        if record.compacted_prompts:
            used += SUMMARY_TOKENS
        model = record.config["model"]
        size = CONTEXT_SIZE.get(model, 128_000)
        used = min(used, size)
        record.cost = round(record.cost + used * PRICE_PER_MILLION_TOKENS.get(model, 2.0) / 1e6, 6)
        update: JsonObject = {"sessionUpdate": "usage_update", "used": used, "size": size}
        if not self.agent.settings.has("no-cost"):
            update["cost"] = {"amount": record.cost, "currency": "USD"}
        self.update(update)
