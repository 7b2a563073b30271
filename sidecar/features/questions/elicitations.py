"""The agent's `elicitation/create` (form and URL modes) and `elicitation/complete`: a question
for the user, answered exactly once — by the user (accept with checked content, or decline), by
a cancel of its turn (cancel), or by its timeout (cancel)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TypeVar, cast

from sidecar.acp.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND
from sidecar.features.questions.form_block import read_answers
from sidecar.features.questions.forms import FormError, check_url, parse_form
from sidecar.features.questions.question import Elicitation
from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.pieces import locate_prompt_area, questions_in
from sidecar.kernel.session import Session
from sidecar.kernel.worker import Worker, WorkTimeout

JsonObj = dict[str, Any]
T = TypeVar("T")
Action = Literal["accept", "decline", "cancel"]
MAX_PENDING = 16  # per session (and for those tied to no session): more is refused to the agent
MAX_MESSAGE = 4000
MAX_OPEN_URLS = 64  # URL questions accepted and not completed yet: the oldest is forgotten first


class ElicitationAsker(Protocol):
    def on_elicitation(self, elicitation: Elicitation, state: str, answer: JsonObj | None) -> None: ...


class Elicitations:
    def __init__(
        self,
        sessions: Mapping[str, Session],
        asker: ElicitationAsker,
        emit_status: Callable[[], None],
        timeout: Callable[[], float],
        tell_user: Callable[[str], None],
        *,
        worker: Worker,
    ) -> None:
        self._sessions = sessions
        # The kernel's: the agent's schema and the user's answers are checked there, off the loop
        # (a field's pattern is the agent's, and may be catastrophic).
        self._worker = worker
        self._asker = asker
        self._emit_status = emit_status
        self._timeout = timeout
        self._tell_user = tell_user
        self._ids = itertools.count(1)
        self._unscoped: dict[str, Elicitation] = {}
        # URL elicitations the user agreed to, until the agent says they are complete.
        self._open_urls: dict[str, Elicitation] = {}

    async def request(self, params: JsonObj, agent: str | None = None) -> JsonObj:
        """The ACP answer to one `elicitation/create`; a schema the user cannot be asked is an error
        to the agent (the user is not asked)."""
        message = params.get("message")
        if not isinstance(message, str):
            raise errors.invalid("elicitation/create needs a string message")
        mode = params.get("mode")
        session = self._session_of(params)
        form = url = agent_id = None
        try:
            if mode == "form":
                form = await self._checked(parse_form, params.get("requestedSchema"))
            elif mode == "url":
                url = check_url(params.get("url"))
                agent_id = params.get("elicitationId")
                if not isinstance(agent_id, str) or not agent_id:
                    raise FormError("elicitationId must be a non-empty string")
            else:
                raise FormError(f"mode {mode!r:.40} is not supported (form, url)")
        except FormError as exc:
            raise SidecarError(INVALID_PARAMS, f"elicitation/create: {exc}") from None
        tool_call_id = params.get("toolCallId")
        pending = session.elicitations if session is not None else self._unscoped
        if len(pending) >= MAX_PENDING:
            raise SidecarError(INVALID_PARAMS, f"elicitation/create: already {MAX_PENDING} questions waiting")
        turn = session.current if session is not None else None
        elicitation = Elicitation(
            f"el-{next(self._ids)}",
            mode,
            message[:MAX_MESSAGE],
            session.session_id if session is not None else None,
            turn.turn_id if turn is not None else None,
            tool_call_id if isinstance(tool_call_id, str) else None,
            form,
            url,
            asyncio.get_running_loop().create_future(),
            agent_id,
            agent,
        )
        pending[elicitation.elicitation_id] = elicitation
        self._emit_status()
        try:
            self._asker.on_elicitation(elicitation, "pending", None)
            try:
                answer = await asyncio.wait_for(asyncio.shield(elicitation.future), self._timeout())
            except TimeoutError:
                elicitation.timed_out = elicitation.resolve({"action": "cancel"})
                answer = elicitation.future.result()
                self._tell_user(
                    f"The agent's question ({elicitation.message[:120]}) was not answered in time: "
                    "it was cancelled."
                )
        finally:
            pending.pop(elicitation.elicitation_id, None)
            self._emit_status()
        if url is not None and answer.get("action") == "accept":
            self._open_urls[elicitation.elicitation_id] = elicitation
            while len(self._open_urls) > MAX_OPEN_URLS:  # an agent that never completes them
                del self._open_urls[next(iter(self._open_urls))]
        self._asker.on_elicitation(elicitation, "resolved", answer)
        return answer

    def _session_of(self, params: JsonObj) -> Session | None:
        session_id = params.get("sessionId")
        if session_id is None:
            if "requestId" not in params:
                raise errors.invalid("elicitation/create needs a sessionId or a requestId")
            return None
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise SidecarError(RESOURCE_NOT_FOUND, f"unknown session {session_id!r:.80}")
        return session

    def pending(self) -> list[Elicitation]:
        # The sessions hold only the questions this feature put there.
        found = [cast(Elicitation, e) for s in self._sessions.values() for e in s.elicitations.values()]
        return found + list(self._unscoped.values())

    async def _checked(self, check: Callable[..., T], *args: Any) -> T:
        """A form read or an answer checked on the worker; FormError when that took too long."""
        try:
            return await self._worker.run(check, *args)
        except WorkTimeout:
            raise FormError("checking it took too long (the fields' patterns?)") from None

    async def respond(self, elicitation_id: object, action: object, content: object = None) -> None:
        """The user's answer. Content that does not fit the form is an error to the editor, and
        the question stays open (the user may answer again)."""
        elicitation = self._pending_named(elicitation_id)
        if action == "accept":
            answer: JsonObj = {"action": "accept"}
            if elicitation.form is not None:
                try:
                    answer["content"] = await self._checked(elicitation.form.answer, content)
                except FormError as exc:
                    raise errors.invalid(f"{exc}; the question is still open") from None
            elicitation.resolve(answer)
        elif action in ("decline", "cancel"):
            elicitation.resolve({"action": action})
        else:
            raise errors.invalid("action must be accept, decline or cancel")

    async def respond_from_document(self, elicitation_id: object, document: str) -> None:
        """Accept a form question with what the user typed into its block of the conversation
        document (`document`: the editor's text). Answers that do not fit are an error naming
        every such field; nothing is sent and the question stays open. Without an id: the one
        pending question whose block the document holds."""
        area = locate_prompt_area(document)  # (a copy pasted into the prompt is not the form)
        if elicitation_id is None:
            shown = {q.ident for q in questions_in(document, area.start if area is not None else None)}
            held = [e.elicitation_id for e in self.pending() if e.form and e.elicitation_id in shown]
            if len(held) != 1:
                raise errors.invalid(
                    f"{len(held) or 'no'} pending questions in this document: name one (elicitationId)"
                )
            elicitation_id = held[0]
        elicitation = self._pending_named(elicitation_id)
        if elicitation.form is None:
            raise errors.invalid("this question has no form to answer in the document")
        try:
            typed = read_answers(document, elicitation, area.start if area is not None else None)
        except FormError as exc:
            raise errors.invalid(f"{exc}; nothing was sent, the question is still open") from None
        try:
            problems = await self._checked(elicitation.form.problems, typed)
        except FormError as exc:
            problems = [str(exc)]
        if problems:
            raise errors.invalid(f"{'; '.join(problems)}; nothing was sent, the question is still open")
        await self.respond(elicitation.elicitation_id, "accept", typed)

    def _pending_named(self, elicitation_id: object) -> Elicitation:
        if not isinstance(elicitation_id, str):
            raise errors.invalid("elicitationId must be a string")
        elicitation = next((e for e in self.pending() if e.elicitation_id == elicitation_id), None)
        if elicitation is None:
            raise errors.invalid(
                f"no pending elicitation {elicitation_id!r:.80} (already answered or cancelled)"
            )
        return elicitation

    def complete(self, params: JsonObj, agent: str | None = None) -> None:
        """`elicitation/complete`: the agent says a URL elicitation is done (one it asked itself:
        the ids are the agents', so two agents may use the same)."""
        agent_id = params.get("elicitationId")
        for key, elicitation in list(self._open_urls.items()):
            if elicitation.agent_id == agent_id and elicitation.agent == agent:
                del self._open_urls[key]
                elicitation.completed = True
                self._asker.on_elicitation(elicitation, "completed", None)
                return

    @staticmethod
    def cancel_pending(session: Session) -> None:
        """The turn is being cancelled (or is gone): every question of the session answers cancel."""
        for elicitation in list(session.elicitations.values()):
            elicitation.resolve({"action": "cancel"})
