"""Which turn an update belongs to, and the agent's echo of our own prompt.

ACP updates carry no turn id: an update belongs to the turn whose prompt is in
flight (sent, not answered yet). Before a prompt is sent and after its answer,
updates belong to no turn, so a late update of an old turn never lands in a newer one.
"""

from __future__ import annotations

from pathlib import Path

from tests.unit.fake_agent import Composed, FakeAgents, Recorder, settle, until


def chunk(text: str, kind: str = "agent_message_chunk") -> dict[str, object]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def owner_of(recorder: Recorder, text: str) -> str | None:
    [update] = [u for u in recorder.updates() if u["update"].get("content", {}).get("text") == text]
    turn_id: str | None = update["turnId"]
    return turn_id


async def test_updates_in_flight_belong_to_the_turn_late_ones_to_none(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    first = await engine.kernel.actions.prompt("first", sid)
    call = await agents.next_prompt()
    await agents.current.send_update(sid, chunk("during the first"))
    call.finish()
    await until(lambda: bool(recorder.ended(first["turnId"])))
    await agents.current.send_update(sid, chunk("late of the first"))
    second = await engine.kernel.actions.prompt("second", sid)
    call = await agents.next_prompt()
    await agents.current.send_update(sid, chunk("during the second"))
    call.finish()
    await until(lambda: bool(recorder.ended(second["turnId"])))
    assert owner_of(recorder, "during the first") == first["turnId"]
    assert owner_of(recorder, "late of the first") is None
    assert owner_of(recorder, "during the second") == second["turnId"]


async def test_a_turn_not_sent_yet_owns_no_update(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    agents.current.die(3)
    await until(lambda: engine.kernel.status()["state"] == "disconnected")
    agents.attach_gate.close()
    waiting = await engine.kernel.actions.prompt("waits for the session to attach", sid)
    await until(lambda: agents.attach_gate.waiting == 1)
    # The turn is running (position 0) but its prompt is not sent: this update is not its.
    await agents.current.send_update(sid, chunk("while attaching"))
    agents.attach_gate.open()
    call = await agents.next_prompt()
    await agents.current.send_update(sid, chunk("in flight"))
    call.finish()
    await until(lambda: bool(recorder.ended(waiting["turnId"])))
    assert owner_of(recorder, "while attaching") is None
    assert owner_of(recorder, "in flight") == waiting["turnId"]


async def test_a_cancelling_turn_still_owns_its_updates_until_it_ends(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    agents.cancel_stops = False
    sid = await engine.registry.new(str(workspace))
    turn = await engine.kernel.actions.prompt("long", sid)
    call = await agents.next_prompt()
    assert await engine.kernel.actions.cancel(sid)
    await agents.current.send_update(sid, chunk("after cancel, before the answer"))
    call.finish("cancelled")
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    await agents.current.send_update(sid, chunk("after the answer"))
    assert owner_of(recorder, "after cancel, before the answer") == turn["turnId"]
    assert owner_of(recorder, "after the answer") is None


async def test_the_echo_of_our_prompt_is_dropped_other_user_text_is_kept(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    turn = await engine.kernel.actions.prompt("please echo me", sid)
    call = await agents.next_prompt()
    agent = agents.current
    # The echo may come in pieces; each piece that continues our text is ours.
    await agent.send_update(sid, chunk("please ", "user_message_chunk"))
    await agent.send_update(sid, chunk("echo me", "user_message_chunk"))
    await agent.send_update(sid, chunk("something else", "user_message_chunk"))
    await agent.send_update(sid, chunk("please echo me", "agent_message_chunk"))
    call.finish()
    await until(lambda: bool(recorder.ended(turn["turnId"])))
    # Outside a turn nothing is an echo (a replayed or another client's message).
    await agent.send_update(sid, chunk("please echo me", "user_message_chunk"))
    await settle()
    user = [u for u in recorder.updates(sid) if u["update"]["sessionUpdate"] == "user_message_chunk"]
    assert [(u["update"]["content"]["text"], u["turnId"]) for u in user] == [
        ("something else", turn["turnId"]),
        ("please echo me", None),
    ]
    assert recorder.texts(sid).count("please echo me") == 2  # the agent's own chunk, and the one outside
