"""A per-session model of the conversation, bounded in memory.

Messages are coalesced from chunks, tool calls merged from tool_call_update,
and the latest plan, mode, config options and usage kept. Old entries are
dropped once the text budget is exceeded, so a million-chunk session stays small.
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


@dataclass
class Message:
    role: str
    text: str = ""
    message_id: str | None = None


@dataclass
class Transcript:
    max_chars: int = 2_000_000
    max_tool_calls: int = 1_000
    messages: deque[Message] = field(default_factory=deque)
    tool_calls: OrderedDict[str, JsonObj] = field(default_factory=OrderedDict)
    plan: list[JsonObj] = field(default_factory=list)
    mode_id: str | None = None
    config_options: list[JsonObj] = field(default_factory=list)
    usage: JsonObj | None = None
    commands: list[JsonObj] = field(default_factory=list)
    unknown: deque[JsonObj] = field(default_factory=lambda: deque(maxlen=50))
    chars: int = 0
    dropped_chars: int = 0

    def clear(self) -> None:
        self.messages.clear()
        self.tool_calls.clear()
        self.plan = []
        self.chars = 0

    def apply(self, update: JsonObj) -> None:
        kind = update.get("sessionUpdate")
        if kind in _MESSAGE_KINDS:
            self._chunk(_MESSAGE_KINDS[kind], update)
        elif kind == "tool_call":
            self._tool_call(update, replace=True)
        elif kind == "tool_call_update":
            self._tool_call(update, replace=False)
        elif kind == "plan":
            entries = update.get("entries")
            self.plan = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
        elif kind == "current_mode_update":
            mode = update.get("currentModeId")
            if isinstance(mode, str):
                self.mode_id = mode
        elif kind == "config_option_update":
            options = update.get("configOptions")
            if isinstance(options, list):
                self.config_options = [o for o in options if isinstance(o, dict)]
        elif kind == "usage_update":
            self.usage = update
        elif kind == "available_commands_update":
            commands = update.get("availableCommands")
            if isinstance(commands, list):
                self.commands = [c for c in commands if isinstance(c, dict)]
        elif kind != "session_info_update":
            self.unknown.append(update)

    def _chunk(self, role: str, update: JsonObj) -> None:
        content = update.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        if not isinstance(text, str):
            return
        message_id = update.get("messageId") if isinstance(update.get("messageId"), str) else None
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == role and (message_id is None or last.message_id == message_id):
            last.text += text
        else:
            self.messages.append(Message(role, text, message_id))
        self.chars += len(text)
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
            self.chars -= len(old.text)
            self.dropped_chars += len(old.text)
        if self.chars > self.max_chars and self.messages:
            # One giant message: keep its tail.
            last = self.messages[-1]
            cut = self.chars - self.max_chars
            last.text = last.text[cut:]
            self.chars -= cut
            self.dropped_chars += cut

    def diff_for(self, tool_call_id: str) -> list[JsonObj]:
        call = self.tool_calls.get(tool_call_id)
        content = call.get("content") if call else None
        if not isinstance(content, list):
            return []
        return [c for c in content if isinstance(c, dict) and c.get("type") == "diff"]
