"""The turn state machine: queued -> running -> [cancelling ->] ended, ended exactly once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JsonObj = dict[str, Any]


class TurnState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    ENDED = "ended"


_ALLOWED = {
    TurnState.QUEUED: {TurnState.RUNNING, TurnState.CANCELLING, TurnState.ENDED},
    TurnState.RUNNING: {TurnState.CANCELLING, TurnState.ENDED},
    TurnState.CANCELLING: {TurnState.ENDED},
    TurnState.ENDED: set(),
}


# What the agent sends that answers a turn; a rename turn is also answered by a title.
ANSWER_KINDS = frozenset(
    ("agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan")
)


def no_answer(stop_reason: str | None, error: JsonObj | None, answered: bool | None) -> bool:
    """A turn the agent ended normally without sending anything for it: shown as "no answer"
    (some agents swallow a model error this way, e.g. Kimi CLI with a broken provider)."""
    return answered is False and error is None and stop_reason == "end_turn"


class TurnKind(StrEnum):
    PROMPT = "prompt"
    RENAME = "rename"


@dataclass(eq=False)
class Turn:
    turn_id: str
    session_id: str
    blocks: list[JsonObj]
    kind: TurnKind = TurnKind.PROMPT
    meta: JsonObj | None = None
    state: TurnState = TurnState.QUEUED
    stop_reason: str | None = None
    error: JsonObj | None = None
    # The user's text, to recognise the agent echoing it back as user_message_chunk.
    echo_remaining: str = ""
    # True from the moment session/prompt is sent until its answer arrives:
    # a cancel is only ever sent inside this window.
    in_flight: bool = False
    # The agent sent something for this turn (see ANSWER_KINDS); False at its end: "no answer".
    answered: bool = False
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    def advance(self, new: TurnState) -> bool:
        """Move to `new` if the machine allows it; False (and no change) otherwise."""
        if new not in _ALLOWED[self.state]:
            return False
        self.state = new
        if new is TurnState.ENDED:
            self.ended.set()
        return True

    @property
    def cancelling(self) -> bool:
        return self.state is TurnState.CANCELLING

    def end(self, stop_reason: str | None = None, error: JsonObj | None = None) -> bool:
        if self.state is TurnState.ENDED:
            return False
        self.stop_reason = stop_reason
        self.error = error
        return self.advance(TurnState.ENDED)

    def took(self, kind: str | None) -> None:
        """An update of `kind` arrived for this turn."""
        if kind in ANSWER_KINDS or (self.kind is TurnKind.RENAME and kind == "session_info_update"):
            self.answered = True

    def consume_echo(self, text: str) -> bool:
        """True when `text` is the agent echoing our own prompt: drop it."""
        if text and self.echo_remaining.startswith(text):
            self.echo_remaining = self.echo_remaining[len(text) :]
            return True
        return False
