"""The status object (`acp/status`): what the agent and the active session are doing, in one line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sidecar.kernel.session import Session
from sidecar.kernel.slash_commands import AgentCommand
from sidecar.kernel.usage import context_share
from sidecar.text_safety import sanitize_text

JsonObj = dict[str, Any]

STATUS_TEXT_LENGTH = 200
NAME_LENGTH = 100  # an agent's, mode's or model's name, as the agent sent it


def _name(value: str | None) -> str | None:
    return None if value is None else sanitize_text(value, NAME_LENGTH)


def _choices(choices: list[JsonObj] | None) -> list[JsonObj] | None:
    """Ids exactly as the agent sent them (they are sent back); names made safe to show."""
    if choices is None:
        return None
    return [{"id": c["id"], "name": _name(c["name"])} for c in choices]


def _commands(commands: tuple[AgentCommand, ...]) -> list[JsonObj]:
    """The agent's `/` commands (already bounded and made safe by slash_commands)."""
    return [{"name": c.name, "description": c.description, "hint": c.hint} for c in commands]


@dataclass(frozen=True)
class AgentView:
    """The agent as the status shows it."""

    state: str  # stopped | starting | ready | disconnected | error
    name: str  # agentInfo.name, else the command's name
    title: str | None  # agentInfo.title
    version: str | None
    problem: str | None
    configured: str | None = None  # the configured agent's name (what the editor picks it by)


def build_status(
    agent: AgentView, session: Session | None, title: str | None, conversation_uri: str | None = None
) -> JsonObj:
    if agent.state in ("ready", "stopped"):
        # A stopped agent (not used yet, or stopped idle) starts on the next use: nothing is wrong.
        state = session.state() if session else "idle"
    else:
        state = agent.state
    mode = _name(session.mode_name) if session else None
    model = _name(session.model_name) if session else None
    usage = session.usage if session else None
    agent_name, agent_title = _name(agent.name), _name(agent.title)
    parts = [agent_title or agent_name or "agent", title or ("no session" if session is None else "untitled")]
    parts.append(state)
    if mode:
        parts.append(f"mode {mode}")
    if model:
        parts.append(str(model))
    if share := context_share(usage):
        parts.append(share)
    if state in ("error", "disconnected") and agent.problem:
        parts.append(agent.problem)
    return {
        "sessionId": session.session_id if session else None,
        "title": title,
        "state": state,
        "agent": {
            "name": agent_name,
            "title": agent_title,
            "version": _name(agent.version),
            "configured": agent.configured,
        },
        "mode": mode,
        "modeId": session.mode_id if session else None,
        "modes": _choices(session.mode_choices) if session else None,
        "model": model,
        "modelId": session.model_id if session else None,
        "models": _choices(session.model_choices) if session else None,
        "commands": _commands(session.commands) if session else None,
        "usage": usage,
        "transcriptUri": conversation_uri if session else None,
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
