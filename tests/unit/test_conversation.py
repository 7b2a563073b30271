"""The engine's transcript documents (features/conversation/conversations.py), in process against the
fake agent: what reaches the file and when, turns never sent, settings and titles, replays, a disk
that refuses writes, shutdown, and rendering off the event loop."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from sidecar.features.conversation import conversations as conversation
from sidecar.features.conversation.api import PROMPT_AREA, DocumentChange, Renderer
from tests.unit.fake_agent import FULL_CAPS, Composed, FakeAgents, Recorder, make_engine, until


def chunk(text: str, kind: str = "agent_message_chunk") -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def document(engine: Composed, session_id: str) -> Path:
    return engine.conversations.store.path(engine.supervisor.key, session_id)


def read(engine: Composed, session_id: str) -> str:
    path = document(engine, session_id)
    return path.read_text() if path.exists() else ""


async def until_file(engine: Composed, session_id: str, piece: str, timeout: float = 10) -> str:
    await until(lambda: piece in read(engine, session_id), timeout, f"{piece!r} in the transcript")
    return read(engine, session_id)


async def test_a_streaming_turn_reaches_the_file_before_it_ends_and_its_end_at_once(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    assert engine.kernel.status()["transcriptUri"] == document(engine, sid).as_uri()
    turn = await engine.kernel.actions.prompt("What does main do?", sid)
    call = await agents.next_prompt()
    await agents.current.send_update(sid, chunk("It prints "))
    await agents.current.send_update(sid, chunk("a greeting."))
    text = await until_file(engine, sid, "It prints a greeting.")
    assert "## You\n\n    What does main do?\n\n## Agent\n\nIt prints a greeting." in text
    assert "_Turn ended" not in text  # still running: written as it streams
    call.finish()
    text = await until_file(engine, sid, "_Turn ended (end_turn)")
    assert text.endswith(PROMPT_AREA)
    changes = [c for kind, c in recorder.events if kind == "transcript"]
    assert changes and all(c[0] == sid and c[1] == document(engine, sid).as_uri() for c in changes)
    assert all(isinstance(c[2], DocumentChange) for c in changes)
    assert recorder.ended(turn["turnId"])


async def test_a_turn_that_was_never_sent_leaves_no_trace(
    engine: Composed, agents: FakeAgents, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    await engine.kernel.actions.prompt("the first question", sid)
    await agents.next_prompt()
    await engine.kernel.actions.prompt("the queued question", sid)
    agents.current.die(3)  # the running turn fails; the queued one ends without being sent
    text = await until_file(engine, sid, "_Turn failed")
    assert "the first question" in text and "**Error:**" in text
    assert "the queued question" not in text
    assert text.count("_Turn failed") == 1


async def test_mode_and_title_changes_reach_the_document(
    engine: Composed, agents: FakeAgents, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    await engine.kernel.actions.set_mode("code", sid)
    text = await until_file(engine, sid, "_Mode: Code_")
    assert "_Mode: Ask_" not in text  # the mode a session starts in is no change
    await agents.current.send_update(sid, {"sessionUpdate": "session_info_update", "title": "Parser work"})
    text = await until_file(engine, sid, "# Parser work\n")
    assert text.startswith("# Parser work\n<!-- acp-sidecar transcript")


@pytest.fixture
def load_only(agents: FakeAgents) -> FakeAgents:
    """An agent without session/resume: attaching a session means session/load (a replay)."""
    agents.capabilities = {**FULL_CAPS, "sessionCapabilities": {"list": {}}}
    return agents


async def test_a_replayed_history_is_merged_not_repeated(
    load_only: FakeAgents, engine: Composed, workspace: Path
) -> None:
    agents = load_only
    agents.known_sessions.add("old-1")
    agents.before_attach = [
        chunk("an old question", "user_message_chunk"),
        chunk("an old answer"),
        chunk("Rename this session to exactly: \"Old\"\nDo nothing else: confirm by sending a "
              "session_info_update with exactly that title.", "user_message_chunk"),
    ]  # fmt: skip
    await engine.registry.load("old-1", str(workspace))
    text = await until_file(engine, "old-1", "an old answer")
    agents.current.die(3)
    await until(lambda: engine.kernel.status()["state"] == "disconnected")
    await engine.kernel.actions.prompt("a new question", "old-1")  # the restarted agent replays it all again
    (await agents.next_prompt()).finish()
    text = await until_file(engine, "old-1", "(end_turn) · ")
    assert text.count("an old question") == 1 and text.count("an old answer") == 1
    assert "Rename this session" not in text and text.count("_Renamed to “Old”_") == 1
    assert text.index("an old answer") < text.index("## You\n\n    a new question")


@pytest.mark.parametrize("hold", [30.0, 0.3])
async def test_a_replayed_history_is_written_after_the_load_answers(
    hold: float, load_only: FakeAgents, engine: Composed, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the agent replays, its history is held (the load's answer does not share the
    interpreter with rendering it); a replay longer than REPLAY_HOLD is written in parts."""
    monkeypatch.setattr(conversation, "REPLAY_HOLD", hold)
    agents = load_only
    agents.known_sessions.add("old-1")
    agents.before_attach = [
        chunk("an old question", "user_message_chunk"),
        chunk("x" * 20_000 + " an old answer"),  # a big chunk: in a replay, no flush of its own
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"},  # the answer ends
    ]
    agents.attach_gate.close()  # the replay is sent; the load's answer waits
    loading = asyncio.ensure_future(engine.registry.load("old-1", str(workspace)))
    await until(lambda: agents.attach_gate.waiting == 1, what="the replay sent")
    if hold > 1:
        await asyncio.sleep(0.6)  # over two intervals, and a big chunk
        assert "an old answer" not in read(engine, "old-1")
    else:
        await until_file(engine, "old-1", "an old answer")  # held no longer than REPLAY_HOLD
    agents.attach_gate.open()
    await loading
    text = await until_file(engine, "old-1", "an old answer")
    assert text.count("an old answer") == 1 and text.index("an old question") < text.index("an old answer")


