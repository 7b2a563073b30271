"""The renderer: each kind of conversation event as transcript Markdown."""

from __future__ import annotations

import difflib

from hypothesis import given
from hypothesis import strategies as st

from sidecar.features.conversation import elements
from sidecar.features.conversation.elements import unified_diff
from sidecar.features.conversation.output import Output
from sidecar.features.conversation.render import ECHO_LINE, MAX_MESSAGE
from sidecar.kernel.prompts import context_meta
from sidecar.kernel.prompts import rename_prompt_text as rename_prompt

from .helpers import FIXED, agent, rendered, renderer, user, user_block
from .markdown_structure import structure

ENGINE_CONTEXT = "Context from app.py (lines 3-7):\n```\ndef main():\n    return 1\n```"
RESOURCE = {"type": "resource", "resource": {"uri": "file:///ws/src/app.py", "text": "a\nb\n"}}
LINK = {"type": "resource_link", "uri": "file:///ws/src/app.py", "name": "app.py"}


def test_a_prompt_names_its_embedded_context_never_its_content() -> None:
    r = renderer()
    r.prompt(
        [{"type": "text", "text": "Explain this"}, RESOURCE], labels={"file:///ws/src/app.py": "lines 3-7"}
    )
    text = rendered(r)
    assert text == "## You\n\n    Explain this\n\nContext: `src/app.py` (lines 3-7)\n"
    assert "[resource" not in text


def test_an_embedded_context_names_its_range_from_its_meta_in_a_replay() -> None:
    block = dict(RESOURCE, _meta=context_meta("lines 3-7"))
    r = renderer()
    r.begin_replay()
    r.update(user_block({"type": "text", "text": "Explain this"}))
    r.update(user_block(block))
    r.end_replay()
    batch = r.take()
    assert batch is not None
    assert batch.items[0].text == "    Explain this\n\nContext: `src/app.py` (lines 3-7)\n"


def test_a_prompt_with_a_link_and_the_context_text_block() -> None:
    r = renderer()
    r.prompt([{"type": "text", "text": "Explain this"}, LINK, {"type": "text", "text": ENGINE_CONTEXT}])
    text = rendered(r)
    assert text == "## You\n\n    Explain this\n\nContext: `src/app.py` (lines 3-7)\n"
    assert "def main" not in text and "Context from" not in text


def test_a_replayed_prompt_looks_like_the_live_one_and_has_the_same_key() -> None:
    live = renderer()
    live.prompt([{"type": "text", "text": "Explain this"}, LINK, {"type": "text", "text": ENGINE_CONTEXT}])
    live_batch = live.take()
    replay = renderer()
    replay.begin_replay()
    for block in [{"type": "text", "text": "Explain "}, {"type": "text", "text": "this"}, LINK]:
        replay.update(user_block(block, "u1"))
    replay.update(user_block({"type": "text", "text": ENGINE_CONTEXT}, "u1"))
    replay.end_replay()
    batch = replay.take()
    assert live_batch is not None and batch is not None
    (item,) = batch.items
    assert item.key == live_batch.keys[0]
    assert item.section == "you"
    assert item.text == "    Explain this\n\nContext: `src/app.py` (lines 3-7)\n"


def test_the_rename_prompt_is_one_line_live_and_replayed() -> None:
    text, meta = rename_prompt("Fix auth timeout")
    r = renderer()
    r.prompt([{"type": "text", "text": text}], meta)
    r.update(user(text))  # the agent echoes it
    r.update(agent("Renamed."))
    r.turn_ended("end_turn")
    out = rendered(r)
    assert out.startswith("_Renamed to “Fix auth timeout”_\n\n## Agent\n\nRenamed.\n")
    assert "Rename this session" not in out
    replay = renderer()
    replay.begin_replay()
    replay.update(user(text, "m1"))
    replay.end_replay()
    batch = replay.take()
    assert batch is not None
    assert [(i.text, i.section) for i in batch.items] == [("_Renamed to “Fix auth timeout”_\n", None)]


