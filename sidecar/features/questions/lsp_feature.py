"""The questions feature's LSP side, added to the server by `host.py`: the agent's questions in
the editor (`lsp_prompts.py`) and the code actions that answer them: on a question's block in a
conversation document, and for every pending question from any document. Its commands are
`lsp_questions.py`."""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sidecar.features.questions.lsp_prompts import ElicitationPrompts
from sidecar.lsp.features import ActionContext, Actions, LspFeature, Place
from sidecar.lsp.lsp_lines import line_starts

if TYPE_CHECKING:
    from sidecar.features.questions.elicitations import Elicitations
    from sidecar.kernel.kernel import Kernel
    from sidecar.lsp.server import AcpLanguageServer

JsonObj = dict[str, Any]


class QuestionsLsp(LspFeature):
    def __init__(self, server: AcpLanguageServer) -> None:
        self._server = server
        self._elicitations: Elicitations | None = None
        self.prompts = ElicitationPrompts(server, server.tasks, self._answer)

    def started(self, kernel: Kernel) -> None:
        from sidecar.features.questions.feature import Questions

        self._elicitations = kernel.feature(Questions).elicitations

    async def _answer(self, elicitation_id: str, action: str, content: object) -> None:
        assert self._elicitations is not None  # a question is asked by the running engine
        await self._elicitations.respond(elicitation_id, action, content)

    def elicitation(self, elicitation: Any, state: str, answer: JsonObj | None) -> None:
        self.prompts.on_elicitation(elicitation, state, answer)

    async def code_actions(self, context: ActionContext) -> Actions:
        if self._elicitations is None:
            return []
        found: Actions = []
        answered_here: set[str] = set()
        if context.conversation is not None:
            line = context.params.range.start.line
            for ident, action in self._block_actions(context.params.text_document.uri, context.buffer, line):
                answered_here.add(ident)
                found.append((Place.AT_CURSOR, action))
        found += [(Place.REQUESTS, action) for action in self._pending_actions(answered_here)]
        return found

    def _block_actions(self, uri: str, buffer: str | None, line: int) -> list[tuple[str, types.CodeAction]]:
        """On the block of a pending form question in a conversation document: answer it with
        what the user typed there, or decline it. (elicitationId, action) pairs."""
        if buffer is None or self._elicitations is None:
            return []
        from sidecar.kernel.pieces import locate_prompt_area, questions_in  # with the engine

        pending = {e.elicitation_id for e in self._elicitations.pending() if e.form is not None}
        area = locate_prompt_area(buffer)
        starts = line_starts(buffer)
        found: list[tuple[str, types.CodeAction]] = []
        for question in questions_in(buffer, area.start if area is not None else None):
            first = bisect_right(starts, question.start) - 1
            last = bisect_right(starts, max(question.start, question.end - 1)) - 1
            if question.ident not in pending or not first <= line <= last:
                continue
            answer = types.Command(
                title="Answer the agent",
                command="acp.elicitation.answer",
                arguments=[{"uri": uri, "elicitationId": question.ident}],
            )
            decline = types.Command(
                title="Decline",
                command="acp.elicitation.respond",
                arguments=[{"elicitationId": question.ident, "action": "decline"}],
            )
            for command in (answer, decline):
                kind = types.CodeActionKind.Empty
                found.append(
                    (question.ident, types.CodeAction(title=command.title, kind=kind, command=command))
                )
        return found

    def _pending_actions(self, skip: set[str]) -> list[types.CodeAction]:
        """The agent's open questions (but those in `skip`, offered by their block): each can be
        declined from any document; a single choice or yes/no question can be answered here too."""
        assert self._elicitations is not None
        clean = self._server.clean
        actions: list[types.CodeAction] = []
        for elicitation in self._elicitations.pending():
            if elicitation.elicitation_id in skip:
                continue
            what = clean(elicitation.message, 60)
            ident = elicitation.elicitation_id
            answers: list[tuple[str, JsonObj]] = []
            form = elicitation.form
            if form is not None and len(form.fields) == 1 and form.fields[0].kind in ("enum", "boolean"):
                field = form.fields[0]
                choices: list[tuple[str, object]] = [(o.title, o.value) for o in field.options]
                choices = choices or [("Yes", True), ("No", False)]
                for title, value in choices:
                    answers.append((clean(title, 40), {"action": "accept", "content": {field.name: value}}))
            answers.append(("Decline", {"action": "decline"}))
            for title, answer in answers:
                actions.append(
                    types.CodeAction(
                        title=f"Agent question: {title} — {what}",
                        kind=types.CodeActionKind.QuickFix,
                        command=types.Command(
                            title=f"{title}: {what}",
                            command="acp.elicitation.respond",
                            arguments=[{"elicitationId": ident, **answer}],
                        ),
                    )
                )
        return actions
