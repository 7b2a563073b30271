"""In-process checks of keyword parsing and session storage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sidecar.demo_agent.script import ScriptError, derive_title, parse, rename_request
from sidecar.demo_agent.store import History, SessionRecord, Store, merge_meta, seed, seed_id


def test_keywords_combine() -> None:
    script = parse("please #chunks=100 #slow=1 #echo do it #late")
    assert (script.chunks, script.slow_ms, script.echo, script.late) == (100, 1, True, True)
    assert "#" not in script.text
    assert parse("#slow").slow_ms == 200
    assert parse("#edit=src/a.py").edit_path == "src/a.py"
    assert parse("#edit").edit and parse("#edit").edit_path is None


def test_unknown_hash_words_are_text() -> None:
    script = parse("fix issue #123 and #include <x>")
    assert not script.edit and script.chunks is None
    assert derive_title(script.text) == "fix issue #123 and #include <x>"


def test_title_and_info_take_the_rest_verbatim() -> None:
    script = parse("#slow=5 #title  \x1b[31mRed\nline #crash")
    assert script.title == " \x1b[31mRed\nline #crash"
    assert not script.crash and script.slow_ms == 5
    assert parse('#info {"title": null}').info == '{"title": null}'


@pytest.mark.parametrize("text", ["#chunks=lots", "#chunks", "#crash=1", "#stderr=-5", "#slow=x"])
def test_bad_keyword_values(text: str) -> None:
    with pytest.raises(ScriptError):
        parse(text)


def test_slash_commands() -> None:
    assert parse("/help").help
    assert parse("/edit notes.md").edit_path == "notes.md"
    assert parse("/title Hello there").title == "Hello there"
    assert parse("/permission").permission


@pytest.mark.parametrize(
    "text",
    [
        'Rename this session to exactly: "Fix auth"',
        'Please do this.\n  rename THIS session to exactly:  "Fix auth".\nConfirm it.',
        "Rename the session to exactly \u201cFix auth\u201d",
    ],
)
def test_rename_prose_is_tolerant(text: str) -> None:
    assert rename_request(text, None) == "Fix auth"


def test_rename_meta_wins() -> None:
    meta = {"acpSidecar": {"renameTitle": "From meta"}}
    assert rename_request('Rename this session to exactly: "Prose"', meta) == "From meta"
    assert rename_request("hello", {"acpSidecar": {"renameTitle": 3}}) is None


def test_derive_title() -> None:
    assert derive_title("  #slow What   is\tin the README file today please") == "What is in the README file"
    assert derive_title("a\x1b[2Jb c") == "a [2Jb c"
    assert derive_title("#chunks=5") == ""
    assert derive_title("#notice=warning:Disk almost full\nWhy #compact so full?") == "Why so full?"
    assert derive_title("Fix it #title Not this") == "Fix it"


def test_history_coalesces_and_merges() -> None:
    history = History()
    history.begin_turn()
    for i in range(1000):
        history.append_text("agent_message_chunk", "m1", f"c{i} ")
    history.append({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "status": "pending"})
    history.append({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"})
    history.append(
        {"sessionUpdate": "plan", "entries": [{"content": "a", "priority": "low", "status": "pending"}]}
    )
    history.append(
        {"sessionUpdate": "plan", "entries": [{"content": "a", "priority": "low", "status": "completed"}]}
    )
    items = history.snapshot()
    assert len(items) == 3
    assert items[0]["content"]["text"] == "".join(f"c{i} " for i in range(1000))
    assert items[1]["status"] == "completed"
    assert items[2]["entries"][0]["status"] == "completed"


def test_history_is_bounded() -> None:
    history = History(limit=10)
    for i in range(25):
        history.append({"sessionUpdate": "usage_update", "used": i, "size": 100})
    assert [u["used"] for u in history.snapshot()] == list(range(15, 25))


def test_merge_meta() -> None:
    assert merge_meta({"a": 1, "b": {"c": 2, "d": 3}}, {"a": None, "b": {"c": None, "e": 4}}) == {
        "b": {"d": 3, "e": 4}
    }


def test_store_roundtrip_and_seed(tmp_path: Path) -> None:
    store = Store(tmp_path)
    record = SessionRecord(session_id="demo-abc", cwd="/w", title="T", updated_at="2025-01-01T00:00:00.000Z")
    store.save(record)
    loaded = store.load("demo-abc")
    assert loaded is not None and loaded.title == "T" and loaded.cwd == "/w"
    assert store.load("../etc/passwd") is None
    ids = seed(store, "/w", 5, 2)
    assert ids == [seed_id("/w", i) for i in range(5)]
    assert len(store.list_records()) == 6
    data = json.loads((tmp_path / "sessions" / f"{ids[1]}.json").read_text())
    assert data["title"] == "Seeded session 1" and data["updatedAt"] == "2025-01-01T00:01:00.000Z"
    assert not list((tmp_path / "sessions").glob(".*.tmp"))
