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
from typing import Protocol

from sidecar.acp import AcpClient
from sidecar.features.conversation.feature import Documents
from sidecar.features.conversation.operations import ConversationEvents
from sidecar.features.edits.feature import Edits
from sidecar.features.questions.elicitations import ElicitationAsker
from sidecar.features.questions.feature import Questions
from sidecar.features.terminals.feature import ClientTerminals
from sidecar.features.titles.feature import Titles
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
    SessionDeleted,
    SessionDeleting,
    SessionForking,
    SessionOpened,
    TitleChanged,
    TurnEnded,
    TurnSettling,
    UpdateRouted,
)
from sidecar.kernel.kernel import Kernel
from sidecar.kernel.options import EngineOptions
from sidecar.kernel.ports import AgentConnector, EditorFiles, EngineListener

log = logging.getLogger(__name__)


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
        self.listener = listener
        self.shutdown_step = "not begun"  # where a shutdown that took too long was stuck
        kernel = self.kernel = Kernel(options, listener, files, connect)
        self.bus = kernel.bus
        self.agents = kernel.agents
        self.supervisor = self.agents.default
        self.registry = kernel.registry
        self.turns = kernel.turns
        self.title_feature = kernel.add(Titles(kernel))
        self.titles = self.title_feature.titling
        self.documents = kernel.add(Documents(kernel, listener))
        self.conversations = self.documents.conversations
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
        kernel = self.kernel
        titles = self.title_feature
        # A routed session/update (the session's own state took it in already):
        react(UpdateRouted, "conversation: the document", lambda e: docs.update(e.session, e.routed.update))
        react(UpdateRouted, "titles: the agent's title", titles.info_update)
        react(UpdateRouted, "editor: acp/sessionUpdate, progress, notices", editor.on_session_update)
        react(UpdateRouted, "edits: a tool call's end", edits.tool_call)
        react(UpdateRouted, "terminals: a tool call's terminal", self.client_terminals.tool_call)
        react(UpdateRouted, "kernel: the status", kernel.status_follows)
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
        react(PromptSent, "kernel: the agent's idle clock", kernel.agent_used)
        react(RequestsWithdrawn, "edits: permissions answered cancelled", edits.withdrawn)
        react(RequestsWithdrawn, "questions: answered cancelled", self.questions.withdrawn)
        self.bus.react_awaited(
            TurnSettling,
            "edits: reviewed edits put in place",
            edits.settling,
        )
        react(TurnEnded, "kernel: the agent's idle clock", kernel.agent_used)
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
        self.bus.react_awaited(
            SessionForking, "conversation: the parent's document written", self.documents.forking
        )
        self.bus.react_awaited(SessionDeleting, "terminals: released", self.client_terminals.deleting)
        self.bus.react_awaited(SessionDeleted, "conversation: the document removed", self.documents.deleted)
        react(AgentLost, "kernel: queued turns fail", kernel.agent_lost)
        react(AgentLost, "terminals: released", self.client_terminals.agent_lost)
        self.bus.react_awaited(AgentStopped, "terminals: released", self.client_terminals.agent_stopped)
        react(CancelRequested, "terminals: the session's killed", self.client_terminals.cancel_requested)

    # ================================================================== life
    async def start(self) -> None:
        """Open the title cache and start the agent; failures are reported, not raised."""
        await self.kernel.start()

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