def test_an_echoed_prompt_is_not_shown_twice_and_a_made_up_one_is_the_agents_words() -> None:
    r = renderer()
    r.prompt([{"type": "text", "text": "Hello"}, RESOURCE])
    r.update(user_block(RESOURCE))  # echo of the resource block (the engine ate the text echo)
    r.update(agent("Hi"))
    r.update(user("Something the agent injected\n## You\n\nrm -rf everything"))
    r.turn_ended("end_turn")
    out = rendered(r)
    assert out.startswith("## You\n") and out.count("\n## You\n") == 0, out  # only the prompt sent
    mine = out.split("## Agent")[0]
    assert "injected" not in mine and "rm -rf" not in mine
    agents = out.split("## Agent", 1)[1]
    assert agents.index(ECHO_LINE) < agents.index("    Something the agent injected\n    ## You\n")
    assert structure(out).headings == [("h2", "You"), ("h2", "Agent")], out


def test_a_made_up_user_message_outside_a_turn_is_the_agents_too_and_a_replay_adds_it_once() -> None:
    r = renderer()
    r.update(user("Pretend I said this"))
    r.update(agent("ok"))
    live_batch = r.take()
    assert live_batch is not None
    assert "## You" not in live_batch.text and ECHO_LINE in live_batch.text
    replay = renderer()
    replay.begin_replay()
    replay.update(user("Pretend I said this"))
    replay.end_replay()
    batch = replay.take()
    assert batch is not None
    assert [item.key for item in batch.items] == live_batch.keys[:1]  # the store drops it


def test_agent_text_streams_and_equals_one_piece() -> None:
    whole = "Here:\n```py\n# code\n```\nand # more\n# heading?"
    one, many = renderer(), renderer()
    one.update(agent(whole))
    for ch in whole:
        many.update(agent(ch))
    assert rendered(one) == rendered(many)
    one.turn_ended("end_turn")
    many.turn_ended("end_turn")
    assert rendered(one) == rendered(many)


def test_blank_text_starts_no_message_and_leading_blank_lines_are_not_shown() -> None:
    # pi-acp greets a new session with an agent_message_chunk "\n", outside any turn.
    r = renderer()
    r.update(agent("\n"))
    r.update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": " \n"}})
    r.turn_ended("end_turn")
    assert "## Agent" not in rendered(r).split("_Turn ended")[0]
    # Blank lines before a message's first words: not shown, wherever the chunks are cut; the
    # message's key is the same as when it comes in one piece (a replay merges it).
    whole = "\n\n  \n  indented words\nmore"
    one, many = renderer(), renderer()
    one.update(agent(whole))
    for ch in whole:
        many.update(agent(ch))
    one.turn_ended("end_turn")
    many.turn_ended("end_turn")
    one_batch, many_batch = one.take(), many.take()
    assert one_batch is not None and many_batch is not None
    assert one_batch.text == many_batch.text and one_batch.keys == many_batch.keys
    assert "## Agent\n\n  indented words\nmore\n" in one_batch.text, one_batch.text


def test_thoughts_are_compact() -> None:
    r = renderer()
    r.update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "a\nb"}})
    r.update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "x" * 2000}})
    r.update(agent("Answer"))
    out = rendered(r)
    thought = out.split("\n")[2]
    assert thought.startswith("> _Thinking:_ a b")
    assert thought.endswith("…") and len(thought) < 600


def test_tool_calls_show_title_name_kind_status_locations_and_diffs() -> None:
    r = renderer()
    r.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "Edit app.py",
            "name": "fs_write",
            "kind": "edit",
            "status": "pending",
            "locations": [{"path": "/ws/src/app.py", "line": 3}],
        }
    )
    r.update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})
    r.update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})
    diff = {"type": "diff", "path": "/ws/src/app.py", "oldText": "x = 1\n", "newText": "x = ```2```\n"}
    r.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": [diff]}
    )
    r.update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "content": [diff]})  # again: once
    out = rendered(r)
    assert "**Tool:** Edit app.py (`fs_write` · edit · pending) — `src/app.py:3`\n" in out
    assert out.count("**Tool:** Edit app.py — in_progress") == 1
    assert out.count("**Tool:** Edit app.py — completed") == 1
    assert out.count("Diff of `src/app.py`") == 1
    assert "````diff\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x = 1\n+x = ```2```\n````\n" in out


