"""Sessions on disk: restart, load (replay), resume, list pagination, close."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from .acp_peer import AgentPeer, PeerError, agent_env
from .conftest import Spawn

pytestmark = pytest.mark.timeout(60)


def updates_before_response(peer: AgentPeer, request_id: int, session_id: str) -> list[dict[str, Any]]:
    """The session/update frames the agent sent before answering ``request_id``."""
    out: list[dict[str, Any]] = []
    for frame in peer.frames:
        msg = frame.msg
        if msg.get("id") == request_id and "method" not in msg:
            return out
        if msg.get("method") == "session/update" and msg["params"]["sessionId"] == session_id:
            out.append(msg["params"]["update"])
    raise AssertionError("no response")


def text_by_message(updates: list[dict[str, Any]]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for u in updates:
        if u["sessionUpdate"] == "agent_message_chunk":
            texts[u["messageId"]] = texts.get(u["messageId"], "") + u["content"]["text"]
    return texts


async def seed(state_dir: Path, cwd: Path, count: int, titled: int = 0, umask: int = -1) -> list[str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sidecar.demo_agent",
        "seed",
        "--state-dir",
        str(state_dir),
        "--cwd",
        str(cwd),
        "--count",
        str(count),
        "--titled",
        str(titled),
        stdout=asyncio.subprocess.PIPE,
        env=agent_env(),
        umask=umask,  # -1: inherit ours
    )
    async with asyncio.timeout(20):
        out, _ = await proc.communicate()
    assert proc.returncode == 0
    return list(json.loads(out)["sessionIds"])


async def test_save_kill_restart_load_resume(spawn: Spawn, workspace: Path, state_dir: Path) -> None:
    first = await spawn()
    await first.initialize()
    sid = await first.new_session(workspace)
    await first.prompt(sid, "What is this project about?")
    await first.prompt(sid, "#edit")
    await first.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
    live = first.session_updates(sid)
    first.kill()
    await first.wait_exit()

    second = await spawn()
    await second.initialize()
    with pytest.raises(PeerError) as err:
        await second.prompt(sid, "hello")
    assert err.value.code == -32002 and "not loaded" in err.value.message
    pending = second.start_request(
        "session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
    )
    result = (await second.response(pending))["result"]
    assert result["modes"]["currentModeId"] == "code"
    assert result["configOptions"][0]["id"] == "model"
    replay = updates_before_response(second, pending.id, sid)

    stored = json.loads((state_dir / "sessions" / f"{sid}.json").read_text())["history"]
    assert replay == stored
    assert second.agent_requests == []  # nothing re-executed
    users = [u for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in users] == ["What is this project about?", "#edit"]
    calls = [u for u in replay if u["sessionUpdate"] == "tool_call"]
    assert [(c["kind"], c["status"]) for c in calls] == [("read", "completed"), ("edit", "completed")]
    assert calls[1]["content"][0]["type"] == "diff"
    assert text_by_message(replay) == text_by_message(live)
    assert [u["title"] for u in replay if u["sessionUpdate"] == "session_info_update"] == [
        "What is this project about?"
    ]
    assert replay[-1] == {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
    # After the answer: the commands, then the session is usable.
    await second.wait_for(lambda: second.kinds(sid)[-1] == "available_commands_update")
    assert (await second.prompt(sid, "#chunks=2"))["stopReason"] == "end_turn"
    await second.close()

    third = await spawn()
    await third.initialize()
    pending = third.start_request("session/resume", {"sessionId": sid, "cwd": str(workspace)})
    result = (await third.response(pending))["result"]
    assert result["modes"]["currentModeId"] == "code"
    assert updates_before_response(third, pending.id, sid) == []
    mark = len(third.updates)
    assert (await third.prompt(sid, "more"))["stopReason"] == "end_turn"
    assert "session_info_update" not in third.kinds(sid, mark)  # already titled


async def test_load_errors(agent: AgentPeer, workspace: Path) -> None:
    with pytest.raises(PeerError) as err:
        await agent.request(
            "session/load", {"sessionId": "demo-nope", "cwd": str(workspace), "mcpServers": []}
        )
    assert err.value.code == -32002
    with pytest.raises(PeerError) as err:
        await agent.request("session/resume", {"sessionId": "../../etc/passwd", "cwd": str(workspace)})
    assert err.value.code == -32002
    sid = await agent.new_session(workspace)
    with pytest.raises(PeerError) as err:
        await agent.request("session/load", {"sessionId": sid, "cwd": "relative", "mcpServers": []})
    assert err.value.code == -32602 and "cwd" in err.value.message
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#chunks=50 #slow=20"}]}
    )
    await agent.wait_for(lambda: "agent_message_chunk" in agent.kinds(sid))
    with pytest.raises(PeerError) as err:
        await agent.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
    assert err.value.code == -32600
    agent.notify("session/cancel", {"sessionId": sid})
    await agent.response(pending)


async def test_list_pagination(spawn: Spawn, workspace: Path, state_dir: Path, tmp_path: Path) -> None:
    ids = await seed(state_dir, workspace, 120, titled=30)
    assert ids == await seed(tmp_path / "again", workspace, 120, titled=30)  # deterministic
    peer = await spawn(env={"ACP_DEMO_PAGE_SIZE": "50"})
    await peer.initialize()
    pages: list[list[dict[str, Any]]] = []
    cursor = None
    while True:
        params = {"cwd": str(workspace)} | ({"cursor": cursor} if cursor else {})
        result = await peer.request("session/list", params)
        pages.append(result["sessions"])
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        assert len(pages) < 5
    assert [len(p) for p in pages] == [50, 50, 20]
    listed = [s for p in pages for s in p]
    assert sorted(s["sessionId"] for s in listed) == sorted(ids)
    assert [s["sessionId"] for s in listed] == ids[::-1]  # newest first
    assert listed[0]["updatedAt"] == "2025-01-01T01:59:00.000Z"
    assert all(s["cwd"] == str(workspace) for s in listed)
    titled = {s["sessionId"]: s.get("title") for s in listed}
    assert titled[ids[0]] == "Seeded session 0" and titled[ids[119]] is None

    with pytest.raises(PeerError) as err:
        await peer.request("session/list", {"cursor": "garbage!"})
    assert err.value.code == -32602 and "cursor" in err.value.message
    assert (await peer.request("session/list", {"cwd": "/elsewhere"}))["sessions"] == []
    sid = await peer.new_session(workspace)
    assert (await peer.request("session/list", {}))["sessions"][0]["sessionId"] == sid


async def test_list_cursor_loop(spawn: Spawn, workspace: Path, state_dir: Path) -> None:
    await seed(state_dir, workspace, 3)
    peer = await spawn(env={"ACP_DEMO_LIST_LOOP": "1"})
    await peer.initialize()
    first = await peer.request("session/list", {})
    again = await peer.request("session/list", {"cursor": first["nextCursor"]})
    assert first["nextCursor"] and again["nextCursor"] == first["nextCursor"]


async def test_load_seeded_session(spawn: Spawn, workspace: Path, state_dir: Path) -> None:
    ids = await seed(state_dir, workspace, 2, titled=1)
    peer = await spawn()
    await peer.initialize()
    pending = peer.start_request(
        "session/load", {"sessionId": ids[0], "cwd": str(workspace), "mcpServers": []}
    )
    await peer.response(pending)
    replay = updates_before_response(peer, pending.id, ids[0])
    assert [u["sessionUpdate"] for u in replay] == [
        "user_message_chunk",
        "agent_message_chunk",
        "session_info_update",
    ]
    assert replay[-1]["title"] == "Seeded session 0"


async def test_close(agent: AgentPeer, workspace: Path, state_dir: Path) -> None:
    sid = await agent.new_session(workspace)
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#chunks=100 #slow=20"}]}
    )
    await agent.wait_for(lambda: "agent_message_chunk" in agent.kinds(sid))
    assert await agent.request("session/close", {"sessionId": sid}) == {}
    assert (await agent.response(pending, 2))["result"] == {"stopReason": "cancelled"}
    with pytest.raises(PeerError) as err:
        await agent.prompt(sid, "hello")
    assert err.value.code == -32002
    assert (state_dir / "sessions" / f"{sid}.json").is_file()
    listed = (await agent.request("session/list", {}))["sessions"]
    assert [s["sessionId"] for s in listed] == [sid]
    assert await agent.request("session/close", {"sessionId": sid}) == {}  # saved, not loaded: fine
    with pytest.raises(PeerError) as err:
        await agent.request("session/close", {"sessionId": "demo-never"})
    assert err.value.code == -32002
    assert agent.kinds(sid).count("agent_message_chunk") < 100  # stopped early
    await agent.request("session/resume", {"sessionId": sid, "cwd": str(workspace)})
    assert (await agent.prompt(sid, "#chunks=1"))["stopReason"] == "end_turn"


async def test_additional_directories_are_kept(agent: AgentPeer, workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "notes.txt").write_text("one\n")
    result = await agent.request(
        "session/new", {"cwd": str(workspace), "mcpServers": [], "additionalDirectories": [str(extra)]}
    )
    sid = result["sessionId"]
    listed = (await agent.request("session/list", {"cwd": str(workspace)}))["sessions"]
    assert listed[0]["additionalDirectories"] == [str(extra)]
    await agent.prompt(sid, f"look at {extra}/notes.txt")  # inside an additional root: readable
    assert agent.agent_requests[-1]["params"]["path"] == str(extra / "notes.txt")


async def test_fork_copies_the_session_under_a_new_id(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn()
    await peer.initialize()
    sid = await peer.new_session(workspace)
    for text in ("#title Original", "#chunks=2 What is this project about?"):
        await peer.prompt(sid, text)
    await peer.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
    params = {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
    forked = await peer.request("session/fork", params)
    fork = forked["sessionId"]
    assert fork.startswith("demo-") and fork != sid
    assert forked["modes"]["currentModeId"] == "code"
    await peer.prompt(fork, "#chunks=1 only the fork")  # live at once
    listed = {s["sessionId"]: s for s in (await peer.request("session/list", {}))["sessions"]}
    assert listed[sid]["title"] == "Original" and "title" not in listed[fork]

    # Its history is the parent's (without the parent's titles), then its own.
    parent_replay = await peer.request("session/load", params)
    assert parent_replay["modes"]["currentModeId"] == "code"
    start = len(peer.updates)
    await peer.request("session/load", params | {"sessionId": fork})
    replayed = peer.session_updates(fork, since=start)
    assert not [u for u in replayed if u["sessionUpdate"] == "session_info_update"]
    texts = "".join(text_by_message(replayed).values())
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users == ["#title Original", "#chunks=2 What is this project about?", "#chunks=1 only the fork"]
    assert texts
    with pytest.raises(PeerError) as err:
        await peer.request("session/fork", params | {"sessionId": "demo-000000000000"})
    assert err.value.code == -32002


async def test_a_fork_not_live_fails_a_prompt_as_claude_agent_acp_does(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(env={"ACP_DEMO_CAPS": "fork-not-live"})
    await peer.initialize()
    sid = await peer.new_session(workspace)
    await peer.prompt(sid, "#chunks=1 hello")
    fork = (await peer.request("session/fork", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}))[
        "sessionId"
    ]
    with pytest.raises(PeerError) as err:
        await peer.prompt(fork, "#chunks=1 too early")
    assert (err.value.code, err.value.message, err.value.data) == (
        -32603,
        "Internal error",
        {"details": "Session not found"},
    )
    await peer.request("session/resume", {"sessionId": fork, "cwd": str(workspace)})
    await peer.prompt(fork, "#chunks=1 now it works")
