"""The terminals feature's engine side: the agent's client terminals (`terminal/*`) on the kernel.

It answers the agent's terminal requests (the kernel's table), shows a terminal a tool call
embeds, and ends what an agent started when its turn is cancelled, the agent is lost or stopped
idle (those reactions are subscribed in the one table of `sidecar/composition.py`).
"""

from __future__ import annotations

import functools
from typing import Any

from sidecar.acp.client import TERMINAL_METHODS
from sidecar.features.terminals.terminals import EventSink, Terminals
from sidecar.kernel import errors
from sidecar.kernel.bus import AgentLost, AgentStopped, CancelRequested, SessionDeleting, UpdateRouted
from sidecar.kernel.kernel import Kernel
from sidecar.kernel.updates import TOOL_CALL_KINDS

JsonObj = dict[str, Any]


class ClientTerminals:
    def __init__(self, kernel: Kernel, on_event: EventSink) -> None:
        self._kernel = kernel
        self.terminals = Terminals(lambda: kernel.registry.by_id, kernel.bus, on_event)
        for method in TERMINAL_METHODS:
            kernel.requests.answer(method, functools.partial(self._request, method))
        kernel.before_agents_stop("ending terminals", self.terminals.aclose)
        kernel.on_kill(self.terminals.kill_now)

    async def _request(self, method: str, params: JsonObj, _agent: str) -> JsonObj:
        return await self.terminals.handle(method, params)

    # ------------------------------------------------------------------ what it reacts to
    def tool_call(self, event: UpdateRouted) -> None:
        """A live tool call that embeds a client terminal: its output shows there."""
        if event.routed.update.kind in TOOL_CALL_KINDS and not event.routed.replay:
            self.terminals.show(event.session.session_id, event.routed.update.raw)

    def cancel_requested(self, event: CancelRequested) -> None:
        """A cancelled turn leaves no command running (the agent may still read and release them)."""
        self._kernel.spawn(self.terminals.kill_session(event.session.session_id), "kill-terminals")

    def agent_lost(self, event: AgentLost) -> None:
        """Nothing the dead agent started keeps running."""
        sessions = [s.session_id for s in self._kernel.registry.of_agent(event.name)]
        self._kernel.spawn(self.terminals.release_all(sessions), f"release-terminals-{event.name}")

    async def agent_stopped(self, event: AgentStopped) -> None:
        """An agent stopped idle: nothing it started keeps running."""
        await self.terminals.release_all([s.session_id for s in self._kernel.registry.of_agent(event.name)])

    async def deleting(self, event: SessionDeleting) -> None:
        """A deleted session's terminals are released before it is forgotten."""
        await self.terminals.release_all([event.session_id])

    # ------------------------------------------------------------------ the kill command
    async def kill(self, terminal_id: str | None = None, session_id: str | None = None) -> JsonObj:
        """The editor's kill: one terminal by id, or every running terminal of a session."""
        if terminal_id is not None:
            if not await self.terminals.kill_by_id(terminal_id):
                raise errors.invalid(f"no running terminal {terminal_id!r:.80}")
            return {"killed": [terminal_id]}
        session = await self._kernel.registry.resolve(session_id)
        return {"killed": await self.terminals.kill_session(session.session_id)}
