"""The session engine's settings, as the layer above passes them in."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEMO_AGENT = "demo"  # the embedded demo agent's name: always configured


@dataclass(frozen=True)
class AgentSpec:
    """One configured agent: its name (what the editor picks it by), command line and environment."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class EngineOptions:
    # The default agent's command line and environment (the one agent of `agent` / --agent).
    agent_command: list[str]
    agent_env: dict[str, str] = field(default_factory=dict)
    # Every configured agent by name (`initializationOptions.agents`, the one of `agent_command`,
    # `demo`); empty: only the one of `agent_command`, named after its command.
    agents: dict[str, AgentSpec] = field(default_factory=dict)
    # The agent of a new session that names none; None: the one of `agent_command`.
    default_agent: str | None = None
    # An agent none of whose sessions has had a turn for this long is stopped (0: never).
    agent_idle_stop: float = 600.0
    # Where the agent runs: the first workspace folder (never the editor's own cwd, which an
    # agent may scan and record as a project), None for the sidecar's cwd.
    agent_cwd: str | None = None
    # Where the user finds the agent's full stderr, named in start-up failures.
    log_hint: str = "the editor's LSP log"
    state_dir: Path = Path(".")
    permissions: str = "ask"  # ask | allow_reads | reject
    rename_timeout_ms: int = 120_000
    rename_fallback: str = "keep_local"  # keep_local | revert
    titles_max_length: int = 500
    conversation_max_bytes: int = 4 << 20  # the bound of one conversation document
    conversations_durable: bool = True  # fsync every write of a conversation document
    conversation_interval: float = 0.25  # seconds between two writes of a streaming conversation
    queue_bound: int = 16
    # How long the agent's question (elicitation/create) waits for the user before it is cancelled.
    elicitation_timeout: float = 600.0
    request_timeout: float = 60.0
    cancel_timeout: float = 10.0
    max_restarts: int = 5
    restart_window: float = 60.0
    # Updates for a session id the sidecar does not know yet (sent before the answer to
    # session/new or session/resume): at most this many per session id, for at most
    # this many session ids at once (the first seen is forgotten first), each kept at
    # most this long.
    pending_update_bound: int = 500
    pending_update_sessions: int = 8
    pending_update_max_age: float = 120.0

    def agent_specs(self) -> dict[str, AgentSpec]:
        """Every configured agent, by name; the default one first."""
        if self.agents:
            specs = dict(self.agents)
        else:
            name = Path(self.agent_command[0]).name if self.agent_command else "agent"
            specs = {name: AgentSpec(name, list(self.agent_command), dict(self.agent_env))}
        default = self.default_name(specs)
        return {default: specs[default], **{k: v for k, v in specs.items() if k != default}}

    def default_name(self, specs: dict[str, AgentSpec]) -> str:
        if self.default_agent is not None and self.default_agent in specs:
            return self.default_agent
        for name, spec in specs.items():
            if spec.command == self.agent_command:
                return name
        return next(iter(specs))
