"""One ACP session as the sidecar tracks it: turns, permissions, tool calls, state."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from sidecar.kernel.slash_commands import AgentCommand
from sidecar.kernel.tool_calls import ToolCalls
from sidecar.kernel.turns import Turn, TurnState

JsonObj = dict[str, Any]


class WaitingQuestion(Protocol):
    """A question of the agent waiting for the user (the questions feature's `Elicitation`)."""

    def resolve(self, answer: JsonObj) -> bool: ...


@dataclass(eq=False)
class PermissionRequest:
    """A `session/request_permission` waiting for an answer from the user or a policy."""

    request_id: str
    session_id: str
    turn_id: str | None
    tool_call: JsonObj
    options: list[JsonObj]
    future: asyncio.Future[JsonObj]

    @property
    def title(self) -> str:
        title = self.tool_call.get("title")
        return title if isinstance(title, str) and title else "the agent asks for permission"

    @property
    def kind(self) -> str | None:
        kind = self.tool_call.get("kind")
        return kind if isinstance(kind, str) else None

    def option(self, option_id: str) -> JsonObj | None:
        return next((o for o in self.options if o.get("optionId") == option_id), None)

    def first_of(self, *kinds: str) -> JsonObj | None:
        for kind in kinds:
            found = next((o for o in self.options if o.get("kind") == kind), None)
            if found is not None:
                return found
        return None

    def resolve(self, outcome: JsonObj) -> bool:
        if self.future.done():
            return False
        self.future.set_result({"outcome": outcome})
        return True


@dataclass(eq=False)
class Session:
    session_id: str
    cwd: str
    agent: str = ""  # the configured agent the session belongs to
    additional_dirs: list[str] = field(default_factory=list)
    modes: JsonObj | None = None
    config_options: list[JsonObj] = field(default_factory=list)
    legacy_models: JsonObj | None = None
    tool_calls: ToolCalls = field(default_factory=ToolCalls)
    # The mode the agent last switched to itself (current_mode_update) or was set to.
    reported_mode_id: str | None = None
    queue: deque[Turn] = field(default_factory=deque)
    current: Turn | None = None
    permissions: dict[str, PermissionRequest] = field(default_factory=dict)
    # The agent's questions (elicitation/create) waiting for the user.
    elicitations: dict[str, WaitingQuestion] = field(default_factory=dict)
    # Which agent process generation this session is attached to (restart detection).
    attached_to: int = -1
    # A fork made here: the session it was forked from, and whether a prompt has yet to prove it
    # live (claude-agent-acp fails the first prompt on a fork it has not resumed).
    forked_from: str | None = None
    fork_unproven: bool = False
    replaying: bool = False
    runner: asyncio.Task[None] | None = None
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    first_prompt_seen: bool = False
    # The agent's last usage_update ({used, size, cost?}, see usage.py), or None.
    usage: JsonObj | None = None
    # The agent's `/` commands, from its last available_commands_update.
    commands: tuple[AgentCommand, ...] = ()

    @property
    def roots(self) -> list[str]:
        return [self.cwd, *self.additional_dirs]

    @property
    def mode_id(self) -> str | None:
        if self.reported_mode_id:
            return self.reported_mode_id
        if self.modes and isinstance(self.modes.get("currentModeId"), str):
            return str(self.modes["currentModeId"])
        return None

    @property
    def mode_name(self) -> str | None:
        mode_id = self.mode_id
        available = (self.modes or {}).get("availableModes")
        if isinstance(available, list):
            for mode in available:
                if isinstance(mode, dict) and mode.get("id") == mode_id and isinstance(mode.get("name"), str):
                    return str(mode["name"])
        return mode_id

    @property
    def mode_choices(self) -> list[JsonObj] | None:
        """The modes the agent offers, as `{id, name}`; None when it offers none."""
        available = (self.modes or {}).get("availableModes")
        if not isinstance(available, list):
            return None
        return [
            {"id": m["id"], "name": m["name"] if isinstance(m.get("name"), str) else m["id"]}
            for m in available
            if isinstance(m, dict) and isinstance(m.get("id"), str)
        ]

    def model_option(self) -> JsonObj | None:
        return next((o for o in self.config_options if o.get("category") == "model"), None)

    @property
    def model_id(self) -> str | None:
        """The current model: the value of the config option of category `model`, else legacy models."""
        option = self.model_option()
        if option is not None:
            value = option.get("currentValue")
        elif self.legacy_models is not None:
            value = self.legacy_models.get("currentModelId")
        else:
            return None
        return value if isinstance(value, str) else None

    @property
    def model_choices(self) -> list[JsonObj] | None:
        """The models the agent offers, as `{id, name}`; None when it offers no model selection."""
        option = self.model_option()
        if option is not None:
            pairs = [(c.get("value"), c.get("name")) for c in _flat_choices(option.get("options"))]
        elif self.legacy_models is not None:
            models = self.legacy_models.get("availableModels")
            listed = models if isinstance(models, list) else []
            pairs = [(m.get("modelId"), m.get("name")) for m in listed if isinstance(m, dict)]
        else:
            return None
        return [
            {"id": value, "name": name if isinstance(name, str) else value}
            for value, name in pairs
            if isinstance(value, str)
        ]

    @property
    def model_name(self) -> str | None:
        current = self.model_id
        for choice in self.model_choices or []:
            if choice["id"] == current:
                return str(choice["name"])
        return current

    def state(self) -> str:
        if self.permissions:
            return "waiting_permission"
        if self.elicitations:
            return "waiting_input"
        current = self.current
        if current is None or current.state is TurnState.ENDED:
            return "idle"
        return "cancelling" if current.state is TurnState.CANCELLING else "running"


def _flat_choices(options: Any) -> list[JsonObj]:
    """Select options may be flat or grouped; both give a flat list of {value, name}."""
    out: list[JsonObj] = []
    if isinstance(options, list):
        for item in options:
            if isinstance(item, dict) and isinstance(item.get("options"), list):
                out.extend(o for o in item["options"] if isinstance(o, dict))
            elif isinstance(item, dict):
                out.append(item)
    return out


def choice_values(option: JsonObj) -> list[str]:
    return [str(c["value"]) for c in _flat_choices(option.get("options")) if isinstance(c.get("value"), str)]
