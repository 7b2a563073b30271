"""The agent's frames are dispatched in slices (acp/jsonrpc.py, issue 40 item 5): the loop runs
between them, nothing is reordered, and a request's caller resumes only after every frame that
came before its answer (a `session/load` answer after its replay)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from sidecar.acp import jsonrpc
from sidecar.acp.errors import RemoteError
from sidecar.acp.jsonrpc import JsonRpcConnection
from tests.agent_stdin import AgentStdin


def update(index: int) -> bytes:
    params = {"sessionId": "s1", "update": {"sessionUpdate": "session_info_update", "title": f"t{index}"}}
    return json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}).encode() + b"\n"


def connection(reader: asyncio.StreamReader, seen: list[int], work: float = 0.0) -> JsonRpcConnection:
    def on_notification(_method: str, params: Any) -> None:
        if work:
            time.sleep(work)  # what routing and relaying one frame costs, on the loop
        seen.append(int(params["update"]["title"][1:]))

    async def on_request(_method: str, _params: Any) -> Any:
        return None

    return JsonRpcConnection(reader, AgentStdin(), on_notification=on_notification, on_request=on_request)


async def test_a_burst_leaves_the_loop_turns_and_keeps_its_order() -> None:
    reader = asyncio.StreamReader(limit=2**24)
    seen: list[int] = []
    conn = connection(reader, seen, work=0.0002)  # 2000 frames: 0.4 s of work, 5 ms a slice
    between: list[int] = []  # frames dispatched between two turns of another task

    async def ticker() -> None:
        last = 0
        while True:
            await asyncio.sleep(0)
            between.append(len(seen) - last)
            last = len(seen)
            if last == 2000:
                return

    conn.start()
    ticking = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)  # the connection waits for the agent, the ticker ticks
    reader.feed_data(b"".join(update(i) for i in range(2000)))
    await asyncio.wait_for(ticking, 10)
    assert seen == list(range(2000))
    assert max(between) <= 100, f"{max(between)} frames dispatched while the loop waited"
    await conn.aclose()


@pytest.mark.parametrize("answer", [{"result": {"ok": True}}, {"error": {"code": -32000, "message": "no"}}])
async def test_an_answer_comes_after_the_frames_before_it(
    answer: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonrpc, "DISPATCH_SLICE", 0.0)  # the loop's turn after every frame
    reader = asyncio.StreamReader(limit=2**24)
    seen: list[int] = []
    conn = connection(reader, seen)
    conn.start()
    call = asyncio.ensure_future(conn.request("session/load", {"sessionId": "s1"}))
    await asyncio.sleep(0)
    response = json.dumps({"jsonrpc": "2.0", "id": 1, **answer}).encode() + b"\n"
    reader.feed_data(b"".join(update(i) for i in range(300)) + response + update(300))
    try:
        result = await asyncio.wait_for(call, 5)
    except RemoteError:
        result = None
    assert len(seen) >= 300, f"the caller resumed after {len(seen)} of the 300 frames before its answer"
    assert result == answer.get("result")
    await conn.aclose()
