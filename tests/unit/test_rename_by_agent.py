"""Rename through `session/set_title` in the engine, against the in-memory agent: outcomes, errors,
the agent's own title update held back, sessions known only to the title cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.acp import RemoteError
from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from tests.unit.fake_agent import FULL_CAPS, Composed, FakeAgents, Recorder, make_engine, settle, until

TITLE_CAPS = {**FULL_CAPS, "sessionCapabilities": {**FULL_CAPS["sessionCapabilities"], "title": {}}}


@pytest.fixture
def titled(agents: FakeAgents) -> FakeAgents:
    agents.capabilities = dict(TITLE_CAPS)
    return agents


def infos(recorder: Recorder, sid: str) -> list[dict[str, Any]]:
    return [i for i in recorder.of("info") if i["sessionId"] == sid]


async def shown(engine: Composed, recorder: Recorder, sid: str, state: str) -> dict[str, Any]:
    await until(
        lambda: any(i["renameState"] == state for i in infos(recorder, sid)), what=f"renameState {state}"
    )
    return next(i for i in infos(recorder, sid) if i["renameState"] == state)


async def test_the_agents_title_is_the_users_confirmed_or_changed(
    titled: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    renamed = await engine.title_feature.rename("Fix auth", sid)
    assert renamed == {"sessionId": sid, "requestedTitle": "Fix auth"}
    info = await shown(engine, recorder, sid, "confirmed")
    assert (info["title"], info["titleSource"]) == ("Fix auth", "user")
    assert titled.called("session/set_title") == [("session/set_title", sid, "Fix auth")]
    assert not titled.prompts, "no rename prompt"
    titled.title_answer = "fix auth (normalised)"
    await engine.title_feature.rename("Fix auth again", sid)
    info = await shown(engine, recorder, sid, "changed")
    assert (info["title"], info["titleSource"]) == ("fix auth (normalised)", "user")
    assert engine.kernel.status()["title"] == "fix auth (normalised)"


@pytest.mark.parametrize(
    ("error", "code", "words"),
    [
        (RemoteError(-32002, "no such session"), errors.UNKNOWN_SESSION, "unknown session"),
        (
            RemoteError(-32602, "title too long"),
            errors.INVALID_PARAMS,
            "invalid title: the agent answered: title",
        ),
        (RemoteError(-32603, "disk full"), -32603, "disk full"),
    ],
)
async def test_a_refused_rename_keeps_the_old_title(
    error: Exception,
    code: int,
    words: str,
    titled: FakeAgents,
    engine: Composed,
    recorder: Recorder,
    workspace: Path,
) -> None:
    sid = await engine.registry.new(str(workspace))
    await engine.title_feature.rename("Before", sid)
    await shown(engine, recorder, sid, "confirmed")
    titled.title_answer = error
    with pytest.raises(SidecarError) as failed:
        await engine.title_feature.rename("After", sid)
    assert failed.value.code == code and words in failed.value.message, failed.value
    await settle()
    record = engine.titles.record(sid)
    assert record is not None and (record.title, record.title_source) == ("Before", "user")
    assert infos(recorder, sid)[-1]["title"] == "Before"


async def test_the_agents_own_update_meanwhile_is_saved_with_the_outcome(
    titled: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    await until(
        lambda: bool(infos(recorder, sid)) and not engine.titles.writes.busy(sid), what="the new session"
    )
    before = len(infos(recorder, sid))
    titled.title_gate.close()
    renaming = engine.kernel.spawn(engine.title_feature.rename("Held", sid), "rename")
    await until(lambda: titled.title_gate.waiting == 1)
    await titled.current.send_update(sid, {"sessionUpdate": "session_info_update", "title": "Held"})
    await settle()
    assert len(infos(recorder, sid)) == before, "nothing shown before the agent answers"
    titled.title_gate.open()
    await renaming
    info = await shown(engine, recorder, sid, "confirmed")
    await settle()
    assert infos(recorder, sid)[before:] == [info], "one sessionInfo: the outcome"
    assert (info["title"], info["titleSource"]) == ("Held", "user")


async def test_the_agents_update_meanwhile_still_counts_when_the_rename_fails(
    titled: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    titled.title_gate.close()
    titled.title_answer = RemoteError(-32603, "disk full")
    renaming = engine.kernel.spawn(engine.title_feature.rename("Wanted", sid), "rename")
    await until(lambda: titled.title_gate.waiting == 1)
    await titled.current.send_update(sid, {"sessionUpdate": "session_info_update", "title": "Agent's own"})
    titled.title_gate.open()
    with pytest.raises(SidecarError):
        await renaming
    await until(lambda: any(i["title"] == "Agent's own" for i in infos(recorder, sid)))
    assert infos(recorder, sid)[-1]["titleSource"] == "agent"


async def test_sessions_known_only_to_the_title_cache(
    titled: FakeAgents, tmp_path: Path, recorder: Recorder, workspace: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    first = make_engine(state, titled, recorder)
    await first.start()
    sid = await first.registry.new(str(workspace))
    await first.shutdown()
    engine = make_engine(state, titled, recorder)
    await engine.start()
    try:
        assert sid not in engine.registry.by_id
        await engine.title_feature.rename("Cold", sid)
        info = await shown(engine, recorder, sid, "confirmed")
        assert info["title"] == "Cold" and sid not in engine.registry.by_id, "renamed, not loaded"
        calls = len(titled.called("session/set_title"))
        with pytest.raises(SidecarError) as unknown:
            await engine.title_feature.rename("Nope", "never-seen")
        assert unknown.value.code == errors.UNKNOWN_SESSION
        assert len(titled.called("session/set_title")) == calls, "the agent is not asked"
    finally:
        await engine.shutdown()


async def test_without_set_title_a_rename_is_a_prompt(
    agents: FakeAgents, engine: Composed, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    await engine.title_feature.rename("By prompt", sid)
    prompt = await agents.next_prompt()
    assert prompt.meta == {"acpSidecar": {"renameTitle": "By prompt"}}
    assert not agents.called("session/set_title")
    with pytest.raises(SidecarError) as unknown:
        await engine.title_feature.rename("Elsewhere", "not-loaded")
    assert unknown.value.code == errors.UNKNOWN_SESSION
    prompt.finish()
