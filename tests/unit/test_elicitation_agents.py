"""`elicitation/complete` names only the agent's own id: with several agents behind one sidecar,
two may use the same id, and one agent's complete must not close another agent's question."""

from __future__ import annotations

import asyncio
from typing import Any

from sidecar.features.questions.elicitations import Elicitations
from sidecar.features.questions.question import Elicitation
from sidecar.kernel.worker import Worker


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str | None, str]] = []

    def on_elicitation(self, elicitation: Elicitation, state: str, answer: dict[str, Any] | None) -> None:
        self.events.append((elicitation.agent, state))


def url_question(request_id: str) -> dict[str, Any]:
    return {
        "requestId": request_id,
        "mode": "url",
        "message": "Sign in",
        "url": "https://example.com/authorize",
        "elicitationId": "url-1",  # the same id from both agents
    }


async def test_a_complete_closes_only_the_question_of_the_agent_that_sent_it() -> None:
    asker = Recorder()
    questions = Elicitations({}, asker, lambda: None, lambda: 30.0, lambda _text: None, worker=Worker())
    first = asyncio.ensure_future(questions.request(url_question("r1"), "first"))
    second = asyncio.ensure_future(questions.request(url_question("r2"), "second"))
    while len(questions.pending()) < 2:
        await asyncio.sleep(0)
    for pending in questions.pending():
        await questions.respond(pending.elicitation_id, "accept")
    assert await first == {"action": "accept"} and await second == {"action": "accept"}

    def completed() -> list[str | None]:
        return [agent for agent, state in asker.events if state == "completed"]

    questions.complete({"elicitationId": "url-1"}, "second")
    assert completed() == ["second"]
    questions.complete({"elicitationId": "url-1"}, "nobody")  # no question of that agent: ignored
    assert completed() == ["second"]
    questions.complete({"elicitationId": "url-1"}, "first")
    assert completed() == ["second", "first"]
