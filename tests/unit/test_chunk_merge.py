"""Text chunks queued behind each other in the agent connection are routed as one, losslessly."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.acp.chunk_merge import MAX_MERGED_CHARS, ChunkMerger, merge_queued
from sidecar.acp.jsonrpc import JsonRpcConnection, NotificationMerger
from tests.agent_stdin import AgentStdin

pytestmark = pytest.mark.inprocess


def chunk(text: str, session: str = "s1", kind: str = "agent_message_chunk", **extra: Any) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}, **extra}
    return {"sessionId": session, "update": update}


def test_two_text_chunks_of_one_message_become_one() -> None:
    queued = chunk("Hello, ")
    assert merge_queued("session/update", queued, chunk("world"))
    assert queued == chunk("Hello, world")
    with_id = chunk("a", messageId="m1")
    assert merge_queued("session/update", with_id, chunk("b", messageId="m1"))
    assert with_id == chunk("ab", messageId="m1")


@pytest.mark.parametrize(
    "new",
    [
        chunk("x", session="s2"),  # another session
        chunk("x", kind="agent_thought_chunk"),  # another kind of message
        chunk("x", messageId="m2"),  # another message
        {**chunk("x"), "_meta": {"k": 1}},  # more than the bare frame
        chunk("x", _meta={"k": 1}),
        {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "image"}}},
        {
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "x", "annotations": {"priority": 1}},
            },
        },
        {"sessionId": "s1", "update": {"sessionUpdate": "tool_call", "toolCallId": "t"}},
        chunk("x" * MAX_MERGED_CHARS),  # the two together would pass the bound
        None,
        "text",
    ],
)
def test_anything_else_stays_its_own_update(new: Any) -> None:
    queued = chunk("Hello")
    before, new_before = copy.deepcopy(queued), copy.deepcopy(new)
    assert not merge_queued("session/update", queued, new)
    assert queued == before and (new == new_before or new_before is None)
    assert not merge_queued("some/other", chunk("a"), chunk("b"))


texts = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2"]), st.sampled_from(["agent_message_chunk", "tool"]), st.text(max_size=40)
    ),
    min_size=1,
    max_size=60,
)


MERGERS: tuple[Callable[[], NotificationMerger], ...] = (lambda: merge_queued, ChunkMerger)


@pytest.mark.parametrize("make_merger", MERGERS, ids=["function", "per-connection"])
@settings(max_examples=60, deadline=None)
@given(items=texts)
def test_what_is_dispatched_says_exactly_what_the_agent_sent(
    make_merger: Callable[[], NotificationMerger], items: list[tuple[str, str, str]]
) -> None:
    """Frames fed in one piece queue up and merge; per session the text, and the order of the other
    updates between the chunks, are what the agent sent."""

    async def run() -> list[tuple[str, Any]]:
        reader = asyncio.StreamReader()
        seen: list[tuple[str, Any]] = []

        async def on_request(method: str, params: Any) -> Any:
            return None

        conn = JsonRpcConnection(
            reader,
            AgentStdin(),
            on_notification=lambda method, params: seen.append((method, copy.deepcopy(params))),
            on_request=on_request,
            merge=make_merger(),
        )
        frames = []
        for session, kind, text in items:
            params = (
                chunk(text, session)
                if kind == "agent_message_chunk"
                else {"sessionId": session, "update": {"sessionUpdate": "tool_call", "toolCallId": text}}
            )
            frames.append(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}))
        reader.feed_data(("\n".join(frames) + "\n").encode())
        reader.feed_eof()
        conn.start()
        async with asyncio.timeout(5):
            await conn.wait_closed()
            await conn.aclose()
        return seen

    seen = asyncio.run(run())

    def stream(updates: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        """Per session: runs of text joined, tool calls as they came."""
        out: list[tuple[str, str, str]] = []
        for session, kind, text in updates:
            if out and kind == "text" and out[-1][:2] == (session, "text"):
                out[-1] = (session, "text", out[-1][2] + text)
            else:
                out.append((session, kind, text))
        return [o for o in out if o[1] != "text" or o[2]]

    if len(items) == 60 and all(k == "agent_message_chunk" and s == "s1" for s, k, _ in items):
        assert len(seen) < len(items)  # queued behind each other, they merged
    sent = [(s, "text" if k == "agent_message_chunk" else "tool", t) for s, k, t in items]
    got = []
    for _method, params in seen:
        update = params["update"]
        is_text = update["sessionUpdate"] == "agent_message_chunk"
        got.append(
            (
                params["sessionId"],
                "text" if is_text else "tool",
                update["content"]["text"] if is_text else update["toolCallId"],
            )
        )
    assert stream(got) == stream(sent)
    assert len(seen) <= len(items)


@pytest.mark.parametrize("make_merger", MERGERS, ids=["function", "per-connection"])
def test_a_burst_of_chunks_is_dispatched_as_a_few_updates(
    make_merger: Callable[[], NotificationMerger],
) -> None:
    async def run() -> list[Any]:
        reader = asyncio.StreamReader()
        seen: list[Any] = []

        async def on_request(method: str, params: Any) -> Any:
            return None

        conn = JsonRpcConnection(
            reader,
            AgentStdin(),
            on_notification=lambda method, params: seen.append(params),
            on_request=on_request,
            merge=make_merger(),
        )
        frame = {"jsonrpc": "2.0", "method": "session/update", "params": chunk("0123456789")}
        reader.feed_data((json.dumps(frame) + "\n").encode() * 1000)
        reader.feed_eof()
        conn.start()
        async with asyncio.timeout(5):
            await conn.wait_closed()
            await conn.aclose()
        return seen

    seen = asyncio.run(run())
    assert "".join(p["update"]["content"]["text"] for p in seen) == "0123456789" * 1000
    assert all(len(p["update"]["content"]["text"]) <= MAX_MERGED_CHARS for p in seen)
    assert len(seen) <= 20, len(seen)  # 10 000 characters: at least two updates, far fewer than 1 000


def test_the_per_connection_merger_examines_a_new_tail_afresh() -> None:
    """What it remembers of the last frame is used only while that very frame waits last."""
    merge = ChunkMerger()
    first = chunk("a")
    assert merge("session/update", first, chunk("b")) and first["update"]["content"]["text"] == "ab"
    # `first` was dispatched; another frame (never offered to the merger) waits last now.
    other = chunk("x", "s2")
    assert not merge("session/update", other, chunk("y"))  # another session: not joined
    assert merge("session/update", other, chunk("z", "s2")) and other["update"]["content"]["text"] == "xz"
    tail = chunk("c")
    assert not merge("session/update", chunk("q", "s2"), tail)
    assert merge("session/update", tail, chunk("d")) and tail["update"]["content"]["text"] == "cd"
    assert merge("session/update", tail, chunk("e")) and tail["update"]["content"]["text"] == "cde"
    big = chunk("f" * MAX_MERGED_CHARS)
    assert not merge("session/update", tail, big)
    assert tail["update"]["content"]["text"] == "cde"
