"""What every part of the engine shares: settings, the editor side, the bus, tasks, the agent's identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .events import EventBus, StatusChanged

if TYPE_CHECKING:
    from .agent_names import AgentIdentity
    from .options import EngineOptions
    from .ports import EngineListener, Spawn

_STATUS_CHANGED = StatusChanged()


@dataclass(frozen=True)
class EngineContext:
    options: EngineOptions
    # The editor side: events for the user (messages, the log, notifications).
    listener: EngineListener
    bus: EventBus
    # Start an owned background task (kept, logged on failure, cancelled on shutdown).
    spawn: Spawn
    identity: AgentIdentity

    def agent_key(self) -> str:
        """The identity titles and transcripts are stored under."""
        return self.identity.key

    def status_changed(self) -> None:
        self.bus.publish(_STATUS_CHANGED)
