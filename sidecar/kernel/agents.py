"""The configured agents: which one owns each session, their supervisors, the idle stop.

Several agents sit behind one sidecar (`EngineOptions.agent_specs`). Each has its own
`AgentSupervisor` (started on first use, restarted with backoff after a crash, stopped after
`agent_idle_stop` seconds without a turn) and its own identity, the key its titles and
conversation documents are stored under. Every session belongs to one agent (`owner`); a command
on a session goes to that agent, and an agent's requests and updates reach only its own sessions
(`AgentRequests` in kernel.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sidecar.kernel.agent_directory import AgentDirectory
from sidecar.kernel.agent_names import AgentIdentity
from sidecar.kernel.options import AgentSpec

if TYPE_CHECKING:
    from sidecar.kernel.agent_supervisor import AgentSupervisor
    from sidecar.kernel.session import Session

JsonObj = dict[str, Any]
T = TypeVar("T")

IDLE_CHECK_MAX_SECONDS = 30.0  # the idle stop looks at least this often


class Agents:
    """The supervisors of the configured agents, and the idle stop that owns their quiet time."""

    def __init__(
        self,
        directory: AgentDirectory,
        make: Callable[[AgentSpec, AgentIdentity], AgentSupervisor],
        *,
        idle_stop: float,
        spawn: Callable[[Any, str], asyncio.Task[Any]],
    ) -> None:
        self.directory = directory
        self.by_name: dict[str, AgentSupervisor] = {
            name: make(spec, directory.identities[name]) for name, spec in directory.specs.items()
        }
        self._idle_stop = idle_stop
        self._spawn = spawn
        self._idle_task: asyncio.Task[Any] | None = None

    @property
    def default(self) -> AgentSupervisor:
        return self.by_name[self.directory.default]

    def get(self, agent: object | None) -> AgentSupervisor:
        return self.by_name[self.directory.name(agent)]

    def of(self, session_id: str) -> AgentSupervisor:
        return self.by_name[self.directory.owner_of(session_id)]

    def call(self, session: Session, call: Awaitable[T]) -> Awaitable[T]:
        """A call to the session's agent, its errors made user-facing (with that agent's reason)."""
        return self.by_name[session.agent].call(call)

    def all(self) -> list[AgentSupervisor]:
        return list(self.by_name.values())

    def describe(self, busy: Callable[[str], bool]) -> list[JsonObj]:
        """Every agent as `acp.agents` lists it; `busy(name)`: a turn of one of its sessions is
        queued, running or waiting for a permission (its state is then `running`)."""
        out: list[JsonObj] = []
        for supervisor in self.by_name.values():
            described = supervisor.describe()
            if described["state"] == "idle" and busy(supervisor.name):
                described["state"] = "running"
            described["default"] = supervisor.name == self.directory.default
            out.append(described)
        return out

    def close(self) -> None:
        for supervisor in self.by_name.values():
            supervisor.closed = True

    # ------------------------------------------------------------------ idle stop
    def watch_idle(
        self,
        busy: Callable[[str], bool],
        attached: Callable[[str], list[str]],
        stopped: Callable[[str], Awaitable[None]],
    ) -> None:
        """Start the idle stop (owned by the engine's tasks): an agent none of whose sessions is
        busy (`busy(name)`), unused for `idle_stop` seconds, is stopped (`attached(name)`: the
        sessions it holds, closed first; `stopped(name)` after)."""
        if self._idle_stop > 0 and self._idle_task is None:
            self._idle_task = self._spawn(self._watch_idle(busy, attached, stopped), "agents-idle-stop")

    async def _watch_idle(
        self,
        busy: Callable[[str], bool],
        attached: Callable[[str], list[str]],
        stopped: Callable[[str], Awaitable[None]],
    ) -> None:
        period = min(max(self._idle_stop / 4, 0.05), IDLE_CHECK_MAX_SECONDS)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for supervisor in self.by_name.values():
                if supervisor.closed or not supervisor.ready:
                    continue
                if busy(supervisor.name):
                    supervisor.last_used = now  # a long turn is use: the clock starts at its end
                    continue
                if now - supervisor.last_used >= self._idle_stop:
                    await supervisor.stop_idle(attached(supervisor.name))
                    await stopped(supervisor.name)
