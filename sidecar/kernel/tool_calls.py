"""Each session's tool calls by id, merged from their updates, bounded: the one table of them.

A `tool_call` sets a call's fields, a `tool_call_update` changes only the fields it carries. The
calls updated most recently are kept (`MAX_TOOL_CALLS`), so an agent that never ends its calls
cannot grow it. Progress names a call from it, the fs service and the "apply edit" code actions
find a call's diffs in it. A replay (session/load) rebuilds it from scratch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

JsonObj = dict[str, Any]

MAX_TOOL_CALLS = 1_000


class ToolCalls:
    def __init__(self, bound: int = MAX_TOOL_CALLS) -> None:
        self.bound = bound
        self._calls: OrderedDict[str, JsonObj] = OrderedDict()

    def __len__(self) -> int:
        return len(self._calls)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._calls

    def items(self) -> Iterator[tuple[str, JsonObj]]:
        return iter(list(self._calls.items()))

    def get(self, call_id: str) -> JsonObj | None:
        return self._calls.get(call_id)

    def clear(self) -> None:
        self._calls.clear()

    def apply(self, call_id: str, update: JsonObj, *, replace: bool) -> JsonObj:
        """Take a `tool_call` (`replace`) or `tool_call_update`; the call's fields afterwards."""
        fields = {k: v for k, v in update.items() if k != "sessionUpdate"}
        current = self._calls.get(call_id)
        if replace or current is None:
            current = self._calls[call_id] = fields
        else:
            current.update({k: v for k, v in fields.items() if v is not None})
        self._calls.move_to_end(call_id)
        while len(self._calls) > self.bound:
            self._calls.popitem(last=False)
        return current

    def diffs(self, call_id: str) -> list[JsonObj]:
        call = self._calls.get(call_id)
        return diffs_in(call) if call else []


def diffs_in(call: JsonObj) -> list[JsonObj]:
    """The `diff` content of a tool call (or of a permission request's tool call)."""
    content = call.get("content")
    if not isinstance(content, list):
        return []
    return [c for c in content if isinstance(c, dict) and c.get("type") == "diff"]


def tool_label(title: str, name: str | None) -> str:
    """A tool call as the editor shows it: its title, and its tool's name (`ToolCall.name`) when known."""
    return f"{title} ({name})" if name else title
