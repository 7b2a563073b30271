"""Permission requests: policies ask / allow_reads / reject, answers, and cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sidecar.acp.errors import RESOURCE_NOT_FOUND
from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from tests.unit.fake_agent import Composed, FakeAgents, PromptCall, Recorder, make_engine, until

ONLY_ALLOW = [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]


async def running_turn(engine: Composed, agents: FakeAgents, workspace: Path) -> tuple[str, PromptCall]:
    sid = await engine.registry.new(str(workspace))
    await engine.kernel.actions.prompt("do things", sid)
    return sid, await agents.next_prompt()


def ask(agents: FakeAgents, sid: str, kind: str = "edit", options: Any = None) -> asyncio.Task[Any]:
    return asyncio.ensure_future(agents.current.ask_permission(sid, kind, options))


async def test_ask_waits_for_the_user_and_answers_the_chosen_option(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid, _ = await running_turn(engine, agents, workspace)
    answer = ask(agents, sid)
    await until(lambda: bool(recorder.permission_requests))
    request = recorder.permission_requests[0]
    assert engine.permissions.pending() == [request]
    assert engine.kernel.status()["state"] == "waiting_permission"
    assert request.title == "edit a file" and request.kind == "edit"
    engine.permissions.respond(request.request_id, "yes")
    assert await answer == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert engine.permissions.pending() == []
    assert engine.kernel.status()["state"] == "running"


async def test_unknown_option_is_refused_and_the_request_stays_pending(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid, _ = await running_turn(engine, agents, workspace)
    answer = ask(agents, sid)
    await until(lambda: bool(recorder.permission_requests))
    request_id = recorder.permission_requests[0].request_id
    with pytest.raises(SidecarError) as refused:
        engine.permissions.respond(request_id, "maybe")
    assert refused.value.code == errors.INVALID_PARAMS
    assert "unknown optionId 'maybe'; choose one of: yes, no" in refused.value.message
    with pytest.raises(SidecarError, match="no pending permission request 'perm-404'"):
        engine.permissions.respond("perm-404", "yes")
    assert not answer.done()
    # Dismissed (no option): the reject option is chosen.
    engine.permissions.respond(request_id, None)
    assert await answer == {"outcome": {"outcome": "selected", "optionId": "no"}}
    with pytest.raises(SidecarError, match="already answered or cancelled"):
        engine.permissions.respond(request_id, "yes")


async def test_cancel_answers_every_pending_request_cancelled(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid, _ = await running_turn(engine, agents, workspace)
    answers = [ask(agents, sid), ask(agents, sid, "execute")]
    await until(lambda: len(recorder.permission_requests) == 2)
    assert await engine.kernel.actions.cancel(sid)
    assert await asyncio.gather(*answers) == [{"outcome": {"outcome": "cancelled"}}] * 2
    assert engine.permissions.pending() == []


async def test_a_request_outside_a_running_turn_is_cancelled_at_once(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    assert await agents.current.ask_permission(sid) == {"outcome": {"outcome": "cancelled"}}
    assert recorder.permission_requests == []


async def test_bad_requests_are_clear_errors(engine: Composed, agents: FakeAgents, workspace: Path) -> None:
    sid, _ = await running_turn(engine, agents, workspace)
    with pytest.raises(SidecarError) as unknown:
        await agents.current.ask_permission("not-a-session")
    assert unknown.value.code == RESOURCE_NOT_FOUND
    with pytest.raises(SidecarError, match="needs at least one option"):
        await agents.current.ask_permission(sid, options=[{"name": "no id"}])


@pytest.mark.parametrize(
    ("policy", "kind", "options", "expected"),
    [
        ("reject", "edit", None, {"outcome": "selected", "optionId": "no"}),
        ("reject", "read", ONLY_ALLOW, {"outcome": "cancelled"}),  # nothing to reject with
        ("allow_reads", "read", None, {"outcome": "selected", "optionId": "yes"}),
        ("allow_reads", "search", None, {"outcome": "selected", "optionId": "yes"}),
    ],
)
async def test_policies_answer_without_asking(
    policy: str,
    kind: str,
    options: Any,
    expected: dict[str, Any],
    tmp_path: Path,
    agents: FakeAgents,
    recorder: Recorder,
    workspace: Path,
) -> None:
    engine = make_engine(tmp_path, agents, recorder, permissions=policy)
    await engine.start()
    try:
        sid, _ = await running_turn(engine, agents, workspace)
        assert await agents.current.ask_permission(sid, kind, options) == {"outcome": expected}
        assert recorder.permission_requests == []
    finally:
        await engine.shutdown()


async def test_allow_reads_still_asks_for_an_edit(
    tmp_path: Path, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    engine = make_engine(tmp_path, agents, recorder, permissions="allow_reads")
    await engine.start()
    try:
        sid, _ = await running_turn(engine, agents, workspace)
        answer = ask(agents, sid, "edit")
        await until(lambda: bool(recorder.permission_requests))
        engine.permissions.respond(recorder.permission_requests[0].request_id, "no")
        assert await answer == {"outcome": {"outcome": "selected", "optionId": "no"}}
    finally:
        await engine.shutdown()
