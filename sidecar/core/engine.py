"""The session engine: one facade over the agent, its sessions, turns, permissions and files.

It knows nothing of LSP. The layer above calls its methods and receives events
through an `EngineListener`; it provides editor services through `EditorFiles`.
The engine is also the agent's ACP client handler (updates, permission and file
requests). Each job lives in its own module; this one wires them together: every
part gets one `EngineContext`, and `_subscribe` is the one place that says who
reacts to the events the parts publish (docs/architecture.md draws it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

from ..acp import AcpClient
from ..tasks import OwnedTasks
from . import errors
from .agent_names import AgentIdentity
from .agent_supervisor import AgentSupervisor
from .context import EngineContext
from .conversation import Conversations
from .early_updates import EarlyUpdates
from .elicitations import Elicitation, Elicitations
from .events import (
    AgentLost,
    AgentReady,
    EventBus,
    PromptSent,
    ReplayBoundary,
    SessionOpened,
    StatusChanged,
    TitleChanged,
    TurnEnded,
    UpdateRouted,
)
from .fs_service import FileService
from .options import EngineOptions
from .permissions import Permissions
from .ports import AgentConnector, EditorFiles, EngineListener
from .prompts import PromptContext, prompt_blocks, rename_prompt
from .session import PermissionRequest, Session
from .session_config import SessionConfig
from .sessions import Sessions
from .status import StatusReporter, build_status
from .terminals import Terminals
from .titling import Titling
from .turn_queue import TurnQueue
from .turns import TurnKind
from .updates import TOOL_CALL_KINDS, Update, read_update

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

JsonObj = dict[str, Any]

SAVE_BEFORE_STOP_WAIT = 3.0  # seconds for the titles' pending writes at shutdown, before the agent stops


class Engine:
    def __init__(
        self,
        options: EngineOptions,
        listener: EngineListener,
        files: EditorFiles,
        connect: AgentConnector = AcpClient,
    ) -> None:
        self.options = options
        self.listener = listener
        self.shutdown_step = "not begun"  # where a shutdown that took too long was stuck
        self._tasks = OwnedTasks("engine", self._task_failed)
        self.bus = EventBus(self._task_failed)
        ctx = EngineContext(
            options, listener, self.bus, self.spawn, AgentIdentity(options.state_dir, options.agent_command)
        )
        self._status = StatusReporter(listener, self._status_snapshot)
        self.supervisor = AgentSupervisor(ctx, self, connect=connect)
        self.titles = Titling(ctx)
        # Each session's transcript document (rendered and written off the event loop).
        self.conversations = Conversations(ctx, self.titles.title_of)
        early: EarlyUpdates[Update] = EarlyUpdates(
            options.pending_update_bound, options.pending_update_sessions, options.pending_update_max_age
        )
        self.registry = Sessions(ctx, self.supervisor, self.titles, early)
        self.fs = FileService(self.registry.by_id, files, tell_user=listener.on_error, spawn=self.spawn)
        # Edits the user changed in review before allowing them: written instead of the agent's.
        self.reviewed = self.fs.reviewed
        self.permissions = Permissions(
            options.permissions, self.registry.by_id, listener, ctx.status_changed, self.reviewed
        )
        self.elicitations = Elicitations(
            self.registry.by_id,
            listener,
            ctx.status_changed,
            timeout=lambda: options.elicitation_timeout,
            tell_user=listener.on_error,
        )
        self.turns = TurnQueue(
            ctx,
            attach=self.registry.ensure_attached,
            call=self.supervisor.call,
            send_cancel=self.supervisor.send_cancel,
            cancel_permissions=_cancel_questions,
        )
        self.config = SessionConfig(self.registry.ensure_attached, self.supervisor.call, ctx.status_changed)
        # The agent's client terminals: the commands it runs through us, shown in the transcript.
        self.terminals = Terminals(
            lambda: self.registry.by_id, self.conversations.terminal_output, listener.on_terminal
        )
        self._subscribe()

    # ================================================================== wiring
    def _subscribe(self) -> None:
        """Who reacts to what the parts publish, in order (docs/architecture.md draws it)."""
        bus, docs, editor, reviewed = self.bus, self.conversations, self.listener, self.reviewed
        # Who reacts to a routed session/update (the session's own state took it in already):
        bus.subscribe(
            UpdateRouted,
            lambda e: docs.update(e.session, e.routed.update),  # its transcript document
            self._title_follows,  # a session_info_update: the title
            lambda e: editor.on_session_update(e.routed),  # acp/sessionUpdate, progress, notices
            self._reviewed_edit_follows,  # a tool call that ended: a reviewed edit is settled
            self._terminal_follows,  # a tool call showing a client terminal: its live output
            self._status_follows,  # mode, config options, usage: acp/status
        )
        bus.subscribe(SessionOpened, lambda e: docs.opened(e.session))
        bus.subscribe(ReplayBoundary, lambda e: docs.replay(e.session, e.starting))
        bus.subscribe(PromptSent, lambda e: docs.prompt_sent(e.session, e.turn))
        bus.subscribe(
            TurnEnded,
            lambda e: docs.turn_ended(e.session, e.turn),
            lambda e: reviewed.turn_ended(e.session.session_id),
            self._rename_ended,
        )
        bus.subscribe(
            TitleChanged,
            lambda e: editor.on_session_info(e.info),
            # The sidecar that saved a title elsewhere retitled the document; ours follows only
            # where we hold one (every sidecar retitling every other one's documents made each
            # title change cost N document rewrites and lock waits).
            lambda e: docs.title_changed(e.info, held_only=e.elsewhere),
        )
        bus.subscribe(AgentReady, self._agent_ready)
        bus.subscribe(AgentLost, self._agent_lost)
        bus.subscribe(StatusChanged, lambda _e: self._status.emit())

    def _title_follows(self, event: UpdateRouted) -> None:
        if event.routed.update.kind == "session_info_update":
            self.titles.on_info_update(event.session, event.routed.update.raw)

    def _reviewed_edit_follows(self, event: UpdateRouted) -> None:
        if event.routed.update.kind in TOOL_CALL_KINDS:
            self.reviewed.tool_call_ended(event.session.session_id, event.routed.update.raw)

    def _terminal_follows(self, event: UpdateRouted) -> None:
        if event.routed.update.kind in TOOL_CALL_KINDS:
            self.terminals.show(event.session.session_id, event.routed.update.raw)

    def _status_follows(self, event: UpdateRouted) -> None:
        if event.state_changed:
            self.emit_status()

    def _rename_ended(self, event: TurnEnded) -> None:
        if event.turn.kind is TurnKind.RENAME:
            self.titles.rename_turn_ended(event.session, event.turn)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Start an owned background task: kept, logged on failure, cancelled on shutdown."""
        return self._tasks.spawn(coro, name)

    def _task_failed(self, name: str, exc: BaseException) -> None:
        self.listener.on_log("error", f"internal error in {name}: {exc!r}")

    def _agent_ready(self, event: AgentReady) -> None:
        self.titles.agent_ready(self.supervisor.key)
        if event.agent.can_list:
            self.spawn(self.titles.reconcile_all(event.client), "startup-reconcile")

    def _agent_lost(self, event: AgentLost) -> None:
        for session in self.registry.by_id.values():
            self.turns.fail_queued(session, event.reason)
        # Nothing the dead agent started keeps running.
        self.spawn(self.terminals.release_all(), "release-terminals")

    @property
    def agent_key(self) -> str:
        return self.supervisor.key

    @property
    def sessions(self) -> dict[str, Session]:
        return self.registry.by_id

    @property
    def active_id(self) -> str | None:
        return self.registry.active_id

    def session(self, session_id: str | None) -> Session:
        return self.registry.get(session_id)

    # ================================================================== life
    async def start(self) -> None:
        """Open the title cache and start the agent; failures are reported, not raised."""
        await self.titles.open()
        self.emit_status()
        await self.supervisor.start()

    async def shutdown(self) -> None:
        if self.supervisor.closed:
            return
        self.supervisor.closed = True
        self.conversations.stop_flushing()
        self.reviewed.close()
        self.shutdown_step = "cancelling turns"
        for session in self.registry.by_id.values():
            self.turns.fail_queued(session, "the sidecar is shutting down")
            if session.current is not None and session.current.in_flight:
                await self.supervisor.send_cancel(session.session_id)
        self.shutdown_step = "ending terminals"
        await self.terminals.aclose()
        # Titles known now reach the disk before the agent is asked to stop: stopping it may use
        # up the time the editor gives us, and a title the user saw must survive that.
        self.shutdown_step = "saving titles"
        await self.titles.save_pending(SAVE_BEFORE_STOP_WAIT)
        self.shutdown_step = "closing the agent's sessions"
        await self.supervisor.close_sessions(self.registry.attached_ids())
        self.shutdown_step = "stopping the agent"
        await self.supervisor.stop(grace=1.0)
        self.shutdown_step = "stopping background tasks"
        await self._tasks.aclose()
        for session in self.registry.by_id.values():
            self.turns.end_current(session, "shutdown")
        self.shutdown_step = "closing the title cache"
        await self.titles.aclose()  # its last title changes go to the documents too
        self.shutdown_step = "writing the transcripts"
        await self.conversations.aclose()
        self.shutdown_step = "done"

    def kill_agent_now(self) -> None:
        self.terminals.kill_now()
        self.supervisor.kill_now()

    # ================================================================== status
    def _status_snapshot(self) -> JsonObj:
        session = self.registry.active
        title = self.titles.title_of(session.session_id) if session else None
        uri = self.conversations.uri(session.session_id) if session else None
        return build_status(self.supervisor.view(), session, title, uri)

    def status(self) -> JsonObj:
        return self._status.current()

    def emit_status(self) -> None:
        self._status.emit()

    # ================================================================== sessions
    async def new_session(self, cwd: object) -> str:
        return await self.registry.new(cwd)

    async def load_session(
        self, session_id: object, cwd: object | None = None, default_cwd: str | None = None
    ) -> str:
        return await self.registry.load(session_id, cwd, default_cwd)

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

    async def list_sessions(self, cwd: str | None, refresh: bool, all_cwds: Sequence[str]) -> list[JsonObj]:
        return await self.registry.list(cwd, refresh, all_cwds)

    # ================================================================== turns
    async def prompt(
        self,
        text: object,
        session_id: str | None = None,
        cwd: str | None = None,
        context: PromptContext | None = None,
    ) -> JsonObj:
        if not isinstance(text, str) or not text.strip():
            raise errors.invalid("text must be a non-empty string")
        session = await self.registry.for_prompt(session_id, cwd)
        contexts = [context] if context is not None else []
        contexts += await self.fs.mention_contexts(session, text)  # refuses before anything is sent
        embed = self.supervisor.agent is not None and self.supervisor.agent.can_embed_context
        turn = self.turns.admit(session, prompt_blocks(text, contexts, embed), TurnKind.PROMPT, echo=text)
        if not session.first_prompt_seen:
            session.first_prompt_seen = True
            self.titles.first_prompt(session, text)
        return {
            "sessionId": session.session_id,
            "turnId": turn.turn_id,
            "position": self.turns.position(session, turn),
        }

    async def cancel(self, session_id: str | None = None) -> bool:
        session = await self.registry.resolve(session_id)
        cancelled = await self.turns.cancel(session)
        # A cancelled turn leaves no command running (the agent may still read and release them).
        self.spawn(self.terminals.kill_session(session.session_id), "kill-terminals")
        return cancelled

    async def kill_terminals(self, terminal_id: str | None = None, session_id: str | None = None) -> JsonObj:
        """The editor's kill: one terminal by id, or every running terminal of a session."""
        if terminal_id is not None:
            if not await self.terminals.kill_by_id(terminal_id):
                raise errors.invalid(f"no running terminal {terminal_id!r:.80}")
            return {"killed": [terminal_id]}
        session = await self.registry.resolve(session_id)
        return {"killed": await self.terminals.kill_session(session.session_id)}

    async def rename(self, title: object, session_id: str | None = None) -> JsonObj:
        """`session/set_title` when the agent offers it (any session the title cache knows), else a
        rename prompt queued in the session."""
        session: Session | None = None
        if isinstance(session_id, str) and session_id not in self.registry.by_id:
            target = session_id  # not loaded here: set_title may still rename it
        else:
            session = await self.registry.resolve(session_id)
            target = session.session_id
        requested = self.titles.validate_user_title(title)
        client = await self.supervisor.ensure()
        if self.supervisor.agent is not None and self.supervisor.agent.can_set_title:

            async def set_title(sid: str, wanted: str) -> str:
                return await self.supervisor.call(client.set_title(sid, wanted))

            await self.titles.rename_by_agent(target, requested, set_title)
            return {"sessionId": target, "requestedTitle": requested}
        if session is None:
            raise errors.unknown_session(target)
        blocks, meta = rename_prompt(requested)
        turn = self.turns.admit(session, blocks, TurnKind.RENAME, meta=meta)
        self.titles.rename_requested(session, requested, turn)
        return {"sessionId": session.session_id, "requestedTitle": requested}

    # ================================================================== configuration
    async def set_mode(self, mode_id: object, session_id: str | None = None) -> JsonObj:
        session = await self.registry.resolve(session_id)
        result = await self.config.set_mode(session, mode_id)
        if isinstance(mode_id, str):
            self.conversations.mode_changed(session, mode_id)
        return result

    async def set_config_option(
        self, config_id: object, value: object, session_id: str | None = None
    ) -> JsonObj:
        session = await self.registry.resolve(session_id)
        result = await self.config.set_config_option(session, config_id, value)
        self.conversations.options_changed(session, session.config_options)
        return result

    async def set_model(self, model_id: object, session_id: str | None = None) -> JsonObj:
        session = await self.registry.resolve(session_id)
        legacy = session.model_option() is None
        result = await self.config.set_model(session, model_id)
        if legacy and isinstance(model_id, str):
            self.conversations.model_changed(session, model_id, session.model_name)
        else:
            self.conversations.options_changed(session, session.config_options)
        return result

    async def authenticate(self, method_id: object) -> JsonObj:
        return await self.supervisor.authenticate(method_id)

    # ================================================================== permissions and edits
    def pending_permissions(self) -> list[PermissionRequest]:
        return self.permissions.pending()

    def respond_permission(self, request_id: object, option_id: object | None) -> None:
        self.permissions.respond(request_id, option_id)

    async def respond_permission_with_edits(
        self, request_id: object, option_id: object, edits: object
    ) -> None:
        await self.permissions.respond_with_edits(request_id, option_id, edits)

    def tool_call_diffs(self, session_id: object, tool_call_id: object) -> list[JsonObj]:
        return self.fs.tool_call_diffs(session_id, tool_call_id)

    def diffs_of(self, session_id: object, tool_call_id: object) -> tuple[list[str], list[JsonObj]]:
        """The session's roots and a tool call's diffs, paths not admitted yet (for proposals)."""
        return self.fs.diffs_of(session_id, tool_call_id)

    def session_roots(self, session_id: str) -> list[str] | None:
        session = self.sessions.get(session_id)
        return session.roots if session is not None else None

    def pending_edits(self) -> list[tuple[Session, str, JsonObj, list[JsonObj]]]:
        return self.fs.pending_edits()

    # ================================================================== ACP client handler
    async def on_session_update(self, params: JsonObj) -> None:
        self.registry.on_update(read_update(params["sessionId"], params["update"]))  # the client checked both

    async def request_permission(self, params: JsonObj) -> JsonObj:
        return await self.permissions.request(params)

    async def read_text_file(self, params: JsonObj) -> JsonObj:
        return await self.fs.read_text_file(params)

    async def write_text_file(self, params: JsonObj) -> JsonObj:
        return await self.fs.write_text_file(params)

    async def create_elicitation(self, params: JsonObj) -> JsonObj:
        return await self.elicitations.request(params)

    def complete_elicitation(self, params: JsonObj) -> None:
        self.elicitations.complete(params)

    def pending_elicitations(self) -> list[Elicitation]:
        return self.elicitations.pending()

    def respond_elicitation(self, elicitation_id: object, action: object, content: object = None) -> None:
        self.elicitations.respond(elicitation_id, action, content)

    async def write_closed_file(self, session_id: object, path: str, expected: str | None, text: str) -> bool:
        """An applied agent edit of a file the editor has not open, written by the sidecar."""
        return await self.fs.write_closed_file(session_id, path, expected, text)

    async def terminal_request(self, method: str, params: JsonObj) -> JsonObj:
        return await self.terminals.handle(method, params)


def _cancel_questions(session: Session) -> None:
    """The turn is being cancelled (or is gone): its permission requests and questions answer."""
    Permissions.cancel_pending(session)
    Elicitations.cancel_pending(session)
