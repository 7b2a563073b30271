"""A session's tool-call table: updates merged into their call, bounded, newest kept."""

from __future__ import annotations

from sidecar.kernel.tool_calls import ToolCalls, diffs_in


def test_tool_call_updates_change_only_the_fields_they_carry() -> None:
    calls = ToolCalls()
    calls.apply(
        "t1",
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit", "status": "pending"},
        replace=True,
    )
    merged = calls.apply(
        "t1",
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "title": None},
        replace=False,
    )
    assert merged == {"toolCallId": "t1", "title": "Edit", "status": "completed"}
    assert calls.get("t1") is merged and "t1" in calls and len(calls) == 1
    # A new tool_call with the same id starts it again.
    calls.apply("t1", {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Other"}, replace=True)
    assert calls.get("t1") == {"toolCallId": "t1", "title": "Other"}


def test_an_update_of_a_call_never_seen_is_taken_whole() -> None:
    calls = ToolCalls()
    calls.apply(
        "t9", {"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "failed"}, replace=False
    )
    assert calls.get("t9") == {"toolCallId": "t9", "status": "failed"}


def test_the_bound_keeps_the_calls_updated_last() -> None:
    calls = ToolCalls(bound=2)
    for call in ("t1", "t2", "t3"):
        calls.apply(call, {"sessionUpdate": "tool_call", "toolCallId": call}, replace=True)
    assert [call_id for call_id, _ in calls.items()] == ["t2", "t3"]
    calls.apply(
        "t2",
        {"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "in_progress"},
        replace=False,
    )
    calls.apply("t4", {"sessionUpdate": "tool_call", "toolCallId": "t4"}, replace=True)
    assert [call_id for call_id, _ in calls.items()] == ["t2", "t4"]
    calls.clear()
    assert len(calls) == 0 and calls.get("t2") is None


def test_diffs_are_the_diff_items_of_a_call() -> None:
    diff = {"type": "diff", "path": "/w/a.py", "oldText": "a", "newText": "b"}
    calls = ToolCalls()
    calls.apply(
        "t1",
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "content": [{"type": "content"}, diff, "junk"]},
        replace=True,
    )
    assert calls.diffs("t1") == [diff] and calls.diffs("unknown") == []
    assert diffs_in({"content": "not a list"}) == []
