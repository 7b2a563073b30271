"""The engine side composed: the kernel, then each feature's engine side, in order, and the one
table of who reacts to what (`subscribe`; docs/architecture.md, "Who reacts to what").

It knows nothing of LSP: the editor side is the `EditorSide` it is handed (the LSP shell's
notifier) and the editor's buffers (`EditorFiles`). What it returns is the kernel: a command
reaches the kernel's part it needs (`kernel.actions`, `kernel.registry`) or its feature
(`kernel.feature(Edits)`); the start and the shutdown are the kernel's, each feature adding its
steps (`Kernel.on_start`, `before_agents_stop`, ...).
"""

from __future__ import annotations

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


class EditorSide(EngineListener, ConversationEvents, ElicitationAsker, Protocol):
    """What the composed features tell the editor side (the LSP shell's notifier)."""


def compose(
    options: EngineOptions,
    listener: EditorSide,
    files: EditorFiles,
    connect: AgentConnector = AcpClient,
) -> Kernel:
    """The kernel and the features on it, in order (titles first: the others read its catalogue)."""
    kernel = Kernel(options, listener, files, connect)
    titles = kernel.add(Titles(kernel))
    documents = kernel.add(Documents(kernel, listener))
    edits = kernel.add(Edits(kernel))
    questions = kernel.add(Questions(kernel, listener))
    # The agent's client terminals: the commands it runs through us, shown in the conversation.
    terminals = kernel.add(ClientTerminals(kernel, listener.on_terminal))
    subscribe(kernel, listener, titles, documents, edits, questions, terminals)
    return kernel


def subscribe(
    kernel: Kernel,
    editor: EditorSide,
    titles: Titles,
    documents: Documents,
    edits: Edits,
    questions: Questions,
    terminals: ClientTerminals,
) -> None:
    """Who reacts to what the parts publish, in order: the one table, which
    docs/architecture.md ("Who reacts to what") says name for name (a test holds the two)."""
    bus = kernel.bus
    react, docs = bus.react, documents.conversations
    # A routed session/update (the session's own state took it in already):
    react(UpdateRouted, "conversation: the document", lambda e: docs.update(e.session, e.routed.update))
    react(UpdateRouted, "titles: the agent's title", titles.info_update)
    react(UpdateRouted, "editor: acp/sessionUpdate, progress, notices", editor.on_session_update)
    react(UpdateRouted, "edits: a tool call's end", edits.tool_call)
    react(UpdateRouted, "terminals: a tool call's terminal", terminals.tool_call)
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
    react(ModelSet, "conversation: the model", lambda e: docs.model_changed(e.session, e.model_id, e.name))
    react(
        OptionsSet,
        "conversation: the options",
        lambda e: docs.options_changed(e.session, e.session.config_options),
    )
    react(PromptAdmitted, "titles: the first prompt's title", titles.prompt_admitted)
    react(PromptSent, "conversation: the prompt", lambda e: docs.prompt_sent(e.session, e.turn))
    react(PromptSent, "kernel: the agent's idle clock", kernel.agent_used)
    react(RequestsWithdrawn, "edits: permissions answered cancelled", edits.withdrawn)
    react(RequestsWithdrawn, "questions: answered cancelled", questions.withdrawn)
    bus.react_awaited(
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
    bus.react_awaited(SessionForking, "conversation: the parent's document written", documents.forking)
    bus.react_awaited(SessionDeleting, "terminals: released", terminals.deleting)
    bus.react_awaited(SessionDeleted, "conversation: the document removed", documents.deleted)
    react(AgentLost, "kernel: queued turns fail", kernel.agent_lost)
    react(AgentLost, "terminals: released", terminals.agent_lost)
    bus.react_awaited(AgentStopped, "terminals: released", terminals.agent_stopped)
    react(CancelRequested, "terminals: the session's killed", terminals.cancel_requested)
