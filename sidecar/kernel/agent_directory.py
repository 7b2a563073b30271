"""The configured agents' names, identities and session owners: what every part may ask of the
agents without reaching their supervisors (the key each agent's titles and conversations are stored
under, which agent owns a session)."""

from __future__ import annotations

from sidecar.kernel import errors
from sidecar.kernel.agent_names import AgentIdentity
from sidecar.kernel.options import AgentSpec, EngineOptions


class AgentDirectory:
    """Names, identities and session owners: what titles and conversations need of the agents
    (built before anything else of the engine, so every part can ask it)."""

    def __init__(self, options: EngineOptions) -> None:
        self.specs: dict[str, AgentSpec] = options.agent_specs()
        self.default = next(iter(self.specs))
        named = bool(options.agents)
        self.identities = {
            name: AgentIdentity(options.state_dir, spec.command, name if named else None)
            for name, spec in self.specs.items()
        }
        self.owner: dict[str, str] = {}  # session id -> the configured agent's name

    def name(self, agent: object | None) -> str:
        """A configured agent's name (None: the default one); an unknown one is refused."""
        if agent is None:
            return self.default
        if not isinstance(agent, str) or not agent:
            raise errors.invalid("agent must be a non-empty string")
        if agent not in self.specs:
            listed = ", ".join(self.specs)
            raise errors.invalid(f"unknown agent {agent!r:.80}; configured: {listed}")
        return agent

    def owner_of(self, session_id: str) -> str:
        return self.owner.get(session_id, self.default)

    def key_of(self, session_id: str) -> str:
        """The key the session's titles and conversation are stored under: its agent's."""
        return self.identities[self.owner_of(session_id)].key

    def key(self, name: str) -> str:
        return self.identities[name].key

    def stored_keys(self) -> list[tuple[str, str]]:
        """(name, key) of every configured agent, the default first; one entry per key."""
        seen: set[str] = set()
        out: list[tuple[str, str]] = []
        for name, identity in self.identities.items():
            key = identity.key
            if key not in seen:
                seen.add(key)
                out.append((name, key))
        return out

    def name_of_key(self, key: str) -> str | None:
        # Per title record shown: no list built (the first agent with that key, as stored_keys).
        for name, identity in self.identities.items():
            if identity.key == key:
                return name
        return None

    def own(self, session_id: str, name: str) -> None:
        """The session belongs to `name`; a session id another agent holds is refused."""
        held = self.owner.get(session_id)
        if held is not None and held != name:
            raise errors.invalid(
                f"the agent {name} answered with session id {session_id!r:.80}, "
                f"which belongs to the agent {held}"
            )
        self.owner[session_id] = name