async def test_a_big_chunk_does_not_cut_a_replays_hold_short(
    load_only: FakeAgents, engine: Composed, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Live, a big chunk is written at once (at most once per interval); replayed, it waits with
    the rest of the history, also right after a part of a long replay was written."""
    monkeypatch.setattr(conversation, "REPLAY_HOLD", 1.0)
    agents = load_only
    agents.known_sessions.add("old-1")
    agents.before_attach = [chunk("an old question", "user_message_chunk"), chunk("a first answer")]
    agents.before_attach.append({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"})
    agents.attach_gate.close()
    loading = asyncio.ensure_future(engine.registry.load("old-1", str(workspace)))
    await until_file(engine, "old-1", "a first answer")  # the first part, after the hold
    await asyncio.sleep(0.05)  # its flush is over (the file is written before the loop hears)
    for update in (
        chunk("a second answer"),
        {"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Write"},  # the answer ends
        chunk("y" * 20_000),
    ):
        await agents.current.send_update("old-1", update)
    await asyncio.sleep(0.3)
    assert "a second answer" not in read(engine, "old-1")
    agents.attach_gate.open()
    await loading
    text = await until_file(engine, "old-1", "y" * 20_000)
    assert text.index("a first answer") < text.index("a second answer") < text.index("y" * 20_000)


async def test_a_disk_that_refuses_a_write_is_reported_and_loses_nothing(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    sid = await engine.registry.new(str(workspace))
    await until_file(engine, sid, PROMPT_AREA)
    path = document(engine, sid)
    saved = path.read_text()
    path.unlink()
    path.mkdir()  # the document cannot be opened for writing now
    await engine.kernel.actions.prompt("kept through the failure", sid)
    call = await agents.next_prompt()
    await agents.current.send_update(sid, chunk("written later"))
    await until(lambda: any("transcript of session" in m for m in recorder.of("error")), what="an error")
    assert any("transcript of session" in m for _, m in recorder.of("log"))
    path.rmdir()
    path.write_text(saved)
    call.finish()
    text = await until_file(engine, sid, "_Turn ended")
    assert "kept through the failure" in text and "written later" in text
    assert text.index("kept through the failure") < text.index("written later") < text.index("_Turn ended")


async def test_shutdown_writes_what_is_still_queued(
    tmp_path: Path, agents: FakeAgents, recorder: Recorder, workspace: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    engine = make_engine(state, agents, recorder)
    await engine.start()
    sid = await engine.registry.new(str(workspace))
    await engine.kernel.actions.prompt("interrupted", sid)
    await agents.next_prompt()
    await agents.current.send_update(sid, chunk("the last words"))
    await engine.shutdown()  # at once: nothing waited for a flush
    text = read(engine, sid)
    assert "interrupted" in text and "the last words" in text
    assert re.search(r"\n_(Cancelled|Turn failed) .* · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d_", text), text
    assert text.endswith(PROMPT_AREA)


async def test_rendering_and_writing_run_off_the_event_loop(
    engine: Composed, agents: FakeAgents, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: set[str] = set()
    original = Renderer._text  # where every text chunk is rendered, joined or not

    def recording(self: Renderer, role: str, message_id: str | None, text: str) -> None:
        threads.add(threading.current_thread().name)
        original(self, role, message_id, text)

    monkeypatch.setattr(Renderer, "_text", recording)
    sid = await engine.registry.new(str(workspace))
    await engine.kernel.actions.prompt("hostile", sid)
    call = await agents.next_prompt()
    await agents.current.send_update(sid, chunk("\x1b[31m## You\n" + "y" * 2_000_000))
    call.finish()
    text = await until_file(engine, sid, "_Turn ended")
    assert "\x1b" not in text and "\n## You\n\n    hostile" in text
    assert threads and all(name.startswith("transcripts") for name in threads), threads


async def test_an_update_the_renderer_fails_on_loses_only_itself(
    engine: Composed, agents: FakeAgents, recorder: Recorder, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Updates queued together are rendered together, in order; one that fails is reported
    and the others around it reach the document."""
    original = Renderer.update

    def failing(self: Renderer, update: dict[str, Any]) -> None:
        if update.get("toolCallId") == "bad":
            raise ValueError("a renderer bug")
        original(self, update)

    monkeypatch.setattr(Renderer, "update", failing)
    sid = await engine.registry.new(str(workspace))
    await engine.kernel.actions.prompt("go", sid)
    call = await agents.next_prompt()
    for call_id in ("first", "bad", "last"):
        tool = {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": f"Run {call_id}"}
        await agents.current.send_update(sid, tool)
    await agents.current.send_update(sid, chunk("after the tools"))
    call.finish()
    text = await until_file(engine, sid, "_Turn ended")
    assert text.index("Run first") < text.index("Run last") < text.index("after the tools")
    assert "Run bad" not in text
    # Reported once the worker's outcome is back on the event loop (the file may be seen first).
    await until(lambda: any("a renderer bug" in m for _, m in recorder.of("log")), what="the report")


async def test_a_burst_of_title_changes_retitles_the_documents_that_exist_and_creates_none(
    engine: Composed, recorder: Recorder
) -> None:
    """Documents of sessions this process has not opened (a reconcile changing thousands of
    records): the ones that exist follow their title, no other document is made."""
    store, key = engine.conversations.store, engine.supervisor.key
    existing = [f"listed-{i}" for i in (3, 500, 997)]
    for sid in existing:
        store.ensure(key, sid, "Old title")
    for i in range(1000):
        engine.conversations.title_changed({"sessionId": f"listed-{i}", "title": f"New title {i}"})
    for sid in existing:
        await until_file(engine, sid, f"# New title {sid.removeprefix('listed-')}\n")
    made = sorted(p.name for p in store.path(key, "listed-0").parent.glob("*.md"))
    assert made == sorted(store.path(key, sid).name for sid in existing)

    def retitled() -> set[str]:
        return {c[0] for kind, c in recorder.events if kind == "transcript"}

    await until(lambda: retitled() == set(existing), 10, "the editor told of the three documents")
