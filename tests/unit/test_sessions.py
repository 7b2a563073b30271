"""Sessions: new/load/resume, replay marked and the tool calls rebuilt, early updates on every attach."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from tests.unit.fake_agent import FULL_CAPS, Composed, FakeAgents, Recorder, make_engine, settle, until


def chunk(text: str, kind: str = "agent_message_chunk") -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


@pytest.fixture
def load_only(agents: FakeAgents) -> FakeAgents:
    """An agent without session/resume: attaching a session means session/load (a replay)."""
    agents.capabilities = {**FULL_CAPS, "sessionCapabilities": {"list": {}}}
    return agents


async def test_load_replays_marked_as_replay_and_rebuilds_the_tool_calls(
    load_only: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    agents = load_only
    agents.known_sessions.add("old-1")
    agents.before_attach = [chunk("hello", "user_message_chunk"), chunk("hi there")]
    assert await engine.registry.load("old-1", str(workspace)) == "old-1"
    replayed = recorder.updates("old-1")
    assert [u["replay"] for u in replayed] == [True, True]
    assert all(u["turnId"] is None for u in replayed)
    session = engine.registry.get("old-1")
    assert [u["update"]["content"]["text"] for u in replayed] == ["hello", "hi there"]
    session.tool_calls.apply("t1", {"sessionUpdate": "tool_call", "toolCallId": "t1"}, replace=True)
    # Live updates after the load are not replay.
    await agents.current.send_update("old-1", chunk("live"))
    assert recorder.updates("old-1")[-1]["replay"] is False
    # A restart re-attaches by load: the history replays again and the tool calls are rebuilt.
    agents.current.die(3)
    await until(lambda: engine.kernel.status()["state"] == "disconnected")
    turn = await engine.kernel.actions.prompt("after the restart", "old-1")
    (await agents.next_prompt()).finish()
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    assert agents.called("session/load") == [("session/load", "old-1", str(workspace))] * 2
    assert session.tool_calls.get("t1") is None, "a replay rebuilds the session's tool calls"
    assert [u["replay"] for u in recorder.updates("old-1")] == [True, True, False, True, True]


async def test_load_of_an_unknown_session_is_a_clear_error_and_leaves_nothing(
    engine: Composed, workspace: Path
) -> None:
    with pytest.raises(SidecarError) as failed:
        await engine.registry.load("nobody", str(workspace))
    assert failed.value.code == errors.UNKNOWN_SESSION
    assert "nobody" not in engine.registry.by_id and engine.registry.active_id is None


async def test_updates_sent_before_the_session_new_answer_are_delivered_in_order(
    agents: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    agents.before_new = [chunk("early one"), chunk("early two")]
    sid = await engine.registry.new(str(workspace))
    await agents.current.send_update(sid, chunk("after"))
    assert recorder.texts(sid) == ["early one", "early two", "after"]
    assert [u["replay"] for u in recorder.updates(sid)] == [False, False, False]


async def test_updates_right_after_the_answer_come_after_the_early_ones(
    agents: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    agents.before_new = [chunk("early")]
    agents.after_new = [chunk("right after")]
    sid = await engine.registry.new(str(workspace))
    await until(lambda: len(recorder.texts(sid)) == 2)
    assert recorder.texts(sid) == ["early", "right after"]


async def test_updates_sent_before_the_session_resume_answer_are_delivered(
    agents: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    agents.known_sessions.add("elsewhere")
    agents.before_attach = [chunk("resumed early")]
    assert await engine.registry.load("elsewhere", str(workspace)) == "elsewhere"
    await settle()
    assert recorder.texts("elsewhere") == ["resumed early"]


async def test_a_flood_for_sessions_that_never_appear_does_not_crowd_out_a_new_one(
    agents: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    agent = agents.current
    for index in range(3_000):
        await agent.send_update(f"ghost-{index % 40}", chunk("boo"))
    for _ in range(3_000):
        await agent.send_update("one-ghost", chunk("boo"))
    agents.before_new = [chunk("mine")]
    sid = await engine.registry.new(str(workspace))
    assert recorder.texts(sid) == ["mine"]
    assert not any(u["sessionId"].startswith(("ghost", "one-ghost")) for u in recorder.updates())


async def test_commands_without_a_session_wait_for_the_one_a_prompt_is_creating(
    agents: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    agents.new_gate.close()
    first = asyncio.ensure_future(engine.kernel.actions.prompt("first", None, str(workspace)))
    await until(lambda: agents.new_gate.waiting == 1)
    second = asyncio.ensure_future(engine.kernel.actions.prompt("second", None, str(workspace)))
    mode = asyncio.ensure_future(engine.kernel.actions.set_mode("code", None))
    await settle()
    agents.new_gate.open()
    one, two = await first, await second
    assert await mode == {}
    # One session, both prompts in it, in the order sent.
    assert len(agents.called("session/new")) == 1
    assert one["sessionId"] == two["sessionId"] and (one["position"], two["position"]) == (0, 1)
    assert agents.called("session/set_mode") == [("session/set_mode", one["sessionId"], "code")]


async def test_a_failed_session_new_lets_the_waiting_commands_fail_clearly(
    agents: FakeAgents, tmp_path: Path, recorder: Recorder, workspace: Path
) -> None:
    engine = make_engine(tmp_path, agents, recorder)
    await engine.start()
    try:
        agents.new_gate.close()
        first = asyncio.ensure_future(engine.kernel.actions.prompt("first", None, str(workspace)))
        await until(lambda: agents.new_gate.waiting == 1)
        cancel = asyncio.ensure_future(engine.kernel.actions.cancel(None))
        await settle()
        agents.current.die(3)
        agents.new_gate.open()
        with pytest.raises(SidecarError) as created:
            await first
        assert created.value.code == errors.AGENT_DOWN
        with pytest.raises(SidecarError) as cancelled:
            await cancel
        assert cancelled.value.code == errors.NO_ACTIVE_SESSION
    finally:
        await engine.shutdown()
