"""session/set_title (unstable ACP): normalised, stored for any session, live for loaded ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .acp_peer import AgentPeer, PeerError
from .conftest import Spawn
from .test_sessions import seed, updates_before_response

pytestmark = pytest.mark.timeout(60)


def infos(peer: AgentPeer, session_id: str, since: int = 0) -> list[dict[str, Any]]:
    return [u for u in peer.session_updates(session_id, since) if u["sessionUpdate"] == "session_info_update"]


async def listed_title(peer: AgentPeer, session_id: str) -> str | None:
    sessions = (await peer.request("session/list", {}))["sessions"]
    entry = next(s for s in sessions if s["sessionId"] == session_id)
    return entry.get("title")


async def test_set_title_normalises_stores_and_updates_live(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    await agent.prompt(sid, "What is this project about?")
    mark = len(agent.updates)
    pending = agent.start_request(
        "session/set_title", {"sessionId": sid, "title": "  Fix \t auth\n timeout "}
    )
    assert (await agent.response(pending))["result"] == {"title": "Fix auth timeout"}
    # The live update comes with the answer, before it.
    assert updates_before_response(agent, pending.id, sid)[-1] == {
        "sessionUpdate": "session_info_update",
        "title": "Fix auth timeout",
    }
    assert infos(agent, sid, mark) == [{"sessionUpdate": "session_info_update", "title": "Fix auth timeout"}]
    assert await listed_title(agent, sid) == "Fix auth timeout"
    # Control characters count as whitespace; a title kept as it is comes back as it is.
    result = await agent.request("session/set_title", {"sessionId": sid, "title": "Tabs\x1b[31m\x07 ok"})
    assert result == {"title": "Tabs [31m ok"}
    assert await agent.request("session/set_title", {"sessionId": sid, "title": "x" * 200}) == {
        "title": "x" * 200
    }


async def test_set_title_errors(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    with pytest.raises(PeerError) as err:
        await agent.request("session/set_title", {"sessionId": "demo-nope", "title": "Valid"})
    assert err.value.code == -32002
    with pytest.raises(PeerError) as err:
        await agent.request("session/set_title", {"sessionId": "../../etc/passwd", "title": "Valid"})
    assert err.value.code == -32002
    for title in ("", "   ", "\t\n\x00", "x" * 201, None, 5):
        with pytest.raises(PeerError) as err:
            await agent.request("session/set_title", {"sessionId": sid, "title": title})
        assert err.value.code == -32602 and "'title'" in err.value.message, title
    with pytest.raises(PeerError) as err:
        await agent.request("session/set_title", {"sessionId": sid})
    assert err.value.code == -32602
    assert infos(agent, sid) == [] and await listed_title(agent, sid) is None


async def test_set_title_on_sessions_not_loaded(spawn: Spawn, workspace: Path, state_dir: Path) -> None:
    first = await spawn()
    await first.initialize()
    sid = await first.new_session(workspace)
    await first.prompt(sid, "hello there")
    await first.close()

    second = await spawn()
    await second.initialize()
    frames = len(second.frames)
    assert await second.request("session/set_title", {"sessionId": sid, "title": " Renamed  offline "}) == {
        "title": "Renamed offline"
    }
    assert len(second.frames) == frames + 1  # the answer only: nobody has the session loaded
    seeded = await seed(state_dir, workspace, 2)
    assert await second.request("session/set_title", {"sessionId": seeded[0], "title": "Seeded"}) == {
        "title": "Seeded"
    }
    assert await listed_title(second, seeded[0]) == "Seeded"
    await second.close()

    third = await spawn()
    await third.initialize()
    assert await listed_title(third, sid) == "Renamed offline"
    stored = json.loads((state_dir / "sessions" / f"{sid}.json").read_text())
    assert stored["title"] == "Renamed offline"
    await third.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
    titles = [u["title"] for u in infos(third, sid)]
    assert titles == ["hello there", "Renamed offline"]  # the replay ends with the stored title


async def test_set_title_while_a_turn_runs(agent: AgentPeer, workspace: Path) -> None:
    """Answered at once mid-turn; the first prompt then gets no automatic title."""
    agent.on_permission = lambda params: None  # answered below
    sid = await agent.new_session(workspace)
    turn = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#permission"}]}
    )
    request = await agent.wait_for(
        lambda: next((r for r in agent.agent_requests if r["method"] == "session/request_permission"), None)
    )
    assert await agent.request("session/set_title", {"sessionId": sid, "title": "Mid-turn"}) == {
        "title": "Mid-turn"
    }
    agent.send(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}},
        }
    )
    assert (await agent.response(turn))["result"] == {"stopReason": "end_turn"}
    assert [u["title"] for u in infos(agent, sid)] == ["Mid-turn"]
    assert await listed_title(agent, sid) == "Mid-turn"


async def test_set_title_that_cannot_be_saved(agent: AgentPeer, workspace: Path, state_dir: Path) -> None:
    sid = await agent.new_session(workspace)
    await agent.prompt(sid, "first words")
    # The agent writes <id>.json through .<id>.<pid>.tmp: a directory there makes the save fail.
    (state_dir / "sessions" / f".{sid}.{agent.proc.pid}.tmp").mkdir()
    mark = len(agent.updates)
    with pytest.raises(PeerError) as err:
        await agent.request("session/set_title", {"sessionId": sid, "title": "Lost"})
    assert err.value.code == -32603 and "could not save" in err.value.message
    assert infos(agent, sid, mark) == []
    assert await listed_title(agent, sid) == "first words"
    # Nothing of it stays behind to be saved or replayed later.
    (state_dir / "sessions" / f".{sid}.{agent.proc.pid}.tmp").rmdir()
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})  # saves again
    mark = len(agent.updates)
    await agent.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
    assert [u["title"] for u in infos(agent, sid, mark)] == ["first words"]


async def test_set_title_needs_authentication(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(env={"ACP_DEMO_CAPS": "auth"})
    await peer.initialize()
    with pytest.raises(PeerError) as err:
        await peer.request("session/set_title", {"sessionId": "demo-x", "title": "T"})
    assert err.value.code == -32000
