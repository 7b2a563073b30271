"""Turns: admission to a bounded per-session queue, one runner per session, cancel, exactly-once end.

A turn moves `queued -> running -> [cancelling ->] ended` (`turns.Turn`); every
admitted turn ends exactly once, whatever happens: the agent answers, errs,
dies, ignores a cancel, or the sidecar shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import TYPE_CHECKING, Any, Protocol

from sidecar.acp.errors import INTERNAL_ERROR, RESOURCE_NOT_FOUND
from sidecar.kernel import errors
from sidecar.kernel.bus import PromptSent, RequestsWithdrawn, TurnEnded, TurnSettling
from sidecar.kernel.context import EngineContext
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.ports import AgentConnection
from sidecar.kernel.session import Session
from sidecar.kernel.turns import Turn, TurnKind, TurnState

if TYPE_CHECKING:
    from sidecar.kernel.agents import Agents
    from sidecar.kernel.sessions import Sessions

JsonObj = dict[str, Any]


def fork_not_live(exc: SidecarError) -> bool:
    """The agent's answer to a prompt on a fork it does not hold: -32002, or claude-agent-acp's
    -32603 "Internal error" with `data.details` "Session not found"."""
    if exc.code == RESOURCE_NOT_FOUND:
        return True
    return exc.code == INTERNAL_ERROR and "session not found" in exc.message.lower()


STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}


class TurnEvents(Protocol):
    def on_turn(
        self,
        session_id: str,
        turn_id: str,
        state: str,
        stop_reason: str | None,
        error: JsonObj | None,
        answered: bool | None = None,
    ) -> None: ...
    def on_log(self, level: str, message: str) -> None: ...


class TurnQueue:
    def __init__(self, ctx: EngineContext, registry: Sessions, agents: Agents) -> None:
        self.options = ctx.options
        self._events: TurnEvents = ctx.listener
        self._bus = ctx.bus
        self._spawn = ctx.spawn
        self._emit_status = ctx.status_changed
        self._registry = registry
        self._agents = agents
        self._ids = itertools.count(1)

    def _cancel_permissions(self, session: Session) -> None:
        self._bus.publish(RequestsWithdrawn(session))

    # ------------------------------------------------------------------ admission
    def admit(
        self,
        session: Session,
        blocks: list[JsonObj],
        kind: TurnKind,
        echo: str = "",
        meta: JsonObj | None = None,
    ) -> Turn:
        if len(session.queue) >= self.options.queue_bound:
            raise errors.queue_full(session.session_id, self.options.queue_bound)
        turn = Turn(f"turn-{next(self._ids)}", session.session_id, blocks, kind, meta, echo_remaining=echo)
        session.queue.append(turn)
        self._events.on_turn(session.session_id, turn.turn_id, "queued", None, None)
        if session.runner is None or session.runner.done():
            session.runner = self._spawn(self._run_queue(session), f"turns-{session.session_id}")
        session.wakeup.set()
        return turn

    @staticmethod
    def position(session: Session, turn: Turn) -> int:
        """0 = running now (or next to run); n = n turns ahead of it."""
        ahead = 1 if session.current is not None and session.current is not turn else 0
        for queued in session.queue:
            if queued is turn:
                return ahead
            ahead += 1
        return 0

    # ------------------------------------------------------------------ the runner
    async def _run_queue(self, session: Session) -> None:
        """The session's serial turn runner: one prompt in flight at a time."""
        while True:
            if not session.queue:
                session.wakeup.clear()
                await session.wakeup.wait()
                continue
            turn = session.queue.popleft()
            if turn.state is TurnState.ENDED:
                continue
            session.current = turn
            try:
                await self._run_turn(session, turn)
            finally:
                session.current = None
                self._cancel_permissions(session)
                self._emit_status()

    async def _run_turn(self, session: Session, turn: Turn) -> None:
        turn.advance(TurnState.RUNNING)
        self._events.on_turn(session.session_id, turn.turn_id, "running", None, None)
        self._emit_status()
        try:
            client = await self._registry.ensure_attached(session)  # starts/restarts the agent
            if turn.state is not TurnState.RUNNING:
                # Cancelled while the agent was (re)starting or the session attaching:
                # it has ended already, and its prompt is never sent.
                return
            turn.in_flight = True
            self._bus.publish(PromptSent(session, turn))  # the prompt goes to the agent now
            result = await self._prompt(session, turn, client)
            stop = result.get("stopReason")
            if not isinstance(stop, str) or stop not in STOP_REASONS:
                self._events.on_log("warning", f"the agent answered an unknown stopReason {stop!r}")
                stop = stop if isinstance(stop, str) else "end_turn"
            if turn.cancelling and stop != "cancelled":
                self._events.on_log("info", f"turn {turn.turn_id} was cancelled; the agent said {stop}")
            # What the answer leaves to finish before the turn's end is told (the editor looks
            # at the disk then): the user's reviewed edits put in place.
            await self._bus.settle(TurnSettling(session))
            self.end(session, turn, stop, None)
        except SidecarError as exc:
            self.end(session, turn, None, {"code": exc.code, "message": exc.message})
        except asyncio.CancelledError:
            self.end(session, turn, "cancelled", None)
            raise
        finally:
            turn.in_flight = False

    async def _prompt(self, session: Session, turn: Turn, client: AgentConnection) -> JsonObj:
        """`session/prompt`; on a fork's first prompt that fails because the agent does not hold
        the fork live, the fork is resumed (else loaded) and the prompt sent once more."""
        try:
            prompt = client.prompt(session.session_id, turn.blocks, turn.meta)
            result: JsonObj = await self._agents.call(session, prompt)
        except SidecarError as exc:
            if not (session.fork_unproven and fork_not_live(exc)) or turn.state is not TurnState.RUNNING:
                raise
            session.fork_unproven = False
            self._events.on_log("info", f"the fork {session.session_id} was not live; resuming it")
            turn.in_flight = False  # a replay while it resumes belongs to no turn
            client = await self._registry.revive(session)
            if turn.state is not TurnState.RUNNING:
                return {"stopReason": "cancelled"}
            turn.in_flight = True
            result = await self._agents.call(
                session, client.prompt(session.session_id, turn.blocks, turn.meta)
            )
        session.fork_unproven = False
        return result

    def end(self, session: Session, turn: Turn, stop: str | None, error: JsonObj | None) -> None:
        """End a turn; only its first end counts (and is told)."""
        if turn.end(stop, error):
            self._events.on_turn(session.session_id, turn.turn_id, "ended", stop, error, turn.answered)
            self._bus.publish(TurnEnded(session, turn))
            self._emit_status()

    # ------------------------------------------------------------------ cancel
    async def cancel(self, session: Session) -> bool:
        """Cancel the turn at position 0, whatever its start-up state; False when there is none.

        Not picked up by the runner yet, or picked up but its prompt not sent (the
        agent starting, the session attaching): it ends `cancelled` at once and is
        never sent. In flight: `session/cancel`, and it ends when the agent answers
        (or at the cancel deadline). Turns queued behind it are not touched.
        """
        turn = session.current
        if turn is None:
            head = next((t for t in session.queue if t.state is not TurnState.ENDED), None)
            if head is None:
                return False
            session.queue.remove(head)
            self.end(session, head, "cancelled", None)
            return True
        if turn.state is not TurnState.RUNNING:
            return False  # cancelling already, or ended
        if not turn.in_flight:
            self._cancel_permissions(session)
            self.end(session, turn, "cancelled", None)
            return True
        turn.advance(TurnState.CANCELLING)
        self._emit_status()
        # session/cancel first, then the answers to what the agent asked (ACP: pending requests
        # are answered cancelled after the cancel), so the agent reads them as the cancel's.
        sent = await self._agents.of(session.session_id).send_cancel(session.session_id)
        self._cancel_permissions(session)
        if sent:
            self._spawn(self._cancel_deadline(session, turn), f"cancel-deadline-{turn.turn_id}")
        return True

    async def _cancel_deadline(self, session: Session, turn: Turn) -> None:
        """An agent that ignores cancel must not hold the session forever."""
        try:
            await asyncio.wait_for(turn.ended.wait(), self.options.cancel_timeout)
        except TimeoutError:
            self._events.on_log("warning", f"the agent ignored cancel of {turn.turn_id}; ending it here")
            self.end(
                session,
                turn,
                "cancelled",
                {"code": errors.AGENT_DOWN, "message": "the agent did not stop after cancel"},
            )
            if session.runner is not None:
                # The runner is stuck awaiting the prompt: restart it (sends $/cancel_request).
                session.runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await session.runner
                session.runner = self._spawn(self._run_queue(session), f"turns-{session.session_id}")
                session.wakeup.set()

    # ------------------------------------------------------------------ failure and shutdown
    def fail_queued(self, session: Session, reason: str) -> None:
        """The agent is gone (or we are): answer its permission requests, end every queued turn."""
        self._cancel_permissions(session)
        session.permissions.clear()
        while session.queue:
            self.end(session, session.queue.popleft(), None, {"code": errors.AGENT_DOWN, "message": reason})

    def end_current(self, session: Session, reason: str) -> None:
        if session.current is not None:
            self.end(session, session.current, None, {"code": errors.AGENT_DOWN, "message": reason})
