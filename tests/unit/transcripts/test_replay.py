"""session/load replays a session's whole history: merged with the document, never duplicated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.features.conversation.render import Renderer
from sidecar.features.conversation.store import ConversationStore
from sidecar.kernel.prompts import rename_prompt_text as rename_prompt

from .helpers import agent, assert_well_formed, renderer, user_block

JsonObj = dict[str, Any]
AGENT, SESSION = "demo", "sess-r"
LINK = {"type": "resource_link", "uri": "file:///ws/src/app.py", "name": "app.py"}
CONTEXT = {"type": "text", "text": "Context from app.py (lines 1-2):\n```\nx = 1\n```"}
DIFF = {"type": "diff", "path": "/ws/src/app.py", "oldText": "x = 1\n", "newText": "x = 2\n"}


def turn(prompt: list[JsonObj], meta: JsonObj | None, answer: list[str], tool: str | None) -> JsonObj:
    return {"prompt": prompt, "meta": meta, "answer": answer, "tool": tool}


RENAME_TEXT, RENAME_META = rename_prompt("Fix auth")
HISTORY = [
    turn(
        [{"type": "text", "text": "Fix the bug"}, LINK, CONTEXT], None, ["Look", "ing # now\n```py\nx"], "t1"
    ),
    turn([{"type": "text", "text": RENAME_TEXT}], RENAME_META, ["Renamed."], None),
    turn([{"type": "text", "text": "Thanks"}], None, ["You are ", "welcome."], None),
]
MORE = [turn([{"type": "text", "text": "One more thing"}], None, ["Sure: ", "done"], "t9")]


def live(store: ConversationStore, turns: list[JsonObj], r: Renderer | None = None) -> None:
    """Turns as the engine renders them live (prompt, streamed chunks, tool updates, turn end)."""
    r = r or renderer()
    for index, t in enumerate(turns):
        r.prompt(t["prompt"], t["meta"])
        r.update(user_block(t["prompt"][0]))  # the agent echoes the prompt
        for piece in t["answer"]:
            r.update(agent(piece, f"a{index}"))
            flush(store, r)
        if t["tool"]:
            r.update(
                {"sessionUpdate": "tool_call", "toolCallId": t["tool"], "title": "Edit", "status": "pending"}
            )
            r.update({"sessionUpdate": "tool_call_update", "toolCallId": t["tool"], "status": "in_progress"})
            update = {"sessionUpdate": "tool_call_update", "toolCallId": t["tool"], "status": "completed"}
            r.update(dict(update, content=[DIFF]))
            r.update(agent("After the tool.", f"b{index}"))
        r.turn_ended("end_turn")
        flush(store, r)


def replay_updates(turns: list[JsonObj]) -> list[JsonObj]:
    """The history as an agent replays it: prompt blocks as user chunks, text coalesced, tool
    calls in their final state (as the demo agent does)."""
    updates: list[JsonObj] = []
    for index, t in enumerate(turns):
        updates += [user_block(block, f"u{index}") for block in t["prompt"]]
        updates.append(agent("".join(t["answer"]), f"a{index}"))
        if t["tool"]:
            updates.append(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": t["tool"],
                    "title": "Edit",
                    "status": "completed",
                    "content": [DIFF],
                }
            )
            updates.append(agent("After the tool.", f"b{index}"))
    return updates


def flush(store: ConversationStore, r: Renderer) -> None:
    batch = r.take()
    if batch is not None:
        store.append(AGENT, SESSION, batch)


def load(store: ConversationStore, turns: list[JsonObj], chunked: bool = False, every: int = 3) -> None:
    """A new sidecar loads the session: begin_replay, the replayed updates, end_replay (flushed
    every `every` updates when `chunked`)."""
    r = renderer()
    r.begin_replay()
    for index, update in enumerate(replay_updates(turns)):
        r.update(update)
        if chunked and index % every == 0:
            flush(store, r)  # the engine's timer may flush in the middle of a replay
    r.end_replay()
    flush(store, r)


@pytest.fixture
def store(tmp_path: Path) -> ConversationStore:
    return ConversationStore(tmp_path, durable=False)


def document(store: ConversationStore) -> str:
    text = store.read(AGENT, SESSION)
    assert text is not None
    return text


@pytest.mark.parametrize("chunked", [False, True])
def test_load_after_our_own_live_session_adds_nothing(store: ConversationStore, chunked: bool) -> None:
    live(store, HISTORY)
    before = document(store)
    assert before.count("_Renamed to “Fix auth”_") == 1 and "Rename this session" not in before
    load(store, HISTORY, chunked)
    assert document(store) == before
    assert_well_formed(before)


@pytest.mark.parametrize("chunked", [False, True])
def test_load_of_a_session_without_transcript_writes_it_once(store: ConversationStore, chunked: bool) -> None:
    load(store, HISTORY, chunked)
    text = document(store)
    assert text.count("Fix the bug") == 1
    assert text.count("Thanks") == 1
    assert text.count("_Renamed to “Fix auth”_") == 1
    assert "Rename this session" not in text and "[resource" not in text and "x = 1\n```" not in text
    assert "Context: `src/app.py` (lines 1-2)" in text
    assert text.count("**Tool:** Edit (completed)") == 1
    assert text.count("Diff of `src/app.py`") == 1
    assert_well_formed(text)
    load(store, HISTORY, chunked)
    assert document(store) == text


def test_load_after_the_session_went_on_elsewhere_appends_only_the_new_part(store: ConversationStore) -> None:
    live(store, HISTORY)
    before = document(store)
    load(store, HISTORY + MORE)
    after = document(store)
    head, sep, tail = after.partition("---\n\n## Your prompt")
    assert head.startswith(before.partition("---\n\n## Your prompt")[0].rstrip("\n"))
    added = head[len(before.partition("---\n\n## Your prompt")[0].rstrip("\n")) :]
    assert "One more thing" in added and "Sure: done" in added and "Diff of" in added
    assert "Fix the bug" not in added and "Thanks" not in added and "Renamed" not in added
    assert after.count("One more thing") == 1
    assert_well_formed(after)
    load(store, HISTORY + MORE)
    assert document(store) == after


def test_a_repeated_message_is_kept_as_often_as_it_was_said(store: ConversationStore) -> None:
    same = [turn([{"type": "text", "text": "ok"}], None, ["ok"], None)]
    live(store, same * 2)
    load(store, same * 3)  # one more "ok" exchange happened elsewhere
    assert document(store).count("## You\n\n    ok\n") == 3


def test_two_sidecars_replaying_at_once_add_the_history_once(tmp_path: Path) -> None:
    first, second = (ConversationStore(tmp_path, durable=False) for _ in range(2))
    r1, r2 = renderer(), renderer()
    r1.begin_replay()
    r2.begin_replay()
    for update in replay_updates(HISTORY):
        r1.update(update)
        r2.update(update)
        for s, r in ((first, r1), (second, r2)):
            batch = r.take()
            if batch is not None:
                s.append(AGENT, SESSION, batch)
    for s, r in ((first, r1), (second, r2)):
        r.end_replay()
        batch = r.take()
        if batch is not None:
            s.append(AGENT, SESSION, batch)
    text = document(first)
    assert text.count("Fix the bug") == 1 and text.count("Thanks") == 1
    assert text.count("Renamed to") == 1 and text.count("Renamed.") == 1 and text.count("Diff of") == 1
    assert_well_formed(text)


def test_resume_without_replay_keeps_the_stored_history(store: ConversationStore) -> None:
    live(store, HISTORY)
    before = document(store)
    fresh = ConversationStore(store.state_dir, durable=False)  # a restarted sidecar resumes
    assert fresh.ensure(AGENT, SESSION, "Fix auth") is None
    assert document(fresh) == before
    live(fresh, MORE)
    after = document(fresh)
    assert after.startswith(before.partition("---\n\n## Your prompt")[0].rstrip("\n"))
    assert "One more thing" in after
    assert_well_formed(after)


def test_whitespace_around_a_message_does_not_make_it_new(store: ConversationStore) -> None:
    r = renderer()
    r.prompt([{"type": "text", "text": "q"}])
    for piece in ["\n", "  Answer", " text", "\n\n"]:
        r.update(agent(piece, "a0"))
    r.turn_ended("end_turn")
    flush(store, r)
    before = document(store)
    replay = renderer()
    replay.begin_replay()
    replay.update(user_block({"type": "text", "text": "q"}, "u0"))
    replay.update(agent("Answer text", "a0"))
    replay.end_replay()
    flush(store, replay)
    assert document(store) == before


def test_live_history_still_open_when_a_replay_begins_is_not_doubled_by_it(tmp_path: Path) -> None:
    """An agent that sends a session's history as live updates (on resume), and later replays it
    (session/load after a restart): the last message was still open, so it lands in the same
    batch as the replay that repeats it."""
    store = ConversationStore(tmp_path, durable=False)
    history = [
        user_block({"type": "text", "text": "an old question"}),
        agent("an old answer"),
        user_block({"type": "text", "text": RENAME_TEXT}),
    ]
    r = renderer()
    for update in history:
        r.update(update)
    flush(store, r)
    r.begin_replay()
    for update in history:
        r.update(update)
    r.end_replay()
    flush(store, r)
    text = store.read(AGENT, SESSION)
    assert text is not None
    assert text.count("an old question") == 1 and text.count("an old answer") == 1
    assert text.count("_Renamed to “Fix auth”_") == 1
    assert_well_formed(text)


def long_history(turns: int) -> list[JsonObj]:
    answer = ["Part one ```py\n", "x = 1\n", "still code", " é€ " * 40]  # an answer ending inside code
    return [turn([{"type": "text", "text": f"Question {n}"}], None, answer, f"t{n}") for n in range(turns)]


@pytest.mark.parametrize("before", [2, 0], ids=["after-live-turns", "into-a-new-document"])
@pytest.mark.parametrize("every", [0, 3, 40], ids=["one-batch", "flushed-every-3", "flushed-every-40"])
def test_a_replay_far_over_the_bound_is_cut_at_a_section_heading_as_a_scan_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every: int, before: int
) -> None:
    """The store knows where its replayed sections start, also those an earlier flush of the
    replay wrote (appended in place or whole, trimmed since), and those of a replay that starts
    a new document (a session loaded here for the first time): its cut there is the one a scan
    of every line finds (measured by the same load with those places withheld)."""
    from sidecar.features.conversation import layout

    history = long_history(300)
    cuts: list[object] = []
    find = layout._known_heading_cut
    monkeypatch.setattr(layout, "_known_heading_cut", lambda *args: cuts.append(find(*args)) or cuts[-1])
    known = ConversationStore(tmp_path / "known", max_bytes=16 * 1024, durable=False)
    live(known, history[:before])
    load(known, history, chunked=every > 0, every=every)
    text = known.read(AGENT, SESSION)
    assert text is not None
    assert cuts and all(cut is not None for cut in cuts)  # every trim was cut at a known heading

    monkeypatch.setattr(layout, "_known_heading_cut", lambda *args: None)
    scanned = ConversationStore(tmp_path / "scanned", max_bytes=16 * 1024, durable=False)
    live(scanned, history[:before])
    load(scanned, history, chunked=every > 0, every=every)
    assert scanned.read(AGENT, SESSION) == text

    assert_well_formed(text)
    body = text.split("\n\n", 1)[1]
    assert layout.TRIM_NOTE.match(body) is not None
    assert body.split("\n\n", 1)[1].startswith("## ")  # the cut is at one of our headings
    assert "Question 299" in text and "Question 0\n" not in text
    assert len(text.encode()) <= 16 * 1024
