"""A per-session model of the conversation, bounded in memory.

Messages are coalesced from chunks, tool calls merged from tool_call_update,
and the latest mode and config options kept. Old entries are dropped once the
text budget is exceeded, so a million-chunk session stays small. A replay
(session/load) rebuilds it from scratch. Only what something reads is kept.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

JsonObj = dict[str, Any]

_MESSAGE_KINDS = {
    "user_message_chunk": "user",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
}


# Chunks are kept as they come and joined in blocks of this many: appending is
# O(1) (a `str +=` on an attribute copies the whole message every time, which
# made a long message quadratic), and cutting the head drops whole blocks. A
# message's unjoined tail is joined once the next message starts.
_BLOCK_PARTS = 128
# A block this large whose cut-away head is over half of it is sliced, so cut
# text never stays alive for long.
_BIG_BLOCK = 64 * 1024


class Message:
    """One message of the conversation; `text` joins its chunks on demand."""

    __slots__ = ("_blocks", "_offset", "_tail", "message_id", "role", "size")

    def __init__(self, role: str, text: str = "", message_id: str | None = None) -> None:
        self.role = role
        self.message_id = message_id
        self._blocks: deque[str] = deque()  # joined, oldest first
        self._offset = 0  # characters of _blocks[0] already cut away
        self._tail: list[str] = [text] if text else []  # recent chunks, not joined yet
        self.size = len(text)

    def __repr__(self) -> str:
        return f"Message(role={self.role!r}, text={self.text!r}, message_id={self.message_id!r})"

    def append(self, text: str) -> None:
        tail = self._tail
        tail.append(text)
        self.size += len(text)
        if len(tail) >= _BLOCK_PARTS:
            self._blocks.append("".join(tail))
            self._tail = []

    def seal(self) -> None:
        """Join the chunks not joined yet (they cost an object each until then)."""
        if self._tail:
            self._blocks.append("".join(self._tail))
            self._tail = []

    @property
    def text(self) -> str:
        self.seal()
        blocks = self._blocks
        if not blocks:
            return ""
        if len(blocks) > 1 or self._offset:
            whole = "".join(blocks)[self._offset :]
            blocks.clear()
            blocks.append(whole)
            self._offset = 0
        return blocks[0]

    @text.setter
    def text(self, value: str) -> None:
        self._blocks.clear()
        self._offset = 0
        self._tail = [value] if value else []
        self.size = len(value)

    def cut_head(self, count: int) -> None:
        """Drop the first `count` characters (at most `size`)."""
        count = min(count, self.size)
        self.size -= count
        blocks = self._blocks
        while count > 0:
            if not blocks:
                self.seal()
            head = len(blocks[0]) - self._offset
            if count >= head:
                blocks.popleft()
                self._offset = 0
                count -= head
            else:
                self._offset += count
                count = 0
        if blocks and self._offset > _BIG_BLOCK and self._offset * 2 > len(blocks[0]):
            blocks[0] = blocks[0][self._offset :]
            self._offset = 0


@dataclass
class Transcript:
    # The text budget of `messages` (characters) and how many tool calls are remembered.
    max_chars: int = 2_000_000
    max_tool_calls: int = 1_000
    # The conversation: user, agent and thought messages, oldest first (what a replay rebuilds).
    messages: deque[Message] = field(default_factory=deque)
    # Tool calls by id, merged from their updates: their diffs are what acp.edit.apply and
    # the "apply edit" code actions offer.
    tool_calls: OrderedDict[str, JsonObj] = field(default_factory=OrderedDict)
    # The mode the agent last switched to itself (current_mode_update): the status shows it.
    mode_id: str | None = None
    # The config options the agent last sent (config_option_update): the session takes them.
    config_options: list[JsonObj] = field(default_factory=list)
    # Characters now in `messages`, against `max_chars`.
    chars: int = 0

    def clear(self) -> None:
        self.messages.clear()
        self.tool_calls.clear()
        self.chars = 0

    def apply(self, update: JsonObj) -> None:
        """Take one session/update; kinds nothing here reads (plan, usage, ...) pass by."""
        kind = update.get("sessionUpdate")
        if kind in _MESSAGE_KINDS:
            self._chunk(_MESSAGE_KINDS[kind], update)
        elif kind == "tool_call":
            self._tool_call(update, replace=True)
        elif kind == "tool_call_update":
            self._tool_call(update, replace=False)
        elif kind == "current_mode_update":
            mode = update.get("currentModeId")
            if isinstance(mode, str):
                self.mode_id = mode
        elif kind == "config_option_update":
            options = update.get("configOptions")
            if isinstance(options, list):
                self.config_options = [o for o in options if isinstance(o, dict)]

    def _chunk(self, role: str, update: JsonObj) -> None:
        content = update.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        if not isinstance(text, str):
            return
        message_id = update.get("messageId") if isinstance(update.get("messageId"), str) else None
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == role and (message_id is None or last.message_id == message_id):
            last.append(text)
        else:
            if last is not None:
                last.seal()
            self.messages.append(Message(role, text, message_id))
        self.chars += len(text)
        if self.chars > self.max_chars:
            self._trim()

    def _tool_call(self, update: JsonObj, replace: bool) -> None:
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str):
            return
        fields = {k: v for k, v in update.items() if k != "sessionUpdate"}
        current = self.tool_calls.get(call_id)
        if replace or current is None:
            self.tool_calls[call_id] = fields
        else:
            # tool_call_update: only the fields it carries change.
            current.update({k: v for k, v in fields.items() if v is not None})
        self.tool_calls.move_to_end(call_id)
        while len(self.tool_calls) > self.max_tool_calls:
            self.tool_calls.popitem(last=False)

    def _trim(self) -> None:
        while self.chars > self.max_chars and len(self.messages) > 1:
            old = self.messages.popleft()
            self.chars -= old.size
        if self.chars > self.max_chars and self.messages:
            # One giant message: keep its tail.
            last = self.messages[-1]
            cut = self.chars - self.max_chars
            last.cut_head(cut)
            self.chars -= cut

    def diff_for(self, tool_call_id: str) -> list[JsonObj]:
        call = self.tool_calls.get(tool_call_id)
        return diffs_in(call) if call else []


def diffs_in(call: JsonObj) -> list[JsonObj]:
    """The `diff` content of a tool call (or of a permission request's tool call)."""
    content = call.get("content")
    if not isinstance(content, list):
        return []
    return [c for c in content if isinstance(c, dict) and c.get("type") == "diff"]
