"""Every scripted behaviour (prompt keywords) and the rename flow."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from .acp_peer import AgentPeer, PeerError, chunk_text
from .conftest import Spawn

pytestmark = pytest.mark.timeout(60)


def frame_index(peer: AgentPeer, request_id: int) -> int:
    return next(
        i for i, f in enumerate(peer.frames) if f.msg.get("id") == request_id and "method" not in f.msg
    )


async def test_crash(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    mark = len(agent.updates)
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#crash"}]}
    )
    assert await agent.wait_exit(10) == 3
    await agent.wait_for(lambda: agent.eof)
    assert agent.kinds(sid, mark) == ["agent_message_chunk"]
    assert isinstance(pending.future.exception(), ConnectionError)


async def test_hang(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    mark = len(agent.updates)
    agent.start_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#hang"}]})
    await agent.wait_for(lambda: agent.kinds(sid, mark) == ["agent_message_chunk"])
    frames = len(agent.frames)
    agent.notify("session/cancel", {"sessionId": sid})
    agent.start_request("session/list", {})
    await asyncio.sleep(0.3)
    assert len(agent.frames) == frames and agent.proc.returncode is None
    assert agent.proc.stdin is not None
    agent.proc.stdin.close()
    assert await agent.wait_exit(5) == 0


async def test_garbage(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    assert (await agent.prompt(sid, "#garbage hello"))["stopReason"] == "end_turn"
    invalid = agent.take_invalid()
    assert len(agent.bad_lines) == 1
    assert invalid[1][0] == [1, 2, 3]
    assert "unknown id" in invalid[2][1][0]
    assert invalid[3][0]["params"]["update"]["title"] == 42
    assert len(invalid) == 4
    assert any(u["sessionId"] == "demo-no-such-session" for u in agent.updates)
    assert "session_info_update" in agent.kinds(sid)  # the normal reply still happened


async def test_chunk_flood(agent: AgentPeer, workspace: Path, state_dir: Path) -> None:
    sid = await agent.new_session(workspace)
    mark = len(agent.updates)
    started = time.monotonic()
    assert (await agent.prompt(sid, "#chunks=10000", timeout=30))["stopReason"] == "end_turn"
    elapsed = time.monotonic() - started
    chunks = [u for u in agent.session_updates(sid, mark) if u["sessionUpdate"] == "agent_message_chunk"]
    assert [c["content"]["text"] for c in chunks] == [f"c{i} " for i in range(10000)]
    assert len({c["messageId"] for c in chunks}) == 1
    assert "tool_call" not in agent.kinds(sid, mark) and agent.agent_requests == []
    assert elapsed < 15
    history = json.loads((state_dir / "sessions" / f"{sid}.json").read_text())["history"]
    stored = [u for u in history if u["sessionUpdate"] == "agent_message_chunk"]
    assert len(stored) == 1 and stored[0]["content"]["text"] == "".join(f"c{i} " for i in range(10000))


async def test_slow(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    started = time.monotonic()
    await agent.prompt(sid, "#chunks=5 #slow=60")
    assert time.monotonic() - started >= 0.24


async def test_echo(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#echo say hi"}]}
    )
    await agent.response(pending)
    echoed = [u for u in agent.session_updates(sid) if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"] for u in echoed] == [{"type": "text", "text": "#echo say hi"}]


async def test_stderr_and_bigframe(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    assert (await agent.prompt(sid, "#stderr=200000 #bigframe=300000"))["stopReason"] == "end_turn"
    await agent.wait_for(lambda: agent.stderr_total >= 200000)
    chunks = [u for u in agent.session_updates(sid) if u["sessionUpdate"] == "agent_message_chunk"]
    assert [len(c["content"]["text"]) for c in chunks].count(300000) == 1
    assert "session_info_update" in agent.kinds(sid)


async def test_answer_of_a_given_size_in_pieces(agent: AgentPeer, workspace: Path) -> None:
    from sidecar.demo_agent.behaviours import ANSWER_END, answer_text

    sid = await agent.new_session(workspace)
    assert (await agent.prompt(sid, "#answer=200000 #piece=70000"))["stopReason"] == "end_turn"
    chunks = [u for u in agent.session_updates(sid) if u["sessionUpdate"] == "agent_message_chunk"]
    assert [len(c["content"]["text"]) for c in chunks] == [70000, 70000, 60000]
    assert len({c["messageId"] for c in chunks}) == 1
    text = "".join(c["content"]["text"] for c in chunks)
    assert text == answer_text(200000) and text.endswith(ANSWER_END)
    assert "line 0000001 of the long answer" in text


async def test_answer_in_paragraphs(agent: AgentPeer, workspace: Path) -> None:
    from sidecar.demo_agent.behaviours import ANSWER_END, paragraphs_text

    sid = await agent.new_session(workspace)
    prompt = "#answer=30000 #para=6 #piece=4000"
    assert (await agent.prompt(sid, prompt))["stopReason"] == "end_turn"
    chunks = [u for u in agent.session_updates(sid) if u["sessionUpdate"] == "agent_message_chunk"]
    text = "".join(c["content"]["text"] for c in chunks)
    assert text == paragraphs_text(30000, 6) and 29000 < len(text) <= 30000
    assert text.endswith("\n\n" + ANSWER_END)
    blocks = text.split("```text\n")
    assert len(blocks) > 5  # fenced code blocks, each with a blank line inside
    assert all("\n\n" in b.split("```\n")[0] for b in blocks[1:])


async def test_unknown_kinds(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    assert (await agent.prompt(sid, "#unknown"))["stopReason"] == "end_turn"
    invalid = agent.take_invalid()  # only the unknown kind breaks the schema
    assert [frame["params"]["update"]["sessionUpdate"] for frame, _ in invalid] == ["future_kind_xyz"]
    updates = agent.session_updates(sid)
    assert {"sessionUpdate": "future_kind_xyz", "someField": {"nested": [1, 2]}} in updates
    assert any(u.get("futureField") is True for u in updates)


async def test_late(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    pending = agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "#late"}]}
    )
    await agent.response(pending)
    late = await agent.wait_for(
        lambda: next(
            (i for i, f in enumerate(agent.frames) if "late update" in json.dumps(f.msg)),
            None,
        ),
        2,
    )
    assert late > frame_index(agent, pending.id)


async def test_error_refuse_mode(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    with pytest.raises(PeerError) as err:
        await agent.prompt(sid, "#error")
    assert (err.value.code, err.value.message) == (-32603, "demo failure")
    assert (await agent.prompt(sid, "#refuse"))["stopReason"] == "refusal"
    mark = len(agent.updates)
    await agent.prompt(sid, "#mode #chunks=1")
    assert agent.session_updates(sid, mark)[0] == {
        "sessionUpdate": "current_mode_update",
        "currentModeId": "code",
    }
    with pytest.raises(PeerError) as err:
        await agent.prompt(sid, "#chunks=many")
    assert err.value.code == -32602 and "#chunks" in err.value.message
    mark = len(agent.updates)
    await agent.prompt(sid, "/help")
    assert "#edit" in chunk_text(agent.session_updates(sid, mark))


async def test_title_keyword(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    hostile = "\x1b[31mEvil\x07 title\u202e #crash\nsecond line"
    await agent.prompt(sid, f"#title {hostile}")
    infos = [u for u in agent.session_updates(sid) if u["sessionUpdate"] == "session_info_update"]
    assert [u["title"] for u in infos] == [hostile]  # exactly, and no automatic title after it


async def test_info_keyword(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)

    async def info(fields: dict[str, Any]) -> dict[str, Any]:
        mark = len(agent.updates)
        await agent.prompt(sid, "#info " + json.dumps(fields))
        sent = [u for u in agent.session_updates(sid, mark) if u["sessionUpdate"] == "session_info_update"]
        assert sent == [{"sessionUpdate": "session_info_update", **fields}]
        return dict((await agent.request("session/list", {}))["sessions"][0])

    listed = await info({"title": "Named", "_meta": {"a": {"b": 1}, "keep": True}})
    assert listed["title"] == "Named" and listed["_meta"] == {"a": {"b": 1}, "keep": True}
    listed = await info({"_meta": {"a": {"c": 2, "b": None}}})
    assert listed["title"] == "Named" and listed["_meta"] == {"a": {"c": 2}, "keep": True}
    listed = await info({"title": None, "updatedAt": "2030-01-01T00:00:00Z"})
    assert "title" not in listed and listed["updatedAt"] == "2030-01-01T00:00:00Z"
    listed = await info({"_meta": None})
    assert "_meta" not in listed


async def test_rename_confirm(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    meta = {"acpSidecar": {"renameTitle": "From meta"}}
    prompt = [{"type": "text", "text": 'Rename this session to exactly: "Ignored prose"'}]
    result = await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt, "_meta": meta})
    assert result["stopReason"] == "end_turn"
    infos = [u for u in agent.session_updates(sid) if u["sessionUpdate"] == "session_info_update"]
    assert [u["title"] for u in infos] == ["From meta"]
    assert "From meta" in chunk_text(agent.session_updates(sid))
    mark = len(agent.updates)
    await agent.prompt(
        sid, 'Please.\nrename this session to exactly:  \u201cFix "auth" timeout\u201d.\nThanks'
    )
    infos = [u for u in agent.session_updates(sid, mark) if u["sessionUpdate"] == "session_info_update"]
    assert [u["title"] for u in infos] == ['Fix "auth" timeout']
    listed = (await agent.request("session/list", {}))["sessions"][0]
    assert (listed["title"], listed["updatedAt"]) == ('Fix "auth" timeout', infos[0]["updatedAt"])


@pytest.mark.parametrize(("mode", "expected"), [("ignore", []), ("other", ["Wanted (demo)"])])
async def test_rename_modes(spawn: Spawn, workspace: Path, mode: str, expected: list[str]) -> None:
    peer = await spawn(env={"ACP_DEMO_RENAME": mode})
    await peer.initialize()
    sid = await peer.new_session(workspace)
    assert (await peer.prompt(sid, 'Rename this session to exactly: "Wanted"'))["stopReason"] == "end_turn"
    infos = [u for u in peer.session_updates(sid) if u["sessionUpdate"] == "session_info_update"]
    assert [u["title"] for u in infos] == expected
    assert chunk_text(peer.session_updates(sid))


async def test_rename_slow_is_cancellable(spawn: Spawn, workspace: Path) -> None:
    peer = await spawn(env={"ACP_DEMO_RENAME": "slow"})
    await peer.initialize()
    sid = await peer.new_session(workspace)
    pending = peer.start_request(
        "session/prompt",
        {"sessionId": sid, "prompt": [{"type": "text", "text": 'Rename this session to exactly: "Later"'}]},
    )
    await peer.wait_for(lambda: "agent_message_chunk" in peer.kinds(sid))
    await asyncio.sleep(0.1)
    assert not pending.done()  # still waiting its 2 s
    peer.notify("session/cancel", {"sessionId": sid})
    assert (await peer.response(pending, 1))["result"] == {"stopReason": "cancelled"}
    assert "session_info_update" not in peer.kinds(sid)


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("#chunks=300 #slow=1", "Demo session"),
        ("#slow=1 #late #echo #chunks=2", "Demo session"),
        ("#notice=warning:Disk almost full\n#chunks=1", "Demo session"),
        ("#compact #chunks=1", "Demo session"),
        ("#chunks=2 Fix #slow=1 the flaky #notice=info:Words of a notice\nbuild", "Fix the flaky build"),
        ("#compact=fail Why is #edit=README.md it slow?", "Why is it slow?"),
    ],
)
async def test_keywords_are_not_words_of_a_title(
    spawn: Spawn, workspace: Path, text: str, title: str
) -> None:
    peer = await spawn()
    await peer.initialize(session={"notices": {}, "compaction": {}})
    sid = await peer.new_session(workspace)
    await peer.prompt(sid, text)
    infos = [u for u in peer.session_updates(sid) if u["sessionUpdate"] == "session_info_update"]
    assert [u["title"] for u in infos] == [title]


async def test_terminal_without_the_client_capability_runs_nothing(agent: AgentPeer, workspace: Path) -> None:
    """``#terminal`` for a client without ``clientCapabilities.terminal``: no terminal/* request."""
    sid = await agent.new_session(workspace)
    mark = len(agent.frames)
    assert (await agent.prompt(sid, "#terminal"))["stopReason"] == "end_turn"
    assert "offers no terminal" in chunk_text(agent.session_updates(sid))
    assert not [f for f in agent.frames[mark:] if str(f.msg.get("method", "")).startswith("terminal/")]


async def test_terminal_keyword_values_are_checked(agent: AgentPeer, workspace: Path) -> None:
    sid = await agent.new_session(workspace)
    with pytest.raises(PeerError, match="#terminal=fast"):
        await agent.prompt(sid, "#terminal=fast")
