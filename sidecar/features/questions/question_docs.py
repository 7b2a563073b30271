"""The agent's form questions in the conversation documents: each one's block is written into
its session's document while it waits, and replaced by the line that records its outcome once it
ended, whoever answered it (docs/protocol.md, "Answering in the document")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sidecar.features.questions.form_block import block, outcome_line
from sidecar.kernel.bus import ConversationPiece, EventBus, QuestionSettled

if TYPE_CHECKING:
    from sidecar.features.questions.elicitations import ElicitationAsker
    from sidecar.features.questions.question import Elicitation
    from sidecar.kernel.session import Session

JsonObj = dict[str, Any]


class QuestionsInDocuments:
    """An `ElicitationAsker` that shows the question in the document, then passes it on to the
    editor's (`asker`)."""

    def __init__(self, sessions: Mapping[str, Session], bus: EventBus, asker: ElicitationAsker) -> None:
        self._sessions = sessions
        self._bus = bus  # the conversation document takes the blocks from it
        self._asker = asker

    def on_elicitation(self, elicitation: Elicitation, state: str, answer: JsonObj | None) -> None:
        session = self._sessions.get(elicitation.session_id) if elicitation.session_id else None
        # A URL question has nothing to type; one tied to no session has no document.
        if session is not None and elicitation.form is not None:
            if state == "pending":
                self._bus.publish(ConversationPiece(session, block(elicitation), urgent=True))
            elif state == "resolved" and answer is not None:
                outcome = outcome_line(elicitation, answer)
                self._bus.publish(QuestionSettled(session, elicitation.elicitation_id, outcome))
        self._asker.on_elicitation(elicitation, state, answer)
