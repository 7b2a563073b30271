"""Prompt turns: the default reply, file access, edits, permissions and cancel."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest

from .acp_peer import AgentPeer, PeerError, chunk_text
from .conftest import README, Spawn

pytestmark = pytest.mark.timeout(60)

EDITED = README + "\nEdited by the acp-sidecar demo agent.\n"
OPTIONS = [
    {"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
]


def select(option_id: str) -> Any:
    return lambda params: {"outcome": {"outcome": "selected", "optionId": option_id}}


def first(updates: list[dict[str, Any]], kind: str) -> int:
    return next(i for i, u in enumerate(updates) if u["sessionUpdate"] == kind)


async def test_default_prompt(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    mark = len(agent.updates)
    result = await agent.prompt(sid, "What is this project about?")
    assert result == {"stopReason": "end_turn"}
    updates = agent.session_updates(sid, mark)
    kinds = [u["sessionUpdate"] for u in updates]

    plans = [u for u in updates if u["sessionUpdate"] == "plan"]
    assert len(plans) == 4 and all(len(p["entries"]) == 3 for p in plans)
    assert [e["status"] for e in plans[0]["entries"]] == ["in_progress", "pending", "pending"]
    assert [e["status"] for e in plans[-1]["entries"]] == ["completed"] * 3

    readme = str(workspace / "README.md")
    call = updates[first(updates, "tool_call")]
    assert (call["title"], call["kind"], call["status"]) == ("Read README.md", "read", "pending")
    assert call["locations"] == [{"path": readme}]
    assert [(r["method"], r["params"]) for r in agent.agent_requests] == [
        ("fs/read_text_file", {"sessionId": sid, "path": readme})
    ]
    done = updates[first(updates, "tool_call_update")]
    assert done["toolCallId"] == call["toolCallId"] and done["status"] == "completed"
    assert "5 lines" in done["content"][0]["content"]["text"]

    chunks = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert 15 <= len(chunks) <= 30
    assert len({c["messageId"] for c in chunks}) == 1
    text = chunk_text(chunks)
    assert "README.md is at the root of your workspace" in text and "5 lines" in text

    usage = updates[first(updates, "usage_update")]
    assert 0 < usage["used"] <= usage["size"]
    info = updates[first(updates, "session_info_update")]
    assert info["title"] == "What is this project about?"
    dt.datetime.fromisoformat(info["updatedAt"])
    order = [first(updates, k) for k in ("plan", "tool_call", "agent_message_chunk", "usage_update")]
    assert order == sorted(order) and order[-1] < kinds.index("session_info_update")

    # Only the first prompt titles the session; updatedAt moves on.
    mark = len(agent.updates)
    await agent.prompt(sid, "And now something else entirely")
    assert "session_info_update" not in agent.kinds(sid, mark)
    listed = (await agent.request("session/list", {"cwd": str(workspace)}))["sessions"]
    assert listed[0]["title"] == "What is this project about?"
    assert listed[0]["updatedAt"] > info["updatedAt"]


async def test_reads_the_file_the_prompt_mentions(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    await agent.prompt(sid, "Explain `src/main.py`, please.")
    assert agent.agent_requests[-1]["params"]["path"] == str(workspace / "src" / "main.py")
    link = {"type": "resource_link", "name": "main.py", "uri": f"file://{workspace}/src/main.py"}
    prompt = [{"type": "text", "text": "what about this one"}, link]
    await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert agent.agent_requests[-1]["params"]["path"] == str(workspace / "src" / "main.py")
    assert len(agent.agent_requests) == 2


async def test_read_error_fails_the_tool_call_only(agent: AgentPeer, workspace: Path) -> None:
    def refuse(params: dict[str, Any]) -> Any:
        raise PeerError(-32002, "no such buffer")

    agent.on_read = refuse
    sid = await agent.new_session(workspace)
    mark = len(agent.updates)
    assert (await agent.prompt(sid, "hello"))["stopReason"] == "end_turn"
    updates = agent.session_updates(sid, mark)
    assert updates[first(updates, "tool_call_update")]["status"] == "failed"
    assert "no such buffer" in chunk_text(updates)


async def test_client_without_fs(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn()
    await peer.initialize(fs=False)
    sid = await peer.new_session(workspace)
    await peer.prompt(sid, "hello")
    await peer.prompt(sid, "#edit")
    assert peer.agent_requests and all(
        r["method"] == "session/request_permission" for r in peer.agent_requests
    )
    updates = peer.session_updates(sid)
    assert next(u["status"] for u in updates if u["sessionUpdate"] == "tool_call_update") == "completed"
    assert (workspace / "README.md").read_text() == EDITED  # written to disk by the agent


async def test_no_file_to_read(agent: AgentPeer, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    sid = await agent.new_session(empty)
    await agent.prompt(sid, "hello there")
    assert "tool_call" not in agent.kinds(sid)
    assert "found none" in chunk_text(agent.session_updates(sid))
    assert agent.agent_requests == []


async def test_cancel_mid_stream(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(env={"ACP_DEMO_CHUNK_DELAY_MS": "100"})
    await peer.initialize()
    sid = await peer.new_session(workspace)
    pending = peer.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    )
    await peer.wait_for(lambda: peer.kinds(sid).count("agent_message_chunk") >= 2)
    started = time.monotonic()
    peer.notify("session/cancel", {"sessionId": sid})
    response = await peer.response(pending, 2)
    assert response["result"] == {"stopReason": "cancelled"}
    assert time.monotonic() - started < 0.25
    count = len(peer.updates)
    await asyncio.sleep(0.2)
    assert len(peer.updates) == count  # nothing after the answer
    assert (await peer.prompt(sid, "#chunks=3"))["stopReason"] == "end_turn"


async def test_cancel_while_permission_is_pending(agent: AgentPeer, workspace: Path) -> None:
    agent.on_permission = lambda params: None  # the test answers by hand
    sid = await agent.new_session(workspace)
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#edit"}]}
    )
    request = await agent.wait_for(
        lambda: next((r for r in agent.agent_requests if r["method"] == "session/request_permission"), None)
    )
    assert request["params"]["options"] == OPTIONS
    agent.notify("session/cancel", {"sessionId": sid})
    agent.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    assert (await agent.response(pending, 2))["result"] == {"stopReason": "cancelled"}
    updates = agent.session_updates(sid)
    assert updates[-1] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": request["params"]["toolCall"]["toolCallId"],
        "status": "failed",
    }
    assert not any(r["method"] == "fs/write_text_file" for r in agent.agent_requests)

    # A client that never answers the permission request: the cancel alone ends the turn.
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#permission"}]}
    )
    await agent.wait_for(
        lambda: sum(r["method"] == "session/request_permission" for r in agent.agent_requests) == 2
    )
    started = time.monotonic()
    agent.notify("session/cancel", {"sessionId": sid})
    assert (await agent.response(pending, 2))["result"] == {"stopReason": "cancelled"}
    assert time.monotonic() - started < 0.25


async def test_cancel_outcome_alone_cancels(agent: AgentPeer, workspace: Path) -> None:
    agent.on_permission = lambda params: {"outcome": {"outcome": "cancelled"}}
    sid = await agent.new_session(workspace)
    assert (await agent.prompt(sid, "#edit"))["stopReason"] == "cancelled"
    assert (workspace / "README.md").read_text() == README


async def test_cancel_without_running_prompt_is_ignored(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    agent.notify("session/cancel", {"sessionId": sid})
    agent.notify("session/cancel", {"sessionId": "demo-unknown"})
    assert (await agent.prompt(sid, "#chunks=2"))["stopReason"] == "end_turn"


async def test_one_prompt_at_a_time(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#chunks=100 #slow=20"}]}
    )
    await agent.wait_for(lambda: "agent_message_chunk" in agent.kinds(sid))
    with pytest.raises(PeerError) as err:
        await agent.prompt(sid, "me too")
    assert err.value.code == -32600 and "already running" in err.value.message
    other = await agent.new_session(workspace)  # other sessions are independent
    assert (await agent.prompt(other, "#chunks=1"))["stopReason"] == "end_turn"
    agent.notify("session/cancel", {"sessionId": sid})
    assert (await agent.response(pending))["result"]["stopReason"] == "cancelled"


async def test_cancel_request(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#chunks=100 #slow=20"}]}
    )
    await agent.wait_for(lambda: "agent_message_chunk" in agent.kinds(sid))
    agent.notify("$/cancel_request", {"requestId": pending.id})
    response = await agent.response(pending, 2)
    assert response["error"]["code"] == -32800
    assert (await agent.prompt(sid, "#chunks=1"))["stopReason"] == "end_turn"


async def test_edit_allowed(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    mark = len(agent.updates)
    assert (await agent.prompt(sid, "#edit"))["stopReason"] == "end_turn"
    readme = str(workspace / "README.md")
    updates = agent.session_updates(sid, mark)
    call = updates[first(updates, "tool_call")]
    assert (call["kind"], call["status"], call["title"]) == ("edit", "pending", "Edit README.md")
    assert call["content"] == [{"type": "diff", "path": readme, "oldText": README, "newText": EDITED}]
    assert call["locations"] == [{"path": readme}]
    methods = [r["method"] for r in agent.agent_requests]
    assert methods == ["fs/read_text_file", "session/request_permission", "fs/write_text_file"]
    permission = agent.agent_requests[1]["params"]
    assert permission["sessionId"] == sid and permission["options"] == OPTIONS
    assert permission["toolCall"]["toolCallId"] == call["toolCallId"]
    assert agent.agent_requests[2]["params"] == {"sessionId": sid, "path": readme, "content": EDITED}
    assert (workspace / "README.md").read_text() == EDITED
    statuses = [u["status"] for u in updates if u["sessionUpdate"] == "tool_call_update"]
    assert statuses[-1] == "completed"


async def test_edit_rejected(agent: AgentPeer, workspace: Path) -> None:
    agent.on_permission = select("reject-once")
    sid = await agent.new_session(workspace)
    mark = len(agent.updates)
    assert (await agent.prompt(sid, "#edit"))["stopReason"] == "end_turn"
    updates = agent.session_updates(sid, mark)
    assert [u["status"] for u in updates if u["sessionUpdate"] == "tool_call_update"] == ["failed"]
    assert "rejected" in chunk_text(updates)
    assert "fs/write_text_file" not in [r["method"] for r in agent.agent_requests]
    assert (workspace / "README.md").read_text() == README


async def test_edit_targets(agent: AgentPeer, workspace: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    sid = await agent.new_session(empty)
    await agent.prompt(sid, "#edit")
    call = next(u for u in agent.session_updates(sid) if u["sessionUpdate"] == "tool_call")
    assert call["content"][0]["path"] == str(empty / "demo.txt")
    assert call["content"][0]["oldText"] is None
    assert (empty / "demo.txt").read_text() == "Edited by the acp-sidecar demo agent.\n"

    sid = await agent.new_session(workspace)
    await agent.prompt(sid, "#edit=src/main.py")
    assert agent.agent_requests[-1]["params"]["path"] == str(workspace / "src" / "main.py")
    mark = len(agent.updates)
    await agent.prompt(sid, "#edit=../outside.txt")
    assert "outside the workspace" in chunk_text(agent.session_updates(sid, mark))
    assert not (tmp_path / "outside.txt").exists()


async def test_edit_in_plan_mode_does_nothing(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "plan"})
    mark = len(agent.updates)
    assert (await agent.prompt(sid, "#edit"))["stopReason"] == "end_turn"
    assert "tool_call" not in agent.kinds(sid, mark)
    assert "Plan mode" in chunk_text(agent.session_updates(sid, mark))
    assert agent.agent_requests == []


async def test_edit_write_error(agent: AgentPeer, workspace: Path) -> None:
    def fail(params: dict[str, Any]) -> Any:
        raise PeerError(-32603, "disk full")

    agent.on_write = fail
    sid = await agent.new_session(workspace)
    mark = len(agent.updates)
    assert (await agent.prompt(sid, "#edit"))["stopReason"] == "end_turn"
    updates = agent.session_updates(sid, mark)
    assert [u["status"] for u in updates if u["sessionUpdate"] == "tool_call_update"][-1] == "failed"
    assert "disk full" in chunk_text(updates)


@pytest.mark.parametrize(("option", "word"), [("allow-always", "ran"), ("reject-once", "did not run")])
async def test_permission_keyword(agent: AgentPeer, workspace: Path, option: str, word: str) -> None:
    agent.on_permission = select(option)
    sid = await agent.new_session(workspace)
    assert (await agent.prompt(sid, "#permission"))["stopReason"] == "end_turn"
    call = next(u for u in agent.session_updates(sid) if u["sessionUpdate"] == "tool_call")
    assert call["kind"] == "execute"
    assert [r["method"] for r in agent.agent_requests] == ["session/request_permission"]
    text = chunk_text(agent.session_updates(sid))
    assert option in text and word in text


@pytest.mark.parametrize("name", ["Makefile", "Dockerfile", "LICENSE"])
async def test_reads_dotless_file_names(agent: AgentPeer, workspace: Path, name: str) -> None:
    for other in ("Makefile", "Dockerfile", "LICENSE"):
        (workspace / other).write_text(f"{other} line one\n{other} line two\n", encoding="utf-8")
    (workspace / "build").mkdir()  # a directory is no file to read
    sid = await agent.new_session(workspace)
    await agent.prompt(sid, f"What does the build do, in {name}?")
    assert [r["params"]["path"] for r in agent.agent_requests] == [str(workspace / name)]
    assert f"{name} is at the root of your workspace" in chunk_text(agent.session_updates(sid))
    # A word that names no file in cwd still falls back to the README.
    await agent.prompt(sid, "What does make do?")
    assert agent.agent_requests[-1]["params"]["path"] == str(workspace / "README.md")
