"""The in-memory transcript: messages from chunks, tool calls merged, the text budget."""

from __future__ import annotations

from typing import Any

from sidecar.core.transcript import Transcript


def chunk(text: str, kind: str = "agent_message_chunk", message_id: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def test_chunks_join_into_messages_by_role_and_message_id() -> None:
    transcript = Transcript()
    for update in (
        chunk("hel", "user_message_chunk"),
        chunk("lo", "user_message_chunk"),
        chunk("thinking", "agent_thought_chunk"),
        chunk("a", message_id="m1"),
        chunk("b", message_id="m1"),
        chunk("c", message_id="m2"),
        {"sessionUpdate": "plan", "entries": []},
        {"sessionUpdate": "future_kind"},
    ):
        transcript.apply(update)
    assert [(m.role, m.text) for m in transcript.messages] == [
        ("user", "hello"),
        ("thought", "thinking"),
        ("agent", "ab"),
        ("agent", "c"),
    ]
    assert transcript.chars == len("hellothinkingabc")


def test_tool_call_updates_change_only_the_fields_they_carry() -> None:
    transcript = Transcript()
    transcript.apply({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit", "status": "pending"})
    transcript.apply(
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "title": None}
    )
    transcript.apply({"sessionUpdate": "tool_call_update", "toolCallId": 7, "status": "failed"})
    assert transcript.tool_calls == {"t1": {"toolCallId": "t1", "title": "Edit", "status": "completed"}}


def test_the_text_budget_keeps_the_newest_text() -> None:
    transcript = Transcript(max_chars=100, max_tool_calls=2)
    for index in range(50):
        transcript.apply(chunk(f"{index:03d} ", message_id=f"m{index // 10}"))
    assert transcript.chars <= 100
    assert sum(m.size for m in transcript.messages) == transcript.chars
    assert "".join(m.text for m in transcript.messages).endswith("048 049 ")
    # One giant message keeps its tail.
    transcript.apply(chunk("x" * 500 + "END", message_id="giant"))
    assert transcript.chars == 100 and transcript.messages[-1].text == "x" * 97 + "END"
    assert [m.size for m in transcript.messages] == [100]
    for call in ("t1", "t2", "t3"):
        transcript.apply({"sessionUpdate": "tool_call", "toolCallId": call})
    assert list(transcript.tool_calls) == ["t2", "t3"]


def test_mode_and_config_options_are_the_latest_sent() -> None:
    transcript = Transcript()
    transcript.apply({"sessionUpdate": "current_mode_update", "currentModeId": "code"})
    transcript.apply({"sessionUpdate": "config_option_update", "configOptions": [{"id": "model"}, "junk"]})
    assert transcript.mode_id == "code" and transcript.config_options == [{"id": "model"}]
    transcript.apply(chunk("text"))
    transcript.clear()
    assert not transcript.messages and transcript.chars == 0 and transcript.mode_id == "code"