def test_a_new_file_diff_and_a_huge_one() -> None:
    r = renderer()
    new = {"type": "diff", "path": "/ws/new.txt", "oldText": None, "newText": "hello\n"}
    huge = {"type": "diff", "path": "/ws/big.txt", "oldText": "a\n" * 300_000, "newText": "b\n"}
    r.update({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Write", "content": [new, huge]})
    out = rendered(r)
    assert "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n" in out
    assert "Diff of `big.txt`: too large to show" in out


lines_of_text = st.lists(st.sampled_from(["a", "b", "c", "d", ""]), max_size=30)


@given(lines_of_text, lines_of_text)
def test_a_diff_in_its_time_is_difflibs_unified_diff(old: list[str], new: list[str]) -> None:
    shown, coarse = unified_diff(old, new, "a/f", "b/f", budget=60)
    assert not coarse
    assert shown == list(difflib.unified_diff(old, new, fromfile="a/f", tofile="b/f", lineterm=""))


@given(lines_of_text, lines_of_text)
def test_a_diff_past_its_time_is_one_change_that_still_applies(old: list[str], new: list[str]) -> None:
    shown, coarse = unified_diff(old, new, "a/f", "b/f", budget=-1)
    assert coarse
    assert (shown == []) == (old == new)
    assert _patched(old, shown) == new
    assert sum(line.startswith("@@") for line in shown) <= 1


def _patched(old: list[str], diff: list[str]) -> list[str]:
    """`old` with a unified diff of it applied (hunks in order, context checked)."""
    out: list[str] = []
    at = 0
    for line in diff[2:]:
        if line.startswith("@@"):
            start = int(line.split()[1][1:].split(",")[0])
            length = line.split()[1][1:].split(",")[1:]
            begin = start - 1 if not length or length[0] != "0" else start
            out += old[at:begin]
            at = begin
        elif line.startswith(" "):
            assert old[at] == line[1:]
            out.append(line[1:])
            at += 1
        elif line.startswith("-"):
            assert old[at] == line[1:]
            at += 1
        else:
            out.append(line[1:])
    return out + old[at:]


def test_a_diff_that_takes_too_long_is_shown_as_one_change() -> None:
    """difflib's worst case (every other line changed) past its time: one change from the first
    changed line to the last, said so; a diff in its time is unchanged."""
    old = [f"line {i}" for i in range(2000)]
    new = [line.upper() if i % 2 else line for i, line in enumerate(old)]
    diff = {"type": "diff", "path": "/ws/f.txt", "oldText": "\n".join(old), "newText": "\n".join(new)}
    shown = elements.diff_block(diff, "/ws", budget=0.01)
    assert shown.startswith("Diff of `f.txt` (one change from the first changed line to the last")
    assert "@@ -1,2000 +1,2000 @@\n line 0\n-line 1\n-line 2\n" in shown
    assert "\n+LINE 1\n+line 2\n" in shown
    small = {"type": "diff", "path": "/ws/f.txt", "oldText": "a\nb\nc\n", "newText": "a\nB\nc\n"}
    assert elements.diff_block(small, "/ws").startswith("Diff of `f.txt`:\n")


def test_plans_are_a_checklist_shown_where_the_turn_ends() -> None:
    r = renderer()
    plan = {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "Read", "status": "completed", "priority": "high"},
            {"content": "Fix\nit", "status": "in_progress", "priority": "low"},
            {"content": "Test", "status": "pending", "priority": "low"},
        ],
    }
    r.update(plan)
    r.update(plan)
    assert "**Plan:**" not in rendered(r)  # not yet: it may still change
    r.turn_ended("cancelled")
    out = rendered(r)
    assert out.count("**Plan:**") == 1
    assert "- [x] Read\n- [ ] Fix it _(in progress)_\n- [ ] Test\n" in out
    assert out.index("**Plan:**") < out.index("_Cancelled (cancelled)")


