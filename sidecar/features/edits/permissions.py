"""The agent's `session/request_permission`: policies, waiting for the user, answers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from sidecar.acp.errors import RESOURCE_NOT_FOUND
from sidecar.features.edits.reviewed_edits import ReviewedEdits
from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.session import PermissionRequest, Session
from sidecar.kernel.turns import TurnState

JsonObj = dict[str, Any]

# Tool call kinds the `allow_reads` policy allows without asking.
READ_KINDS = {"read", "search"}


class PermissionAsker(Protocol):
    def on_permission(self, request: PermissionRequest) -> None: ...


class Permissions:
    """Answers permission requests by policy, or asks the user and waits for the answer."""

    def __init__(
        self,
        policy: str,
        sessions: Mapping[str, Session],
        asker: PermissionAsker,
        emit_status: Callable[[], None],
        reviewed: ReviewedEdits,
    ) -> None:
        self.policy = policy  # ask | allow_reads | reject
        self._reviewed = reviewed
        self._sessions = sessions
        self._asker = asker
        self._emit_status = emit_status
        self._ids = itertools.count(1)

    async def request(self, params: JsonObj) -> JsonObj:
        """The ACP answer to one `session/request_permission`."""
        session = self._sessions.get(params.get("sessionId"))  # type: ignore[arg-type]
        if session is None:
            raise SidecarError(RESOURCE_NOT_FOUND, f"unknown session {params.get('sessionId')!r:.80}")
        tool_call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        options = [
            o
            for o in params.get("options") or []
            if isinstance(o, dict) and isinstance(o.get("optionId"), str)
        ]
        if not options:
            raise errors.invalid("session/request_permission needs at least one option")
        turn = session.current
        request = PermissionRequest(
            f"perm-{next(self._ids)}",
            session.session_id,
            turn.turn_id if turn else None,
            tool_call,  # type: ignore[arg-type]
            options,
            asyncio.get_running_loop().create_future(),
        )
        if turn is None or turn.state is not TurnState.RUNNING:
            return {"outcome": {"outcome": "cancelled"}}
        if self.policy == "reject":
            return {"outcome": reject_outcome(request)}
        if self.policy == "allow_reads" and request.kind in READ_KINDS:
            allow = request.first_of("allow_once", "allow_always")
            if allow is not None:
                return {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}
        session.permissions[request.request_id] = request
        self._emit_status()
        try:
            self._asker.on_permission(request)
            return await request.future
        finally:
            session.permissions.pop(request.request_id, None)
            self._emit_status()

    def pending(self) -> list[PermissionRequest]:
        return [p for s in self._sessions.values() for p in s.permissions.values()]

    def respond(self, request_id: object, option_id: object | None) -> None:
        """Answer a pending request; option None means the user dismissed it (= reject)."""
        request, option = self._chosen(request_id, option_id)
        if option is None:
            request.resolve(reject_outcome(request))
            return
        request.resolve({"outcome": "selected", "optionId": option["optionId"]})

    async def respond_with_edits(self, request_id: object, option_id: object, edits: object) -> None:
        """Allow with the text the user settled on for each file (`ReviewedEdits`). The files
        are read as they are before the agent hears the answer: its own write is then known
        exactly (`ReviewedEdits.prepare`)."""
        request, option = self._chosen(request_id, option_id)
        if option is None or option.get("kind") not in ("allow_once", "allow_always"):
            raise errors.invalid("edits go with an option that allows the edit (allow_once, allow_always)")
        session = self._sessions[request.session_id]
        parsed = ReviewedEdits.parse(edits, session.roots)
        prepared = await self._reviewed.prepare(session.session_id, session.cwd, request.tool_call, parsed)
        if request not in self.pending():  # answered or cancelled while the files were read
            raise errors.invalid(
                f"no pending permission request {request_id!r:.80} (already answered or cancelled)"
            )
        self._reviewed.keep(session.session_id, prepared)
        request.resolve({"outcome": "selected", "optionId": option["optionId"]})

    def _chosen(
        self, request_id: object, option_id: object | None
    ) -> tuple[PermissionRequest, JsonObj | None]:
        """The pending request and the option chosen (None: dismissed), or a clear error."""
        if not isinstance(request_id, str):
            raise errors.invalid("requestId must be a string")
        request = next((p for p in self.pending() if p.request_id == request_id), None)
        if request is None:
            raise errors.invalid(
                f"no pending permission request {request_id!r:.80} (already answered or cancelled)"
            )
        if option_id is None:
            return request, None
        option = request.option(option_id) if isinstance(option_id, str) else None
        if option is None:
            ids = ", ".join(str(o.get("optionId")) for o in request.options)
            raise errors.invalid(f"unknown optionId {option_id!r:.80}; choose one of: {ids}")
        return request, option

    @staticmethod
    def cancel_pending(session: Session) -> None:
        """The turn is being cancelled (or is gone): every pending request answers `cancelled`."""
        for request in list(session.permissions.values()):
            request.resolve({"outcome": "cancelled"})


def reject_outcome(request: PermissionRequest) -> JsonObj:
    reject = request.first_of("reject_once", "reject_always")
    if reject is None:
        return {"outcome": "cancelled"}
    return {"outcome": "selected", "optionId": reject["optionId"]}
