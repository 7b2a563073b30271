"""A `session/update` read once: the fields the sidecar acts on, typed, and the one plain-chunk rule.

The ACP client checked the frame's shape (a string `sessionId`, an object `update`); `read_update`
reads what the engine and the editor side look at, once per frame, so nothing downstream takes the
agent's dict apart again. A field of the wrong type reads as absent. `raw` is the update as the
agent sent it: the editor (`acp/sessionUpdate`) and the conversation document get that.

A *plain text chunk* is a message or thought chunk that holds nothing but a text block (and maybe a
string `messageId`): the only updates that may be joined with their neighbours, since nothing is
lost by joining their texts. Anything else passes through untouched. The rule is
`sidecar/acp/chunk_merge.py` `plain_text`, the one every joiner uses.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from sidecar.acp.chunk_merge import TEXT_CHUNKS, plain_text

JsonObj = dict[str, Any]

CHUNK_KINDS = TEXT_CHUNKS
TOOL_CALL_KINDS = frozenset({"tool_call", "tool_call_update"})


class Update(msgspec.Struct, frozen=True):
    """One update of one session, as read (see the module doc)."""

    session_id: str
    raw: JsonObj
    kind: str | None = None  # sessionUpdate
    text: str | None = None  # a chunk's text (content.text)
    message_id: str | None = None  # a chunk's messageId
    plain: bool = False  # a plain text chunk (the one rule: see the module doc)
    tool_call_id: str | None = None  # a tool_call or tool_call_update's toolCallId


def read_update(session_id: str, raw: JsonObj) -> Update:
    kind = raw.get("sessionUpdate")
    if not isinstance(kind, str):
        return Update(session_id, raw)
    if kind in CHUNK_KINDS:
        content = raw.get("content")
        if not isinstance(content, dict) or not isinstance(text := content.get("text"), str):
            return Update(session_id, raw, kind)
        message_id = raw.get("messageId")
        plain = plain_text(raw) is not None  # the one rule, shared with every joiner
        return Update(session_id, raw, kind, text, message_id if isinstance(message_id, str) else None, plain)
    if kind in TOOL_CALL_KINDS:
        call_id = raw.get("toolCallId")
        return Update(session_id, raw, kind, tool_call_id=call_id if isinstance(call_id, str) else None)
    return Update(session_id, raw, kind)


class Routed(msgspec.Struct, frozen=True):
    """An update as the session registry routed it: to which turn, replayed or live, and (for a
    tool call's update) the call's fields merged so far from the session's tool-call table."""

    update: Update
    turn_id: str | None
    replay: bool
    tool_call: JsonObj | None = None

    @property
    def session_id(self) -> str:
        return self.update.session_id


class RoutedView(Protocol):
    """How a routed update reads: a `Routed`, or the bus's `UpdateRouted` that carries one."""

    @property
    def update(self) -> Update: ...
    @property
    def session_id(self) -> str: ...
    @property
    def turn_id(self) -> str | None: ...
    @property
    def replay(self) -> bool: ...
