"""The update kinds of ACP as of November 2026: notices, compaction, tool names, usage with cost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .acp_peer import AgentPeer, PeerError, chunk_text
from .conftest import Spawn

pytestmark = pytest.mark.timeout(60)

COMPACTION = {"compaction_update", "compaction_summary_chunk"}


def of_kind(updates: list[dict[str, Any]], *kinds: str) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] in kinds]


def title_of(peer: AgentPeer, session_id: str) -> str:
    return str(of_kind(peer.session_updates(session_id), "session_info_update")[-1]["title"])


# -- notices ---------------------------------------------------------------------


async def test_notices_for_a_client_that_declared_them(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn()
    await peer.initialize(session={"notices": {}})
    sid = await peer.new_session(workspace)
    mark = len(peer.updates)
    result = await peer.prompt(sid, "#notice=warning:Disk almost full\nWhat is this project?")
    assert result == {"stopReason": "end_turn"}
    updates = peer.session_updates(sid, mark)
    assert of_kind(updates, "notice") == [
        {"sessionUpdate": "notice", "severity": "warning", "title": "Disk almost full"}
    ]
    assert "tool_call" in [u["sessionUpdate"] for u in updates]  # the normal reply went on
    assert title_of(peer, sid) == "What is this project?"  # no keyword text in the title

    mark = len(peer.updates)
    text = "#notice=error:Build failed | 3 tests failed\n#notice=_demo.custom:Custom one\n#chunks=2"
    assert await peer.prompt(sid, text) == {"stopReason": "end_turn"}  # an error notice is no failure
    assert of_kind(peer.session_updates(sid, mark), "notice") == [
        {
            "sessionUpdate": "notice",
            "severity": "error",
            "title": "Build failed",
            "description": "3 tests failed",
        },
        {"sessionUpdate": "notice", "severity": "_demo.custom", "title": "Custom one"},
    ]
    mark = len(peer.updates)
    await peer.prompt(sid, "#notice")
    assert of_kind(peer.session_updates(sid, mark), "notice") == [
        {"sessionUpdate": "notice", "severity": "info", "title": "Demo info notice"}
    ]

    # Notices are live events, not history: a load never replays them.
    other = await spawn()
    await other.initialize(session={"notices": {}})
    await other.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
    replayed = other.session_updates(sid)
    assert of_kind(replayed, "user_message_chunk") and not of_kind(replayed, "notice")


async def test_no_notices_for_a_client_that_did_not_declare_them(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn()
    await peer.initialize(session={"notices": None, "compaction": None})  # null means unsupported
    sid = await peer.new_session(workspace)
    await peer.prompt(sid, "#notice=warning:Disk almost full | 1 GB left\n#chunks=1")
    updates = peer.session_updates(sid)
    assert not of_kind(updates, "notice")
    assert "Notice (warning): Disk almost full (1 GB left)" in chunk_text(updates)


async def test_bad_notice_keyword(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    with pytest.raises(PeerError) as err:
        await agent.prompt(sid, "#notice=loud:Hello")
    assert err.value.code == -32602 and "#notice" in err.value.message


# -- compaction ------------------------------------------------------------------


async def test_compaction_streams_persists_and_replays_in_place(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn()
    await peer.initialize(session={"compaction": {}})
    sid = await peer.new_session(workspace)
    await peer.prompt(sid, "first question")
    await peer.prompt(sid, "second question")
    before = of_kind(peer.session_updates(sid), "usage_update")[-1]["used"]
    mark = len(peer.updates)
    assert await peer.prompt(sid, "#compact third question") == {"stopReason": "end_turn"}
    updates = peer.session_updates(sid, mark)
    compaction = [u for u in updates if u["sessionUpdate"] in COMPACTION]
    assert updates[: len(compaction)] == compaction  # first thing in the turn
    cid = compaction[0]["compactionId"]
    assert [(u["sessionUpdate"], u.get("status")) for u in compaction] == [
        ("compaction_update", "in_progress"),
        ("compaction_summary_chunk", None),
        ("compaction_summary_chunk", None),
        ("compaction_summary_chunk", None),
        ("compaction_update", "completed"),
    ]
    assert all(u["compactionId"] == cid for u in compaction)
    summary = "".join(
        u["content"]["text"] for u in compaction if u["sessionUpdate"] == "compaction_summary_chunk"
    )
    assert "2 earlier prompts" in summary
    assert of_kind(updates, "usage_update")[-1]["used"] < before  # the context shrank

    # A restarted agent replays the compaction where it happened, its summary in one chunk.
    other = await spawn()
    await other.initialize(session={"compaction": {}})
    await other.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
    replayed = other.session_updates(sid)
    users = [i for i, u in enumerate(replayed) if u["sessionUpdate"] == "user_message_chunk"]
    assert [replayed[i]["content"]["text"] for i in users] == [
        "first question",
        "second question",
        "#compact third question",
    ]
    start = users[2] + 1
    assert replayed[start : start + 3] == [
        {"sessionUpdate": "compaction_update", "compactionId": cid, "status": "in_progress"},
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": cid,
            "content": {"type": "text", "text": summary},
        },
        {"sessionUpdate": "compaction_update", "compactionId": cid, "status": "completed"},
    ]
    assert replayed[start + 3]["sessionUpdate"] == "plan"  # then that turn's reply

    # A client that did not declare session.compaction gets none, live or replayed.
    plain = await spawn()
    await plain.initialize()
    await plain.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
    assert not [u for u in plain.session_updates(sid) if u["sessionUpdate"] in COMPACTION]
    mark = len(plain.updates)
    assert await plain.prompt(sid, "#compact #chunks=1") == {"stopReason": "end_turn"}
    assert not [u for u in plain.session_updates(sid, mark) if u["sessionUpdate"] in COMPACTION]


async def test_compaction_failed_and_cancelled(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn()
    await peer.initialize(session={"compaction": {}})
    sid = await peer.new_session(workspace)
    mark = len(peer.updates)
    assert await peer.prompt(sid, "#compact=fail #chunks=1") == {"stopReason": "end_turn"}
    ends = of_kind(peer.session_updates(sid, mark), "compaction_update")
    assert [u["status"] for u in ends] == ["in_progress", "failed"]
    assert ends[-1]["error"] == "demo compaction failure (#compact=fail)"

    mark = len(peer.updates)
    turn = peer.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#compact #slow=60000"}]}
    )
    await peer.wait_for(lambda: of_kind(peer.session_updates(sid, mark), "compaction_update"))
    peer.notify("session/cancel", {"sessionId": sid})
    assert (await peer.response(turn))["result"] == {"stopReason": "cancelled"}
    statuses = [u["status"] for u in of_kind(peer.session_updates(sid, mark), "compaction_update")]
    assert statuses == ["in_progress", "cancelled"]
    with pytest.raises(PeerError) as err:
        await peer.prompt(sid, "#compact=later")
    assert err.value.code == -32602 and "#compact" in err.value.message


# -- tool names and usage ------------------------------------------------------------


async def test_tool_calls_carry_a_tool_name(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    await agent.prompt(sid, "What is in README.md?")
    await agent.prompt(sid, "#edit")
    await agent.prompt(sid, "#permission")
    calls = of_kind(agent.session_updates(sid), "tool_call")
    assert [(c["kind"], c["name"], c["title"]) for c in calls] == [
        ("read", "read_file", "Read README.md"),
        ("edit", "write_file", "Edit README.md"),
        ("execute", "run_command", "Run `echo hello from the demo agent`"),
    ]
    asked = [
        r["params"]["toolCall"] for r in agent.agent_requests if r["method"] == "session/request_permission"
    ]
    assert [t["name"] for t in asked] == ["write_file", "run_command"]


async def test_usage_reports_a_cumulative_cost(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn()
    await peer.initialize()
    sid = await peer.new_session(workspace)
    for text in ("one", "two", "#compact #chunks=1"):
        await peer.prompt(sid, text)
    usages = of_kind(peer.session_updates(sid), "usage_update")
    used = [u["used"] for u in usages]
    amounts = [u["cost"]["amount"] for u in usages]
    assert [u["cost"]["currency"] for u in usages] == ["USD"] * 3
    assert all(0 < u["used"] <= u["size"] == 128_000 for u in usages)
    assert used[0] < used[1] and used[2] < used[1]  # the (silent) compaction shrank the context
    assert 0 < amounts[0] < amounts[1] < amounts[2]  # while the cost only grows

    quiet = await spawn(env={"ACP_DEMO_CAPS": "no-cost"})
    await quiet.initialize()
    other = await quiet.new_session(workspace)
    await quiet.prompt(other, "#chunks=1")
    assert [set(u) for u in of_kind(quiet.session_updates(other), "usage_update")] == [
        {"sessionUpdate", "used", "size"}
    ]
