"""The edits feature's engine side on the kernel: the agent's file requests and permission
requests, the edits the user reviewed, and the agent's changes after they landed.

It answers `session/request_permission`, `fs/read_text_file` and `fs/write_text_file` through the
kernel's table; its reactions (a tool call's end, a withdrawn turn, a turn settling or ending) are
subscribed in the one table of `sidecar/composition.py`.
"""

from __future__ import annotations

import asyncio
import logging

from sidecar.features.edits.agent_changes import AgentChanges
from sidecar.features.edits.change_store import AgentChangeStore, ChangePersistence
from sidecar.features.edits.fs_service import FileService
from sidecar.features.edits.permissions import Permissions
from sidecar.kernel.bus import RequestsWithdrawn, TurnEnded, TurnSettling, UpdateRouted
from sidecar.kernel.kernel import SAVE_BEFORE_STOP_WAIT, Kernel
from sidecar.kernel.updates import TOOL_CALL_KINDS

log = logging.getLogger(__name__)


class Edits:
    def __init__(self, kernel: Kernel) -> None:
        options, registry, listener = kernel.options, kernel.registry, kernel.listener
        self._kernel = kernel
        # The agent's changes after they landed, for review per hunk (docs/protocol.md, "Agent changes").
        self.changes = AgentChanges()
        self.saved_changes = ChangePersistence(
            self.changes,
            AgentChangeStore(options.state_dir),
            kernel.ctx.agent_key,
            kernel.files.open_document_text,
        )
        self.fs = FileService(
            registry.by_id,
            kernel.files,
            ops=kernel.file_ops,
            worker=kernel.worker,
            tell_user=listener.on_error,
            spawn=kernel.spawn,
            changes=self.changes,
        )
        # Edits the user changed in review before allowing them: written instead of the agent's.
        self.reviewed = self.fs.reviewed
        self.permissions = Permissions(
            options.permissions, registry.by_id, listener, kernel.ctx.status_changed, self.reviewed
        )
        requests = kernel.requests
        requests.answer("session/request_permission", lambda p, _agent: self.permissions.request(p))
        requests.answer("fs/read_text_file", lambda p, _agent: self.fs.read_text_file(p))
        requests.answer("fs/write_text_file", lambda p, _agent: self.fs.write_text_file(p))
        kernel.on_start(self._restore)
        kernel.on_closing(self.reviewed.close)
        kernel.before_agents_stop("saving the agent's changes", self._save_changes)

    async def _restore(self) -> None:
        self._kernel.spawn(self.saved_changes.restore(), "agent-changes-restore")

    async def _save_changes(self) -> None:
        try:
            await asyncio.wait_for(self.saved_changes.flush(), SAVE_BEFORE_STOP_WAIT)
        except Exception as exc:
            log.warning("saving the agent's changes at shutdown: %r", exc)

    # ------------------------------------------------------------------ what it reacts to
    def tool_call(self, event: UpdateRouted) -> None:
        """A tool call completed or failed: a reviewed edit is settled, its writes recorded."""
        # A replayed tool call is history: what it wrote landed long ago (a change the user kept
        # would come back for review), and no reviewed edit of this process waits for it.
        if event.routed.update.kind in TOOL_CALL_KINDS and not event.routed.replay:
            self.reviewed.tool_call_ended(event.session.session_id, event.routed.update.raw)
            self.fs.tool_call_ended(event.session, event.routed.update.raw)

    @staticmethod
    def withdrawn(event: RequestsWithdrawn) -> None:
        """The turn is being cancelled (or is gone): its permission requests answer cancelled."""
        Permissions.cancel_pending(event.session)

    async def settling(self, event: TurnSettling) -> None:
        """The user's reviewed edits are put in place before the turn's end is told."""
        await self.reviewed.settle_turn(event.session.session_id)

    def turn_ended(self, event: TurnEnded) -> None:
        self.reviewed.turn_ended(event.session.session_id)
