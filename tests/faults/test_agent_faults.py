"""The agent crashes, hangs or lies; the sidecar keeps working and loses nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.faults.figures import FIGURES
from tests.lsp.editor import open_editor
from tests.procs import descendants, wait_gone

pytestmark = pytest.mark.fault

SCRIPTED = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"
FAST_TIMEOUTS = {"ACP_SIDECAR_REQUEST_TIMEOUT_MS": "1500", "ACP_SIDECAR_CANCEL_TIMEOUT_MS": "1000"}


@pytest.mark.parametrize("when", ["startup", "initialize"])
async def test_agent_dies_at_start(when: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(
        "vscode", workspace, state_dir, env={"ACP_DEMO_CRASH_AT": when}, wait_idle=False
    ) as ed:
        # Its first use starts it (agents start on first use): that fails, and says why.
        with pytest.raises(JsonRpcException) as first:
            await ed.command("acp.session.new")
        assert "not running" in first.value.message or "initialize" in first.value.message
        status = await ed.wait_for("acp/status", lambda s: s["state"] == "error")
        assert "exit" in status["text"] or "initialize" in status["text"]
        messages = []
        started = time.monotonic()
        for _ in range(8):
            with pytest.raises(JsonRpcException) as info:
                await ed.command("acp.session.new")
            messages.append(info.value.message)
            FIGURES["faults injected: agent died at start"] += 1
        # Restarts are bounded: after a few tries it says so instead of spawning forever.
        assert any("failed" in m and "times" in m for m in messages), messages
        assert time.monotonic() - started < 30
        assert (await ed.command("acp.status"))["state"] == "error"


async def test_agent_dies_while_a_permission_request_is_pending(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        ed.hold_message_requests = True
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#title Title before the crash")
        admitted = await ed.command("acp.prompt", "#edit now")
        await ed.wait_for("acp/status", lambda s: s["state"] == "waiting_permission")
        agents = descendants(ed.client._server.pid)
        for pid in agents:
            # The agent's reaper ends as its agent does: it may be gone before its turn here.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        FIGURES["faults injected: agent killed during a permission request"] += 1
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["error"] is not None and "exited (ended by SIGKILL)" in end["error"]["message"], end
        await ed.wait_for("acp/status", lambda s: s["state"] == "disconnected")
        assert not wait_gone(agents, 5)
        ed.hold_message_requests = False
        # The next command restarts the agent; the session resumes; the title is intact.
        _, again = await ed.prompt_and_wait("#chunks=2 after the crash")
        assert again["stopReason"] == "end_turn"
        status = await ed.command("acp.status")
        assert status["sessionId"] == sid and status["title"] == "Title before the crash"
        assert len([t for t in ed.turn_events(admitted["turnId"]) if t["state"] == "ended"]) == 1


async def test_hung_agent(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir, env=FAST_TIMEOUTS) as ed:
        await ed.command("acp.session.new")
        admitted = await ed.command("acp.prompt", "#hang")
        await ed.wait_for("acp/sessionUpdate", lambda u: u["turnId"] == admitted["turnId"])
        FIGURES["faults injected: agent hangs"] += 1
        # The editor side stays responsive.
        started = time.monotonic()
        assert (await ed.command("acp.status"))["state"] == "running"
        assert time.monotonic() - started < 1.0
        # A request to the hung agent times out with a clear error.
        with pytest.raises(JsonRpcException) as info:
            await ed.command("acp.session.setMode", "code")
        assert "did not answer session/set_mode within 1.5 s" in info.value.message
        # Cancel ends the turn within its bound even though the agent ignores it.
        assert await ed.command("acp.cancel") == {"cancelled": True}
        end = await ed.wait_turn_end(admitted["turnId"], timeout=10)
        assert end["stopReason"] == "cancelled" and "did not stop" in end["error"]["message"]
        server = ed.client._server
        kids = descendants(server.pid)
        started = time.monotonic()
        async with asyncio.timeout(15):
            await ed.client.shutdown_session()
        assert time.monotonic() - started < 10
        assert not wait_gone(kids, 5)


async def test_garbage_and_a_50mb_line(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        admitted, end = await ed.prompt_and_wait("#garbage #bigframe=50000000 #late #chunks=3", timeout=60)
        FIGURES["faults injected: garbage frames"] += 5
        FIGURES["faults injected: 50 MB line"] += 1
        assert end["stopReason"] == "end_turn"
        assert ed.text_of(admitted["turnId"]) == "c0 c1 c2 "
        late = await ed.wait_for(
            "acp/sessionUpdate",
            lambda u: u["turnId"] is None and u["update"]["sessionUpdate"] == "agent_message_chunk",
        )
        assert "late" in late["update"]["content"]["text"]
        assert not any(u["sessionId"] != sid for u in ed.of("acp/sessionUpdate")), (
            "unknown session not forwarded"
        )
        logged = [m.message for m in ed.client.log_messages]
        assert any("invalid JSON" in m for m in logged) and any("over 16777216 bytes" in m for m in logged), (
            logged
        )
        _, again = await ed.prompt_and_wait("#chunks=1 still fine")
        assert again["stopReason"] == "end_turn"
        assert len([t for t in ed.of("acp/turn") if t["state"] == "ended"]) == 2


async def test_wrong_types_in_known_fields(workspace: Path, state_dir: Path) -> None:
    steps = [
        {"update": {"sessionUpdate": "tool_call", "toolCallId": 5, "title": 42, "status": ["x"]}},
        {"update": {"sessionUpdate": "plan", "entries": "not a list"}},
        {"update": {"sessionUpdate": "agent_message_chunk", "content": "just a string"}},
        {"update": {"sessionUpdate": "session_info_update", "title": 7, "_meta": "nope"}},
        {"update": {"sessionUpdate": "current_mode_update", "currentModeId": None}},
        {"update": {"sessionUpdate": "usage_update", "used": "lots"}},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t", "content": 3}},
        {"update_for": "no-such-session", "update": {"sessionUpdate": "agent_message_chunk"}},
        {"request": "terminal/no_such_method", "params": {"sessionId": "x", "command": "rm"}},
        {"request": "fs/read_text_file", "params": "not an object"},
        {"request": "fs/read_text_file", "params": {"sessionId": "x", "path": "/etc/passwd"}},
    ]
    scripted = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"
    import sys

    args = ["--agent", f"{sys.executable} {scripted}"]
    async with open_editor("vscode", workspace, state_dir, extra_args=args) as ed:
        await ed.command("acp.session.new")
        admitted, end = await ed.prompt_and_wait(json.dumps(steps))
        FIGURES["faults injected: malformed updates and requests"] += len(steps)
        assert end["stopReason"] == "end_turn"
        text = ed.text_of(admitted["turnId"])
        assert "-32601" in text, "unknown client methods are answered -32601"
        assert text.count("error") >= 3
        # Every update was forwarded untouched, none dropped the session.
        forwarded = [u["update"] for u in ed.of("acp/sessionUpdate") if u["turnId"] == admitted["turnId"]]
        assert {"sessionUpdate": "plan", "entries": "not a list"} in forwarded
        status = await ed.command("acp.status")
        assert status["state"] == "idle"
        assert status["title"] != "7", "a title of the wrong type is ignored, not coerced"


async def test_cancel_while_the_agent_restarts_never_sends_the_prompt(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        crash = await ed.command("acp.prompt", "#crash")
        await ed.wait_turn_end(crash["turnId"])
        await ed.wait_for("acp/status", lambda s: s["state"] == "disconnected")
        # The next prompt restarts the agent (with backoff); cancel it during the restart.
        admitted = await ed.command("acp.prompt", "#chunks=5 must never run")
        assert await ed.command("acp.cancel") == {"cancelled": True}
        end = await ed.wait_turn_end(admitted["turnId"])
        FIGURES["faults injected: cancel during an agent restart"] += 1
        assert end["stopReason"] == "cancelled"
        assert ed.text_of(admitted["turnId"]) == "", "the cancelled prompt never reached the agent"
        _, again = await ed.prompt_and_wait("#chunks=1 after")
        assert again["stopReason"] == "end_turn"


async def test_usage_numbers_out_of_range(workspace: Path, state_dir: Path) -> None:
    """Usage numbers no float can hold (10**400, NaN, Infinity) are bad numbers: dropped with a
    log line like a wrong type. The status keeps answering and the turns after them still end."""
    huge = 10**400
    usage = {"sessionUpdate": "usage_update"}
    first = [{"update": {**usage, "used": huge, "size": 100}}]
    then = [
        {"update": {**usage, "used": 1, "size": 2, "cost": {"amount": huge, "currency": "USD"}}},
        {"update": {**usage, "used": 1, "size": huge}},
        {"update": {**usage, "used": 3, "size": 4, "cost": {"amount": -math.inf, "currency": "USD"}}},
        {"update": {**usage, "used": 10, "size": 100}},
        # Nothing usable in these: the last good usage stands.
        {"update": {**usage, "used": huge, "size": huge}},
        {"update": {**usage, "used": math.nan, "size": math.inf}},
        {
            "raw": '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"SID","update":'
            '{"sessionUpdate":"usage_update","used":1e309,"size":-Infinity}}}'
        },
    ]
    args = ["--agent", f"{sys.executable} {SCRIPTED}"]
    async with open_editor("vscode", workspace, state_dir, extra_args=args) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        _, end = await ed.prompt_and_wait(json.dumps(first), timeout=15)
        assert end["stopReason"] == "end_turn"
        status = await ed.command("acp.status", timeout=10)
        assert status["usage"] == {"used": None, "size": 100}
        then[-1]["raw"] = str(then[-1]["raw"]).replace("SID", sid)
        _, end = await ed.prompt_and_wait(json.dumps(then), timeout=15)
        FIGURES["faults injected: usage numbers out of range"] += len(first) + len(then)
        assert end["stopReason"] == "end_turn"
        status = await ed.command("acp.status", timeout=10)
        assert status["state"] == "idle"
        assert status["usage"] == {"used": 10, "size": 100}
        assert "10% context" in status["text"]
        logged = [m.message for m in ed.client.log_messages]
        assert any("usage_update" in m and "out of range" in m for m in logged), logged
        assert not any("failed" in m for m in logged), logged
        _, again = await ed.prompt_and_wait(json.dumps([{"chunk": "after"}]), timeout=15)
        assert again["stopReason"] == "end_turn"