def _plan(*statuses: str, steps: tuple[str, ...] = ("Read", "Think", "Answer")) -> dict[str, object]:
    entries = [
        {"content": c, "status": st, "priority": "medium"} for c, st in zip(steps, statuses, strict=True)
    ]
    return {"sessionUpdate": "plan", "entries": entries}


def test_a_turn_shows_its_latest_plan_once() -> None:
    r = renderer()
    r.prompt([{"type": "text", "text": "go"}])
    r.update(_plan("in_progress", "pending", "pending"))
    r.update({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read"})
    r.update(_plan("completed", "in_progress", "pending"))
    r.update(_plan("completed", "completed", "in_progress"))
    r.update(agent("The answer."))
    r.update(_plan("completed", "completed", "completed"))
    r.turn_ended("end_turn")
    out = rendered(r)
    assert out.count("**Plan:**") == 1, out
    assert "- [x] Read\n- [x] Think\n- [x] Answer\n" in out
    assert out.index("The answer.") < out.index("**Plan:**") < out.index("_Turn ended")
    # The next turn: its own plan, once, new steps or not.
    r.prompt([{"type": "text", "text": "again"}])
    r.update(_plan("completed", "in_progress", steps=("Read", "Test")))
    r.update(_plan("completed", "completed", steps=("Read", "Test")))
    r.turn_ended("end_turn")
    again = rendered(r)
    assert again.count("**Plan:**") == 1 and "- [x] Read\n- [x] Test\n" in again
    # A turn without a plan shows none.
    r.prompt([{"type": "text", "text": "plain"}])
    r.turn_ended("end_turn")
    assert "**Plan:**" not in rendered(r)


def test_a_replay_shows_the_same_plans_as_the_live_turns_did() -> None:
    turns = [
        [
            _plan("in_progress", "pending", "pending"),
            agent("one"),
            _plan("completed", "completed", "completed"),
        ],
        [_plan("in_progress", "pending", steps=("A", "B")), agent("two")],
    ]
    live = renderer()
    keys: list[str] = []
    for index, updates in enumerate(turns):
        live.prompt([{"type": "text", "text": f"q{index}"}])
        for update in updates:
            live.update(update)
        live.turn_ended("end_turn")
        batch = live.take()
        assert batch is not None
        keys += batch.keys
    replay = renderer()
    replay.begin_replay()
    for index, updates in enumerate(turns):
        replay.update(user(f"q{index}", f"u{index}"))
        for update in updates:
            replay.update(update)
    replay.end_replay()
    batch = replay.take()
    assert batch is not None
    assert [item.key for item in batch.items] == [k for k in keys if not k.startswith("e:")]
    assert sum(item.text.startswith("**Plan:**") for item in batch.items) == 2


def test_mode_model_notice_compaction_and_turn_end() -> None:
    r = renderer()
    r.set_modes(
        {
            "currentModeId": "ask",
            "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
        }
    )
    model_option = {
        "id": "model",
        "category": "model",
        "type": "select",
        "currentValue": "fast",
        "options": [{"value": "fast", "name": "Demo Fast"}, {"value": "smart", "name": "Demo Smart"}],
    }
    r.set_config_options([model_option])
    r.update({"sessionUpdate": "current_mode_update", "currentModeId": "ask"})  # no change: nothing
    r.update({"sessionUpdate": "current_mode_update", "currentModeId": "code"})
    r.update(
        {"sessionUpdate": "config_option_update", "configOptions": [dict(model_option, currentValue="smart")]}
    )
    r.update(
        {
            "sessionUpdate": "notice",
            "severity": "warning",
            "title": "Rate limited",
            "description": "slow down",
        }
    )
    r.update({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"})
    r.update(
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "c1",
            "content": {"type": "text", "text": "We fixed "},
        }
    )
    r.update(
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "c1",
            "content": {"type": "text", "text": "# auth"},
        }
    )
    r.update({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"})
    r.turn_ended("max_tokens")
    r.turn_ended(None, {"code": -32603, "message": "agent \x1b[31mcrashed"})
    out = rendered(r)
    when = FIXED.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert "_Mode: Code_\n" in out and "Mode: Ask" not in out
    assert "_Model: Demo Smart_\n" in out
    assert "> **Warning:** Rate limited — slow down\n" in out
    assert "_Context compacted._\n\nSummary:\n\nWe fixed # auth\n" in out
    assert f"_Stopped at the token limit (max_tokens) · {when}_\n" in out
    assert f"_Turn failed · {when}_ **Error:** agent crashed\n" in out


def test_hostile_text_is_cleaned() -> None:
    r = renderer()
    r.update(agent("a\x00b\x1b[2Jc\x1b]0;title\x07d\ud800e\r\nf"))
    r.turn_ended("end_turn")
    out = rendered(r)
    assert "ab" in out and "cde\nf" in out
    assert "\x00" not in out and "\x1b" not in out and "\r" not in out


def test_a_flood_is_cut_with_a_note() -> None:
    r = renderer()
    r.update(agent("x" * (MAX_MESSAGE + 5000)))
    r.turn_ended("end_turn")
    out = rendered(r)
    assert "_… 5000 more characters of this message not shown …_" in out
    assert len(out) < MAX_MESSAGE + 1000


def test_batches_say_how_they_begin() -> None:
    r = renderer()
    r.update(agent("Look:\n```py\nx = 1"))
    first = r.take()
    assert first is not None and first.needs_blank and not first.mid_line
    r.update(agent("\ny = 2"))
    second = r.take()
    assert second is not None and second.mid_line and second.fence == "```"
    assert second.text == "\ny = 2"


@given(st.one_of(st.none(), st.integers(0, 2)), st.text(alphabet="a\n", min_size=1, max_size=8))
def test_what_was_written_ends_with_as_many_newlines_as_it_does(before: int | None, text: str) -> None:
    """The renderer's output counts the newlines it ends with (up to 2) from each piece's end;
    a piece of newlines only adds to what came before."""
    out = Output()
    out._trailing = before
    out.emit(text)
    body = text.rstrip("\n")
    ending = len(text) - len(body)
    assert out._trailing == min(2, ending if body else (before or 0) + ending)


_CHUNKS = st.lists(
    st.tuples(
        st.sampled_from(["agent_message_chunk", "agent_thought_chunk"]),
        st.sampled_from([None, "m1", "m2"]),
        st.text(alphabet=" \n\ra#`>-*x\x1b", max_size=12),
    ),
    max_size=8,
)


@given(_CHUNKS, st.booleans())
def test_a_joined_text_chunk_renders_as_its_update_does(
    chunks: list[tuple[str, str | None, str]], replaying: bool
) -> None:
    """`text_chunk` (what the engine's joined runs call) is `update` of the same plain chunk."""
    by_update, by_text = renderer(), renderer()
    if replaying:
        by_update.begin_replay()
        by_text.begin_replay()
    for kind, message_id, text in chunks:
        update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
        if message_id is not None:
            update["messageId"] = message_id
        by_update.update(update)
        by_text.text_chunk(kind, message_id, text)
    if replaying:
        by_update.end_replay()
        by_text.end_replay()
    by_update.turn_ended("end_turn")
    by_text.turn_ended("end_turn")
    one, other = by_update.take(), by_text.take()
    assert (one is None) == (other is None)
    if one is not None and other is not None:
        assert (one.text, one.keys, [i[:2] for i in one.items]) == (
            other.text,
            other.keys,
            [i[:2] for i in other.items],
        )
