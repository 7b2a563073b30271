"""The turn queue: ordering, bounded admission, exactly one end per turn, cancel in every state."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from tests.unit.fake_agent import Composed, FakeAgents, Gate, Recorder, make_engine, settle, until


def states(recorder: Recorder, turn_id: str) -> list[str]:
    return [t["state"] for t in recorder.turns(turn_id)]


async def new(engine: Composed, workspace: Path) -> str:
    return await engine.registry.new(str(workspace))


# ---------------------------------------------------------------- ordering and admission
async def test_turns_run_one_at_a_time_in_admission_order(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await new(engine, workspace)
    admitted = [await engine.kernel.actions.prompt(f"prompt {i}", sid) for i in range(3)]
    assert [a["position"] for a in admitted] == [0, 1, 2]
    for index, turn in enumerate(admitted):
        call = await agents.next_prompt(index)
        assert call.text == f"prompt {index}"
        await settle()
        # The next prompt is not sent while this one runs.
        assert len(agents.prompts) == index + 1
        call.finish()
        await until(lambda t=turn: bool(recorder.ended(t["turnId"])))
    running = [t["turnId"] for t in recorder.of("turn") if t["state"] == "running"]
    ended = [t["turnId"] for t in recorder.of("turn") if t["state"] == "ended"]
    order = [a["turnId"] for a in admitted]
    assert running == order and ended == order
    for turn in admitted:
        assert states(recorder, turn["turnId"]) == ["queued", "running", "ended"]
        assert recorder.ended(turn["turnId"])[0]["stopReason"] == "end_turn"


async def test_admission_is_bounded_and_a_refused_turn_leaves_no_trace(
    tmp_path: Path, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    engine = make_engine(tmp_path, agents, recorder, queue_bound=2)
    await engine.start()
    try:
        sid = await new(engine, workspace)
        first = await engine.kernel.actions.prompt("runs", sid)
        await agents.next_prompt(0)
        queued = [await engine.kernel.actions.prompt(f"waits {i}", sid) for i in range(2)]
        assert [q["position"] for q in queued] == [1, 2]
        with pytest.raises(SidecarError) as refused:
            await engine.kernel.actions.prompt("one too many", sid)
        assert refused.value.code == errors.QUEUE_FULL and "full (2 turns waiting)" in refused.value.message
        assert len(recorder.of("turn")) == 4  # 3 queued + 1 running: nothing for the refused one
        for index in range(3):
            (await agents.next_prompt(index)).finish()
        for turn in (first, *queued):
            await until(lambda t=turn: bool(recorder.ended(t["turnId"])))
    finally:
        await engine.shutdown()


# ---------------------------------------------------------------- exactly one end, every path
async def test_agent_error_ends_the_turn_once_with_the_error(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    from sidecar.acp import RemoteError

    sid = await new(engine, workspace)
    turn = await engine.kernel.actions.prompt("fails", sid)
    call = await agents.next_prompt()
    call.answer.set_exception(RemoteError(-32603, "demo failure"))
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    [end] = recorder.ended(turn["turnId"])
    assert end["stopReason"] is None
    assert end["error"] == {"code": -32603, "message": "the agent answered: demo failure"}


async def test_an_agent_killed_by_a_signal_says_which(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    """Killed (by the out-of-memory killer, or `kill -9`): the message names the signal."""
    sid = await new(engine, workspace)
    turn = await engine.kernel.actions.prompt("runs", sid)
    await agents.next_prompt()
    agents.current.die(-9)
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    [end] = recorder.ended(turn["turnId"])
    assert "the agent fake-agent exited (ended by SIGKILL)" in end["error"]["message"], end


async def test_agent_death_ends_running_and_queued_turns_once(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await new(engine, workspace)
    running = await engine.kernel.actions.prompt("runs", sid)
    queued = await engine.kernel.actions.prompt("waits", sid)
    await agents.next_prompt()
    agents.current.die(3, stderr="boom")
    for turn in (running, queued):
        await until(lambda t=turn: bool(recorder.ended(t["turnId"])))
    await settle()
    for turn in (running, queued):
        [end] = recorder.ended(turn["turnId"])
        assert end["error"]["code"] == errors.AGENT_DOWN
        assert "exited (code 3)" in end["error"]["message"] and "boom" in end["error"]["message"]
    # The next prompt restarts the agent and re-attaches the session.
    after = await engine.kernel.actions.prompt("after the crash", sid)
    (await agents.next_prompt()).finish()
    await until(lambda: bool(recorder.ended(after["turnId"])))
    assert len(agents.agents) == 2 and agents.called("session/resume")


async def test_shutdown_ends_every_turn_once(
    tmp_path: Path, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    engine = make_engine(tmp_path, agents, recorder)
    await engine.start()
    sid = await new(engine, workspace)
    turns = [await engine.kernel.actions.prompt(f"p{i}", sid) for i in range(3)]
    await agents.next_prompt()
    await engine.shutdown()
    for turn in turns:
        assert len(recorder.ended(turn["turnId"])) == 1, recorder.turns(turn["turnId"])
    assert agents.called("session/cancel") and agents.called("session/close")


# ---------------------------------------------------------------- cancel, in every state
async def test_cancel_in_flight_sends_session_cancel_and_ends_cancelled(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await new(engine, workspace)
    turn = await engine.kernel.actions.prompt("long", sid)
    await agents.next_prompt()
    assert await engine.kernel.actions.cancel(sid) is True
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    assert agents.called("session/cancel") == [("session/cancel", sid)]
    [end] = recorder.ended(turn["turnId"])
    assert end["stopReason"] == "cancelled" and end["error"] is None
    assert any(s["state"] == "cancelling" for s in recorder.of("status"))


async def test_cancel_while_cancelling_and_after_the_end_is_a_no_op(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    agents.cancel_stops = False
    sid = await new(engine, workspace)
    turn = await engine.kernel.actions.prompt("long", sid)
    call = await agents.next_prompt()
    assert await engine.kernel.actions.cancel(sid) is True
    assert await engine.kernel.actions.cancel(sid) is False  # already cancelling
    assert len(agents.called("session/cancel")) == 1
    call.finish("cancelled")
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    assert await engine.kernel.actions.cancel(sid) is False  # nothing left to cancel
    await settle()
    assert len(recorder.ended(turn["turnId"])) == 1


async def test_cancel_of_a_running_turn_leaves_the_queued_one_to_run(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await new(engine, workspace)
    first = await engine.kernel.actions.prompt("first", sid)
    second = await engine.kernel.actions.prompt("second", sid)
    await agents.next_prompt(0)
    assert await engine.kernel.actions.cancel(sid) is True
    call = await agents.next_prompt(1)
    assert call.text == "second"
    call.finish()
    await until(lambda: bool(recorder.ended(second["turnId"])))
    assert recorder.ended(first["turnId"])[0]["stopReason"] == "cancelled"
    assert recorder.ended(second["turnId"])[0]["stopReason"] == "end_turn"


async def test_cancel_at_position_0_before_the_runner_picked_it_up(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await new(engine, workspace)
    turn = await engine.kernel.actions.prompt("cancel me at once", sid)
    assert turn["position"] == 0
    # No await in between: the runner has not run yet.
    assert await engine.kernel.actions.cancel(sid) is True
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    await settle()
    assert recorder.ended(turn["turnId"])[0]["stopReason"] == "cancelled"
    assert agents.prompts == [] and not agents.called("session/cancel")
    # The session still works, and the cancel did not leak into the next turn.
    after = await engine.kernel.actions.prompt("next", sid)
    (await agents.next_prompt()).finish()
    await until(lambda: bool(recorder.ended(after["turnId"])))
    assert recorder.ended(after["turnId"])[0]["stopReason"] == "end_turn"
    assert len(recorder.ended(turn["turnId"])) == 1


async def test_cancel_of_a_rename_right_after_it_was_asked(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await new(engine, workspace)
    await engine.title_feature.rename("Never sent", sid)
    assert await engine.kernel.actions.cancel(sid) is True
    turn_id = recorder.of("turn")[0]["turnId"]
    await until(lambda: bool(recorder.ended(turn_id)))
    assert recorder.ended(turn_id)[0]["stopReason"] == "cancelled"
    assert agents.prompts == []
    await until(lambda: any(i["renameState"] == "unconfirmed" for i in recorder.of("info")))


@pytest.mark.parametrize("held", ["start_gate", "attach_gate"], ids=["agent starting", "session attaching"])
async def test_cancel_while_the_turn_starts_up_ends_it_at_once(
    held: str, engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await new(engine, workspace)
    agents.current.die(3)
    await until(lambda: engine.kernel.status()["state"] == "disconnected")
    gate: Gate = getattr(agents, held)
    gate.close()
    turn = await engine.kernel.actions.prompt("after the crash", sid)
    await until(lambda: gate.waiting == 1, what=f"the runner to wait at {held}")
    assert await engine.kernel.actions.cancel(sid) is True
    # Ended now, not once the agent is up and the session attached.
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    assert recorder.ended(turn["turnId"])[0]["stopReason"] == "cancelled"
    gate.open()
    # Its prompt is never sent; the next turn finds the agent up, the session attached, and runs.
    after = await engine.kernel.actions.prompt("next", sid)
    (await agents.next_prompt()).finish()
    await until(lambda: bool(recorder.ended(after["turnId"])))
    assert [p.text for p in agents.prompts] == ["next"]
    assert len(recorder.ended(turn["turnId"])) == 1


async def test_an_agent_that_ignores_cancel_is_ended_by_the_deadline(
    tmp_path: Path, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    agents.cancel_stops = False
    engine = make_engine(tmp_path, agents, recorder, cancel_timeout=0.2)
    await engine.start()
    try:
        sid = await new(engine, workspace)
        stuck = await engine.kernel.actions.prompt("ignores cancel", sid)
        queued = await engine.kernel.actions.prompt("then this", sid)
        first = await agents.next_prompt(0)
        assert await engine.kernel.actions.cancel(sid) is True
        await until(lambda: bool(recorder.ended(stuck["turnId"])))
        [end] = recorder.ended(stuck["turnId"])
        assert end["stopReason"] == "cancelled"
        assert end["error"]["message"] == "the agent did not stop after cancel"
        # The runner moved on: the queued turn runs; a late answer of the old one changes nothing.
        (await agents.next_prompt(1)).finish()
        await until(lambda: bool(recorder.ended(queued["turnId"])))
        first.finish()
        await settle()
        assert len(recorder.ended(stuck["turnId"])) == 1
    finally:
        await engine.shutdown()


async def test_cancel_right_after_the_prompt_that_creates_the_session(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    import asyncio

    agents.new_gate.close()
    prompt = asyncio.ensure_future(engine.kernel.actions.prompt("first words", None, str(workspace)))
    await until(lambda: agents.new_gate.waiting == 1, what="session/new")
    cancel = asyncio.ensure_future(engine.kernel.actions.cancel(None))
    await settle()
    agents.new_gate.open()
    admitted = await prompt
    assert await cancel is True
    await until(lambda: bool(recorder.ended(admitted["turnId"])))
    assert recorder.ended(admitted["turnId"])[0]["stopReason"] == "cancelled"
    assert agents.prompts == []
