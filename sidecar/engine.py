"""The engine side composed: the kernel, then each feature's engine side, in order, and the one
table of who reacts to what (`_subscribe`; docs/architecture.md, "Who reacts to what").

It knows nothing of LSP: the editor side is the `EditorSide` it is handed (the LSP shell's
notifier) and the editor's buffers (`EditorFiles`). It forwards nothing: the LSP side reaches
the part it needs (`engine.kernel.actions`, `engine.registry`, `engine.permissions`, ...). Left
here: the start and the shutdown in their order, and the operations that span features (a
session's document, delete, fork), which move to the kernel and the features next.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

from sidecar.acp import AcpClient
from sidecar.acp.errors import RESOURCE_NOT_FOUND
from sidecar.features.conversation.conversations import Conversations
from sidecar.features.conversation.operations import ConversationEvents
from sidecar.features.edits.feature import Edits
from sidecar.features.questions.elicitations import ElicitationAsker
from sidecar.features.questions.feature import Questions
from sidecar.features.terminals.feature import ClientTerminals
from sidecar.features.titles.feature import Titles
from sidecar.kernel import errors
from sidecar.kernel.bus import (
    AgentLost,
    AgentReady,
    AgentStopped,
    CancelRequested,
    ConversationPiece,
    ModelSet,
    ModeSet,
    OptionsSet,
    PromptAdmitted,
    PromptSent,
    QuestionSettled,
    ReplayBoundary,
    RequestsWithdrawn,
    SessionOpened,
    TitleChanged,
    TurnEnded,
    TurnSettling,
    UpdateRouted,
)
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.kernel import Kernel
from sidecar.kernel.options import EngineOptions
from sidecar.kernel.ports import AgentConnector, EditorFiles, EngineListener
from sidecar.kernel.prompts import PromptContext
from sidecar.kernel.session import PermissionRequest, Session

# The names the LSP layer imports from here.
__all__ = [
    "EditorFiles",
    "Engine",
    "EngineListener",
    "EngineOptions",
    "PermissionRequest",
    "PromptContext",
    "Session",
]

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
T = TypeVar("T")

SAVE_BEFORE_STOP_WAIT = 3.0  # seconds for the titles' pending writes at shutdown, before the agent stops


class EditorSide(EngineListener, ConversationEvents, ElicitationAsker, Protocol):
    """What the composed features tell the editor side (the LSP shell's notifier)."""


class Engine:
    def __init__(
        self,
        options: EngineOptions,
        listener: EditorSide,
        files: EditorFiles,
        connect: AgentConnector = AcpClient,
    ) -> None:
        self.options = options
        self.listener = listener
        self.shutdown_step = "not begun"  # where a shutdown that took too long was stuck
        kernel = self.kernel = Kernel(options, listener, files, connect)
        self.bus = kernel.bus
        ctx = kernel.ctx
        self.agents = kernel.agents
        self.supervisor = self.agents.default
        self.registry = kernel.registry
        self.turns = kernel.turns
        self.config = kernel.config
        self.title_feature = kernel.add(Titles(kernel))
        self.titles = self.title_feature.titling
        # Each session's transcript document (rendered and written off the event loop).
        self.conversations = Conversations(ctx, self.titles.title_of, listener)
        kernel.document_uri = self.conversations.uri
        self.edits = kernel.add(Edits(kernel))
        self.changes, self.saved_changes = self.edits.changes, self.edits.saved_changes
        self.fs, self.reviewed, self.permissions = self.edits.fs, self.edits.reviewed, self.edits.permissions
        self.questions = kernel.add(Questions(kernel, listener))
        self.elicitations = self.questions.elicitations
        # The agent's client terminals: the commands it runs through us, shown in the transcript.
        self.client_terminals = kernel.add(ClientTerminals(kernel, listener.on_terminal))
        self.terminals = self.client_terminals.terminals
        self._subscribe()

    # ================================================================== wiring
    def _subscribe(self) -> None:
        """Who reacts to what the parts publish, in order: the one table, which
        docs/architecture.md ("Who reacts to what") says name for name (a test holds the two)."""
        react, docs, editor, edits = self.bus.react, self.conversations, self.listener, self.edits
        titles = self.title_feature
        # A routed session/update (the session's own state took it in already):
        react(UpdateRouted, "conversation: the document", lambda e: docs.update(e.session, e.routed.update))
        react(UpdateRouted, "titles: the agent's title", titles.info_update)
        react(
            UpdateRouted,
            "editor: acp/sessionUpdate, progress, notices",
            lambda e: editor.on_session_update(e.routed),
        )
        react(UpdateRouted, "edits: a tool call's end", edits.tool_call)
        react(UpdateRouted, "terminals: a tool call's terminal", self.client_terminals.tool_call)
        react(UpdateRouted, "kernel: the status", self._status_follows)
        react(SessionOpened, "conversation: the document exists", lambda e: docs.opened(e.session))
        react(ConversationPiece, "conversation: a feature's piece", docs.piece)
        react(
            QuestionSettled,
            "conversation: a question's block settled",
            lambda e: docs.question_settled(e.session, e.ident, e.markdown),
        )
        react(ReplayBoundary, "conversation: the replay merged", lambda e: docs.replay(e.session, e.starting))
        react(ModeSet, "conversation: the mode", lambda e: docs.mode_changed(e.session, e.mode_id))
        react(
            ModelSet, "conversation: the model", lambda e: docs.model_changed(e.session, e.model_id, e.name)
        )
        react(
            OptionsSet,
            "conversation: the options",
            lambda e: docs.options_changed(e.session, e.session.config_options),
        )
        react(PromptAdmitted, "titles: the first prompt's title", titles.prompt_admitted)
        react(PromptSent, "conversation: the prompt", lambda e: docs.prompt_sent(e.session, e.turn))
        react(PromptSent, "kernel: the agent's idle clock", self._agent_used)
        react(RequestsWithdrawn, "edits: permissions answered cancelled", edits.withdrawn)
        react(RequestsWithdrawn, "questions: answered cancelled", self.questions.withdrawn)
        self.bus.react_awaited(
            TurnSettling,
            "edits: reviewed edits put in place",
            edits.settling,
        )
        react(TurnEnded, "kernel: the agent's idle clock", self._agent_used)
        react(TurnEnded, "conversation: how the turn ended", lambda e: docs.turn_ended(e.session, e.turn))
        react(TurnEnded, "edits: reviewed edits settle", edits.turn_ended)
        react(TurnEnded, "titles: a rename turn's outcome", titles.turn_ended)
        react(
            TitleChanged,
            "editor: acp/sessionInfo, the title message",
            lambda e: editor.on_session_info(e.info),
        )
        # The sidecar that saved a title elsewhere retitled the document; ours follows only where we
        # hold one (every sidecar retitling every other one's documents made each title change
        # cost N document rewrites and lock waits).
        react(
            TitleChanged,
            "conversation: the document's title",
            lambda e: docs.title_changed(e.info, held_only=e.elsewhere),
        )
        react(AgentReady, "titles: reconcile with session/list", titles.agent_ready)
        react(AgentLost, "kernel: queued turns fail", self._agent_lost)
        react(AgentLost, "terminals: released", self.client_terminals.agent_lost)
        self.bus.react_awaited(AgentStopped, "terminals: released", self.client_terminals.agent_stopped)
        react(CancelRequested, "terminals: the session's killed", self.client_terminals.cancel_requested)

    def _agent_used(self, event: PromptSent | TurnEnded) -> None:
        self.agents.by_name[event.session.agent].last_used = time.monotonic()

    def _call(self, session: Session, call: Awaitable[T]) -> Awaitable[T]:
        return self.kernel.call(session, call)

    def _status_follows(self, event: UpdateRouted) -> None:
        if event.state_changed:
            self.kernel.emit_status()

    def _agent_lost(self, event: AgentLost) -> None:
        # Only that agent's sessions: the others' turns go on untouched.
        sessions = self.registry.of_agent(event.name)
        for session in sessions:
            self.turns.fail_queued(session, event.reason)

    async def _agent_stopped(self, name: str) -> None:
        """An agent stopped idle: what reacts to it is done before the idle watch goes on."""
        await self.bus.settle(AgentStopped(name))

    # ================================================================== life
    async def start(self) -> None:
        """Open the title cache and start the agent; failures are reported, not raised."""
        await self.kernel.start()
        # No agent is started here: each starts on its first use.
        self.agents.watch_idle(self.registry.busy, self.registry.attached_ids, self._agent_stopped)

    async def shutdown(self) -> None:
        if self.supervisor.closed:
            return
        self.agents.close()
        self.conversations.stop_flushing()
        self.reviewed.close()
        self.shutdown_step = "cancelling turns"
        for session in self.registry.by_id.values():
            self.turns.fail_queued(session, "the sidecar is shutting down")
            if session.current is not None and session.current.in_flight:
                await self.agents.by_name[session.agent].send_cancel(session.session_id)
        self.shutdown_step = "ending terminals"
        await self.terminals.aclose()
        # Titles known now reach the disk before the agent is asked to stop: stopping it may use
        # up the time the editor gives us, and a title the user saw must survive that.
        self.shutdown_step = "saving titles"
        await self.titles.save_pending(SAVE_BEFORE_STOP_WAIT)
        self.shutdown_step = "saving the agent's changes"
        try:
            await asyncio.wait_for(self.saved_changes.flush(), SAVE_BEFORE_STOP_WAIT)
        except Exception as exc:
            log.warning("saving the agent's changes at shutdown: %r", exc)
        self.shutdown_step = "closing the agents' sessions"
        await asyncio.gather(
            *(s.close_sessions(self.registry.attached_ids(s.name)) for s in self.agents.all())
        )
        self.shutdown_step = "stopping the agents"
        await asyncio.gather(*(s.stop(grace=1.0) for s in self.agents.all()))
        self.shutdown_step = "stopping background tasks"
        await self.kernel.close_tasks()
        for session in self.registry.by_id.values():
            self.turns.end_current(session, "shutdown")
        self.shutdown_step = "closing the title cache"
        await self.titles.aclose()  # its last title changes go to the documents too
        self.shutdown_step = "writing the transcripts"
        await self.conversations.aclose()
        self.shutdown_step = "done"

    def kill_agent_now(self) -> None:
        self.terminals.kill_now()
        for supervisor in self.agents.all():
            supervisor.kill_now()

    # ================================================================== status
    # ================================================================== sessions
    async def transcript(self, session_id: str | None) -> JsonObj:
        """`{sessionId, uri}` of a session's transcript document, created when missing: a session
        of this process (the active one by default), or any session the title cache knows."""
        if session_id is None or session_id in self.registry.by_id:
            session = await self.registry.resolve(session_id)
            uri = await self.conversations.document(session.session_id)
            return {"sessionId": session.session_id, "uri": uri}
        if await self.titles.find(session_id) is None:
            raise errors.unknown_session(session_id)
        return {"sessionId": session_id, "uri": await self.conversations.document(session_id)}

    async def delete_session(self, session_id: object) -> JsonObj:
        """`session/delete` on the session's agent (when it offers it), then its title and its
        transcript document are removed here too. A busy session is refused (nothing is lost:
        cancel its turn first); one the agent no longer knows is removed here all the same."""
        if not isinstance(session_id, str) or not session_id:
            raise errors.invalid("sessionId must be a non-empty string")
        session = self.registry.by_id.get(session_id)
        if session is None and await self.titles.find(session_id) is None:
            raise errors.unknown_session(session_id)
        if session is not None and (session.queue or session.permissions or session.state() != "idle"):
            raise errors.invalid(
                f"session {session_id} is busy: cancel its turn (acp.cancel) before deleting it"
            )
        supervisor = self.agents.of(session_id)
        client = await supervisor.ensure()
        try:
            await supervisor.call(client.delete_session(session_id))
        except errors.SidecarError as exc:
            if exc.code != RESOURCE_NOT_FOUND:
                raise
            log.info("session/delete: the agent no longer knows %s; removed here", session_id)
        await self.terminals.release_all([session_id])
        self.registry.forget(session_id)
        await self.titles.forget(session_id)
        await self.conversations.delete(session_id)
        return {"sessionId": session_id}

    def can_fork(self, session_id: str) -> bool:
        """The session's agent offers `session/fork` (known once it has started)."""
        agent = self.agents.of(session_id).agent
        return agent is not None and agent.can_fork

    async def fork_session(self, session_id: object | None) -> JsonObj:
        """`session/fork` of a session (the active one by default) on its agent, when it offers it:
        the new session becomes the active one; its document starts with the parent's. A parent
        with a turn running may be forked: its agent decides what of that turn the fork holds."""
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            raise errors.invalid("sessionId must be a non-empty string")
        if session_id is None or session_id in self.registry.by_id:
            parent = await self.registry.resolve(session_id)
        elif await self.titles.find(session_id) is None:
            raise errors.unknown_session(session_id)
        else:  # a session of the title cache: attached first (its cwd and agent are known then)
            parent = self.registry.get(await self.registry.load(session_id))
        supervisor = self.agents.by_name[parent.agent]
        await supervisor.ensure()
        if not self.can_fork(parent.session_id):
            raise SidecarError(errors.CAPABILITY, "the agent does not offer session/fork")
        await self.conversations.document(parent.session_id)  # written out: the fork copies it
        session = await self.registry.fork(parent)
        return {
            "sessionId": session.session_id,
            "title": self.titles.current_title(session.session_id),
            "agent": session.agent,
        }

    # ================================================================== turns
    # ================================================================== permissions and edits
    # ================================================================== ACP client handler
    # (each agent's requests come through its `AgentSide`, which keeps them to its own sessions)
