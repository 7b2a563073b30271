"""The questions feature's engine side: the agent's questions (elicitation) on the kernel.

It answers the agent's `elicitation/create` and hears `elicitation/complete` (the kernel's table
of the agent's requests), writes a form's block into the conversation document and its outcome
after (through the bus: `ConversationPiece`, `QuestionSettled`), and answers the questions of a
turn that is cancelled or gone (`RequestsWithdrawn`, subscribed in the one table of `sidecar/composition.py`).
"""

from __future__ import annotations

from sidecar.features.questions.elicitations import ElicitationAsker, Elicitations
from sidecar.features.questions.question_docs import QuestionsInDocuments
from sidecar.kernel.bus import RequestsWithdrawn
from sidecar.kernel.kernel import Kernel


class Questions:
    def __init__(self, kernel: Kernel, asker: ElicitationAsker) -> None:
        registry, options = kernel.registry, kernel.options
        self.elicitations = Elicitations(
            registry.by_id,
            QuestionsInDocuments(registry.by_id, kernel.bus, asker),
            kernel.ctx.status_changed,
            timeout=lambda: options.elicitation_timeout,
            tell_user=kernel.listener.on_error,
            worker=kernel.worker,
        )
        kernel.requests.answer("elicitation/create", self.elicitations.request)
        kernel.requests.hear("elicitation/complete", self.elicitations.complete)

    def withdrawn(self, event: RequestsWithdrawn) -> None:
        """The turn is being cancelled (or is gone): its questions answer `cancel`."""
        Elicitations.cancel_pending(event.session)
