"""What every part of the engine shares: settings, the editor side, the bus, tasks, the agents' identities."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sidecar.kernel.bus import EventBus, StatusChanged

if TYPE_CHECKING:
    from sidecar.kernel.agent_directory import AgentDirectory
    from sidecar.kernel.options import EngineOptions
    from sidecar.kernel.ports import EngineListener, Spawn

_STATUS_CHANGED = StatusChanged()


@dataclass(frozen=True)
class EngineContext:
    options: EngineOptions
    # The editor side: events for the user (messages, the log, notifications).
    listener: EngineListener
    bus: EventBus
    # Start an owned background task (kept, logged on failure, cancelled on shutdown).
    spawn: Spawn
    # The configured agents: which one owns each session, the key each one's titles are under.
    agents: AgentDirectory

    def agent_key(self, session_id: str) -> str:
        """The key a session's titles and conversation are stored under (its agent's identity)."""
        return self.agents.key_of(session_id)

    def status_changed(self) -> None:
        self.bus.publish(_STATUS_CHANGED)
