"""One question of the agent waiting for the user (`elicitation/create`), as the feature keeps it."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import attrs

from sidecar.features.questions.forms import Form

JsonObj = dict[str, Any]


@attrs.define(eq=False)
class Elicitation:
    """One question waiting for its answer."""

    elicitation_id: str
    mode: Literal["form", "url"]
    message: str
    session_id: str | None
    turn_id: str | None
    tool_call_id: str | None
    form: Form | None
    url: str | None
    future: asyncio.Future[JsonObj]
    # The agent's own id of a URL elicitation (elicitation/complete names it).
    agent_id: str | None = None
    # The named agent that asked: only it may complete the question.
    agent: str | None = None
    completed: bool = False
    timed_out: bool = False  # nobody answered within the timeout: cancelled

    def resolve(self, answer: JsonObj) -> bool:
        if self.future.done():
            return False
        self.future.set_result(answer)
        return True

    def to_json(self) -> JsonObj:
        out: JsonObj = {
            "elicitationId": self.elicitation_id,
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "toolCallId": self.tool_call_id,
            "mode": self.mode,
            "message": self.message,
        }
        if self.form is not None:
            out["title"] = self.form.title
            out["description"] = self.form.description
            out["fields"] = [f.to_json() for f in self.form.fields]
        if self.url is not None:
            out["url"] = self.url
        return out
