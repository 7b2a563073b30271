"""A session/update read once: the typed view and the one plain-chunk rule."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.kernel.updates import read_update


def chunk(text: Any = "hi", kind: str = "agent_message_chunk", **extra: Any) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, **extra}


@pytest.mark.parametrize("kind", ["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"])
def test_a_text_chunk_of_every_message_kind_is_plain(kind: str) -> None:
    update = read_update("s1", chunk("hello", kind, messageId="m1"))
    assert (update.kind, update.text, update.message_id, update.plain) == (kind, "hello", "m1", True)
    assert update.session_id == "s1" and update.raw == chunk("hello", kind, messageId="m1")


@pytest.mark.parametrize(
    "raw",
    [
        chunk(futureField=1),  # a field we do not know
        chunk(messageId=7),  # a messageId that is no string
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "hi", "annotations": {}},
        },
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "text": "hi"}},
        {"sessionUpdate": "compaction_summary_chunk", "content": {"type": "text", "text": "hi"}},
    ],
)
def test_anything_more_than_a_text_block_is_not_plain(raw: dict[str, Any]) -> None:
    assert read_update("s1", raw).plain is False


def test_fields_of_the_wrong_type_read_as_absent() -> None:
    assert read_update("s1", chunk(text=5)).text is None
    assert read_update("s1", {"sessionUpdate": 3}).kind is None
    assert read_update("s1", {"sessionUpdate": "agent_message_chunk", "content": "x"}).text is None
    call = read_update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": 9, "status": "failed"})
    assert call.kind == "tool_call_update" and call.tool_call_id is None
    assert read_update("s1", {"sessionUpdate": "tool_call", "toolCallId": "t1"}).tool_call_id == "t1"
