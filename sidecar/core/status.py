"""The status object (`acp/status`): what the agent and the active session are doing, in one line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..titles import sanitize_text
from .session import Session

JsonObj = dict[str, Any]

STATUS_TEXT_LENGTH = 200


@dataclass(frozen=True)
class AgentView:
    """The agent as the status shows it."""

    state: str  # starting | ready | disconnected | error
    name: str
    version: str | None
    problem: str | None


def build_status(
    agent: AgentView, session: Session | None, title: str | None, transcript_uri: str | None = None
) -> JsonObj:
    if agent.state == "ready":
        state = session.state() if session else "idle"
    else:
        state = agent.state
    mode = session.mode_name if session else None
    model = session.model_name if session else None
    parts = [agent.name or "agent", title or ("no session" if session is None else "untitled"), state]
    if mode:
        parts.append(f"mode {mode}")
    if model:
        parts.append(str(model))
    if state in ("error", "disconnected") and agent.problem:
        parts.append(agent.problem)
    return {
        "sessionId": session.session_id if session else None,
        "title": title,
        "state": state,
        "agent": {"name": agent.name, "version": agent.version},
        "mode": mode,
        "model": model,
        "transcriptUri": transcript_uri if session else None,
        "text": sanitize_text(" · ".join(str(p) for p in parts), STATUS_TEXT_LENGTH),
    }


class StatusSink(Protocol):
    def on_status(self, status: JsonObj) -> None: ...


class StatusReporter:
    """Tells the editor the status whenever it changed (and only then)."""

    def __init__(self, sink: StatusSink, snapshot: Callable[[], JsonObj]) -> None:
        self._sink = sink
        self._snapshot = snapshot
        self._last: JsonObj | None = None

    def current(self) -> JsonObj:
        return self._snapshot()

    def emit(self) -> None:
        status = self._snapshot()
        if status != self._last:
            self._last = status
            self._sink.on_status(status)
