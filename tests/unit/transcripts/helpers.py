"""Shared helpers for the transcript tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sidecar.features.conversation.render import Renderer

JsonObj = dict[str, Any]
FIXED = datetime(2026, 12, 1, 10, 2, 11, tzinfo=UTC)


def renderer(cwd: str | None = "/ws") -> Renderer:
    return Renderer(cwd=cwd, clock=lambda: FIXED)


def text_chunk(kind: str, text: str, message_id: str | None = None) -> JsonObj:
    update: JsonObj = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def agent(text: str, message_id: str | None = None) -> JsonObj:
    return text_chunk("agent_message_chunk", text, message_id)


def user(text: str, message_id: str | None = None) -> JsonObj:
    return text_chunk("user_message_chunk", text, message_id)


def user_block(block: JsonObj, message_id: str | None = None) -> JsonObj:
    update: JsonObj = {"sessionUpdate": "user_message_chunk", "content": block}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def rendered(r: Renderer) -> str:
    batch = r.take()
    return "" if batch is None else batch.lead + batch.text


def assert_well_formed(document: str) -> None:
    """Our structure only: a title, our section headings, and the prompt area at the end."""
    from sidecar.features.conversation.document import MARKER, PROMPT_AREA

    from .markdown_structure import prompt_area_ok, structure

    assert document.endswith(PROMPT_AREA), document[-300:]
    for parser in ("commonmark", "gfm-like"):
        found = structure(document, parser)
        assert found.headings[0][0] == "h1", found.headings
        assert found.headings[-1] == ("h2", "Your prompt"), found.headings
        assert {h for h in found.headings[1:-1]} <= {("h2", "You"), ("h2", "Agent")}, found.headings
        assert prompt_area_ok(document, parser), document[-500:]
        assert found.comments.count(MARKER) == 1
